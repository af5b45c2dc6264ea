#!/usr/bin/python3
"""Python overhead and IO-binding speed-up, measured on whatever device vkgraph picks
(lavapipe with VK_DRIVER_FILES=/usr/share/vulkan/icd.d/lvp_icd.x86_64.json).

1. session.run() in Python against Session::run timed in C++ on the same session and input
   (InferenceSession._sess.time_native_runs), in alternating blocks so that load on the
   machine hits both alike: the bundled digits model at batch 1 and 100.
2. run() against run_with_iobinding() on page-aligned arrays (zero-copy host import) for a
   Relu over a large input.

Usage: PYTHONPATH=build/python /usr/bin/python3 tools/bench_python.py [--rounds N]
"""

import argparse
import pathlib
import statistics
import sys
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "build" / "python"))
import vkgraph  # noqa: E402
from onnx import TensorProto, helper  # noqa: E402


def python_runs(session, feed, runs):
    out = []
    for _ in range(runs):
        t = time.perf_counter()
        session.run(None, feed)
        out.append(time.perf_counter() - t)
    return out


def overhead(session, feed, runs):
    """Medians of C++ and Python run times, and of their paired differences: runs alternate
    one by one, so that load from other processes shifts both alike."""
    session.run(None, feed)  # build and record
    native, python, diff = [], [], []
    for _ in range(runs):
        (n,) = session._sess.time_native_runs(feed, 1)
        (p,) = python_runs(session, feed, 1)
        native.append(n)
        python.append(p)
        diff.append(p - n)
    return (statistics.median(native) * 1e3, statistics.median(python) * 1e3,
            statistics.median(diff) * 1e3)


def relu_model(n):
    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"])], "relu",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [n])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [n])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]).SerializeToString()


def io_binding(n, rounds, runs):
    session = vkgraph.InferenceSession(relu_model(n))
    x = vkgraph.empty((n,), np.float32)
    x[...] = np.random.default_rng(0).standard_normal(n)
    binding = session.io_binding()
    binding.bind_cpu_input("x", x)
    binding.bind_output("y")
    plain, bound = [], []
    session.run(None, {"x": x})
    session.run_with_iobinding(binding)
    assert binding.last_paths == {"x": "imported", "y": "imported"}, binding.last_paths
    for _ in range(rounds):
        plain += python_runs(session, {"x": x}, runs)  # rebuilds for staged I/O once
        session.run_with_iobinding(binding)  # rebuild for bound I/O, then time replays
        for _ in range(runs):
            t = time.perf_counter()
            session.run_with_iobinding(binding)
            bound.append(time.perf_counter() - t)
    assert np.array_equal(binding.get_outputs()[0], np.maximum(x, 0))
    return statistics.median(plain) * 1e3, statistics.median(bound) * 1e3


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    images = np.load(ROOT / "models" / "digits_holdout_input.npy")
    print(f"device: {vkgraph.InferenceSession(str(ROOT / 'models' / 'digits.onnx')).get_device_name()}")
    print("| model | C++ Session::run p50 | Python session.run p50 | overhead (paired p50) |")
    print("| --- | --- | --- | --- |")
    for batch, runs in ((1, 100 * args.rounds), (100, 10 * args.rounds)):
        session = vkgraph.InferenceSession(str(ROOT / "models" / "digits.onnx"))
        n, p, d = overhead(session, {"input": images[:batch]}, runs)
        print(f"| digits, batch {batch} | {n:.3f} ms | {p:.3f} ms | "
              f"{d * 1e3:+.0f} us ({d / n * 100:+.1f}%) |")
    n = 16 << 20  # 64 MiB in, 64 MiB out
    plain, bound = io_binding(n, args.rounds, 5)
    print(f"\nRelu over {n * 4 >> 20} MiB float32: run() p50 {plain:.1f} ms, "
          f"run_with_iobinding() p50 {bound:.1f} ms (zero-copy, imported), "
          f"{plain / bound:.2f}x")


if __name__ == "__main__":
    main()
