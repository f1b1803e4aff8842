#!/usr/bin/env python3
"""Writes the code-object regression inputs of README.md by patching one valid code object
(runtime/tests/data/gfx1100_E_3.elf, built by clang for gfx1100). Run from this directory."""
import struct
from pathlib import Path

BASE = Path(__file__).resolve().parents[4] / "runtime/tests/data/gfx1100_E_3.elf"
SRC = BASE.read_bytes()
SHOFF = struct.unpack_from("<Q", SRC, 0x28)[0]
SHNUM, SHSTRNDX = struct.unpack_from("<HH", SRC, 0x3C)
STR = struct.unpack_from("<Q", SRC, SHOFF + SHSTRNDX * 64 + 0x18)[0]


def sec(name):
    for i in range(SHNUM):
        h = SHOFF + i * 64
        n = struct.unpack_from("<I", SRC, h)[0]
        if SRC[STR + n:SRC.index(b"\0", STR + n)] == name:
            return h
    raise KeyError(name)


def patch(edits):
    b = bytearray(SRC)
    for off, fmt, v in edits:
        struct.pack_into(fmt, b, off, v)
    return bytes(b)


MAX = 1 << 64
RODATA, TEXT, DYNSYM, DYNSTR = sec(b".rodata"), sec(b".text"), sec(b".dynsym"), sec(b".dynstr")
ro_addr = struct.unpack_from("<Q", SRC, RODATA + 0x10)[0]
ro_off = struct.unpack_from("<Q", SRC, RODATA + 0x18)[0]
text_addr = struct.unpack_from("<Q", SRC, TEXT + 0x10)[0]
dynsym_off = struct.unpack_from("<Q", SRC, DYNSYM + 0x18)[0]

CASES = {
    # e_shoff chosen so the section-name table's header sits 16 bytes below 2^64 (the checked
    # part): its sh_offset field (+0x18) wraps.
    "shoff_wraps.elf": [(0x28, "<Q", MAX - 0x10 - SHSTRNDX * 64)],
    # The header 32 bytes below 2^64: the field's address fits, its 8-byte read (+8) wraps.
    "shstrtab_read_wraps.elf": [(0x28, "<Q", MAX - 0x20 - SHSTRNDX * 64)],
    # .rodata (PROGBITS) sh_offset near 2^64: offset + size wraps when the image is copied.
    "progbits_offset_wraps.elf": [(RODATA + 0x18, "<Q", MAX - 0x10)],
    # .rodata made NOBITS at an address near 2^64: descriptor address + 64 wraps, and the
    # address read as i64 is negative.
    "rodata_addr_wraps.elf": [(RODATA + 4, "<I", 8), (RODATA + 0x10, "<Q", MAX - 0x20)],
    # .dynsym sh_offset near 2^64: offset + size wraps.
    "dynsym_range_wraps.elf": [(DYNSYM + 0x18, "<Q", MAX - 0x10)],
    # .dynstr sh_offset near 2^64 and the first symbol's st_name chosen so offset + name wraps
    # to the kernel descriptor's bytes (read as the kernel's name).
    "dynstr_name_wraps.elf": [
        (DYNSTR + 0x18, "<Q", MAX - 0x100),
        (dynsym_off, "<I", 0x100 + ro_off),
    ],
    # .text moved to just under 1 GiB: a 4 KiB file asks for a 1 GiB image.
    "image_1gib.elf": [(TEXT + 0x10, "<Q", (1 << 30) - 0x1000)],
    # kernel_code_entry_byte_offset 1 MiB past .text (256-aligned): accepted, the dispatch would
    # start outside the code.
    "entry_outside_image.elf": [(ro_off + 16, "<q", text_addr + (1 << 20) - ro_addr)],
}

for name, edits in CASES.items():
    Path(name).write_bytes(patch(edits))
