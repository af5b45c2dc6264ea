#!/usr/bin/env python3
"""Export a small zoo of randomly initialised models to ONNX for vkgraph tests
and benchmarks.

For every model NAME it writes into OUT_DIR:
  NAME.onnx          the model (input tensor "input", output tensor "output")
  NAME_input.npy     a random float32 input (seeded)
  NAME_output.npy    PyTorch's fp32 output for that input (eval mode)
and finally OUT_DIR/manifest.json summarising shapes, opset, op types and,
when onnxruntime is installed, the max |onnxruntime - PyTorch| difference.

Models:
  resnet18      torchvision resnet18(weights=None),     input [1,3,224,224]
  mobilenet_v2  torchvision mobilenet_v2(weights=None), input [1,3,224,224]
  transformer   4-layer pre-LN encoder built from primitives (Linear,
                LayerNorm, matmul/softmax attention with reshape/transpose,
                erf GELU, residuals), d_model=512, 8 heads, ffn 2048,
                input [1,128,512]
  mlp           4 x Linear(1024,1024) with ReLU between, input [1,1024]

Weights are random: torch.manual_seed(seed) is reset before each model is
built, so a model's weights do not depend on which other models are exported.
Unless --raw-init is given, BatchNorm/LayerNorm affine parameters are then
randomised near (1, 0) and BatchNorm running statistics are estimated from one
seeded random batch (see realistic_norms), so that activations keep a sane
scale and the exported graphs carry no degenerate duplicate initializers.

Exporter: the legacy TorchScript exporter (dynamo=False where torch.onnx.export
accepts that argument), opset 17, falling back to 13 if this torch cannot
export opset 17. Works with PyTorch 2.11/torchvision 0.26 and with Debian 12's
PyTorch 1.13/torchvision 0.14. torchvision is only needed for resnet18 and
mobilenet_v2; onnx and onnxruntime are optional (used for checks only).

Usage:
  python3 models/export_zoo.py OUT_DIR [--models mlp,transformer] [--seed 0]
                                       [--opset 17]
"""

import argparse
import inspect
import json
import math
import os
import sys
import time

try:
    import torch
except ImportError:  # pragma: no cover - e.g. a pyenv python3 shadowing Debian's
    _sys_py = "/usr/bin/python3"
    if os.path.realpath(sys.executable) != os.path.realpath(_sys_py) and os.path.exists(_sys_py):
        print(f"[export_zoo] torch not importable from {sys.executable}; re-running with {_sys_py}",
              file=sys.stderr)
        os.execv(_sys_py, [_sys_py] + sys.argv)
    raise

import numpy as np
import torch.nn as nn
import torch.nn.functional as F

ALL_MODELS = ["resnet18", "mobilenet_v2", "transformer", "mlp"]


# --------------------------------------------------------------------------
# Models written from primitives
# --------------------------------------------------------------------------
class MLP(nn.Module):
    def __init__(self, width=1024, layers=4):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(width, width) for _ in range(layers)])

    def forward(self, x):
        for i, layer in enumerate(self.layers):
            x = layer(x)
            if i + 1 < len(self.layers):
                x = F.relu(x)
        return x


class SelfAttention(nn.Module):
    def __init__(self, d_model, n_heads):
        super().__init__()
        assert d_model % n_heads == 0
        self.h = n_heads
        self.dh = d_model // n_heads
        self.q = nn.Linear(d_model, d_model)
        self.k = nn.Linear(d_model, d_model)
        self.v = nn.Linear(d_model, d_model)
        self.o = nn.Linear(d_model, d_model)
        self.scale = 1.0 / math.sqrt(self.dh)

    def forward(self, x):  # x: [B, S, D]
        b, s, d = x.shape

        def heads(t):  # [B,S,D] -> [B,H,S,Dh]
            return t.reshape(b, s, self.h, self.dh).transpose(1, 2)

        q, k, v = heads(self.q(x)), heads(self.k(x)), heads(self.v(x))
        scores = torch.matmul(q, k.transpose(-2, -1)) * self.scale  # [B,H,S,S]
        probs = torch.softmax(scores, dim=-1)
        ctx = torch.matmul(probs, v)                                # [B,H,S,Dh]
        ctx = ctx.transpose(1, 2).reshape(b, s, d)
        return self.o(ctx)


class EncoderLayer(nn.Module):
    def __init__(self, d_model, n_heads, d_ff):
        super().__init__()
        self.ln1 = nn.LayerNorm(d_model)
        self.attn = SelfAttention(d_model, n_heads)
        self.ln2 = nn.LayerNorm(d_model)
        self.ff1 = nn.Linear(d_model, d_ff)
        self.ff2 = nn.Linear(d_ff, d_model)

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        x = x + self.ff2(F.gelu(self.ff1(self.ln2(x))))  # exact (erf) GELU
        return x


class TransformerEncoder(nn.Module):
    def __init__(self, layers=4, d_model=512, n_heads=8, d_ff=2048):
        super().__init__()
        self.layers = nn.ModuleList([EncoderLayer(d_model, n_heads, d_ff) for _ in range(layers)])
        self.ln_f = nn.LayerNorm(d_model)

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return self.ln_f(x)


# --------------------------------------------------------------------------
# Model table
# --------------------------------------------------------------------------
def _torchvision_model(fn_name):
    import torchvision  # imported lazily: only these two models need it
    fn = getattr(torchvision.models, fn_name)
    try:
        return fn(weights=None)
    except TypeError:  # torchvision < 0.13
        return fn(pretrained=False)


def build(name):
    if name == "resnet18":
        return _torchvision_model("resnet18"), (1, 3, 224, 224)
    if name == "mobilenet_v2":
        return _torchvision_model("mobilenet_v2"), (1, 3, 224, 224)
    if name == "transformer":
        return TransformerEncoder(layers=4, d_model=512, n_heads=8, d_ff=2048), (1, 128, 512)
    if name == "mlp":
        return MLP(width=1024, layers=4), (1, 1024)
    raise ValueError(f"unknown model {name!r}; known: {', '.join(ALL_MODELS)}")


def realistic_norms(model, in_shape, seed, calib_batch=8, calib_forward=None):
    """Make normalisation layers non-trivial, deterministically.

    With plain default init every BatchNorm/LayerNorm has weight=1, bias=0
    and BatchNorm has running_mean=0, running_var=1. That gives (a) eval-mode
    BatchNorm that does not normalise, so activations drift (torchvision
    mobilenet_v2's output shrinks to ~1e-9), and (b) many bit-identical
    initializers, which the TorchScript exporter deduplicates into Identity
    nodes. So: give the affine parameters random values near (1, 0), then
    estimate BatchNorm running statistics from one random batch.
    calib_forward(model, batch) runs that batch where model(batch) cannot (a detection model
    in training mode wants targets).
    """
    g = torch.Generator().manual_seed(seed + 7919)
    bns = []
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, (nn.BatchNorm1d, nn.BatchNorm2d, nn.BatchNorm3d, nn.LayerNorm)):
                if getattr(m, "weight", None) is not None:
                    m.weight.copy_(0.75 + 0.5 * torch.rand(m.weight.shape, generator=g))
                if getattr(m, "bias", None) is not None:
                    m.bias.copy_(0.1 * torch.randn(m.bias.shape, generator=g))
            if isinstance(m, nn.modules.batchnorm._BatchNorm):
                bns.append((m, m.momentum))
                m.reset_running_stats()
                m.momentum = None  # cumulative average over the calibration pass
        if bns:
            model.train()
            batch = torch.randn((calib_batch,) + tuple(in_shape[1:]), generator=g)
            (calib_forward or (lambda m, b: m(b)))(model, batch)
            for m, mom in bns:
                m.momentum = mom
    return model.eval()


def make_model(name, seed=0, raw_init=False):
    """The exact eval-mode fp32 CPU module and float32 input that main() exports.

    Other tools (e.g. tools/h200/peers.py) import this to rebuild a model
    bit-identical to an exported one from the manifest's seed and raw_init.
    """
    torch.manual_seed(seed)
    model, shape = build(name)
    model = model.float().eval()
    if not raw_init:
        model = realistic_norms(model, shape, seed)
    input_seed = seed * 1000 + ALL_MODELS.index(name)
    x = np.random.default_rng(input_seed).standard_normal(shape).astype(np.float32)
    return model, x


# --------------------------------------------------------------------------
# Export helpers
# --------------------------------------------------------------------------
def _export_kwargs():
    # Everything else is left at the exporter defaults (eval-mode export with
    # constant folding, which folds BatchNorm into the preceding Conv).
    kw = {}
    params = inspect.signature(torch.onnx.export).parameters
    if "dynamo" in params:
        kw["dynamo"] = False  # legacy TorchScript exporter
    return kw


def export_onnx(model, example, path, opset):
    """Export with the requested opset; fall back to 13 if unsupported."""
    tried = []
    for ops in ([opset, 13] if opset != 13 else [13]):
        try:
            torch.onnx.export(
                model,
                (example,),
                path,
                input_names=["input"],
                output_names=["output"],
                opset_version=ops,
                **_export_kwargs(),
            )
            return ops
        except Exception as e:  # unsupported opset on old torch, etc.
            tried.append(f"opset {ops}: {type(e).__name__}: {e}")
            print(f"  export at opset {ops} failed: {type(e).__name__}: {e}", file=sys.stderr)
    raise RuntimeError("ONNX export failed:\n" + "\n".join(tried))


def onnx_summary(path):
    try:
        import onnx
    except ImportError:
        return None
    m = onnx.load(path)
    onnx.checker.check_model(m)
    counts = {}
    for n in m.graph.node:
        counts[n.op_type] = counts.get(n.op_type, 0) + 1
    return {
        "opset_import": {(o.domain or "ai.onnx"): o.version for o in m.opset_import},
        "nodes": len(m.graph.node),
        "op_counts": dict(sorted(counts.items())),
    }


def ort_check(path, x, ref):
    try:
        import onnxruntime as ort
    except ImportError:
        return None
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    got = sess.run(None, {"input": x})[0]
    return float(np.max(np.abs(got.astype(np.float64) - ref.astype(np.float64))))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out_dir")
    ap.add_argument("--models", default=",".join(ALL_MODELS),
                    help=f"comma-separated subset of {','.join(ALL_MODELS)}")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--opset", type=int, default=17)
    ap.add_argument("--raw-init", action="store_true",
                    help="keep PyTorch's default init for norm layers (see realistic_norms)")
    args = ap.parse_args()

    names = [n.strip() for n in args.models.split(",") if n.strip()]
    for n in names:
        if n not in ALL_MODELS:
            ap.error(f"unknown model {n!r}; known: {', '.join(ALL_MODELS)}")
    os.makedirs(args.out_dir, exist_ok=True)
    print(f"torch {torch.__version__}; exporter kwargs {_export_kwargs()}; out {args.out_dir}")

    manifest_path = os.path.join(args.out_dir, "manifest.json")
    manifest = {}
    if os.path.exists(manifest_path):
        with open(manifest_path) as f:
            manifest = json.load(f)

    for name in names:
        t0 = time.time()
        model, x = make_model(name, args.seed, args.raw_init)
        with torch.no_grad():
            y = model(torch.from_numpy(x)).numpy().astype(np.float32)

        onnx_path = os.path.join(args.out_dir, f"{name}.onnx")
        used_opset = export_onnx(model, torch.from_numpy(x), onnx_path, args.opset)
        np.save(os.path.join(args.out_dir, f"{name}_input.npy"), np.ascontiguousarray(x))
        np.save(os.path.join(args.out_dir, f"{name}_output.npy"), np.ascontiguousarray(y))

        entry = {
            "onnx": f"{name}.onnx",
            "input": f"{name}_input.npy",
            "output": f"{name}_output.npy",
            "input_shape": list(x.shape),
            "output_shape": list(y.shape),
            "opset": used_opset,
            "params": int(sum(p.numel() for p in model.parameters())),
            "onnx_bytes": os.path.getsize(onnx_path),
            "output_absmax": float(np.abs(y).max()),
            "seed": args.seed,
            "raw_init": bool(args.raw_init),
            "torch": torch.__version__,
        }
        summ = onnx_summary(onnx_path)
        if summ:
            entry.update(summ)
        diff = ort_check(onnx_path, x, y)
        if diff is not None:
            entry["onnxruntime_max_abs_diff"] = diff
        manifest[name] = entry

        print(f"[{name}] opset {used_opset}, {entry['params']} params, "
              f"{entry['onnx_bytes'] / 1e6:.1f} MB, in {tuple(x.shape)} -> out {tuple(y.shape)}, "
              f"|out|max {entry['output_absmax']:.4g}, {time.time() - t0:.1f}s")
        if summ:
            print(f"  ops: {summ['op_counts']}")
        if diff is not None:
            print(f"  onnxruntime max abs diff vs PyTorch: {diff:.3g}")

    with open(manifest_path, "w") as f:
        json.dump(manifest, f, indent=2, sort_keys=True)
    print(f"wrote {manifest_path}")


if __name__ == "__main__":
    main()
