#!/usr/bin/env python3
"""Compare vkgraph's outputs with the PyTorch outputs export_zoo.py saved.

usage: compare.py ZOO_DIR OUT_JSON MODEL...

For each MODEL, reads vkgraph's output .npy files from /tmp/out_MODEL (or --vk-root) and
compares the first one with ZOO_DIR/MODEL_output.npy: max abs diff, max abs diff over
max |ref|, and ||vk - ref|| / ||ref|| (float64). Output names come from the
'output NAME: ...' lines of VK_TXT_DIR/vk_MODEL.txt when given, sanitized as vkgraph does.
"""

import argparse
import glob
import json
import os
import re
import sys

import numpy as np


def sanitize(name):
    return re.sub(r"[^A-Za-z0-9_.-]", "_", name)


def vk_output_files(model, vk_root, txt_dir):
    out_dir = os.path.join(vk_root, f"out_{model}")
    if txt_dir:
        txt = os.path.join(txt_dir, f"vk_{model}.txt")
        if os.path.exists(txt):
            with open(txt, errors="replace") as f:
                names = re.findall(r"^output (\S+): ", f.read(), flags=re.M)
            files = [os.path.join(out_dir, sanitize(n) + ".npy") for n in names]
            if files and all(os.path.exists(p) for p in files):
                return files
    return sorted(glob.glob(os.path.join(out_dir, "*.npy")))


def compare(got, ref):
    res = {"shape": list(got.shape), "ref_shape": list(ref.shape), "dtype": str(got.dtype)}
    if got.size != ref.size:
        res["error"] = f"size {got.size} != reference size {ref.size}"
        return res
    if got.shape != ref.shape:
        res["note"] = "shapes differ, sizes match: compared flattened"
    g = got.reshape(-1).astype(np.float64)
    r = ref.reshape(-1).astype(np.float64)
    d = np.abs(g - r)
    ref_max, ref_norm = float(np.abs(r).max()), float(np.linalg.norm(r))
    res.update(
        nan_or_inf=int((~np.isfinite(g)).sum()),
        max_abs_diff=float(np.nanmax(d)) if d.size else 0.0,
        max_abs_over_ref_absmax=float(np.nanmax(d) / ref_max) if ref_max else None,
        rel_l2=float(np.linalg.norm(np.nan_to_num(g - r, nan=np.inf)) / ref_norm) if ref_norm else None,
        argmax_match=bool(np.argmax(g) == np.argmax(r)) if g.size else None,
    )
    return res


def num(v):
    return "-" if v is None else f"{v:.3g}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("zoo_dir")
    ap.add_argument("out_json")
    ap.add_argument("models", nargs="+")
    ap.add_argument("--vk-root", default="/tmp", help="folder holding out_MODEL/ (default /tmp)")
    ap.add_argument("--vk-txt-dir", default=os.environ.get("OUT"),
                    help="folder holding vk_MODEL.txt (default $OUT)")
    args = ap.parse_args()

    results = {}
    for m in args.models:
        files = vk_output_files(m, args.vk_root, args.vk_txt_dir)
        if not files:
            results[m] = {"error": f"no vkgraph output .npy in {args.vk_root}/out_{m}"}
        else:
            try:
                results[m] = compare(np.load(files[0]),
                                     np.load(os.path.join(args.zoo_dir, f"{m}_output.npy")))
                results[m]["file"] = files[0]
            except Exception as e:  # unreadable .npy etc.: record and go on
                results[m] = {"error": f"{type(e).__name__}: {e}", "file": files[0]}
        r = results[m]
        if "error" in r:
            print(f"[compare] {m}: ERROR {r['error']}")
        else:
            print(f"[compare] {m}: max abs {num(r['max_abs_diff'])}, max abs / max|ref| "
                  f"{num(r['max_abs_over_ref_absmax'])}, rel L2 {num(r['rel_l2'])}, "
                  f"non-finite {r['nan_or_inf']}, argmax match {r['argmax_match']}")
    with open(args.out_json, "w") as f:
        json.dump(results, f, indent=2)
    return 0 if all("error" not in r for r in results.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
