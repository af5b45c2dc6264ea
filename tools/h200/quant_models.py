#!/usr/bin/env python3
"""Quantized models for vkgraph on the H200 (issue 14): make them with onnxruntime's
quantization tools and write onnxruntime CPU references, then compare vkgraph against them.

usage:
  quant_models.py make DIR [--models resnet50,mobilenet_v3,bert] [--inputs N] [--seed S]
  quant_models.py compare DIR --vkgraph PATH [--out FILE.json] [--runs N] [--models ...]
  quant_models.py ortref DIR [--models ...]
  quant_models.py layers DIR --vkgraph PATH [--models ...] [--inputs N] [--out FILE.json]

make (PyTorch, torchvision, transformers, onnx, onnxruntime with onnxruntime.quantization;
no network, so weights are random and calibration uses random inputs) writes into DIR, per
MODEL:
  MODEL_float.onnx      exported from PyTorch (legacy exporter, dynamic batch)
  MODEL_int8.onnx       resnet50, mobilenet_v3: quantize_static, QDQ format, per-channel int8
                        weights, uint8 activations, calibrated on --calib random inputs;
                        bert: quantize_dynamic (DynamicQuantizeLinear + MatMulInteger)
  MODEL_inputs.npz      the inputs, one array per model input, batch N (resnet50: 100)
  MODEL_ort_float.npy,  onnxruntime CPU's first output on those inputs, for the float and the
  MODEL_ort_int8.npy    int8 model
  manifest.json         models, input and output names, kinds, what was made and how long
compare (numpy and the vkgraph CLI only) runs `vkgraph run` on the whole batch of each int8
model and reports, against onnxruntime's int8 result and against the float model's:
classifiers top-1 agreement, encoders cosine similarity; max and mean |error| for both; and
`vkgraph bench` timings (batch 1) of the int8 model (fp32 and --fp16 mode) against the float
model (fp32 and --fp16). Writes JSON (--out) and prints a markdown table.
ortref (onnxruntime only) adds a second int8 reference to a made DIR, MODEL_ort_int8_noopt.npy:
onnxruntime with graph optimizations off, so that it runs the QDQ graph as ONNX defines it
(float ops between DequantizeLinear and QuantizeLinear) rather than as its fused QLinearConv /
QLinearAdd / QGemm kernels; compare then also reports agreement with it (vs_ort_int8_noopt),
and the host CPU's integer dot-product features (onnxruntime's u8s8 kernels without VNNI sum
pairs in 16 bits with saturation).
layers (onnxruntime and the vkgraph CLI) finds where a QDQ model's disagreement starts: every
QuantizeLinear output becomes a graph output, the first --inputs inputs (default 8) run through
onnxruntime (optimisations on) and vkgraph, and each quantized tensor, in graph order, reports
the share of its elements that differ, the largest difference in quantisation steps and the op
that produced it.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
ALL_MODELS = ["resnet50", "mobilenet_v3", "bert"]
DEFAULT_INPUTS = {"resnet50": 100, "mobilenet_v3": 32, "bert": 8}
BERT_SEQ = 128


# --------------------------------------------------------------------------
# make: PyTorch -> ONNX -> onnxruntime quantization -> references
# --------------------------------------------------------------------------
def _torch():
    import torch  # lazily: compare needs none of the make-side packages

    return torch


def _export_kwargs():
    """The legacy TorchScript exporter where torch.onnx.export takes `dynamo` (2.x)."""
    import inspect

    kw = {}
    if "dynamo" in inspect.signature(_torch().onnx.export).parameters:
        kw["dynamo"] = False
    return kw


def _vision_model(name, seed):
    torch = _torch()
    import torchvision

    sys.path.insert(0, os.path.join(REPO, "models"))
    from export_zoo import realistic_norms  # BatchNorm statistics of a random batch

    torch.manual_seed(seed)
    fn = {"resnet50": torchvision.models.resnet50,
          "mobilenet_v3": torchvision.models.mobilenet_v3_large}[name]
    model = fn(weights=None).float().eval()
    return realistic_norms(model, (1, 3, 224, 224), seed).eval()


def _vision_inputs(n, seed):
    return {"input": np.random.default_rng(seed).standard_normal((n, 3, 224, 224)).astype(np.float32)}


def _bert_model(seed):
    torch = _torch()
    from transformers import BertConfig, BertModel

    torch.manual_seed(seed)
    return BertModel(BertConfig()).float().eval()  # bert-base: 12 layers, d 768, vocab 30522


def _bert_inputs(n, seed):
    rng = np.random.default_rng(seed)
    ids = rng.integers(1000, 30000, size=(n, BERT_SEQ), dtype=np.int64)
    mask = np.ones((n, BERT_SEQ), dtype=np.int64)
    mask[:, BERT_SEQ * 3 // 4:] = 0  # padding at the end, as a tokenizer leaves it
    return {"input_ids": ids, "attention_mask": mask,
            "token_type_ids": np.zeros((n, BERT_SEQ), dtype=np.int64)}


def export_float(name, model, inputs, path):
    """Exports with a dynamic batch; returns (output names, whether the batch is dynamic).
    The legacy exporter first; where it fails (transformers releases it does not follow), the
    dynamo exporter with the batch fixed at 1, whose models then run one sample at a time."""
    torch = _torch()
    names = list(inputs)
    example = tuple(torch.from_numpy(v[:1]) for v in inputs.values())
    outputs = ["output"] if name != "bert" else ["last_hidden_state", "pooler_output"]
    try:
        torch.onnx.export(model, example, path, input_names=names, output_names=outputs,
                          dynamic_axes={k: {0: "batch"} for k in names + outputs},
                          opset_version=17, **_export_kwargs())
        return outputs, True
    except Exception as e:
        print(f"{name}: legacy export failed ({type(e).__name__}: {e}); trying dynamo", file=sys.stderr)
    torch.onnx.export(model, example, path, input_names=names, output_names=outputs,
                      opset_version=18, dynamo=True)
    return outputs, False


def batches(inputs, dynamic):
    """The whole batch at once, or one sample at a time for a model of batch 1."""
    count = len(next(iter(inputs.values())))
    if dynamic:
        return [inputs]
    return [{k: v[i:i + 1] for k, v in inputs.items()} for i in range(count)]


def calibration_reader(inputs):
    """An onnxruntime CalibrationDataReader over `inputs`, one sample per batch."""
    from onnxruntime.quantization import CalibrationDataReader

    class RandomCalibration(CalibrationDataReader):
        def __init__(self):
            count = len(next(iter(inputs.values())))
            self.items = [{k: v[i:i + 1] for k, v in inputs.items()} for i in range(count)]

        def get_next(self):
            return self.items.pop(0) if self.items else None

    return RandomCalibration()


def quantize(name, float_path, int8_path, calib_inputs, work):
    from onnxruntime import quantization as q

    if name == "bert":
        q.quantize_dynamic(float_path, int8_path, weight_type=q.QuantType.QInt8)
        return "quantize_dynamic (QInt8 weights)"
    # quant_pre_process: shape inference and onnxruntime's graph optimizations (BatchNorm into
    # Conv where the exporter left any), as onnxruntime recommends before quantize_static.
    pre = os.path.join(work, f"{name}_pre.onnx")
    q.shape_inference.quant_pre_process(float_path, pre, skip_symbolic_shape=True)
    q.quantize_static(pre, int8_path, calibration_reader(calib_inputs),
                      quant_format=q.QuantFormat.QDQ, per_channel=True,
                      activation_type=q.QuantType.QUInt8, weight_type=q.QuantType.QInt8,
                      calibrate_method=q.CalibrationMethod.MinMax)
    return "quantize_static QDQ, per-channel QInt8 weights, QUInt8 activations, MinMax"


def ort_run(path, inputs, output, dynamic, optimize=True):
    import onnxruntime as ort

    so = ort.SessionOptions()
    if not optimize:
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    s = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    t0 = time.time()
    y = np.concatenate([s.run([output], b)[0] for b in batches(inputs, dynamic)])
    return y, time.time() - t0


def make(args):
    os.makedirs(args.dir, exist_ok=True)
    manifest = {"models": {}, "seed": args.seed}
    for name in args.models:
        t0 = time.time()
        n = args.inputs or DEFAULT_INPUTS[name]
        if name == "bert":
            model, inputs, calib = _bert_model(args.seed), _bert_inputs(n, args.seed + 1), None
        else:
            model = _vision_model(name, args.seed)
            inputs = _vision_inputs(n, args.seed + 1)
            calib = _vision_inputs(args.calib, args.seed + 2)
        fp = os.path.join(args.dir, f"{name}_float.onnx")
        ip = os.path.join(args.dir, f"{name}_int8.onnx")
        outputs, dynamic = export_float(name, model, inputs, fp)
        with tempfile.TemporaryDirectory() as work:
            how = quantize(name, fp, ip, calib, work)
        np.savez(os.path.join(args.dir, f"{name}_inputs.npz"), **inputs)
        entry = {"kind": "encoder" if name == "bert" else "classifier", "inputs": list(inputs),
                 "output": outputs[0], "count": n, "quantization": how, "batch_dynamic": dynamic}
        for tag, path in (("float", fp), ("int8", ip)):
            y, secs = ort_run(path, inputs, outputs[0], dynamic)
            np.save(os.path.join(args.dir, f"{name}_ort_{tag}.npy"), y)
            entry[f"ort_{tag}_s"] = round(secs, 3)
        entry["make_s"] = round(time.time() - t0, 1)
        manifest["models"][name] = entry
        print(f"{name}: {how}; {n} inputs; {entry['make_s']} s", flush=True)
    with open(os.path.join(args.dir, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)


def ortref(args):
    with open(os.path.join(args.dir, "manifest.json")) as f:
        manifest = json.load(f)
    for name in args.models:
        entry = manifest["models"].get(name)
        if not entry:
            continue
        inputs = dict(np.load(os.path.join(args.dir, f"{name}_inputs.npz")))
        y, secs = ort_run(os.path.join(args.dir, f"{name}_int8.onnx"), inputs, entry["output"],
                          entry.get("batch_dynamic", True), optimize=False)
        np.save(os.path.join(args.dir, f"{name}_ort_int8_noopt.npy"), y)
        print(f"{name}: onnxruntime without graph optimizations, {secs:.1f} s", flush=True)


def layers(args):
    import onnx
    from onnx import helper

    with open(os.path.join(args.dir, "manifest.json")) as f:
        manifest = json.load(f)
    results = {}
    for name in args.models:
        entry = manifest["models"].get(name)
        if not entry or entry["kind"] != "classifier":
            continue  # quantize_dynamic models have no QuantizeLinear to follow
        model = onnx.load(os.path.join(args.dir, f"{name}_int8.onnx"))
        producer = {o: n for n in model.graph.node for o in n.output}
        inits = {i.name: i for i in model.graph.initializer}
        outputs = {o.name for o in model.graph.output}
        quantized = []
        for n in model.graph.node:
            if n.op_type != "QuantizeLinear" or n.output[0] in outputs:
                continue
            zp = inits.get(n.input[2]) if len(n.input) > 2 else None
            elem = zp.data_type if zp is not None else onnx.TensorProto.UINT8
            model.graph.output.append(helper.make_tensor_value_info(n.output[0], elem, None))
            src = producer.get(n.input[0])
            quantized.append((n.output[0], src.op_type if src is not None else "graph input"))
        path = os.path.join(args.dir, f"{name}_int8_layers.onnx")
        onnx.save(model, path)
        inputs = dict(np.load(os.path.join(args.dir, f"{name}_inputs.npz")))
        inputs = {k: v[:args.inputs] for k, v in inputs.items()}
        import onnxruntime as ort

        s = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
        names = [q for q, _ in quantized]
        dynamic = entry.get("batch_dynamic", True)
        ref = {q: [] for q in names}
        for b in batches(inputs, dynamic):
            for q, y in zip(names, s.run(names, b)):
                ref[q].append(y)
        got = vk_outputs(args, path, inputs, dynamic, names)
        rows = []
        for q, op in quantized:
            r = np.concatenate(ref[q]).astype(np.int32).ravel()
            g = got[q].astype(np.int32).ravel()
            d = np.abs(g - r) if g.size == r.size else None
            rows.append({"tensor": q, "after": op, "elements": int(r.size),
                         "differ": None if d is None else float((d > 0).mean()),
                         "max_steps": None if d is None else int(d.max()),
                         "shape_mismatch": d is None})
        results[name] = rows
        first = next((r for r in rows if r["differ"]), None)
        print(f"## {name}: {len(rows)} quantized tensors, {args.inputs} inputs; first to differ: "
              f"{first['tensor'] + ' after ' + first['after'] if first else 'none'}")
        for r in rows:
            if r["differ"] or r["shape_mismatch"]:
                print(f"  {r['tensor']:40s} after {r['after']:20s} differ {r['differ']} "
                      f"max {r['max_steps']} steps")
    if args.out:
        with open(args.out, "w") as f:
            json.dump(results, f, indent=1)


def cpu_dot_features():
    try:
        with open("/proc/cpuinfo") as f:
            flags = set(f.read().split())
    except OSError:
        return []
    return sorted(flags & {"avx2", "avx512f", "avx512_vnni", "avx_vnni", "amx_int8"})


# --------------------------------------------------------------------------
# compare: vkgraph against the references
# --------------------------------------------------------------------------
def sanitize(name):  # as vkgraph names --output-dir files
    return re.sub(r"[^A-Za-z0-9_.-]", "_", name)


def vk_env():
    env = dict(os.environ)
    devlibs = os.path.join(REPO, ".devlibs")  # tools/h200/pack.sh's carried libraries
    if os.path.isdir(devlibs):
        env["LD_LIBRARY_PATH"] = devlibs + (":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
    return env


def vk(cmd, timeout):
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=vk_env())
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: status {p.returncode}\n{(p.stdout + p.stderr)[-3000:]}")
    return p.stdout


def write_inputs(folder, arrays, batch=None):
    """One .npy per input (the first `batch` rows when given); returns --input arguments."""
    args = []
    for k, v in arrays.items():
        path = os.path.join(folder, f"{sanitize(k)}{'' if batch is None else '_b%d' % batch}.npy")
        np.save(path, v if batch is None else v[:batch])
        args += ["--input", f"{k}={path}"]
    return args


BENCH_RE = re.compile(r"run x(\d+): host p50 ([\d.]+) ms, p90 ([\d.]+) ms; GPU p50 ([\d.]+) ms")
NODES_RE = re.compile(r"graph: (\d+) nodes")


def bench(vkgraph, model, input_args, runs, fp16, timeout):
    out = vk([vkgraph, "bench", model, *input_args, "--runs", str(runs), "--top", "1"] +
             (["--fp16"] if fp16 else []), timeout)
    m, nodes = BENCH_RE.search(out), NODES_RE.search(out)
    if not m:
        raise RuntimeError(f"no timing line in vkgraph bench output:\n{out[-2000:]}")
    return {"host_p50_ms": float(m.group(2)), "gpu_p50_ms": float(m.group(4)),
            "nodes": int(nodes.group(1)) if nodes else None}


def agreement(got, ref, kind):
    g, r = got.astype(np.float64), ref.astype(np.float64)
    d = np.abs(g - r)
    res = {"max_abs": float(d.max()), "mean_abs": float(d.mean()),
           "max_abs_over_ref_absmax": float(d.max() / max(np.abs(r).max(), 1e-30)),
           "nan_or_inf": int((~np.isfinite(g)).sum())}
    if kind == "classifier":
        res["top1_agree"] = float((g.argmax(-1) == r.argmax(-1)).mean())
    else:
        gf, rf = g.reshape(g.shape[0], -1), r.reshape(r.shape[0], -1)
        cos = (gf * rf).sum(1) / np.maximum(np.linalg.norm(gf, axis=1) * np.linalg.norm(rf, axis=1), 1e-30)
        res["cosine_min"] = float(cos.min())
        res["rel_l2"] = float(np.linalg.norm(g - r) / max(np.linalg.norm(r), 1e-30))
    return res


def vk_outputs(args, model, inputs, dynamic, names):
    """`vkgraph run` of `model` on `inputs` (whole, or one sample at a time for a model of batch
    1): each of `names`, the batches concatenated."""
    parts = {q: [] for q in names}
    with tempfile.TemporaryDirectory() as work:
        for i, b in enumerate(batches(inputs, dynamic)):
            folder = os.path.join(work, f"batch{i}")
            os.makedirs(folder)
            vk([args.vkgraph, "run", model, *write_inputs(folder, b), "--output-dir", folder],
               args.timeout)
            for q in names:
                parts[q].append(np.load(os.path.join(folder, sanitize(q) + ".npy")))
    return {q: np.concatenate(v) for q, v in parts.items()}


def compare_model(args, name, entry):
    d = args.dir
    res = {"kind": entry["kind"], "count": entry["count"], "quantization": entry.get("quantization")}
    inputs = dict(np.load(os.path.join(d, f"{name}_inputs.npz")))
    ort_int8 = np.load(os.path.join(d, f"{name}_ort_int8.npy"))
    ort_float = np.load(os.path.join(d, f"{name}_ort_float.npy"))
    int8, flt = os.path.join(d, f"{name}_int8.onnx"), os.path.join(d, f"{name}_float.onnx")
    with tempfile.TemporaryDirectory() as work:
        one = write_inputs(work, inputs, batch=1)
        t0 = time.time()
        got = vk_outputs(args, int8, inputs, entry.get("batch_dynamic", True),
                         [entry["output"]])[entry["output"]]
        res["vk_run_all_s"] = round(time.time() - t0, 2)
        if got.size != ort_int8.size:
            raise RuntimeError(f"vkgraph output {got.shape} vs onnxruntime {ort_int8.shape}")
        got = got.reshape(ort_int8.shape)
        res["vs_ort_int8"] = agreement(got, ort_int8, entry["kind"])
        res["vs_float"] = agreement(got, ort_float, entry["kind"])
        res["ort_int8_vs_float"] = agreement(ort_int8, ort_float, entry["kind"])
        noopt = os.path.join(d, f"{name}_ort_int8_noopt.npy")
        if os.path.exists(noopt):
            ref = np.load(noopt).reshape(ort_int8.shape)
            res["vs_ort_int8_noopt"] = agreement(got, ref, entry["kind"])
            res["ort_int8_vs_noopt"] = agreement(ort_int8, ref, entry["kind"])
        res["host_cpu_dot_features"] = cpu_dot_features()
        res["timing_batch1"] = {}
        for tag, model, fp16 in (("int8", int8, False), ("int8_fp16", int8, True),
                                 ("float", flt, False), ("float_fp16", flt, True)):
            try:
                res["timing_batch1"][tag] = bench(args.vkgraph, model, one, args.runs, fp16,
                                                  args.timeout)
            except Exception as e:  # one failing timing still leaves the others
                res["timing_batch1"][tag] = {"error": str(e)[-1500:]}
    t = res["timing_batch1"]
    if "gpu_p50_ms" in t.get("int8", {}) and "gpu_p50_ms" in t.get("float_fp16", {}):
        res["int8_speedup_vs_float_fp16_gpu"] = round(t["float_fp16"]["gpu_p50_ms"] / t["int8"]["gpu_p50_ms"], 3)
    return res


def fmt(v, spec=".4g"):
    return "—" if v is None else format(v, spec)


def markdown(results):
    lines = ["| model | vs ORT int8 | vs float | ORT int8 vs float | max abs (vs ORT int8) | "
             "GPU ms int8 / int8 --fp16 / float / float --fp16 | nodes int8 / float |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    for name, r in results.items():
        if "error" in r:
            lines.append(f"| {name} | error: {r['error'][:200]} | | | | | |")
            continue
        key = "top1_agree" if r["kind"] == "classifier" else "cosine_min"
        label = "top-1 " if key == "top1_agree" else "cos min "
        t = r["timing_batch1"]
        ms = " / ".join(fmt(t.get(k, {}).get("gpu_p50_ms"), ".3f") for k in ("int8", "int8_fp16", "float", "float_fp16"))
        nodes = " / ".join(fmt(t.get(k, {}).get("nodes"), "d") for k in ("int8", "float"))
        lines.append(f"| {name} ({r['count']} inputs) | {label}{fmt(r['vs_ort_int8'][key])} | "
                     f"{label}{fmt(r['vs_float'][key])} | {label}{fmt(r['ort_int8_vs_float'][key])} | "
                     f"{fmt(r['vs_ort_int8']['max_abs'])} | {ms} | {nodes} |")
    return "\n".join(lines)


def compare(args):
    with open(os.path.join(args.dir, "manifest.json")) as f:
        manifest = json.load(f)
    results = {}
    for name in args.models:
        if name not in manifest["models"]:
            continue
        try:
            results[name] = compare_model(args, name, manifest["models"][name])
        except Exception as e:
            results[name] = {"error": f"{type(e).__name__}: {e}"[-3000:]}
        print(f"{name}: {json.dumps(results[name])[:600]}", flush=True)
    if args.out:
        with open(args.out, "w") as f:
            json.dump(results, f, indent=1)
    print(markdown(results))
    return 0 if all("error" not in r for r in results.values()) else 1


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="mode", required=True)
    for mode in ("make", "compare", "ortref", "layers"):
        p = sub.add_parser(mode)
        p.add_argument("dir")
        p.add_argument("--models", default=",".join(ALL_MODELS),
                       type=lambda s: [m for m in s.split(",") if m])
        if mode == "make":
            p.add_argument("--inputs", type=int, default=0, help="inputs per model (default: resnet50 100, mobilenet_v3 32, bert 8)")
            p.add_argument("--calib", type=int, default=16, help="random calibration inputs")
            p.add_argument("--seed", type=int, default=0)
        elif mode in ("compare", "layers"):
            p.add_argument("--vkgraph", default=os.path.join(REPO, "build-h200", "vkgraph"))
            p.add_argument("--out", default="")
            p.add_argument("--timeout", type=int, default=300)
            if mode == "compare":
                p.add_argument("--runs", type=int, default=50)
            else:
                p.add_argument("--inputs", type=int, default=8)
    args = ap.parse_args()
    unknown = [m for m in args.models if m not in ALL_MODELS]
    if unknown:
        ap.error(f"unknown models {unknown}; known: {ALL_MODELS}")
    return {"make": make, "compare": compare, "ortref": ortref, "layers": layers}[args.mode](args)


if __name__ == "__main__":
    sys.exit(main() or 0)
