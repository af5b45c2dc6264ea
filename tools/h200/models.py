#!/usr/bin/env python3
"""Issue 13's models on the H200: export them, save PyTorch's fp32 CUDA outputs, and compare
vkgraph's outputs with them.

  models.py export DIR [--models swin_t,vit_b_16,ssdlite] [--exporters dynamo,legacy]
  models.py compare DIR --cli ./build-h200/vkgraph [--fp16] [--tol 1e-3]
  models.py compare DIR --python [--pythonpath build-h200/python]

export writes into DIR, for each model and exporter that succeeds:
  MODEL_EXPORTER.onnx   (weights embedded: vkgraph reads no external data)
  MODEL_input.npy       the seeded input (one per model; both exporters get the same)
  MODEL_ref_I.npy       PyTorch's output I: fp32 on CUDA with TF32 off (CPU when no GPU)
  manifest.json         per export: file, input name, output names, exporter, opset, and the
                        error when it failed (that export is then skipped, not fatal)
Models (random weights, nothing is downloaded): torchvision swin_t and vit_b_16 at 224x224,
both exporters (PyTorch >= 2.9 defaults to dynamo; legacy is dynamo=False), ViT with the MHA
fast path off (else it exports fused attention) and its zero-initialised head re-initialised;
ssdlite320_mobilenet_v3_large with post-processing (boxes, scores, labels), legacy only, BN
statistics estimated on a random batch. swin_mini and vit_mini are torchvision's Swin and ViT
classes at test size (the exports checked in under tests/models/ for lavapipe). When onnxruntime is installed, its CPU outputs are
compared with PyTorch's too (ort_* in the manifest), to tell exporter bugs from vkgraph's.

compare runs vkgraph on every export in the manifest (the CLI's `run --output-dir`, as
run_all.sh does, or the Python package's InferenceSession) and prints, per output, the max
abs error, the max abs error over max |ref| ("rel") and PASS/FAIL (rel <= --tol; integer
outputs must match exactly). Detection outputs whose order differs (NMS on near-equal
scores) are compared again sorted, and marked so. Results go to DIR/compare.json. Exit
status: 0 when every export compared passed, 1 otherwise.

On the H200, after run_all.sh's setup stage has installed the Vulkan loader (or inside a
command that runs it first):
  python3 tools/h200/models.py export /tmp/m13
  python3 tools/h200/models.py compare /tmp/m13 --cli ./build-h200/vkgraph [--fp16]

`stand_in` (a tiny CNN built from torch primitives, legacy and dynamo) is for testing this
script without torchvision: --models stand_in.
"""

import argparse
import inspect
import json
import os
import subprocess
import sys
import time
import traceback

import numpy as np
import torch

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "models"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare as zoo_compare  # noqa: E402  tools/h200/compare.py: error statistics
import export_zoo  # noqa: E402  models/export_zoo.py: norm layers, legacy export kwargs
import peers  # noqa: E402  tools/h200/peers.py: TF32 switch

F = torch.nn.functional

DEFAULT_MODELS = ["swin_t", "vit_b_16", "ssdlite"]
EXPORTERS = ["dynamo", "legacy"]


# --------------------------------------------------------------------------
# Models
# --------------------------------------------------------------------------
class StandIn(torch.nn.Module):
    """Conv, BN, pooling, a shape-derived reshape and a Linear: enough to run every step."""

    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.bn = torch.nn.BatchNorm2d(8)
        self.fc = torch.nn.Linear(8 * 4 * 4, 10)

    def forward(self, x):
        y = F.adaptive_avg_pool2d(torch.relu(self.bn(self.conv(x))), 4)
        return self.fc(y.reshape(y.shape[0], -1))



def _ssd_calibration(model, batch):
    # SSD in training mode wants targets; its BN layers live in the backbone and the head.
    features = list(model.backbone(batch).values())
    model.head(features)


def build(name, seed):
    """(eval-mode module, input array, input name, output names, exporters, note)."""
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    if name == "stand_in":
        model, shape = StandIn(), (1, 3, 16, 16)
        model = export_zoo.realistic_norms(model, shape, seed)
        return model, rng.standard_normal(shape, dtype=np.float32), "input", ["output"], EXPORTERS
    import torchvision

    if name in ("swin_t", "vit_b_16"):
        model = getattr(torchvision.models, name)(weights=None)
        if name == "vit_b_16":
            # torchvision zero-initialises the classifier: every output would be its bias.
            torch.nn.init.normal_(model.heads.head.weight, std=0.02)
            torch.nn.init.normal_(model.heads.head.bias, std=0.02)
        shape = (1, 3, 224, 224)
        model = export_zoo.realistic_norms(model, shape, seed)
        return model, rng.standard_normal(shape, dtype=np.float32), "input", ["output"], EXPORTERS
    if name in ("swin_mini", "vit_mini"):
        # torchvision's own Swin and ViT classes at test size, for lavapipe
        # (tests/onnx/test_architectures.cpp): the graphs both exporters write for swin_t and
        # vit_b_16, with fewer and narrower blocks.
        from torchvision.models.swin_transformer import SwinTransformer
        from torchvision.models.vision_transformer import VisionTransformer

        if name == "swin_mini":
            # A 14x14 and then a 7x7 token grid under 4x4 windows: both stages pad (shape-derived
            # Pad) and shift their windows, as swin_t's last stage pads at 224.
            model = SwinTransformer(patch_size=[4, 4], embed_dim=16, depths=[2, 2],
                                    num_heads=[2, 4], window_size=[4, 4],
                                    stochastic_depth_prob=0.0, num_classes=10)
            shape = (1, 3, 56, 56)
        else:
            model = VisionTransformer(image_size=32, patch_size=8, num_layers=2, num_heads=2,
                                      hidden_dim=32, mlp_dim=64, num_classes=10)
            torch.nn.init.normal_(model.heads.head.weight, std=0.2)  # zero-initialised
            torch.nn.init.normal_(model.heads.head.bias, std=0.2)
            shape = (1, 3, 32, 32)
        model = export_zoo.realistic_norms(model, shape, seed)
        return model, rng.standard_normal(shape, dtype=np.float32), "input", ["output"], EXPORTERS
    if name == "ssdlite":
        model = torchvision.models.detection.ssdlite320_mobilenet_v3_large(
            weights=None, weights_backbone=None)
        model = export_zoo.realistic_norms(model, (1, 3, 320, 320), seed,
                                           calib_forward=_ssd_calibration)
        image = rng.random((3, 320, 320), dtype=np.float32)  # an image in [0, 1]
        return model, image, "images", ["boxes", "scores", "labels"], ["legacy"]
    raise ValueError(f"unknown model {name!r}; known: "
                     f"{', '.join(DEFAULT_MODELS + ['swin_mini', 'vit_mini', 'stand_in'])}")


def example_args(name, x):
    # Detection models take a list of images.
    return ([x],) if name == "ssdlite" else (x,)


def flatten_outputs(y):
    """Model outputs as a list of arrays, in the order the ONNX exporters flatten them."""
    if isinstance(y, torch.Tensor):
        return [y]
    if isinstance(y, dict):
        return [t for v in y.values() for t in flatten_outputs(v)]
    if isinstance(y, (list, tuple)):
        return [t for v in y for t in flatten_outputs(v)]
    raise TypeError(f"unexpected output type {type(y).__name__}")


# --------------------------------------------------------------------------
# Export
# --------------------------------------------------------------------------
def export_kwargs(exporter):
    params = inspect.signature(torch.onnx.export).parameters
    if exporter == "legacy":
        return export_zoo._export_kwargs()  # dynamo=False where the argument exists
    if "dynamo" not in params:
        raise RuntimeError(f"torch {torch.__version__} has no dynamo exporter "
                           "(torch.onnx.export(..., dynamo=True) needs PyTorch >= 2.5)")
    kw = {"dynamo": True}
    if "external_data" in params:
        kw["external_data"] = False  # vkgraph reads no external data
    return kw


def embed_external_data(path):
    """Rewrites a model whose tensors were saved beside it with them embedded."""
    import onnx

    model = onnx.load(path)  # loads the external data too
    onnx.save(model, path, save_as_external_data=False)
    data = path + ".data"
    if os.path.exists(data):
        os.remove(data)


def graph_io(path):
    import onnx

    model = onnx.load(path, load_external_data=False)
    graph = model.graph
    inits = {t.name for t in graph.initializer}
    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), None)
    return ([i.name for i in graph.input if i.name not in inits], [o.name for o in graph.output],
            opset)


def ort_check(path, input_name, x, refs):
    try:
        import onnxruntime as ort
    except ImportError:
        return None
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    got = sess.run(None, {input_name: x})
    return [result_of(g, r) for g, r in zip(got, refs)]


def reference_outputs(model, name, x, device):
    model = model.to(device)
    with torch.no_grad():
        y = model(*example_args(name, torch.from_numpy(x).to(device)))
    outs = [t.detach().cpu().numpy() for t in flatten_outputs(y)]
    model.to("cpu")
    return outs


def export_all(cfg):
    os.makedirs(cfg.dir, exist_ok=True)
    manifest_path = os.path.join(cfg.dir, "manifest.json")
    manifest = {}
    if os.path.exists(manifest_path):
        with open(manifest_path) as f:
            manifest = json.load(f)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    # TF32 off through the legacy flags only: torch.export (the dynamo exporter) reads them, and
    # PyTorch >= 2.9 refuses that read once the new fp32_precision API has set any knob
    # (peers.disable_tf32 uses the new one: "cuDNN conv and cuDNN RNN have different TF32 flags").
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    if hasattr(torch.backends, "mha") and hasattr(torch.backends.mha, "set_fastpath_enabled"):
        torch.backends.mha.set_fastpath_enabled(False)  # decomposed attention, as issue 13 ran
    print(f"torch {torch.__version__}, reference on {device} (TF32 matmul {torch.backends.cuda.matmul.allow_tf32}, cudnn {torch.backends.cudnn.allow_tf32}), "
          f"out {cfg.dir}", flush=True)

    def save():
        with open(manifest_path, "w") as f:
            json.dump(manifest, f, indent=2, sort_keys=True)

    for name in cfg.models:
        t0 = time.time()
        try:
            model, x, input_name, output_names, exporters = build(name, cfg.seed)
            refs = reference_outputs(model, name, x, device)
        except Exception as e:
            print(f"SKIP {name}: cannot build or run it: {type(e).__name__}: {e}", flush=True)
            for exporter in cfg.exporters:
                manifest[f"{name}_{exporter}"] = {"model": name, "exporter": exporter,
                                                  "error": f"build: {type(e).__name__}: {e}"}
            save()
            continue
        np.save(os.path.join(cfg.dir, f"{name}_input.npy"), x)
        ref_files = []
        for i, r in enumerate(refs):
            ref_files.append(f"{name}_ref_{i}.npy")
            np.save(os.path.join(cfg.dir, ref_files[-1]), r)
        print(f"[{name}] reference outputs {[list(r.shape) for r in refs]} "
              f"({time.time() - t0:.1f}s)", flush=True)
        for exporter in cfg.exporters:
            if exporter not in exporters:
                print(f"[{name}] not exported with {exporter} (issue 13 runs it with "
                      f"{', '.join(exporters)} only)", flush=True)
                continue
            key = f"{name}_{exporter}"
            entry = manifest[key] = {"model": name, "exporter": exporter,
                                     "torch": torch.__version__, "input": f"{name}_input.npy",
                                     "refs": ref_files, "reference_device": device.type}
            path = os.path.join(cfg.dir, key + ".onnx")
            t1 = time.time()
            try:
                kw = export_kwargs(exporter)
                if exporter == "legacy":
                    kw["opset_version"] = cfg.opset
                elif cfg.dynamo_opset:
                    kw["opset_version"] = cfg.dynamo_opset
                torch.onnx.export(model, example_args(name, torch.from_numpy(x)), path,
                                  input_names=[input_name], output_names=output_names, **kw)
                if os.path.exists(path + ".data"):
                    embed_external_data(path)
                inputs, outputs, opset = graph_io(path)
                if len(inputs) != 1:
                    raise RuntimeError(f"expected one graph input, got {inputs}")
                if len(outputs) != len(refs):
                    raise RuntimeError(f"{len(outputs)} graph outputs for {len(refs)} PyTorch "
                                       "outputs")
                entry.update(onnx=key + ".onnx", input_name=inputs[0], output_names=outputs,
                             opset=opset, onnx_bytes=os.path.getsize(path),
                             export_s=round(time.time() - t1, 1))
                entry.pop("error", None)
            except Exception as e:
                entry["error"] = f"export: {type(e).__name__}: {e}"
                entry["traceback"] = traceback.format_exc(limit=6)
                if os.path.exists(path):
                    os.remove(path)
                print(f"SKIP {key}: export failed: {type(e).__name__}: {str(e)[:500]}",
                      flush=True)
                save()
                continue
            if not cfg.no_ort:
                try:
                    checks = ort_check(path, entry["input_name"], x, refs)
                    if checks is not None:
                        entry["ort_cpu"] = checks
                except Exception as e:
                    entry["ort_cpu_error"] = f"{type(e).__name__}: {str(e)[:500]}"
            ort = entry.get("ort_cpu")
            print(f"[{key}] opset {entry['opset']}, {entry['onnx_bytes'] / 1e6:.1f} MB, "
                  f"{entry['export_s']}s; onnxruntime CPU vs PyTorch: "
                  + (", ".join(describe(r) for r in ort) if ort else
                     entry.get("ort_cpu_error", "not installed")), flush=True)
            save()
    save()
    print(f"wrote {manifest_path}")
    return 0


# --------------------------------------------------------------------------
# Compare
# --------------------------------------------------------------------------
def result_of(got, ref, tol=None):
    """compare.py's statistics of one output, plus the verdict."""
    got, ref = np.asarray(got), np.asarray(ref)
    r = zoo_compare.compare(got, ref)
    if "error" in r:
        r["pass"] = False
        return r
    exact = not (np.issubdtype(ref.dtype, np.floating) or np.issubdtype(got.dtype, np.floating))
    rel = r["max_abs_over_ref_absmax"]
    if exact:
        r["pass"] = r["max_abs_diff"] == 0
    elif tol is not None:
        r["pass"] = r["nan_or_inf"] == 0 and (rel if rel is not None else r["max_abs_diff"]) <= tol
    r["exact"] = exact
    return r


def describe(r):
    if "error" in r:
        return f"ERROR {r['error']}"
    rel = r["max_abs_over_ref_absmax"]
    return f"max abs {zoo_compare.num(r['max_abs_diff'])} rel {zoo_compare.num(rel)}"


def sorted_detections(boxes, scores, labels):
    order = np.lexsort((boxes[:, 3], boxes[:, 2], boxes[:, 1], boxes[:, 0], -scores, labels))
    return boxes[order], scores[order], labels[order]


def detections_unordered(got, refs, tol):
    """boxes, scores and labels compared after sorting both sides the same way."""
    if len(got) != 3 or any(g.shape[:1] != r.shape[:1] for g, r in zip(got, refs)):
        return None
    a, b = sorted_detections(*got), sorted_detections(*refs)
    return [result_of(g, r, tol) for g, r in zip(a, b)]


def run_cli(cfg, key, entry, x_path, work):
    out_dir, log_path = os.path.join(work, f"out_{key}"), os.path.join(work, f"vk_{key}.txt")
    cmd = [cfg.cli, "run", os.path.join(cfg.dir, entry["onnx"]), "--input",
           f"{entry['input_name']}={x_path}", "--output-dir", out_dir] + cfg.cli_args
    if cfg.fp16:
        cmd.append("--fp16")
    env = dict(os.environ)
    devlibs = os.path.join(REPO, ".devlibs")  # what run_all.sh gives vkgraph (pack.sh)
    if os.path.isdir(devlibs):
        env["LD_LIBRARY_PATH"] = devlibs + (":" + env["LD_LIBRARY_PATH"]
                                            if env.get("LD_LIBRARY_PATH") else "")
    with open(log_path, "w") as log:
        proc = subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT, env=env,
                              timeout=cfg.timeout)
    with open(log_path, errors="replace") as f:
        text = f.read()
    if proc.returncode != 0:
        errors = [ln for ln in text.splitlines() if "error" in ln.lower()]
        raise RuntimeError(f"vkgraph exit status {proc.returncode}: "
                           + (errors[-1] if errors else text[-500:]))
    # compare.py finds the outputs by the 'output NAME:' lines of vk_KEY.txt in out_KEY/.
    files = zoo_compare.vk_output_files(key, work, work)
    return [np.load(f) for f in files]


def run_python(cfg, entry, x):
    if cfg.pythonpath:
        sys.path.insert(0, cfg.pythonpath)
    import vkgraph

    opts = vkgraph.SessionOptions()
    if cfg.fp16:
        opts.fp16 = True
    with vkgraph.InferenceSession(os.path.join(cfg.dir, entry["onnx"]), opts) as sess:
        return sess.run(None, {entry["input_name"]: x})


def compare_all(cfg):
    with open(os.path.join(cfg.dir, "manifest.json")) as f:
        manifest = json.load(f)
    work = os.path.join(cfg.dir, "vk16" if cfg.fp16 else "vk")
    os.makedirs(work, exist_ok=True)
    tol = cfg.tol if cfg.tol is not None else (2e-2 if cfg.fp16 else 1e-3)
    results, verdicts = {}, {}
    for key in sorted(manifest):
        entry = manifest[key]
        if cfg.models and entry.get("model") not in cfg.models:
            continue
        if "error" in entry or "onnx" not in entry:
            print(f"SKIP {key}: {entry.get('error', 'no model file')}", flush=True)
            verdicts[key] = "SKIP"
            continue
        x_path = os.path.join(cfg.dir, entry["input"])
        refs = [np.load(os.path.join(cfg.dir, r)) for r in entry["refs"]]
        t0 = time.time()
        try:
            if cfg.python:
                got = run_python(cfg, entry, np.load(x_path))
            else:
                got = run_cli(cfg, key, entry, x_path, work)
        except Exception as e:
            results[key] = {"error": f"{type(e).__name__}: {str(e)[:1000]}"}
            verdicts[key] = "FAIL"
            print(f"FAIL {key}: {results[key]['error']}", flush=True)
            continue
        rows = [result_of(g, r, tol) for g, r in zip(got, refs)]
        if len(got) != len(refs):
            rows.append({"error": f"{len(got)} outputs, expected {len(refs)}", "pass": False})
        note = ""
        if not all(r["pass"] for r in rows) and entry.get("model") == "ssdlite":
            unordered = detections_unordered(got, refs, tol)
            if unordered and all(r["pass"] for r in unordered):
                rows, note = unordered, " (after sorting: NMS order differs)"
        ok = all(r["pass"] for r in rows)
        verdicts[key] = "PASS" if ok else "FAIL"
        results[key] = {"outputs": dict(zip(entry["output_names"] + ["extra"], rows)),
                        "pass": ok, "seconds": round(time.time() - t0, 1), "note": note.strip()}
        print(f"{verdicts[key]} {key}{note} ({results[key]['seconds']}s)", flush=True)
        for out_name, r in results[key]["outputs"].items():
            print(f"    {out_name}: {describe(r)} {'PASS' if r['pass'] else 'FAIL'}", flush=True)
    out_json = os.path.join(cfg.dir, "compare_fp16.json" if cfg.fp16 else "compare.json")
    with open(out_json, "w") as f:
        json.dump({"tol": tol, "fp16": cfg.fp16, "verdicts": verdicts, "results": results}, f,
                  indent=2)
    print("summary: " + ", ".join(f"{k} {v}" for k, v in verdicts.items()) + f"; wrote {out_json}")
    compared = [v for v in verdicts.values() if v != "SKIP"]
    return 0 if compared and all(v == "PASS" for v in compared) else 1


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="mode", required=True)
    ex = sub.add_parser("export", help="export the models and save PyTorch's outputs")
    ex.add_argument("dir")
    ex.add_argument("--models", default=",".join(DEFAULT_MODELS))
    ex.add_argument("--exporters", default=",".join(EXPORTERS))
    ex.add_argument("--seed", type=int, default=0)
    ex.add_argument("--opset", type=int, default=17, help="legacy exporter's opset (17)")
    ex.add_argument("--dynamo-opset", type=int, default=None,
                    help="dynamo exporter's opset (default: the exporter's own, 18 in 2.11)")
    ex.add_argument("--no-ort", action="store_true", help="skip the onnxruntime CPU check")
    co = sub.add_parser("compare", help="run vkgraph on the exports and compare")
    co.add_argument("dir")
    how = co.add_mutually_exclusive_group(required=True)
    how.add_argument("--cli", help="the vkgraph tool, e.g. ./build-h200/vkgraph")
    how.add_argument("--python", action="store_true", help="use `import vkgraph`")
    co.add_argument("--pythonpath", help="folder holding the vkgraph package (build/python)")
    co.add_argument("--cli-args", default="", help="extra arguments for `vkgraph run`")
    co.add_argument("--models", default="", help="subset of the manifest's models")
    co.add_argument("--fp16", action="store_true", help="vkgraph's float16 mode")
    co.add_argument("--tol", type=float, default=None,
                    help="max |vk - ref| / max |ref| to pass (1e-3; 2e-2 with --fp16)")
    co.add_argument("--timeout", type=int, default=300, help="seconds per vkgraph run")
    cfg = ap.parse_args()
    if cfg.mode == "export":
        cfg.models = [m for m in cfg.models.split(",") if m]
        cfg.exporters = [e for e in cfg.exporters.split(",") if e]
        bad = [e for e in cfg.exporters if e not in EXPORTERS]
        if bad:
            ap.error(f"unknown exporter {bad}; known: {EXPORTERS}")
        return export_all(cfg)
    cfg.models = [m for m in cfg.models.split(",") if m]
    cfg.cli_args = cfg.cli_args.split()
    return compare_all(cfg)


if __name__ == "__main__":
    sys.exit(main())
