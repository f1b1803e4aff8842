#!/usr/bin/env python3
"""Generate traces/src/isa/tables_*.rs from LLVM's AMDGPU disassembler (llvm-mc-22).

LLVM's instruction definitions are public facts; we learn them by feeding each opcode of each
encoding family to `llvm-mc-22 --disassemble` with distinct register numbers in every operand
field, then record the mnemonic and which field prints as which operand with which width.
Run: python3 gen_tables.py  (writes ../tables_gfx11.rs etc.)
"""
import itertools, json, re, sys, os
sys.path.insert(0, os.path.dirname(__file__))
from probe import disasm_many
import families

REG = re.compile(r"^(-?\|?)(v|s|a|ttmp)(?:(\d+)|\[(\d+):(\d+)\])(\.[lh])?\|?$")

def put(words, w, lo, width, val):
    words = list(words)
    words[w] |= (val & ((1 << width) - 1)) << lo
    return words

def split_ops(text):
    if " " not in text:
        return text, [], ""
    mn, rest = text.split(" ", 1)
    parts = rest.split(", ")
    last = parts[-1]
    mods = ""
    # the last operand may carry space-separated modifiers
    if " " in last:
        last, mods = last.split(" ", 1)
        parts[-1] = last
    return mn, parts, mods

def learn_family(mcpu, fam, spec):
    base, (ow, olo, owid), nops, fields = spec
    probes = []
    idx = []
    for op in range(nops):
        w = put(base, ow, olo, owid, op)
        for k in range(len(fields), -1, -1):
            for sub in itertools.combinations(range(len(fields)), k):
                ww = w
                for fi in sub:
                    n, fw, lo, wid, val = fields[fi]
                    ww = put(ww, fw, lo, wid, val)
                probes.append(ww + [0x12345678])  # literal dword in case the op wants one
                idx.append((op, sub))
    res = disasm_many(mcpu, probes)
    best = {}
    for (op, sub), (txt, n) in zip(idx, res):
        if txt is None or op in best:
            continue
        best[op] = (sub, txt, n)
    out = {}
    for op, (sub, txt, n) in sorted(best.items()):
        mn, parts, mods = split_ops_list(txt)
        ops = []
        for p in parts:
            # an address list `[v64, v0]` is the vaddr field (its length is learned per dim)
            m = REG.match(p[1:].split(",")[0] if p.startswith("[") else p)
            f = None
            if m:
                kind = m.group(2)
                lo = int(m.group(3) or m.group(4))
                hi = int(m.group(3) or m.group(5))
                for fi in sub:
                    n_, fw, flo, fwid, val = fields[fi]
                    v = val - 256 if (n_.startswith("src") and val >= 256) else val
                    v = v * families.SCALE[mcpu].get(n_, 1)
                    if v == lo:
                        f = (n_, hi - lo + 1, kind, (m.group(6) or "")[1:])
            if f:
                ops.append(list(f))
            else:
                ops.append(["fixed", p])
        out[op] = {"mn": mn, "ops": ops, "mods": mods, "len": n, "fields": [fields[i][0] for i in sub]}
    return out

CONST_PROBES = [248, 240, 255, 193]

def learn_consts(mcpu, fam, spec, learned):
    """For each op, put the same constant in every src field and record how each operand prints."""
    base, (ow, olo, owid), nops, fields = spec
    probes, idx = [], []
    for op, info in learned.items():
        srcs = [f for f in fields if f[0].startswith("src") or f[0] == "ssrc0" or f[0] == "ssrc1"]
        srcs = [f for f in srcs if f[0] in info["fields"]]
        if not srcs:
            continue
        for c in CONST_PROBES:
            w = put(base, ow, olo, owid, int(op))
            for f in fields:
                if f[0] in info["fields"]:
                    w = put(w, f[1], f[2], f[3], c if f in srcs else f[4])
            probes.append(w + [0x12345678])
            idx.append((op, c))
    res = disasm_many(mcpu, probes)
    for (op, c), (txt, n) in zip(idx, res):
        info = learned[op]
        if txt is None:
            continue
        mn, parts, mods = split_ops(txt)
        if mn != info["mn"] or len(parts) != len(info["ops"]):
            continue
        for o, p in zip(info["ops"], parts):
            if o[0].startswith("src") or o[0] in ("ssrc0", "ssrc1"):
                o.append("%d=%s" % (c, p))


def ctype(o):
    d = dict(x.split("=", 1) for x in o[4:]) if len(o) > 4 else {}
    d = {k: v.strip("|") for k, v in d.items()}
    if d.get("248") == "0.15915494309189532":
        return "C64"
    if d.get("248") == "0x3118":
        return "C16I"
    if d.get("255") == "0x5678":
        return "C16F"
    return "C32"

def learn_sd(mcpu, spec, learned):
    """VOP3: which ops carry an SGPR carry-out (VOP3SD: sdst in [14:8])."""
    base, (ow, olo, owid), nops, fields = spec
    ops = sorted(learned, key=int)
    probes = []
    for op in ops:
        w = put(base, ow, olo, owid, int(op))
        for f in fields:
            if f[0] in learned[op]["fields"]:
                w = put(w, f[1], f[2], f[3], f[4])
        probes.append(put(w, 0, 8, 7, 20) + [0x12345678])
    for op, (txt, n) in zip(ops, disasm_many(mcpu, probes)):
        if txt is None:
            continue
        mn, parts, mods = split_ops(txt)
        m = REG.match(parts[1]) if len(parts) >= 2 else None
        if m and m.group(2) == "s" and int(m.group(3) or m.group(4)) == 20:
            # wave32 carry-out s20, wave64 s[20:21]
            width = int(m.group(3) or m.group(5)) - 20 + 1
            info = learned[op]
            if len(info["ops"]) > 1 and info["ops"][1][0] == "fixed" and REG.match(info["ops"][1][1]):
                info["ops"][1] = ["sdst", width, "s", ""]
            else:
                info["ops"].insert(1, ["sdst", width, "s", ""])

def learn_imm(mcpu, fam, spec, learned, val, fieldname):
    base, (ow, olo, owid), nops, fields = spec
    for op, info in learned.items():
        for o in info["ops"]:
            if o[0] == "fixed" and o[1] in (str(val), "0x%x" % val):
                o[:] = ["imm", "Dec" if o[1] == str(val) else "Hex"]
            elif o[0] == "fixed" and o[1] == "0x12345678":
                o[:] = ["lit"]
            elif o[0] == "fixed" and fam in ("SOPP", "SOPK") and not REG.match(o[1]) and o[1] != "null":
                o[:] = ["imm", "Special"]
        # keep only one Special entry for multi-token special forms such as sendmsg(a, b, c)
        out, seen = [], False
        for o in info["ops"]:
            if o == ["imm", "Special"]:
                if seen:
                    continue
                seen = True
            out.append(o)
        info["ops"] = out

def learn_scalar_srcs(mcpu, spec, learned):
    """VOP3 ops whose sources must be scalar (v_readlane's lane select) print a VGPR probe as `s0`:
    re-probe those with SGPRs s40/s50/s70 in src0/src1/src2."""
    base, (ow, olo, owid), nops, fields = spec
    sval = {"src0": 40, "src1": 50, "src2": 70}
    todo = [op for op, info in learned.items() if ["fixed", "s0"] in info["ops"]]
    probes = []
    for op in todo:
        w = put(base, ow, olo, owid, int(op))
        for f in fields:
            if f[0] in learned[op]["fields"]:
                w = put(w, f[1], f[2], f[3], f[4])
            elif f[0] in sval:
                w = put(w, f[1], f[2], f[3], sval[f[0]])
        probes.append(w + [0x12345678])
    for op, (txt, n) in zip(todo, disasm_many(mcpu, probes)):
        if txt is None:
            continue
        mn, parts, mods = split_ops(txt)
        info = learned[op]
        if mn != info["mn"] or len(parts) != len(info["ops"]):
            continue
        for k, (o, p) in enumerate(zip(info["ops"], parts)):
            if o != ["fixed", "s0"]:
                continue
            for fname, v in sval.items():
                m = REG.match(p)
                if m and m.group(2) == "s" and int(m.group(3) or m.group(4)) == v:
                    lo = int(m.group(3) or m.group(4))
                    hi = int(m.group(3) or m.group(5))
                    info["ops"][k] = [fname, hi - lo + 1, "s", ""]
                    if fname not in info["fields"]:
                        info["fields"].append(fname)

MIMG_DIMS = 8

def count_regs(p):
    """Registers named by an operand: `v4`, `v[4:7]` or a list `[v4, v5, v[6:8]]`."""
    if p.startswith("["):
        return sum(count_regs(x.strip()) for x in p[1:-1].split(","))
    m = REG.match(p)
    if not m:
        return 0
    lo = int(m.group(3) or m.group(4))
    hi = int(m.group(3) or m.group(5))
    return hi - lo + 1

def split_ops_list(text):
    """split_ops that keeps a bracketed register list as one operand."""
    if " " not in text:
        return text, [], ""
    mn, rest = text.split(" ", 1)
    parts, depth, cur = [], 0, ""
    i = 0
    while i < len(rest):
        c = rest[i]
        if c == "[":
            depth += 1
        elif c == "]":
            depth -= 1
        if depth == 0 and rest.startswith(", ", i):
            parts.append(cur)
            cur = ""
            i += 2
            continue
        cur += c
        i += 1
    mods = ""
    if " " in cur and not cur.startswith("["):
        cur, mods = cur.split(" ", 1)
    elif cur.startswith("[") and "] " in cur:
        k = cur.index("] ")
        cur, mods = cur[:k + 1], cur[k + 2:]
    parts.append(cur)
    return mn, parts, mods

def learn_mimg_shapes(mcpu, spec, learned, fam="MIMG"):
    """Per MIMG opcode: address register count for every dim x a16, data register count for
    dmask popcount 1..4 (LLVM derives both from the opcode's base-opcode description)."""
    base, (ow, olo, owid), nops, fields = spec
    probes, idx = [], []
    for op in sorted(learned, key=int):
        for a16 in (0, 1):
            for dim in range(MIMG_DIMS):
                w = put(base, ow, olo, owid, int(op))
                ib = families.IMG_BITS[fam]
                w = put(w, ib["dmask"][0], ib["dmask"][1], 4, 0xF)
                w = put(w, ib["dim"][0], ib["dim"][1], 3, dim)
                w = put(w, ib["a16"][0], ib["a16"][1], 1, a16)
                for f in fields:
                    if f[0] in learned[op]["fields"]:
                        w = put(w, f[1], f[2], f[3], f[4])
                probes.append(w + [0, 0, 0])
                idx.append((op, "addr", a16 * MIMG_DIMS + dim))
        for k, dm in enumerate((1, 3, 7, 15)):
            w = put(base, ow, olo, owid, int(op))
            ib = families.IMG_BITS[fam]
            w = put(w, ib["dmask"][0], ib["dmask"][1], 4, dm)
            for f in fields:
                if f[0] in learned[op]["fields"]:
                    w = put(w, f[1], f[2], f[3], f[4])
            probes.append(w + [0, 0, 0])
            idx.append((op, "data", k))
    for (op, what, k), (txt, n) in zip(idx, disasm_many(mcpu, probes)):
        info = learned[op]
        info.setdefault("addr", [0] * (2 * MIMG_DIMS))
        info.setdefault("data", [0] * 4)
        if txt is None:
            continue
        mn, parts, mods = split_ops_list(txt)
        pos = 1 if what == "addr" else 0
        if len(parts) <= pos:
            continue
        info[what][k] = count_regs(parts[pos])
        if what == "addr" and k == 0:
            info["dim"] = "dim:" in mods

def learn_mtbuf_formats(mcpu, spec, pos=(0, 19), op=0):
    """The 7-bit unified format field prints as format:[BUF_FMT_*] (or a number; default omitted)."""
    base, (ow, olo, owid), nops, fields = spec
    probes = [put(put(base, ow, olo, owid, op), pos[0], pos[1], 7, f) for f in range(128)]
    out = []
    for f, (txt, n) in zip(range(128), disasm_many(mcpu, probes)):
        m = re.search(r" (format:\S+)", txt or "")
        out.append(m.group(1) if m else "")
    return out

def rename_fixed(fam, info):
    ops = info["ops"]
    if fam == "SOP1" and any(o[0] == "fixed" and o[1].startswith("sendmsg(") for o in ops):
        # s_sendmsg_rtn: the message id is the ssrc0 field, printed as sendmsg(...)
        info["ops"] = [o for o in ops if o[0] != "fixed"] + [["imm", "Special"]]
        return
    if fam == "GLOBAL" and ops and ops[-1] == ["fixed", "off"]:
        ops[-1] = ["saddr", 2, "s", ""]
    if fam == "SCRATCH":
        offs = [i for i, o in enumerate(ops) if o == ["fixed", "off"]]
        if len(offs) == 2:
            ops[offs[0]] = ["addr", 1, "v", ""]
            ops[offs[1]] = ["saddr", 1, "s", ""]
    if fam in ("MUBUF", "MTBUF", "VBUFFER"):
        for i, o in enumerate(ops):
            if o == ["fixed", "off"]:
                ops[i] = ["vaddr", 1, "v", ""]
    if fam == "MIMG":
        for i, o in enumerate(ops):
            if o == ["fixed", "s[0:3]"]:
                ops[i] = ["ssamp", 4, "s", ""]

def learn_vopd(mcpu, spec, half):
    learned = learn_family(mcpu, "VOPD", spec)
    out = {}
    for op, info in learned.items():
        txt = info["mn"] + " " + ", ".join(o[1] if o[0] == "fixed" else "?" for o in info["ops"])
        # re-run split on the half we want
    return learned

def vopd_half(mcpu, spec, which):
    base, (ow, olo, owid), nops, fields = spec
    probes, idx = [], []
    for op in range(nops):
        for drop in ((), ("vsrc1x", "vsrc1y")):
            w = put(base, ow, olo, owid, op)
            for f in fields:
                if f[0] not in drop:
                    w = put(w, f[1], f[2], f[3], f[4])
            probes.append(w + [0x12345678])
            idx.append(op)
    out = {}
    for op, (txt, n) in zip(idx, disasm_many(mcpu, probes)):
        if txt is None or "::" not in txt or op in out:
            continue
        h = txt.split(" :: ")[which]
        mn, parts, mods = split_ops(h)
        ops = []
        for p in parts:
            m = REG.match(p)
            f = None
            if m:
                lo = int(m.group(3) or m.group(4))
                hi = int(m.group(3) or m.group(5))
                names = {64: "src0x", 96: "vsrc1x", 32: "vdstx", 128: "src0y", 160: "vsrc1y", 49: "vdsty"}
                if lo in names:
                    f = [names[lo], hi - lo + 1, m.group(2), ""]
            if f:
                ops.append(f)
            elif p == "0x12345678":
                ops.append(["lit"])
            else:
                ops.append(["fixed", p])
        out[op] = {"mn": mn, "ops": ops, "mods": mods, "len": n, "fields": []}
    return out

FIELD_ENUM = {
    "sdst": "Sdst", "ssrc0": "Ssrc0", "ssrc1": "Ssrc1", "sdata": "Sdata", "sbase": "Sbase", "soffset": "Soffset",
    "vdst": "Vdst", "src0": "Src0", "src1": "Src1", "src2": "Src2", "vsrc1": "Vsrc1", "addr": "Addr",
    "data0": "Data0", "data1": "Data1", "data": "Data", "saddr": "Saddr", "vdata": "Vdata", "vaddr": "Vaddr",
    "srsrc": "Srsrc", "ssamp": "Ssamp", "src0x": "Src0", "vsrc1x": "Vsrc1", "vdstx": "Vdst", "src0y": "Src0",
    "vsrc1y": "Vsrc1", "vdsty": "Vdst",
}

def rust_op(o):
    if o[0] == "fixed":
        return 'O::Fixed("%s")' % o[1]
    if o[0] == "imm":
        return "O::Imm(ImmFmt::%s)" % o[1]
    if o[0] == "lit":
        return "O::Lit"
    fld = FIELD_ENUM[o[0]]
    kind = {"s": "S", "v": "V", "a": "A", "ttmp": "S"}[o[2]]
    if o[0] in ("src0", "src1", "src2", "ssrc0", "ssrc1", "src0x", "src0y"):
        return "O::Src(F::%s, %d, %s, C::%s)" % (fld, o[1], "true" if o[3] else "false", ctype(o))
    return "O::Reg(F::%s, %d, K::%s, %s)" % (fld, o[1], kind, "true" if o[3] else "false")

def emit(mcpu, fams, data, path, extra=""):
    img = any(f in data for f in ("MIMG", "VIMAGE", "VSAMPLE"))
    out = ["// @generated by gen/gen_tables.py from llvm-objdump-22 (%s); do not edit." % mcpu,
           "use super::table::{CType as C, Field as F, %sImmFmt, OpInfo, Opnd as O, RegKind as K};" % ("ImgShape, " if img else ""), ""]
    for fam, ops in data.items():
        if fam == "MTBUF_FMT":
            out.append("pub static MTBUF_FMT: [&str; %d] = [%s];" % (len(ops), ", ".join('"%s"' % f for f in ops)))
            out.append("")
            continue
        if fam in ("MIMG", "VIMAGE", "VSAMPLE"):
            n = max([int(k) for k in ops] + [0]) + 1
            rows = []
            for i in range(n):
                info = ops.get(str(i))
                if not info:
                    rows.append("    ImgShape { addr: [0; 16], data: [0; 4], dim: false },")
                else:
                    rows.append("    ImgShape { addr: %s, data: %s, dim: %s }," % (info["addr"], info["data"], "true" if info.get("dim") else "false"))
            out.append("pub static %s_SHAPE: [ImgShape; %d] = [" % (fam, n))
            out.extend(rows)
            out.append("];")
            out.append("")
        n = max([int(k) for k in ops] + [0]) + 1
        out.append("pub static %s: [Option<OpInfo>; %d] = [" % (fam, n))
        for i in range(n):
            info = ops.get(str(i)) or ops.get(i)
            if not info:
                out.append("    None,")
                continue
            out.append('    Some(OpInfo { name: "%s", ops: &[%s] }),' % (info["mn"], ", ".join(rust_op(o) for o in info["ops"])))
        out.append("];")
        out.append("")
    open(path, "w").write("\n".join(out) + extra)

def family_owner(fams, fam, op):
    """Drop opcode slots that really belong to a more specific family (SOP2 op 125 = SOP1's prefix, ...)."""
    base, (ow, olo, owid), nops, fields = fams[fam]
    w = base[0] | (op << olo)
    return fam, w

def main():
    which = sys.argv[1:] or ["gfx1100"]
    here = os.path.dirname(os.path.abspath(__file__))
    for mcpu in which:
        fams = {"gfx1100": families.GFX11, "gfx1200": families.GFX12, "gfx950": families.GFX9}[mcpu]
        data = {}
        for fam, spec in fams.items():
            d = learn_family(mcpu, fam, spec)
            if mcpu == "gfx950" and fam == "SMEM":
                # opcodes without an offset operand (s_memtime, ...) decode only with imm = 0
                base, opf, nops, fields = spec
                d0 = learn_family(mcpu, fam, ([base[0] & ~(1 << 17)] + base[1:], opf, nops, fields[:2]))
                for k, v in d0.items():
                    d.setdefault(k, v)
            if fam == "VOP3":
                learn_sd(mcpu, spec, d)
                learn_scalar_srcs(mcpu, spec, d)
            if fam in ("MIMG", "VIMAGE", "VSAMPLE"):
                learn_mimg_shapes(mcpu, spec, d, fam)
            learn_consts(mcpu, fam, spec, d)
            learn_imm(mcpu, fam, spec, d, 0x10 if fam == "SOPP" else 0x1234, "simm16")
            for info in d.values():
                rename_fixed(fam, info)
            data[fam] = {str(k): v for k, v in d.items()}
            print(mcpu, fam, len(d), file=sys.stderr)
        if mcpu != "gfx950":
            data["VOPDX"] = {str(k): v for k, v in vopd_half(mcpu, families.VOPD_X, 0).items()}
            data["VOPDY"] = {str(k): v for k, v in vopd_half(mcpu, families.VOPD_Y, 1).items()}
        # VOP2/SOP2/SOPK slots whose top bits select another family
        for fam, lim in (("SOP2", 125), ("SOPK", 29), ("VOP2", 62)):
            data[fam] = {k: v for k, v in data[fam].items() if int(k) < lim}
        if mcpu == "gfx950":
            pass  # gfx9 MTBUF (dfmt/nfmt) is not decoded yet
        elif "MTBUF" in fams:
            data["MTBUF_FMT"] = learn_mtbuf_formats(mcpu, fams["MTBUF"])
        else:
            data["MTBUF_FMT"] = learn_mtbuf_formats(mcpu, fams["VBUFFER"], (1, 23), 0x80)
        json.dump(data, open(os.path.join(here, "learned_%s.json" % mcpu), "w"), indent=0)
        tag = {"gfx1100": "gfx11", "gfx1200": "gfx12", "gfx950": "gfx9"}[mcpu]
        emit(mcpu, fams, data, os.path.join(here, "..", "tables_%s.rs" % tag))

if __name__ == "__main__":
    main()
