#include "common.h"
// c[i] = a[i] + b[i] for i < n; work-group 64.
KERNEL __attribute__((reqd_work_group_size(64, 1, 1)))
void vadd(GLOBAL float *c, GLOBAL const float *a, GLOBAL const float *b, u32 n) {
  u32 i = gid() * 64 + lid();
  if (i < n) c[i] = a[i] + b[i];
}
