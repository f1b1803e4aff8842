"""Disassemble many encodings at once with llvm-objdump-22 (the tool our output is compared with).

Each probe is written at a known offset of a .text section (assembled from .long directives by
llvm-mc-22), followed by two s_nop words so that a mis-sized decode cannot swallow the next probe.
"""
import os, re, subprocess, tempfile

PAD = 0xBF800000  # s_nop 0 (gfx9..gfx12)

def disasm_many(mcpu, encs):
    """Like _disasm_many, but survives llvm-objdump crashing on some encoding by bisecting."""
    try:
        return _disasm_many(mcpu, encs)
    except subprocess.CalledProcessError:
        if len(encs) == 1:
            return [(None, 0)]
        h = len(encs) // 2
        return disasm_many(mcpu, encs[:h]) + disasm_many(mcpu, encs[h:])

def _disasm_many(mcpu, encs):
    """encs: list of word lists. Returns, per encoding, (text, nbytes) of the instruction decoded at
    its first byte, or (None, 0) when LLVM rejects it (`.long`/invalid)."""
    lines = [".text"]
    starts = []
    off = 0
    for e in encs:
        starts.append(off)
        ws = list(e) + [PAD, PAD]
        lines.append(".long " + ",".join("0x%08x" % (w & 0xFFFFFFFF) for w in ws))
        off += 4 * len(ws)
    with tempfile.TemporaryDirectory() as d:
        s, o = os.path.join(d, "p.s"), os.path.join(d, "p.o")
        open(s, "w").write("\n".join(lines) + "\n")
        subprocess.run(["llvm-mc-22", "-triple=amdgcn-amd-amdhsa", "-mcpu=" + mcpu, "-filetype=obj", s, "-o", o],
                       check=True)
        out = subprocess.run(["llvm-objdump-22", "-d", "--mcpu=" + mcpu, o], capture_output=True, text=True,
                             check=True).stdout
    got = {}
    for l in out.splitlines():
        m = re.match(r"^\s+(.*?)\s*// ([0-9A-F]{12}): ((?:[0-9A-F]{8} ?)+)", l)
        if not m:
            continue
        txt, addr, raw = m.group(1), int(m.group(2), 16), m.group(3).split()
        got[addr] = (txt, 4 * len(raw))
    res = []
    for st in starts:
        t = got.get(st)
        if t is None or t[0].startswith(".long") or "/*" in t[0]:
            res.append((None, 0))
        else:
            res.append(t)
    return res
