// Two kernels in one code object, for examples/workloads/add_mul.toml and the workload tests.
// Plain C for amdgcn (no device libraries): the work-group size comes from the ABI's hidden
// arguments (__builtin_amdgcn_workgroup_size_x reads hidden_group_size_x), so the launch's block
// must reach the kernel through the runtime.
#define KERNEL __attribute__((amdgpu_kernel))
#define GLOBAL __attribute__((address_space(1)))
typedef unsigned int u32;

static inline u32 global_id(void) {
  return __builtin_amdgcn_workgroup_id_x() * __builtin_amdgcn_workgroup_size_x() +
         __builtin_amdgcn_workitem_id_x();
}

// c[i] = a[i] + b[i]
KERNEL void k_add(GLOBAL float *c, GLOBAL const float *a, GLOBAL const float *b, u32 n) {
  u32 i = global_id();
  if (i < n) c[i] = a[i] + b[i];
}

// d[i] = c[i] * scale
KERNEL void k_mul(GLOBAL float *d, GLOBAL const float *c, float scale, u32 n) {
  u32 i = global_id();
  if (i < n) d[i] = c[i] * scale;
}
