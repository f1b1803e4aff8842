#!/usr/bin/env python3
"""Writes the example workloads' inputs and expected outputs (data/*.npy) without NumPy:
a, b: 1000 floats; c = a + b and d = c * 0.5, each rounded to f32 as the GPU does (an f32 sum
or product is exact in f64, so rounding the f64 result once gives the f32 operation's result).
"""
import os
import random
import struct

N = 1000


def f32(x):
    return struct.unpack("<f", struct.pack("<f", x))[0]


def write_npy(path, values):
    header = "{'descr': '<f4', 'fortran_order': False, 'shape': (%d,), }" % len(values)
    used = 6 + 4 + len(header) + 1
    header += " " * (-used % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode())
        f.write(struct.pack("<%df" % len(values), *values))


rng = random.Random(19)
a = [f32(rng.uniform(-100, 100)) for _ in range(N)]
b = [f32(rng.uniform(-100, 100)) for _ in range(N)]
c = [f32(x + y) for x, y in zip(a, b)]
d = [f32(x * 0.5) for x in c]
here = os.path.dirname(os.path.abspath(__file__))
for name, v in [("a", a), ("b", b), ("c", c), ("d", d)]:
    write_npy(os.path.join(here, "data", name + ".npy"), v)
