#!/bin/sh
# Builds the demo kernels `wavescope capture --demo` runs (embedded by capture/src/lib.rs) with
# clang-22: gfx1100 at the top level, gfx1201 and gfx950 in their own directories (the demo on
# `emu:gfx1201` / `emu:gfx950` runs those). These sources are the only copy
# (tests/fixtures/kernels/emu/build.sh builds them too); the build is reproducible
# (capture/tests/assets.rs rebuilds them and compares the bytes).
set -eu
cd "$(dirname "$0")"
for mcpu in gfx1100 gfx1201 gfx950; do
  out=.
  [ "$mcpu" = gfx1100 ] || { out=$mcpu; mkdir -p "$out"; }
  for name in vadd reduce matmul; do
    clang-22 -target amdgcn-amd-amdhsa -mcpu=$mcpu -nogpulib -O2 -Isrc "src/$name.c" -o "$out/$name.hsaco"
  done
done
