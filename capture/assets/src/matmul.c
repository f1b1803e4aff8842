#include "common.h"
// Tiled C = A * B for n x n float matrices (n a multiple of 16), 16x16 work-groups, LDS tiles.
// Accumulation order: k ascending with fmaf, so a CPU reference can match bit for bit.
KERNEL __attribute__((reqd_work_group_size(16, 16, 1)))
void matmul(GLOBAL float *c, GLOBAL const float *a, GLOBAL const float *b, u32 n) {
  static LOCAL float ta[16][16] __attribute__((loader_uninitialized));
  static LOCAL float tb[16][16] __attribute__((loader_uninitialized));
  u32 tx = __builtin_amdgcn_workitem_id_x(), ty = __builtin_amdgcn_workitem_id_y();
  u32 col = __builtin_amdgcn_workgroup_id_x() * 16 + tx;
  u32 row = __builtin_amdgcn_workgroup_id_y() * 16 + ty;
  float acc = 0.0f;
  for (u32 k0 = 0; k0 < n; k0 += 16) {
    ta[ty][tx] = a[row * n + k0 + tx];
    tb[ty][tx] = b[(k0 + ty) * n + col];
    __builtin_amdgcn_fence(__ATOMIC_RELEASE, "workgroup");
    __builtin_amdgcn_s_barrier();
    __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "workgroup");
    for (u32 k = 0; k < 16; k++) acc = __builtin_fmaf(ta[ty][k], tb[k][tx], acc);
    __builtin_amdgcn_fence(__ATOMIC_RELEASE, "workgroup");
    __builtin_amdgcn_s_barrier();
    __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "workgroup");
  }
  c[row * n + col] = acc;
}
