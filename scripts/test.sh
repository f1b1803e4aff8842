#!/usr/bin/env bash
# Run wavescope's whole test suite on a fresh Debian machine: installs what the tests need
# (LLVM 22 for the disassembler comparisons, Xvfb for the screenshot check, qemu and busybox for
# the USB test over a real USB stack in a guest, tinygrad for the decoder comparisons), then runs
# every test of the workspace.
set -euo pipefail
cd "$(dirname "$0")/.."

SUDO=""
[ "$(id -u)" = 0 ] || SUDO="sudo"

missing=()
command -v llvm-objdump-22 >/dev/null || missing+=(llvm-22)
command -v clang-22 >/dev/null || missing+=(clang-22 lld-22)
command -v Xvfb >/dev/null || missing+=(xvfb)
# runtime/tests/regs_generated.rs runs the register generator (runtime/tools/gen_regs.py); pip
# installs tinygrad below.
command -v python3 >/dev/null || missing+=(python3 python3-pip)
command -v convert >/dev/null && convert -version 2>/dev/null | grep -q ImageMagick || missing+=(imagemagick)
# qemu without its recommends: the guest runs headless, and the GUI stack would cost minutes.
lean=()
command -v qemu-system-x86_64 >/dev/null || lean+=(qemu-system-x86)
command -v busybox >/dev/null || lean+=(busybox-static)
command -v cpio >/dev/null || lean+=(cpio)
command -v xz >/dev/null || lean+=(xz-utils)
command -v zstd >/dev/null || lean+=(zstd)
if [ $((${#missing[@]} + ${#lean[@]})) -gt 0 ]; then
  echo "== installing: ${missing[*]} ${lean[*]}"
  $SUDO apt-get update -qq
  if [ ${#missing[@]} -gt 0 ]; then
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
  fi
  if [ ${#lean[@]} -gt 0 ]; then
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${lean[@]}" >/dev/null
  fi
fi
# The qemu USB test boots Debian's current kernel, fetched with `apt-get download`: the package
# lists must know it.
if ! apt-cache depends linux-image-amd64 2>/dev/null | grep "Depends: linux-image-[0-9]" >/dev/null; then
  echo "== apt-get update (package lists for the qemu guest's kernel)"
  $SUDO apt-get update -qq || echo "warning: apt-get update failed; the qemu USB test will say why"
fi
if ! python3 -c "import tinygrad" 2>/dev/null; then
  echo "== installing tinygrad 0.14.0 (reference SQTT decoder)"
  python3 -m pip install -q tinygrad==0.14.0 || echo "warning: tinygrad could not be installed; its comparison tests will say so"
fi

echo "== cargo test --workspace --release"
cargo test --workspace --release
