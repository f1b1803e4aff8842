#!/bin/sh
# `wavescope stats --json` over every shared capture, one sha256 per capture, for comparing two
# builds (issue #23: the pipeline's results must not change).
#   scripts/stats-fingerprint.sh OLD_BIN NEW_BIN   -> prints both and exits 1 if any differs
#   scripts/stats-fingerprint.sh BIN               -> prints one
set -u
shared=${WAVESCOPE_SHARED:-$(dirname "$0")/../../shared}
fp() {
    for d in "$shared"/traces/*/*/; do
        f="$d/profile.pkl"
        [ -f "$f" ] || continue
        h=$("$1" stats --json "$f" 2>&1 | sha256sum | cut -c1-16)
        echo "$(basename "$(dirname "$d")")/$(basename "$d") $h"
    done
}
if [ $# -eq 1 ]; then fp "$1"; exit 0; fi
fp "$1" >/tmp/fp_old.$$
fp "$2" >/tmp/fp_new.$$
if diff /tmp/fp_old.$$ /tmp/fp_new.$$; then
    echo "stats --json identical on $(wc -l </tmp/fp_old.$$) captures"; rc=0
else
    echo "stats --json DIFFERS"; rc=1
fi
rm -f /tmp/fp_old.$$ /tmp/fp_new.$$
exit $rc
