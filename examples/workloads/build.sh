#!/bin/sh
# Builds the example workloads' code objects with clang-22, one per emulated architecture
# (kernels/add_mul.c -> add_mul.gfx1100.hsaco, add_mul.gfx1201.hsaco, add_mul.gfx950.hsaco).
# The tests compile the same source themselves; these copies let the examples run without LLVM.
set -eu
cd "$(dirname "$0")"
for arch in gfx1100 gfx1201 gfx950; do
  clang-22 -target amdgcn-amd-amdhsa -mcpu=$arch -nogpulib -O2 -c kernels/add_mul.c -o add_mul.$arch.o
  ld.lld-22 -shared add_mul.$arch.o -o add_mul.$arch.hsaco
  rm add_mul.$arch.o
done
