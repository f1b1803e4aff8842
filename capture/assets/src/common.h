// Shared helpers for the emulator fixture kernels (plain C, amdgpu_kernel, no device libs).
#define KERNEL __attribute__((amdgpu_kernel))
#define GLOBAL __attribute__((address_space(1)))
#define LOCAL __attribute__((address_space(3)))
typedef unsigned int u32;
static inline u32 lid(void) { return __builtin_amdgcn_workitem_id_x(); }
static inline u32 gid(void) { return __builtin_amdgcn_workgroup_id_x(); }
