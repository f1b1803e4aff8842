#!/bin/sh
# Builds the demo kernels `wavescope capture --demo` runs (embedded by capture/src/lib.rs) with
# clang-22 for gfx1100. These sources are the only copy (tests/fixtures/kernels/emu/build.sh builds them too); the build is
# reproducible (capture/tests/assets.rs rebuilds them and compares the bytes).
set -eu
cd "$(dirname "$0")"
for name in vadd reduce matmul; do
  clang-22 -target amdgcn-amd-amdhsa -mcpu=gfx1100 -nogpulib -O2 -Isrc "src/$name.c" -o "$name.hsaco"
done
