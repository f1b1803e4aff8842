"""Encoding layouts (public facts from AMD's RDNA3/RDNA4/CDNA3 ISA documents).

Each family: fixed bits, the opcode field and the operand fields. Field = (name, word, lo, width, probe value).
Probe values are distinct register numbers so the generator can tell which printed operand came from which field.
"""

V = 256  # 9-bit source operand: VGPRs start at 256

GFX11 = {
    # name: (base words, (word, lo, width) of opcode, nops, fields)
    "SOP2": ([0x80000000], (0, 23, 7), 128, [("sdst", 0, 16, 7, 20), ("ssrc0", 0, 0, 8, 40), ("ssrc1", 0, 8, 8, 60)]),
    "SOPK": ([0xB0000000], (0, 23, 5), 32, [("sdst", 0, 16, 7, 20), ("simm16", 0, 0, 16, 0x1234)]),
    "SOP1": ([0xBE800000], (0, 8, 8), 256, [("sdst", 0, 16, 7, 20), ("ssrc0", 0, 0, 8, 40)]),
    "SOPC": ([0xBF000000], (0, 16, 7), 128, [("ssrc0", 0, 0, 8, 40), ("ssrc1", 0, 8, 8, 60)]),
    "SOPP": ([0xBF800000], (0, 16, 7), 128, [("simm16", 0, 0, 16, 0x10)]),
    "SMEM": ([0xF4000000, 0], (0, 18, 8), 256, [("sdata", 0, 6, 7, 20), ("sbase", 0, 0, 6, 20), ("soffset", 1, 25, 7, 60), ("offset", 1, 0, 21, 0x10)]),
    "VOP2": ([0x00000000], (0, 25, 6), 64, [("vdst", 0, 17, 8, 32), ("src0", 0, 0, 9, V + 64), ("vsrc1", 0, 9, 8, 96)]),
    "VOP1": ([0x7E000000], (0, 9, 8), 256, [("vdst", 0, 17, 8, 32), ("src0", 0, 0, 9, V + 64)]),
    "VOPC": ([0x7C000000], (0, 17, 8), 256, [("src0", 0, 0, 9, V + 64), ("vsrc1", 0, 9, 8, 96)]),
    "VOP3": ([0xD4000000, 0], (0, 16, 10), 1024, [("vdst", 0, 0, 8, 32), ("src0", 1, 0, 9, V + 64), ("src1", 1, 9, 9, V + 96), ("src2", 1, 18, 9, V + 128)]),
    "VOP3P": ([0xCC004000, 0x18000000], (0, 16, 7), 128, [("vdst", 0, 0, 8, 32), ("src0", 1, 0, 9, V + 64), ("src1", 1, 9, 9, V + 96), ("src2", 1, 18, 9, V + 128)]),
    "DS": ([0xD8000000, 0], (0, 18, 8), 256, [("vdst", 1, 24, 8, 32), ("addr", 1, 0, 8, 64), ("data0", 1, 8, 8, 96), ("data1", 1, 16, 8, 128)]),
    "FLAT": ([0xDC000000, 0x007C0000], (0, 18, 7), 128, [("vdst", 1, 24, 8, 32), ("addr", 1, 0, 8, 64), ("data", 1, 8, 8, 96)]),
    "SCRATCH": ([0xDC010000, 0x007C0000], (0, 18, 7), 128, [("vdst", 1, 24, 8, 32), ("addr", 1, 0, 8, 64), ("data", 1, 8, 8, 96)]),
    "GLOBAL": ([0xDC020000, 0x007C0000], (0, 18, 7), 128, [("vdst", 1, 24, 8, 32), ("addr", 1, 0, 8, 64), ("data", 1, 8, 8, 96)]),
    "MUBUF": ([0xE0000000, 0], (0, 18, 8), 256, [("vdata", 1, 8, 8, 32), ("vaddr", 1, 0, 8, 64), ("srsrc", 1, 16, 5, 5), ("soffset", 1, 24, 8, 60)]),
    "MTBUF": ([0xE8000000, 0], (0, 15, 4), 16, [("vdata", 1, 8, 8, 32), ("vaddr", 1, 0, 8, 64), ("srsrc", 1, 16, 5, 5), ("soffset", 1, 24, 8, 60)]),
    "MIMG": ([0xF0000100, 0], (0, 18, 8), 256, [("vdata", 1, 8, 8, 32), ("vaddr", 1, 0, 8, 64), ("srsrc", 1, 16, 5, 5), ("ssamp", 1, 26, 5, 10)]),
    "VINTERP": ([0xCD000000, 0], (0, 16, 7), 128, [("vdst", 0, 0, 8, 32), ("src0", 1, 0, 9, V + 64), ("src1", 1, 9, 9, V + 96), ("src2", 1, 18, 9, V + 128)]),
    "LDSDIR": ([0xCE000000], (0, 20, 2), 4, [("vdst", 0, 0, 8, 32)]),
}
# VOPD: two halves with their own opcode fields; learned separately.

# VOPD (gfx11/gfx12): dword0 src0x[8:0] vsrc1x[16:9] opy[21:17] opx[25:22]; dword1 src0y[8:0] vsrc1y[16:9]
# vdsty[23:17] (register = vdsty<<1 | !(vdstx&1)) vdstx[31:24].
VOPD_X = ([0xC8000000 | (8 << 17), 0], (0, 22, 4), 16, [("src0x", 0, 0, 9, V + 64), ("vsrc1x", 0, 9, 8, 96), ("vdstx", 1, 24, 8, 32), ("src0y", 1, 0, 9, V + 128), ("vdsty", 1, 17, 7, 24)])
VOPD_Y = ([0xC8000000 | (8 << 22), 0], (0, 17, 5), 32, [("src0x", 0, 0, 9, V + 64), ("vdstx", 1, 24, 8, 32), ("src0y", 1, 0, 9, V + 128), ("vsrc1y", 1, 9, 8, 160), ("vdsty", 1, 17, 7, 24)])

# gfx12 (RDNA4): scalar, VALU, DS, EXP, VINTERP layouts as gfx11; new 64-bit SMEM and 96-bit
# VFLAT/VGLOBAL/VSCRATCH, VBUFFER (MUBUF+MTBUF: tbuffer ops are 0x80..), VIMAGE and VSAMPLE.
# Buffer/image resource fields hold plain SGPR numbers (no *4 scaling as on gfx11).
GFX12 = {k: v for k, v in GFX11.items() if k in ("SOP2", "SOPK", "SOP1", "SOPC", "SOPP", "VOP2", "VOP1", "VOPC", "VOP3", "VOP3P", "DS", "VINTERP", "LDSDIR")}
GFX12.update({
    "SMEM": ([0xF4000000, 0], (0, 13, 8), 256, [("sdata", 0, 6, 7, 20), ("sbase", 0, 0, 6, 20), ("soffset", 1, 25, 7, 60), ("offset", 1, 0, 24, 0x10)]),
    "FLAT": ([0xEC00007C, 0, 0], (0, 14, 7), 128, [("vdst", 1, 0, 8, 32), ("addr", 2, 0, 8, 64), ("data", 1, 23, 8, 96)]),
    "SCRATCH": ([0xED00007C, 0, 0], (0, 14, 7), 128, [("vdst", 1, 0, 8, 32), ("addr", 2, 0, 8, 64), ("data", 1, 23, 8, 96)]),
    "GLOBAL": ([0xEE00007C, 0, 0], (0, 14, 7), 128, [("vdst", 1, 0, 8, 32), ("addr", 2, 0, 8, 64), ("data", 1, 23, 8, 96)]),
    "VBUFFER": ([0xC4000000, 0, 0], (0, 14, 8), 256, [("vdata", 1, 0, 8, 32), ("vaddr", 2, 0, 8, 64), ("srsrc", 1, 9, 7, 20), ("soffset", 0, 0, 7, 60)]),
    "VIMAGE": ([0xD0000000 | (1 << 22), 0, 0], (0, 14, 8), 256, [("vdata", 1, 0, 8, 32), ("vaddr", 2, 0, 8, 64), ("srsrc", 1, 9, 7, 20)]),
    "VSAMPLE": ([0xE4000000 | (1 << 22), 0, 0], (0, 14, 8), 256, [("vdata", 1, 0, 8, 32), ("vaddr", 2, 0, 8, 64), ("srsrc", 1, 9, 7, 20), ("ssamp", 1, 23, 7, 40)]),
})
# Register-number scaling of resource fields per target (gfx11 stores SGPR/4).
SCALE = {"gfx1100": {"srsrc": 4, "ssamp": 4, "sbase": 2}, "gfx1200": {"sbase": 2}}
# Image modifier bit positions: (word, lo) of dim(3 bits), dmask(4), a16(1).
IMG_BITS = {
    "MIMG": {"dim": (0, 2), "dmask": (0, 8), "a16": (0, 16)},
    "VIMAGE": {"dim": (0, 0), "dmask": (0, 22), "a16": (0, 6)},
    "VSAMPLE": {"dim": (0, 0), "dmask": (0, 22), "a16": (0, 6)},
}

# gfx950 (CDNA3/gfx9 encodings): SOP* as gfx11; SMEM with imm/soffset_en bits; VOP3 prefix 0x34,
# VOP3P (incl. MFMA) prefix 0x1A7; DS opcode at [24:17]; FLAT segments in [15:14] with saddr off = 0x7F.
GFX9 = {
    "SOP2": GFX11["SOP2"], "SOPK": GFX11["SOPK"], "SOP1": GFX11["SOP1"], "SOPC": GFX11["SOPC"], "SOPP": GFX11["SOPP"],
    "SMEM": ([0xC0020000, 0], (0, 18, 8), 256, [("sdata", 0, 6, 7, 20), ("sbase", 0, 0, 6, 20), ("offset", 1, 0, 21, 0x10)]),
    "VOP2": GFX11["VOP2"], "VOP1": GFX11["VOP1"], "VOPC": GFX11["VOPC"],
    "VOP3": ([0xD0000000, 0], (0, 16, 10), 1024, [("vdst", 0, 0, 8, 32), ("src0", 1, 0, 9, V + 64), ("src1", 1, 9, 9, V + 96), ("src2", 1, 18, 9, V + 128)]),
    "VOP3P": ([0xD3804000, 0x18000000], (0, 16, 7), 128, [("vdst", 0, 0, 8, 32), ("src0", 1, 0, 9, V + 64), ("src1", 1, 9, 9, V + 96), ("src2", 1, 18, 9, V + 128)]),
    "DS": ([0xD8000000, 0], (0, 17, 8), 256, [("vdst", 1, 24, 8, 32), ("addr", 1, 0, 8, 64), ("data0", 1, 8, 8, 96), ("data1", 1, 16, 8, 128)]),
    "FLAT": ([0xDC000000, 0], (0, 18, 7), 128, [("vdst", 1, 24, 8, 32), ("addr", 1, 0, 8, 64), ("data", 1, 8, 8, 96)]),
    "SCRATCH": ([0xDC004000, 0x007F0000], (0, 18, 7), 128, [("vdst", 1, 24, 8, 32), ("addr", 1, 0, 8, 64), ("data", 1, 8, 8, 96)]),
    "GLOBAL": ([0xDC008000, 0x007F0000], (0, 18, 7), 128, [("vdst", 1, 24, 8, 32), ("addr", 1, 0, 8, 64), ("data", 1, 8, 8, 96)]),
    "MUBUF": ([0xE0000000, 0], (0, 18, 7), 128, [("vdata", 1, 8, 8, 32), ("vaddr", 1, 0, 8, 64), ("srsrc", 1, 16, 5, 5), ("soffset", 1, 24, 8, 60)]),
}
SCALE["gfx950"] = {"srsrc": 4, "sbase": 2}
