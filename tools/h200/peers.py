#!/usr/bin/env python3
"""Peer baselines for vkgraph: PyTorch CUDA eager, PyTorch CUDA-graph replay and onnxruntime
CPU on the models that models/export_zoo.py exported, plus the device's ceilings (GEMM,
elementwise add, device copy).

Every model is rebuilt with export_zoo.make_model from the seed recorded in the zoo's
manifest.json, so the timed module is the exported one; its output is checked against the
saved NAME_output.npy. fp32 with TF32 off; then each model again in fp16 (a half copy, half
input: eager and CUDA-graph replay, output checked against the same fp32 reference), beside
vkgraph's --fp16 mode.

usage: peers.py ZOO_DIR OUT_JSON [--models a,b] [--cpu-smoke]

--cpu-smoke runs the same code on the CPU with tiny iteration counts and sizes (no CUDA
graph), to test the script on a machine without a GPU.
"""

import argparse
import copy
import json
import os
import platform
import sys
import time
import traceback

import numpy as np
import torch

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "models"))
import export_zoo  # noqa: E402  (needs the path above)


# --------------------------------------------------------------------------
# Timing
# --------------------------------------------------------------------------
class Clock:
    """Host-side and device-side timing for one torch device."""

    def __init__(self, device):
        self.cuda = device.type == "cuda"

    def sync(self):
        if self.cuda:
            torch.cuda.synchronize()

    def host_ms(self, fn, warmup, iters):
        """Per-call wall time, synchronizing after every call (what a caller waits)."""
        for _ in range(warmup):
            fn()
        self.sync()
        times = []
        for _ in range(iters):
            t0 = time.perf_counter()
            fn()
            self.sync()
            times.append((time.perf_counter() - t0) * 1e3)
        return summarize(times)

    def device_ms(self, fn, warmup, iters, calls_per_sample=1):
        """Device time per call: CUDA events around calls_per_sample back-to-back calls."""
        for _ in range(warmup):
            fn()
        self.sync()
        times = []
        for _ in range(iters):
            if self.cuda:
                start = torch.cuda.Event(enable_timing=True)
                end = torch.cuda.Event(enable_timing=True)
                start.record()
                for _ in range(calls_per_sample):
                    fn()
                end.record()
                end.synchronize()
                times.append(start.elapsed_time(end) / calls_per_sample)
            else:
                t0 = time.perf_counter()
                for _ in range(calls_per_sample):
                    fn()
                times.append((time.perf_counter() - t0) * 1e3 / calls_per_sample)
        return summarize(times)


def summarize(times_ms):
    t = np.asarray(times_ms, dtype=np.float64)
    return {
        "n": int(t.size),
        "p50_ms": float(np.percentile(t, 50)),
        "p90_ms": float(np.percentile(t, 90)),
        "min_ms": float(t.min()),
        "mean_ms": float(t.mean()),
    }


def diff_stats(got, ref):
    got = np.asarray(got, dtype=np.float64)
    ref = np.asarray(ref, dtype=np.float64)
    if got.shape != ref.shape:
        return {"error": f"shape {list(got.shape)} != reference {list(ref.shape)}"}
    d = np.abs(got - ref)
    ref_max = float(np.abs(ref).max())
    ref_norm = float(np.linalg.norm(ref))
    return {
        "max_abs_diff": float(d.max()),
        "max_abs_over_ref_absmax": float(d.max() / ref_max) if ref_max else float("inf"),
        "rel_l2": float(np.linalg.norm(got - ref) / ref_norm) if ref_norm else float("inf"),
        "nan": bool(np.isnan(got).any()),
    }


# --------------------------------------------------------------------------
# Models
# --------------------------------------------------------------------------
def bench_torch_model(res, name, entry, zoo, device, clock, cfg, keep):
    """Fills res as it goes, so a failure late on keeps the numbers already taken. Leaves the
    fp32 module on the device, its input and the reference in keep for bench_torch_fp16."""
    res["input_shape"] = entry.get("input_shape")
    ref = np.load(os.path.join(zoo, f"{name}_output.npy"))
    saved_x = np.load(os.path.join(zoo, f"{name}_input.npy"))
    model, x = export_zoo.make_model(name, entry.get("seed", 0), entry.get("raw_init", False))
    if x.shape != saved_x.shape or not np.array_equal(x, saved_x):
        raise RuntimeError("rebuilt input differs from the saved NAME_input.npy")
    with torch.no_grad():
        # Same module on the CPU first: proves the rebuild matches the export bit for bit.
        res["rebuild_cpu"] = diff_stats(model(torch.from_numpy(x)).numpy(), ref)
        model = model.to(device)
        xd = torch.from_numpy(x).to(device)
        keep.update(model=model, xd=xd, ref=ref)
        res["verify"] = diff_stats(model(xd).cpu().numpy(), ref)

        def forward():
            model(xd)

        res["eager"] = clock.host_ms(forward, cfg.warmup, cfg.iters)
        res["eager_back_to_back"] = clock.device_ms(forward, 2, cfg.b2b_samples, cfg.b2b_calls)
        if clock.cuda:
            bench_cuda_graph(res, model, xd, ref, clock, cfg)


def bench_torch_fp16(res, keep, clock, cfg):
    """PyTorch's own fp16: a half copy of the fp32 module (the fp32 one stays as it is) on a
    half input; eager and CUDA-graph host times as for fp32, and the output, cast to float32,
    against the fp32 reference. Keys: eager_fp16, cuda_graph_fp16, verify_fp16,
    cuda_graph_verify_fp16."""
    if "model" not in keep:
        return  # the fp32 stage failed before the model was built; its error says why
    with torch.no_grad():
        model = copy.deepcopy(keep["model"]).half()
        xh = keep["xd"].half()
        res["verify_fp16"] = diff_stats(model(xh).float().cpu().numpy(), keep["ref"])

        def forward():
            model(xh)

        res["eager_fp16"] = clock.host_ms(forward, cfg.warmup, cfg.iters)
        if clock.cuda:
            bench_cuda_graph(res, model, xh, keep["ref"], clock, cfg, suffix="_fp16",
                             back_to_back=False)


def bench_cuda_graph(res, model, xd, ref, clock, cfg, suffix="", back_to_back=True):
    static_x = xd.clone()
    # Warm up on a side stream before capture, as torch.cuda.graphs requires.
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            model(static_x)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        static_y = model(static_x)
    graph.replay()
    torch.cuda.synchronize()
    res["cuda_graph_verify" + suffix] = diff_stats(static_y.float().cpu().numpy(), ref)
    res["cuda_graph" + suffix] = clock.host_ms(graph.replay, cfg.warmup, cfg.iters)
    if back_to_back:
        res["cuda_graph_back_to_back" + suffix] = clock.device_ms(graph.replay, 2,
                                                                  cfg.b2b_samples, cfg.b2b_calls)


def bench_ort(name, zoo, cfg):
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads = cfg.ort_threads
    so.inter_op_num_threads = 1
    sess = ort.InferenceSession(os.path.join(zoo, f"{name}.onnx"), so,
                                providers=["CPUExecutionProvider"])
    x = np.load(os.path.join(zoo, f"{name}_input.npy"))
    feeds = {sess.get_inputs()[0].name: x}
    res = {"threads": cfg.ort_threads}
    res["verify"] = diff_stats(sess.run(None, feeds)[0],
                               np.load(os.path.join(zoo, f"{name}_output.npy")))
    res.update(Clock(torch.device("cpu")).host_ms(lambda: sess.run(None, feeds),
                                                  cfg.ort_warmup, cfg.ort_runs))
    return res


# --------------------------------------------------------------------------
# Microbenchmarks
# --------------------------------------------------------------------------
def bench_gemm(device, clock, cfg):
    rows = []
    for dtype in (torch.float32, torch.float16):
        for n in cfg.gemm_sizes:
            row = {"dtype": str(dtype).replace("torch.", ""), "n": n}
            try:
                a = torch.randn(n, n, device=device, dtype=dtype)
                b = torch.randn(n, n, device=device, dtype=dtype)
                c = torch.empty(n, n, device=device, dtype=dtype)
                t = clock.device_ms(lambda: torch.matmul(a, b, out=c), cfg.micro_warmup,
                                    cfg.micro_iters)
                row.update(ms=t["p50_ms"], tflops=2.0 * n ** 3 / (t["p50_ms"] * 1e-3) / 1e12)
                del a, b, c
            except Exception as e:  # e.g. fp16 matmul on an old CPU build
                row["error"] = f"{type(e).__name__}: {e}"
            rows.append(row)
    return rows


def bench_stream(device, clock, cfg):
    n = cfg.stream_elems
    res = {"elements": n}
    a = torch.randn(n, device=device)
    b = torch.randn(n, device=device)
    c = torch.empty(n, device=device)
    t = clock.device_ms(lambda: torch.add(a, b, out=c), cfg.micro_warmup, cfg.micro_iters)
    res["add"] = {"ms": t["p50_ms"], "bytes": 12 * n, "GBps": 12 * n / (t["p50_ms"] * 1e-3) / 1e9}
    t = clock.device_ms(lambda: c.copy_(a), cfg.micro_warmup, cfg.micro_iters)
    res["copy"] = {"ms": t["p50_ms"], "bytes": 8 * n, "GBps": 8 * n / (t["p50_ms"] * 1e-3) / 1e9}
    del a, b, c
    return res


# --------------------------------------------------------------------------
# Report
# --------------------------------------------------------------------------
def new_precision_api():
    # PyTorch >= 2.9 refuses to read the legacy allow_tf32 flags once the new fp32_precision
    # API was used, so only one of the two is ever touched.
    try:
        torch.backends.cuda.matmul.fp32_precision
        return True
    except (AttributeError, AssertionError):  # old torch's cuBLASModule raises AssertionError
        return False


def disable_tf32():
    if new_precision_api():
        # All cuDNN levels alike: differing conv/rnn/cudnn flags also count as mixed APIs.
        for knob in (torch.backends.cuda.matmul, torch.backends.cudnn,
                     getattr(torch.backends.cudnn, "conv", None),
                     getattr(torch.backends.cudnn, "rnn", None)):
            if knob is not None and hasattr(knob, "fp32_precision"):
                knob.fp32_precision = "ieee"
    else:
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False


def tf32_state():
    if new_precision_api():
        return {"tf32_matmul": torch.backends.cuda.matmul.fp32_precision != "ieee",
                "tf32_cudnn": torch.backends.cudnn.conv.fp32_precision != "ieee",
                "fp32_precision": {"matmul": torch.backends.cuda.matmul.fp32_precision,
                                   "cudnn_conv": torch.backends.cudnn.conv.fp32_precision}}
    return {"tf32_matmul": torch.backends.cuda.matmul.allow_tf32,
            "tf32_cudnn": torch.backends.cudnn.allow_tf32}


def meta(device):
    m = {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "numpy": np.__version__,
        "device": str(device),
        "cpu_count": os.cpu_count(),
        "time_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "cudnn_benchmark": torch.backends.cudnn.benchmark,
    }
    m.update(tf32_state())
    # cuBLAS may reduce fp16 GEMMs in fp16 when this is on (PyTorch's default): the fp16 rows.
    m["fp16_reduced_precision_reduction"] = getattr(
        torch.backends.cuda.matmul, "allow_fp16_reduced_precision_reduction", None)
    for mod in ("torchvision", "onnx", "onnxruntime"):
        try:
            m[mod] = __import__(mod).__version__
        except Exception:  # optional: absent is recorded, not fatal
            m[mod] = None
    if device.type == "cuda":
        m["gpu"] = torch.cuda.get_device_name(device)
        m["cuda"] = torch.version.cuda
        m["cudnn"] = torch.backends.cudnn.version()
    return m


def fmt(stats, key="p50_ms"):
    return f"{stats[key]:.3f}" if stats and key in stats else "-"


def print_tables(out):
    m = out["meta"]
    print(f"\ntorch {m['torch']} | onnxruntime {m['onnxruntime']} | device {m.get('gpu', m['device'])}"
          f" | TF32 matmul {m['tf32_matmul']} cudnn {m['tf32_cudnn']}")
    hdr = ("model", "max|d| vs saved", "eager p50", "eager p90", "graph p50", "graph p90",
           "ORT p50", "ORT p90", "fp16 eager", "fp16 graph", "fp16 max|d|")
    print("%-13s %15s %10s %10s %10s %10s %9s %9s %10s %10s %11s" % hdr)
    for name, r in out["models"].items():
        ver = r.get("verify", {}).get("max_abs_diff")
        ver16 = r.get("verify_fp16", {}).get("max_abs_diff")
        print("%-13s %15s %10s %10s %10s %10s %9s %9s %10s %10s %11s" % (
            name, f"{ver:.3g}" if ver is not None else "-",
            fmt(r.get("eager")), fmt(r.get("eager"), "p90_ms"),
            fmt(r.get("cuda_graph")), fmt(r.get("cuda_graph"), "p90_ms"),
            fmt(r.get("ort_cpu")), fmt(r.get("ort_cpu"), "p90_ms"),
            fmt(r.get("eager_fp16")), fmt(r.get("cuda_graph_fp16")),
            f"{ver16:.3g}" if ver16 is not None else "-"))
        if "fp16_skipped" in r:
            print(f"    fp16 skipped: {r['fp16_skipped'].splitlines()[0]}")
        for err in r.get("errors", []):
            print(f"    error: {err.splitlines()[0]}")
    micro = out.get("micro", {})
    for row in micro.get("gemm", []):
        if "error" in row:
            print(f"GEMM {row['dtype']:8s} {row['n']:5d}^3: error {row['error']}")
        else:
            print(f"GEMM {row['dtype']:8s} {row['n']:5d}^3: {row['ms']:8.3f} ms "
                  f"{row['tflops']:8.2f} TFLOP/s")
    s = micro.get("stream")
    if s:
        for k in ("add", "copy"):
            print(f"{k:5s} {s['elements']} floats: {s[k]['ms']:.3f} ms, {s[k]['GBps']:.0f} GB/s")
    for err in micro.get("errors", []):
        print(f"micro error: {err.splitlines()[0]}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("zoo_dir")
    ap.add_argument("out_json")
    ap.add_argument("--models", default=None, help="comma-separated subset (default: manifest)")
    ap.add_argument("--cpu-smoke", action="store_true", help="tiny run on the CPU, no CUDA")
    ap.add_argument("--ort-threads", type=int, default=16)
    ap.add_argument("--no-micro", action="store_true", help="skip the microbenchmarks")
    cfg = ap.parse_args()
    if cfg.cpu_smoke:
        device = torch.device("cpu")
        cfg.warmup, cfg.iters, cfg.b2b_samples, cfg.b2b_calls = 2, 5, 3, 2
        cfg.ort_warmup, cfg.ort_runs = 2, 5
        cfg.micro_warmup, cfg.micro_iters = 1, 3
        cfg.gemm_sizes, cfg.stream_elems = [128, 256], 1 << 20
    else:
        if not torch.cuda.is_available():
            sys.exit("peers.py: CUDA is not available (use --cpu-smoke to test without a GPU)")
        device = torch.device("cuda")
        cfg.warmup, cfg.iters, cfg.b2b_samples, cfg.b2b_calls = 20, 200, 20, 10
        cfg.ort_warmup, cfg.ort_runs = 10, 60
        cfg.micro_warmup, cfg.micro_iters = 5, 20
        cfg.gemm_sizes, cfg.stream_elems = [1024, 4096, 8192], 256 << 20
    disable_tf32()

    with open(os.path.join(cfg.zoo_dir, "manifest.json")) as f:
        manifest = json.load(f)
    names = cfg.models.split(",") if cfg.models else [n for n in export_zoo.ALL_MODELS
                                                      if n in manifest]
    clock = Clock(device)
    out = {"meta": meta(device), "models": {}, "micro": {"errors": []}}
    out["meta"]["config"] = dict(vars(cfg))
    os.makedirs(os.path.dirname(os.path.abspath(cfg.out_json)), exist_ok=True)

    def save():  # after every step, so a run killed by its time limit keeps what it measured
        with open(cfg.out_json, "w") as f:
            json.dump(out, f, indent=2)

    failed = False

    def attempt(record, stage, fn):
        nonlocal failed
        try:
            fn()
        except Exception as e:
            failed = True
            record["errors"].append(f"{stage}: {type(e).__name__}: {e}")
            record.setdefault("tracebacks", []).append(traceback.format_exc(limit=4))
        if clock.cuda:
            torch.cuda.empty_cache()
        save()

    for name in names:
        t0 = time.time()
        r = out["models"][name] = {"errors": []}
        keep = {}
        attempt(r, "torch", lambda: bench_torch_model(r, name, manifest[name], cfg.zoo_dir,
                                                      device, clock, cfg, keep))
        attempt(r, "ort_cpu", lambda: r.update(ort_cpu=bench_ort(name, cfg.zoo_dir, cfg)))
        # fp16 last, so that its failure never costs an fp32 number.
        if clock.cuda:
            attempt(r, "torch_fp16", lambda: bench_torch_fp16(r, keep, clock, cfg))
        else:  # CPU half kernels are patchy: a smoke test records, never fails, on them
            try:
                bench_torch_fp16(r, keep, clock, cfg)
            except Exception as e:
                r["fp16_skipped"] = f"{type(e).__name__}: {e}"
            save()
        keep.clear()
        v = r.get("verify", {})
        print(f"[{name}] {time.time() - t0:.1f}s; max|torch-{device.type} - saved| "
              f"{v.get('max_abs_diff', float('nan')):.3g}, rebuild on CPU "
              f"{r.get('rebuild_cpu', {}).get('max_abs_diff', float('nan')):.3g}, fp16 "
              f"{r.get('verify_fp16', {}).get('max_abs_diff', float('nan')):.3g}", flush=True)
    if not cfg.no_micro:
        micro = out["micro"]
        attempt(micro, "gemm", lambda: micro.update(gemm=bench_gemm(device, clock, cfg)))
        attempt(micro, "stream", lambda: micro.update(stream=bench_stream(device, clock, cfg)))

    save()
    print_tables(out)
    print(f"wrote {cfg.out_json}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
