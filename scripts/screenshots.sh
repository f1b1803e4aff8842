#!/usr/bin/env bash
# Screenshots of each view of a capture, rendered by the real window (glow backend) under Xvfb.
# Needs: apt-get install xvfb (imagemagick optional, for a montage).
# Usage: scripts/screenshots.sh [TRACE] [OUTDIR]   (PROFILE=release for a release build)
set -euo pipefail
cd "$(dirname "$0")/.."
TRACE=${1:-../shared/traces/gfx1100/gemm_run_0/profile.pkl}
[ -f "$TRACE" ] || TRACE=/work/shared/traces/gfx1100/gemm_run_0/profile.pkl
OUT=${2:-target/screenshots}
PROFILE=${PROFILE:-debug}
mkdir -p "$OUT"
if [ "$PROFILE" = release ]; then cargo build -q --release -p profiler-ui; else cargo build -q -p profiler-ui; fi
BIN=target/$PROFILE/wavescope
export XDG_RUNTIME_DIR=$(mktemp -d)
export WAVESCOPE_CONFIG_DIR=$(mktemp -d)
for view in timeline sqtt instructions pmc; do
  xvfb-run -a -s "-screen 0 1600x1000x24" "$BIN" open "$TRACE" --screenshot "$OUT/$view.png" --view "$view" --size 1600x1000
done
ls -l "$OUT"/*.png
