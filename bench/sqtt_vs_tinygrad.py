#!/usr/bin/env python3
"""SQTT decoding speed, wavescope against tinygrad's reference decoder, in one run.

Both decode the same real blobs (every ../shared/traces/**/*.sqtt, or the files given) into
individual packets with their times; the figure compared is MB of blob per CPU second.

    pip install tinygrad==0.14.0
    python3 bench/sqtt_vs_tinygrad.py [BLOB...]
"""
import glob, json, os, subprocess, sys, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

def main():
    blobs = sys.argv[1:] or sorted(glob.glob(os.path.join(ROOT, "..", "shared", "traces", "*", "*", "*.sqtt")))
    if not blobs:
        sys.exit("no blobs found (../shared/traces)")
    try:
        from tinygrad.renderer.amd.sqtt import decode
    except ImportError:
        sys.exit("tinygrad is not installed: pip install tinygrad==0.14.0")
    data = [open(b, "rb").read() for b in blobs]
    total = sum(map(len, data))

    # tinygrad: at least 2 CPU seconds.
    reps, packets, t0 = 0, 0, time.process_time()
    while time.process_time() - t0 < 2.0:
        for d in data:
            for _ in decode(d):
                packets += 1
        reps += 1
    tg_s = time.process_time() - t0
    tg_mbs = total * reps / tg_s / 1e6
    tg_packets = packets // reps

    subprocess.run(["cargo", "build", "--release", "-q", "-p", "traces", "--example", "sqtt_speed"], cwd=ROOT, check=True)
    target = os.environ.get("CARGO_TARGET_DIR") or os.path.join(ROOT, "target")
    exe = os.path.join(target, "release", "examples", "sqtt_speed")
    # Enough repetitions for a few CPU seconds.
    ours_reps = max(1, int(3.0 * 300e6 / total))
    results = {}
    for mode, extra in (("per_packet", ["--per-packet"]), ("runs", [])):
        out = subprocess.run([exe, "--repeat", str(ours_reps), *extra, *blobs], capture_output=True, text=True, check=True)
        results[mode] = json.loads(out.stdout)
    ours_packets = results["per_packet"]["packets"] // ours_reps
    if ours_packets != tg_packets:
        print(f"warning: packet counts differ: wavescope {ours_packets}, tinygrad {tg_packets}")
    print(f"blobs: {len(blobs)} files, {total} bytes, {tg_packets} packets")
    print(f"tinygrad 0.14.0 decode():          {tg_mbs:10.2f} MB/s (CPU)")
    for mode, r in results.items():
        mbs = r["mb_per_s_cpu"]
        print(f"wavescope Decoder ({mode:10}):   {mbs:10.2f} MB/s (CPU)   ratio {mbs / tg_mbs:8.1f}x")

if __name__ == "__main__":
    main()
