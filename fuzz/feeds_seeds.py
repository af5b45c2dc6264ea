#!/usr/bin/python3
"""Seed inputs for fuzz_feeds, written in the byte layout that fuzz_feeds.cpp reads through
libFuzzer's FuzzedDataProvider: integers are taken from the end of the input (the first one
read is the last byte; a k-byte integer is big-endian in reading order), byte strings from the
front. The calls below follow fuzz_feeds.cpp's reads in order; when that file changes, change
these with it (a seed that no longer decodes as meant is still a valid input, only a weaker
seed). Usage: feeds_seeds.py OUT_DIR
"""
import os
import struct
import sys

ARENA = 1 << 16
DTYPES = {"f32": (0, 4), "f16": (1, 2), "i32": (2, 4), "i64": (3, 8), "bool": (4, 1)}


class Writer:
    def __init__(self):
        self.front = bytearray()
        self.back = bytearray()  # in reading order; stored reversed at the end

    def int_in_range(self, lo, hi, value, bits=64):
        rng = (hi - lo) % (1 << 64)
        width = 0
        while width < bits and (rng >> width) > 0:
            width += 8
        result = (value - lo) % (1 << 64)
        for i in reversed(range(width // 8)):
            self.back.append((result >> (8 * i)) & 0xFF)

    def boolean(self, value):
        self.int_in_range(0, 255, 1 if value else 0, 8)

    def data(self, raw):
        self.front += raw

    def bytes(self):
        return bytes(self.front) + bytes(reversed(self.back))


def exact_bytes(dtype, shape):
    n = 1
    for d in shape:
        n *= d
    return n * DTYPES[dtype][1]


def name(w, known, which):
    w.int_in_range(0, len(known), known.index(which))


def shape(w, dims):
    w.int_in_range(0, 4, len(dims))
    for d in dims:
        w.boolean(True)  # a small dim, -1..12
        w.int_in_range(-1, 12, d, 64)


def staged_feed(w, which, dtype, dims, payload):
    name(w, ["x", "y", "shape"], which)
    w.int_in_range(0, 7, DTYPES[dtype][0], 8)
    shape(w, dims)
    w.boolean(True)  # the exact byte count
    assert len(payload) == exact_bytes(dtype, dims)
    w.data(payload)


def staged(feeds, outputs=()):
    w = Writer()
    w.int_in_range(0, 2, 0, 32)
    w.int_in_range(0, 4, len(feeds))
    for f in feeds:
        staged_feed(w, *f)
    w.int_in_range(0, 2, len(outputs))
    for o in outputs:
        name(w, ["sum", "out"], o)
    return w.bytes()


def binding(w, known, which, dtype, dims, page, head=b""):
    name(w, known, which)
    w.int_in_range(0, 7, DTYPES[dtype][0], 8)
    shape(w, dims)
    w.int_in_range(0, 2, 0, 32)  # page-aligned
    w.int_in_range(0, ARENA // 4096 - 1, page)
    w.boolean(True)  # the exact byte count
    w.int_in_range(0, 15, 1, 32)  # not null
    w.int_in_range(0, 32, len(head))
    w.data(head)


def bound(inputs, outputs, prepare_only, seed=12345):
    w = Writer()
    w.int_in_range(0, 2, 1 if prepare_only else 2, 32)
    w.int_in_range(0, 2**32 - 1, seed, 32)
    w.int_in_range(0, 4, len(inputs))
    for b in inputs:
        binding(w, ["x", "y", "shape"], *b)
    if not prepare_only:
        w.int_in_range(0, 3, len(outputs))
        for b in outputs:
            binding(w, ["sum", "out"], *b)
    return w.bytes()


def floats(*v):
    return struct.pack("<%df" % len(v), *v)


def int64s(*v):
    return struct.pack("<%dq" % len(v), *v)


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    x8 = floats(1, -2, 3.5, -4, 0.25, 6, -7, 8)
    y4 = floats(0.5, -1, 2, float("nan"))
    seeds = {
        "staged_all_outputs": staged([("x", "f32", [2, 4], x8), ("y", "f32", [4], y4),
                                      ("shape", "i64", [2], int64s(4, 2))]),
        "staged_broadcast_one": staged([("x", "f32", [2, 4], x8), ("y", "f32", [1], floats(3)),
                                        ("shape", "i64", [2], int64s(-1, 2))], ["out"]),
        "staged_empty_batch": staged([("x", "f32", [0, 4], b""), ("y", "f32", [4], y4),
                                      ("shape", "i64", [2], int64s(0, 4))], ["sum", "out"]),
        "staged_wrong_dtype": staged([("x", "i32", [2, 4], x8), ("y", "f32", [4], y4),
                                      ("shape", "i64", [2], int64s(4, 2))]),
        "staged_missing_input": staged([("x", "f32", [2, 4], x8)]),
    }
    ins = [("x", "f32", [3, 4], 0), ("y", "f32", [4], 1), ("shape", "i64", [2], 2, int64s(3, 4))]
    outs = [("sum", "f32", [3, 4], 4), ("out", "f32", [3, 4], 5)]
    seeds["prepare_bound"] = bound(ins, [], True)
    seeds["run_bound"] = bound(ins, outs, False)
    seeds["run_bound_unbound_output"] = bound(ins, outs[:1], False)
    for name_, data in seeds.items():
        with open(os.path.join(out, name_), "wb") as f:
            f.write(data)


if __name__ == "__main__":
    main()
