#!/usr/bin/python3
"""Seed inputs for fuzz_npy and fuzz_pb. Usage: tensor_seeds.py NPY_DIR PB_DIR [TESTDATA_DIR]

npy: every dtype NumPy writes that vkgraph reads, and some it refuses, in formats 1.0 and 2.0.
pb:  TensorProtos of every element type in both encodings (raw_data and the typed fields),
     and a sample of the conformance cases' input and output files, a few per element type.
"""
import glob
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def npy_seeds(out):
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(7)
    arrays = {
        "f32_2x3": rng.standard_normal((2, 3)).astype("<f4"),
        "f16_4": rng.standard_normal(4).astype("<f2"),
        "i32_scalar": np.array(-5, "<i4"),
        "i64_1x0x2": np.zeros((1, 0, 2), "<i8"),
        "bool_3": np.array([True, False, True]),
        "f64_2": np.array([1.5, -2.0], "<f8"),  # refused: unsupported dtype
        "u1_2": np.array([1, 2], "u1"),  # refused
        "f32_fortran": np.asfortranarray(rng.standard_normal((2, 2)).astype("<f4")),  # refused
        "f32_big_endian": np.array([1.0, 2.0], ">f4"),  # refused
    }
    for name, a in arrays.items():
        np.save(os.path.join(out, name + ".npy"), a, allow_pickle=False)
    # Format 2.0 (a u32 header length).
    with open(os.path.join(out, "f32_v2.npy"), "wb") as f:
        np.lib.format.write_array(f, arrays["f32_2x3"], version=(2, 0))


def pb_seeds(out, testdata):
    os.makedirs(out, exist_ok=True)
    values = {
        TensorProto.FLOAT: [1.5, -2.0, 3.25, 0.0],
        TensorProto.DOUBLE: [1e300, -2.5, 0.125, 7.0],  # 1e300 is refused (beyond float32)
        TensorProto.FLOAT16: [1.0, -2.0, 0.5, 65504.0],
        TensorProto.BFLOAT16: [1.0, -2.0, 0.5, 3.0],
        TensorProto.INT8: [-128, 127, 0, 5],
        TensorProto.UINT8: [0, 255, 1, 2],
        TensorProto.INT16: [-32768, 32767, 0, 9],
        TensorProto.UINT16: [0, 65535, 3, 4],
        TensorProto.INT32: [-(2**31), 2**31 - 1, 0, 1],
        TensorProto.INT64: [-(2**63), 2**63 - 1, 0, 1],
        TensorProto.UINT32: [0, 2**32 - 1, 5, 6],
        TensorProto.UINT64: [0, 2**63 - 1, 2**64 - 1, 8],  # the last is refused
        TensorProto.BOOL: [True, False, True, True],
    }
    numpy_types = {TensorProto.FLOAT: "<f4", TensorProto.DOUBLE: "<f8", TensorProto.FLOAT16: "<f2",
                   TensorProto.INT8: "i1", TensorProto.UINT8: "u1", TensorProto.INT16: "<i2",
                   TensorProto.UINT16: "<u2", TensorProto.INT32: "<i4", TensorProto.INT64: "<i8",
                   TensorProto.UINT32: "<u4", TensorProto.UINT64: "<u8", TensorProto.BOOL: "?"}
    for dtype, vals in values.items():
        type_name = TensorProto.DataType.Name(dtype).lower()
        tensors = {"typed": helper.make_tensor("t_" + type_name, dtype, [2, 2], vals)}
        if dtype in numpy_types:
            a = np.array(vals, numpy_types[dtype]).reshape(2, 2)
            tensors["raw"] = numpy_helper.from_array(a, "r_" + type_name)
        for form, t in tensors.items():
            with open(os.path.join(out, "%s_%s.pb" % (type_name, form)), "wb") as f:
                f.write(t.SerializeToString())
    # Up to three conformance files per element type, smallest first.
    by_type = {}
    for path in sorted(glob.glob(os.path.join(testdata, "node/*/test_data_set_0/*.pb"))):
        if os.path.getsize(path) > 4096:
            continue
        t = onnx.TensorProto()
        try:
            t.ParseFromString(open(path, "rb").read())
        except Exception:
            continue  # sequences and optionals are other protos
        by_type.setdefault(t.data_type, []).append((os.path.getsize(path), path))
    for dtype, files in by_type.items():
        for _, path in sorted(files)[:3]:
            case = os.path.basename(os.path.dirname(os.path.dirname(path)))
            name = "%s_%s" % (case, os.path.basename(path))
            with open(path, "rb") as src, open(os.path.join(out, name), "wb") as dst:
                dst.write(src.read())


def main():
    npy_seeds(sys.argv[1])
    pb_seeds(sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else "/usr/share/libonnx-testdata/data")


if __name__ == "__main__":
    main()
