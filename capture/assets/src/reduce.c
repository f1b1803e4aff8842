#include "common.h"
// Per-work-group sum of 256 u32 values through an LDS tree with barriers; also counts set
// bits with an LDS atomic. out[2*g] = sum, out[2*g+1] = popcount total.
KERNEL __attribute__((reqd_work_group_size(256, 1, 1)))
void reduce(GLOBAL u32 *out, GLOBAL const u32 *in) {
  static LOCAL u32 buf[256] __attribute__((loader_uninitialized));
  static LOCAL u32 bits __attribute__((loader_uninitialized));
  u32 t = lid();
  if (t == 0) bits = 0;
  u32 v = in[gid() * 256 + t];
  buf[t] = v;
  __builtin_amdgcn_s_barrier();
  __atomic_fetch_add(&bits, __builtin_popcount(v), __ATOMIC_RELAXED);
  for (u32 s = 128; s > 0; s >>= 1) {
    __builtin_amdgcn_fence(__ATOMIC_RELEASE, "workgroup");
    __builtin_amdgcn_s_barrier();
    __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "workgroup");
    if (t < s) buf[t] += buf[t + s];
  }
  __builtin_amdgcn_fence(__ATOMIC_RELEASE, "workgroup");
  __builtin_amdgcn_s_barrier();
  __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "workgroup");
  if (t == 0) { out[2 * gid()] = buf[0]; out[2 * gid() + 1] = bits; }
}
