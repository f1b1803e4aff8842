#!/usr/bin/env bash
# Run wavescope's whole test suite on a fresh Debian machine: installs what the tests need
# (LLVM 22 for the disassembler comparisons, Xvfb for the screenshot check, tinygrad for the
# decoder comparisons), then runs every test of the workspace.
set -euo pipefail
cd "$(dirname "$0")/.."

SUDO=""
[ "$(id -u)" = 0 ] || SUDO="sudo"

missing=()
command -v llvm-objdump-22 >/dev/null || missing+=(llvm-22)
command -v clang-22 >/dev/null || missing+=(clang-22 lld-22)
command -v Xvfb >/dev/null || missing+=(xvfb)
command -v convert >/dev/null && convert -version 2>/dev/null | grep -q ImageMagick || missing+=(imagemagick)
if [ ${#missing[@]} -gt 0 ]; then
  echo "== installing: ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi
if ! python3 -c "import tinygrad" 2>/dev/null; then
  echo "== installing tinygrad 0.14.0 (reference SQTT decoder)"
  python3 -m pip install -q tinygrad==0.14.0 || echo "warning: tinygrad could not be installed; its comparison tests will say so"
fi

echo "== cargo test --workspace --release"
cargo test --workspace --release
