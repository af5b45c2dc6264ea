#!/usr/bin/env python3
"""A/B of VKGRAPH_TUNE settings on the exports of a finished modelset.py run, for deciding a
knob's default: for each model, exporter, precision and setting, `vkgraph bench` (GPU and host
p50, node count) and `vkgraph run` against the PyTorch fp32 reference modelset.py saved.

    python3 tools/h200/knob_ab.py OUT --cli ./build-h200/vkgraph --models bert:fp16,llama:fp16 \
        --tunes "" "mm16.fsk=1" "fuse.siblings=1" --out "$OUT/knob_ab.md"

OUT is modelset.py's --out (it reads OUT/modelset.json: export paths, graph inputs, the saved
input files and references). An empty setting is the binary's defaults. Each cell is
`GPU p50 ms (nodes) err`; the last column names the fastest setting whose error stays within
twice the default's (and 1e-2). No torch import: it runs beside or after modelset.py.
"""
import argparse
import json
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare as zoo_compare  # noqa: E402  error statistics
import quant_models  # noqa: E402  `vkgraph bench` parsing and vkgraph's environment


def feed_args(entry, input_files):
    names, feed = list(input_files), []
    for i, graph_name in enumerate(entry["inputs"]):  # by name; by position if renamed
        src = input_files.get(graph_name) or input_files[names[min(i, len(names) - 1)]]
        feed += ["--input", f"{graph_name}={src}"]
    return feed


def measure(cli, path, feed, fp16, tune, ref, runs, work, timeout):
    env_tune = os.environ.get("VKGRAPH_TUNE")
    os.environ["VKGRAPH_TUNE"] = tune
    try:
        r = quant_models.bench(cli, path, feed, runs, fp16, timeout)
        out_dir = os.path.join(work, "out_ab")
        quant_models.vk([cli, "run", path, *feed, "--output-dir", out_dir] +
                        (["--fp16"] if fp16 else []), timeout)
        got = [f for f in sorted(os.listdir(out_dir)) if f.endswith(".npy")][0]
        stats = zoo_compare.compare(np.load(os.path.join(out_dir, got)), ref)
        r["error"] = stats.get("max_abs_over_ref_absmax")
        return r
    except Exception as e:
        return {"failed": f"{type(e).__name__}: {str(e)[-300:]}"}
    finally:
        if env_tune is None:
            os.environ.pop("VKGRAPH_TUNE", None)
        else:
            os.environ["VKGRAPH_TUNE"] = env_tune


def cell(r):
    if "failed" in r:
        return "fail"
    err = "-" if r.get("error") is None else f"{r['error']:.2g}"
    return f"{r['gpu_p50_ms']:.3f} ({r.get('nodes')}) {err}"


def best(results, tunes):
    base = results.get("")
    ok = [t for t in tunes if "gpu_p50_ms" in results[t]]
    if base and base.get("error") is not None:
        limit = max(2 * base["error"], 1e-6)
        ok = [t for t in ok if (results[t].get("error") or 0) <= min(limit, 1e-2) or t == ""]
    return min(ok, key=lambda t: results[t]["gpu_p50_ms"]) if ok else None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dir", help="modelset.py's --out folder (holds modelset.json)")
    ap.add_argument("--cli", default="./build-h200/vkgraph")
    ap.add_argument("--models", required=True, help="MODEL:fp16|fp32[,...]")
    ap.add_argument("--exporters", default="dynamo")
    ap.add_argument("--tunes", nargs="+", required=True, help='settings; "" = defaults')
    ap.add_argument("--runs", type=int, default=50)
    ap.add_argument("--deadline", type=float, default=300, help="seconds for the whole A/B")
    ap.add_argument("--out", help="markdown table (default DIR/knob_ab.md)")
    args = ap.parse_args()
    t_end = time.time() + args.deadline
    with open(os.path.join(args.dir, "modelset.json")) as f:
        run = json.load(f)
    models, work = run["models"], run["config"]["dir"]
    tunes = args.tunes if "" in args.tunes else [""] + args.tunes
    rows, raw = [], {}
    for spec in args.models.split(","):
        name, _, prec = spec.partition(":")
        rec = models.get(name) or {}
        ref_path = os.path.join(work, f"{name}_ref.npy")
        for ex in args.exporters.split(","):
            entry = (rec.get("exports") or {}).get(ex) or {}
            if "onnx" not in entry or not os.path.exists(ref_path):
                rows.append(f"| {name} | {ex} | {prec} | " + " | ".join("-" for _ in tunes) +
                            " | not exported |")
                continue
            path, feed = os.path.join(work, entry["onnx"]), feed_args(entry, rec["input_files"])
            ref = np.load(ref_path)
            results = {}
            for t in tunes:
                left = t_end - time.time()
                results[t] = measure(args.cli, path, feed, prec == "fp16", t, ref, args.runs,
                                     work, min(120, left)) if left > 10 else \
                    {"failed": "not run: --deadline"}
                print(f"{name} {ex} {prec} [{t}] {cell(results[t])}", flush=True)
            raw[f"{name}:{ex}:{prec}"] = results
            rows.append(f"| {name} | {ex} | {prec} | " + " | ".join(cell(results[t]) for t in tunes) +
                        f" | `{best(results, tunes) or '-'}` |")
    head = ["model", "exporter", "precision"] + [f"`{t}`" if t else "defaults" for t in tunes] + ["best"]
    table = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)] + rows
    text = "GPU p50 ms (nodes) max|err|/max|ref| vs PyTorch fp32\n\n" + "\n".join(table) + "\n"
    out = args.out or os.path.join(args.dir, "knob_ab.md")
    with open(out, "w") as f:
        f.write(text)
    with open(out[:-3] + ".json", "w") as f:
        json.dump(raw, f, indent=2)
    print(text)


if __name__ == "__main__":
    main()
