#!/usr/bin/env python3
"""Summarize one tools/h200/run_all.sh run as a Markdown report.

Reads, from the results folder (--out, default $OUT):
  info.txt          `vkgraph info` (device, driver), run_all.sh's '# run-id' and '# commit'
                    lines, nvidia-smi
  peers.json        tools/h200/peers.py (PyTorch CUDA eager / CUDA graph, ORT CPU, ceilings)
  vk_MODEL.txt      stdout+stderr of `vkgraph run ... --repeat N`, run_all.sh's
                    '# exit status' trailer, an optional fp16 section (the same run with
                    --fp16, after FP16_MARK) and optional validation sections
and from run_all.sh's work folder (--work, default /tmp/h200):
  compare.json      tools/h200/compare.py (vkgraph output vs saved PyTorch output)
  compare_fp16.json the same for vkgraph's --fp16 outputs
  stages.tsv        stage, exit status, seconds
  vk_bench.txt      output of `vkgraph bench-op` (when the binary has it)
Writes OUT/report.md and prints it. Missing inputs leave '-' cells, never an error.

report.md begins with a dated section in BENCHMARKS.md's format (date, device, driver,
commit, the ratio table, microbenchmarks), identified by a run-id comment and closed by
SECTION_END; tools/h200/append_bench.sh adds that section to BENCHMARKS.md and the whole
report to docs/bench/. The full report follows the marker.
"""

import argparse
import glob
import json
import os
import re
import sys

KNOWN_ORDER = ["resnet18", "mobilenet_v2", "transformer", "mlp"]
VALIDATION_MARK = "# --- validation run"
FP16_MARK = "# --- fp16 run (--fp16) ---"  # written by run_all.sh's run_vk
RUN_RE = re.compile(r"run x(\d+): host p50 ([\d.]+) ms, p90 ([\d.]+) ms; GPU p50 ([\d.]+) ms")
LOAD_RE = re.compile(r"load: parse ([\d.]+) ms, build ([\d.]+) ms, prepare ([\d.]+) ms; "
                     r"first run \(incl\. load\) ([\d.]+) ms")
PIPELINES_RE = re.compile(r"^pipelines: (\d+) created in ([\d.]+) ms; disk cache (\w+)", re.M)
EXIT_RE = re.compile(r"^# exit status (\d+) after ([\d.]+) s", re.M)
ERROR_RE = re.compile(r"^vkgraph: error: (.*)$", re.M)
OUTPUT_RE = re.compile(r"^output (\S+): (.*)$", re.M)
DEVICE_RE = re.compile(r"^device: (.*)$", re.M)
VAL_MSG_RE = re.compile(r"Validation (Error|Warning|Performance Warning)")
RUN_ID_PREFIX = "<!-- vkgraph-bench-run: "
SECTION_END = "<!-- end of BENCHMARKS.md section -->"
# Row names in BENCHMARKS.md, for the models as models/export_zoo.py builds them.
DISPLAY_NAMES = {"transformer": "transformer L4 d512 S128", "mlp": "MLP 4x Linear(1024)"}
GEMM_RE = re.compile(r"^bench-op gemm (\d+)x(\d+)x(\d+) (\w+): GPU p50 ([\d.]+) ms(?: \([^)]*\))?, ([\d.]+) TFLOP/s",
                     re.M)
ADD_RE = re.compile(r"^bench-op add (\d+) (\w+): GPU p50 ([\d.]+) ms(?: \([^)]*\))?, ([\d.]+) GB/s", re.M)
IO_RE = re.compile(r"^bench-op io (\d+) floats, (.*?): wall p50 ([\d.]+) ms", re.M)
OVERHEAD_RE = re.compile(r"^bench-op overhead (\d+) nodes \((.*?)\).*?execute\(\) host p50 ([\d.]+) us, "
                         r"p90 ([\d.]+) us; GPU p50 ([\d.]+) us; host - GPU p50 ([\d.]+) us", re.M)


def load_json(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def read_text(path):
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except OSError:
        return None


def parse_run(text):
    """Timing, load, pipelines, exit, device, errors and outputs of one `vkgraph run` section."""
    r = {}
    if m := RUN_RE.search(text):
        r.update(repeat=int(m[1]), host_p50=float(m[2]), host_p90=float(m[3]),
                 gpu_p50=float(m[4]))
    if m := LOAD_RE.search(text):
        r.update(parse_ms=float(m[1]), build_ms=float(m[2]), prepare_ms=float(m[3]),
                 first_ms=float(m[4]))
    if m := PIPELINES_RE.search(text):
        r.update(pipelines=int(m[1]), pipelines_ms=float(m[2]), disk_cache=m[3])
    if m := EXIT_RE.search(text):
        r.update(exit=int(m[1]), wall_s=float(m[2]))
    if m := DEVICE_RE.search(text):
        r["device"] = m[1]
    r["errors"] = ERROR_RE.findall(text)
    r["outputs"] = OUTPUT_RE.findall(text)
    return r


def parse_vk(text):
    """Fields of one vk_MODEL.txt; absent ones are left out. The fp32 run's fields are at the
    top level, the --fp16 run's (when the file has its section) under "fp16"."""
    if text is None:
        return {}
    timing, mark, validation = text.partition(VALIDATION_MARK)
    fp32, fp16_mark, fp16 = timing.partition(FP16_MARK)
    r = parse_run(fp32)
    if fp16_mark:
        r["fp16"] = parse_run(fp16)
        if "device" not in r and "device" in r["fp16"]:
            r["device"] = r["fp16"]["device"]
    if mark:
        # One section per validation run (fp32, then --fp16 in newer runs): the first
        # non-zero exit status stands for them all.
        exits = [int(e) for e, _ in EXIT_RE.findall(validation)]
        r["validation"] = {
            "runs": validation.count(VALIDATION_MARK) + 1,
            "messages": len(VAL_MSG_RE.findall(validation)),
            "sync_hazards": len(re.findall(r"SYNC-HAZARD-[A-Z-]+", validation)),
            "first": next((ln.strip()[:300] for ln in validation.splitlines()
                           if VAL_MSG_RE.search(ln)), None),
            "errors": ERROR_RE.findall(validation),
            "exit": next((e for e in exits if e), exits[0] if exits else None),
        }
    return r


def ms(v):
    return "-" if v is None else (f"{v:.3f}" if v < 100 else f"{v:.1f}")


def ratio(a, b):
    return "-" if a is None or not b else f"{a / b:.2f}x"


def sci(v):
    return "-" if v is None else f"{v:.2g}"


def p50(peer, key):
    return (peer.get(key) or {}).get("p50_ms")


def model_names(out_dir, peers):
    found = set((peers or {}).get("models", {}))
    found.update(os.path.basename(p)[3:-4] for p in glob.glob(os.path.join(out_dir, "vk_*.txt")))
    found.discard("bench")
    return [m for m in KNOWN_ORDER if m in found] + sorted(found - set(KNOWN_ORDER))


def info_field(info, pattern):
    m = re.search(pattern, info or "", re.M)
    return m[1].strip() if m else None


def run_facts(out_dir, vk_device, peers_meta, run_id):
    """Date, device, driver, commit and run id of the run, from info.txt where it has them."""
    info = read_text(os.path.join(out_dir, "info.txt"))
    commit = info_field(info, r"^# commit (\S+)") or "unknown"
    driver = info_field(info, r"^driver: (.*?) \(driverVersion")
    if not driver:  # an older vkgraph: nvidia-smi's CSV row after its header
        m = re.search(r"^name, driver_version.*\n([^,\n]+), ([^,\n]+),", info or "", re.M)
        driver = m[2].strip() if m else "unknown"
    date = info_field(info, r"^# date (\d{4}-\d\d-\d\d)") or (peers_meta.get("time_utc") or "")[:10]
    run_id = run_id or info_field(info, r"^# run-id (\S+)") or f"{date or 'undated'}-{commit}"
    return {"date": date or "undated", "device": vk_device, "driver": driver,
            "vulkan": info_field(info, r", Vulkan ([\d.]+)\)$") or "-", "commit": commit,
            "run_id": run_id}


def fp16_rows(names, vk, peers, compare16):
    """BENCHMARKS.md rows for fp16 mode, or [] when the run has no fp16 data at all (runs
    from before run_all.sh timed --fp16)."""
    models = peers.get("models", {})
    if not (compare16 or any("fp16" in vk[m] for m in names) or
            any(k.endswith("_fp16") for m in names for k in models.get(m, {}))):
        return []
    rows = []
    for m in names:
        v, v16, pm = vk[m], vk[m].get("fp16") or {}, models.get(m, {})
        c16 = compare16.get(m, {})
        graph16, eager16 = p50(pm, "cuda_graph_fp16"), p50(pm, "eager_fp16")
        host16 = v16.get("host_p50")
        if host16 is not None:
            vk_cell = f"{ms(host16)} ({ms(v16.get('gpu_p50'))})"
        elif v16.get("errors"):
            vk_cell = f"failed: {'; '.join(v16['errors'])[:120].replace('|', '/')}"
        else:
            vk_cell = "-"
        vk_err = "ERR" if "error" in c16 else sci(c16.get("max_abs_over_ref_absmax"))
        torch_err = sci((pm.get("verify_fp16") or {}).get("max_abs_over_ref_absmax"))
        rows.append((DISPLAY_NAMES.get(m, m), vk_cell, ms(v.get("host_p50")), ms(graph16),
                     ratio(host16, graph16), ms(eager16), vk_err if host16 is not None else "-",
                     torch_err))
    return rows


def rate(v, unit, digits):
    return "-" if v is None else f"{v:.{digits}f} {unit}"


def micro_rows(bench, micro):
    """BENCHMARKS.md rows (op, vkgraph, PyTorch, ratio) from `vkgraph bench-op` output and
    peers.py's ceilings."""
    rows = []
    torch_gemm = {(r["dtype"], r["n"]): r.get("tflops") for r in micro.get("gemm", [])}
    for m in GEMM_RE.finditer(bench or ""):
        mm, n, k, dtype, _, tflops = m.groups()
        square = mm == n == k
        dtype_name = {"fp32": "float32", "fp16": "float16"}.get(dtype, dtype)
        peer = torch_gemm.get((dtype_name, int(n))) if square else None
        size = f"{n}³" if square else f"{mm}x{n}x{k}"
        rows.append((f"GEMM {size} {dtype}", rate(float(tflops), "TFLOP/s", 1),
                     rate(peer, "TFLOP/s", 1), ratio(float(tflops), peer)))
    stream = micro.get("stream") or {}
    for m in ADD_RE.finditer(bench or ""):
        n, dtype, _, gbps = m.groups()
        peer = (stream.get("add") or {}).get("GBps")
        peer_note = f" ({stream['elements']})" if peer and stream.get("elements") != int(n) else ""
        rows.append((f"add {n} {dtype}", rate(float(gbps), "GB/s", 0),
                     rate(peer, "GB/s", 0) + peer_note, ratio(float(gbps), peer)))
    io = {path: float(t) for _, path, t in IO_RE.findall(bench or "")}
    if io:
        n = IO_RE.search(bench)[1]
        staged = io.pop("staged copies", None)
        other, fast = next(iter(io.items()), (None, None))
        cell = f"staged {ms(staged)} ms" + (f", {other} {ms(fast)} ms" if other else "")
        rows.append((f"graph I/O y = 2x, {n} floats, host to host", cell, "",
                     ratio(staged, fast) if fast else "-"))
    for m in OVERHEAD_RE.finditer(bench or ""):
        nodes, how, host, _, gpu, over = m.groups()
        rows.append((f"execute() host overhead, {nodes} nodes, {how} (target < 50 us)",
                     f"{over} us (host {host} us - GPU {gpu} us)", "", ""))
    return rows


def bench_section(facts, names, vk, peers, compare, bench, compare16=None):
    """The dated section for BENCHMARKS.md."""
    meta = peers.get("meta", {})
    cfg = meta.get("config") or {}
    L = [f"## {facts['date']}, {facts['device']}, driver {facts['driver']} "
         f"(commit {facts['commit']})", "", f"{RUN_ID_PREFIX}{facts['run_id']} -->", ""]
    L.append(f"`tools/h200/run_all.sh` on {facts['device']} (driver {facts['driver']}, Vulkan "
             f"{facts['vulkan']}); peers: torch {meta.get('torch', '-')} (CUDA "
             f"{meta.get('cuda', '-')}, TF32 matmul {meta.get('tf32_matmul', '-')}), onnxruntime "
             f"{meta.get('onnxruntime', '-')} on {cfg.get('ort_threads', 16)} CPU threads. "
             f"p50, ms. Full report: `docs/bench/{facts['run_id']}.md`.")
    L += ["", "| model | vkgraph host | vkgraph GPU | torch eager | torch CUDA graph | ORT CPU | "
          "host / CUDA graph | host / eager | host / ORT | max abs diff vs PyTorch |",
          "|" + " --- |" * 10]
    for m in names:
        v, pm, c = vk[m], peers.get("models", {}).get(m, {}), compare.get(m, {})
        eager, graph, ort = p50(pm, "eager"), p50(pm, "cuda_graph"), p50(pm, "ort_cpu")
        host, gpu = v.get("host_p50"), v.get("gpu_p50")
        name = DISPLAY_NAMES.get(m, m)
        if host is None:
            why = "; ".join(v.get("errors", [])) or "no result"
            L.append(f"| {name} | failed: {why[:120].replace('|', '/')} | | {ms(eager)} | "
                     f"{ms(graph)} | {ms(ort)} | | | | |")
            continue
        diff = sci(c.get("max_abs_diff")) if "error" not in c else "ERR"
        L.append(f"| {name} | {ms(host)} | {ms(gpu)} | {ms(eager)} | {ms(graph)} | {ms(ort)} | "
                 f"{ratio(host, graph)} | {ratio(host, eager)} | {ratio(host, ort)} | {diff} |")
    if rows := fp16_rows(names, vk, peers, compare16 or {}):
        L += ["", "fp16 mode (SessionOptions::fp16 / --fp16): float16 storage, float32 arithmetic; "
              "PyTorch fp16 is the model in .half() (float16 arithmetic, cuBLAS/cuDNN "
              "accumulation). p50, ms. Error: max |out - ref| / max |ref| against the fp32 "
              "PyTorch reference output.", "",
              "| model | vkgraph fp16 host (GPU) | vkgraph fp32 host | torch fp16 CUDA graph | "
              "vk fp16 host / CUDA graph fp16 | torch fp16 eager | vk fp16 error | "
              "torch fp16 error |", "|" + " --- |" * 8]
        L += ["| " + " | ".join(row) + " |" for row in rows]
    rows = micro_rows(bench, peers.get("micro") or {})
    if rows:
        L += ["", "| op | vkgraph | PyTorch | ratio |", "| --- | --- | --- | --- |"]
        L += [f"| {a} | {b} | {c} | {d} |" for a, b, c, d in rows]
    val = {m: vk[m]["validation"] for m in names if "validation" in vk[m]}
    if val:
        counts = ", ".join(f"{m} {r['messages']}" + ("" if r["exit"] == 0 else f" (exit {r['exit']})")
                           for m, r in val.items())
        runs = " fp32 and --fp16 runs," if any(r.get("runs", 1) > 1 for r in val.values()) else ""
        L += ["", f"Validation (Khronos layer + synchronization validation),{runs} messages: "
              f"{counts}."]
    L += ["", SECTION_END, ""]
    return L


def build_report(out_dir, work_dir, run_id=None):
    peers = load_json(os.path.join(out_dir, "peers.json")) or {}
    compare = load_json(os.path.join(work_dir, "compare.json")) or {}
    compare16 = load_json(os.path.join(work_dir, "compare_fp16.json")) or {}
    meta = peers.get("meta", {})
    names = model_names(out_dir, peers)
    vk = {m: parse_vk(read_text(os.path.join(out_dir, f"vk_{m}.txt"))) for m in names}
    vk_device = next((v["device"] for v in vk.values() if "device" in v), None)
    if vk_device is None:  # no model ran: fall back on what `vkgraph info` chose
        m = re.search(r"^chosen: (.*)$", read_text(os.path.join(out_dir, "info.txt")) or "", re.M)
        vk_device = m[1] if m else "-"

    bench = read_text(os.path.join(work_dir, "vk_bench.txt"))
    facts = run_facts(out_dir, vk_device, meta, run_id)
    L = bench_section(facts, names, vk, peers, compare, bench, compare16)
    L += ["# vkgraph on the H200: run_all.sh report", ""]
    L.append(f"- vkgraph device: {vk_device}")
    L.append(f"- peers: {meta.get('gpu', meta.get('device', '-'))}; torch {meta.get('torch', '-')} "
             f"(CUDA {meta.get('cuda', '-')}, cuDNN {meta.get('cudnn', '-')}), onnxruntime "
             f"{meta.get('onnxruntime', '-')}, TF32 matmul {meta.get('tf32_matmul', '-')} / cuDNN "
             f"{meta.get('tf32_cudnn', '-')}; {meta.get('time_utc', '')}")
    L.append("- vkgraph host = wall time of Session::run (input upload, graph, output readback); "
             "GPU = its timestamp-query time. Torch times are per forward with the input already "
             "on the GPU, synchronized after each call; ORT: CPU, "
             f"{(meta.get('config') or {}).get('ort_threads', 16)} intra-op threads. All p50, ms.")
    L.append("")
    L.append("| model | vkgraph host p50 | vkgraph GPU p50 | torch eager | torch CUDA graph | "
             "ORT CPU | vk host / graph | vk GPU / graph | vk host / eager | vk host / ORT | "
             "max abs diff | rel L2 |")
    L.append("|" + " --- |" * 12)
    for m in names:
        v, pm, c = vk[m], peers.get("models", {}).get(m, {}), compare.get(m, {})
        eager, graph, ort = p50(pm, "eager"), p50(pm, "cuda_graph"), p50(pm, "ort_cpu")
        host, gpu = v.get("host_p50"), v.get("gpu_p50")
        diff = sci(c.get("max_abs_diff")) if "error" not in c else "ERR"
        L.append(f"| {m} | {ms(host)} | {ms(gpu)} | {ms(eager)} | {ms(graph)} | {ms(ort)} | "
                 f"{ratio(host, graph)} | {ratio(gpu, graph)} | {ratio(host, eager)} | "
                 f"{ratio(host, ort)} | {diff} | {sci(c.get('rel_l2'))} |")
    L.append("")

    L += ["## vkgraph details", "",
          "| model | exit | wall s | runs | host p90 | parse | build | prepare | pipelines | "
          "first run | argmax match | non-finite | outputs |", "|" + " --- |" * 13]
    for m in names:
        v, c = vk[m], compare.get(m, {})
        outs = "; ".join(f"{n}: {s}" for n, s in v.get("outputs", []))[:160] or "-"
        pipelines = (f"{v['pipelines']} in {ms(v['pipelines_ms'])} ms, disk cache {v['disk_cache']}"
                     if "pipelines" in v else "-")
        L.append(f"| {m} | {v.get('exit', '-')} | {v.get('wall_s', '-')} | {v.get('repeat', '-')} | "
                 f"{ms(v.get('host_p90'))} | {ms(v.get('parse_ms'))} | {ms(v.get('build_ms'))} | "
                 f"{ms(v.get('prepare_ms'))} | {pipelines} | {ms(v.get('first_ms'))} | "
                 f"{c.get('argmax_match', '-')} | {c.get('nan_or_inf', '-')} | {outs} |")
    problems = [f"- {m}: vkgraph: {e}" for m in names for e in vk[m].get("errors", [])]
    problems += [f"- {m}: vkgraph --fp16: {e}" for m in names
                 for e in (vk[m].get("fp16") or {}).get("errors", [])]
    problems += [f"- {m}: compare: {compare[m]['error']}" for m in names
                 if "error" in compare.get(m, {})]
    problems += [f"- {m}: compare --fp16: {compare16[m]['error']}" for m in names
                 if "error" in compare16.get(m, {})]
    problems += [f"- {m}: peers: {e}" for m in names
                 for e in peers.get("models", {}).get(m, {}).get("errors", [])]
    if problems:
        L += ["", "Problems:", ""] + problems
    L.append("")

    fp16 = {m: vk[m]["fp16"] for m in names if "fp16" in vk[m]}
    if fp16:
        L += ["## vkgraph --fp16 details", "",
              "| model | exit | wall s | runs | host p90 | prepare | pipelines | first run | "
              "argmax match | non-finite | max abs diff | rel L2 |", "|" + " --- |" * 12]
        for m, v in fp16.items():
            c = compare16.get(m, {})
            pipelines = (f"{v['pipelines']} in {ms(v['pipelines_ms'])} ms, disk cache "
                         f"{v['disk_cache']}" if "pipelines" in v else "-")
            L.append(f"| {m} | {v.get('exit', '-')} | {v.get('wall_s', '-')} | "
                     f"{v.get('repeat', '-')} | {ms(v.get('host_p90'))} | "
                     f"{ms(v.get('prepare_ms'))} | {pipelines} | {ms(v.get('first_ms'))} | "
                     f"{c.get('argmax_match', '-')} | {c.get('nan_or_inf', '-')} | "
                     f"{sci(c.get('max_abs_diff'))} | {sci(c.get('rel_l2'))} |")
        L.append("")

    val = {m: vk[m]["validation"] for m in names if "validation" in vk[m]}
    if val:
        L += ["## Validation (Khronos layer + synchronization validation)", "",
              "| model | exit | messages | SYNC-HAZARD | first message / error |",
              "| --- | --- | --- | --- | --- |"]
        for m, r in val.items():
            first = (r["first"] or "; ".join(r["errors"]) or "-").replace("|", "/")
            L.append(f"| {m} | {r['exit']} | {r['messages']} | {r['sync_hazards']} | {first} |")
        L.append("")

    if pm_rows := [(m, peers["models"][m]) for m in names if m in peers.get("models", {})]:
        L += ["## Peers: detail", "",
              "| model | torch vs saved max abs | graph vs saved | ORT vs saved | eager p90 | "
              "eager back-to-back | graph p90 | graph back-to-back | ORT p90 | "
              "torch fp16 vs saved | graph fp16 vs saved | eager fp16 p90 | graph fp16 p90 |",
              "|" + " --- |" * 13]
        for m, r in pm_rows:
            def d(k):
                return sci((r.get(k) or {}).get("max_abs_diff"))
            L.append(f"| {m} | {d('verify')} | {d('cuda_graph_verify')} | "
                     f"{sci(((r.get('ort_cpu') or {}).get('verify') or {}).get('max_abs_diff'))} | "
                     f"{ms((r.get('eager') or {}).get('p90_ms'))} | "
                     f"{ms(p50(r, 'eager_back_to_back'))} | "
                     f"{ms((r.get('cuda_graph') or {}).get('p90_ms'))} | "
                     f"{ms(p50(r, 'cuda_graph_back_to_back'))} | "
                     f"{ms((r.get('ort_cpu') or {}).get('p90_ms'))} | "
                     f"{d('verify_fp16')} | {d('cuda_graph_verify_fp16')} | "
                     f"{ms((r.get('eager_fp16') or {}).get('p90_ms'))} | "
                     f"{ms((r.get('cuda_graph_fp16') or {}).get('p90_ms'))} |")
        L.append("")

    micro = peers.get("micro") or {}
    if micro.get("gemm") or micro.get("stream"):
        L += ["## Device ceilings (PyTorch, CUDA events, median)", "",
              "| what | size | ms | rate |", "| --- | --- | --- | --- |"]
        for row in micro.get("gemm", []):
            rate = f"{row['tflops']:.1f} TFLOP/s" if "tflops" in row else row.get("error", "-")
            L.append(f"| GEMM {row['dtype']} | {row['n']}^3 | {ms(row.get('ms'))} | {rate} |")
        s = micro.get("stream")
        if s:
            L.append(f"| add a+b->c | {s['elements']} fp32 (12 B/elem) | {ms(s['add']['ms'])} | "
                     f"{s['add']['GBps']:.0f} GB/s |")
            L.append(f"| copy_ | {s['copy']['bytes'] / 2**31:.3g} GiB (read+write counted) | "
                     f"{ms(s['copy']['ms'])} | "
                     f"{s['copy']['GBps']:.0f} GB/s |")
        L += [f"- error: {e}" for e in micro.get("errors", [])]
        L.append("")

    if bench:
        L += ["## vkgraph bench-op", "", "```", bench.rstrip()[-6000:], "```", ""]

    stages = read_text(os.path.join(work_dir, "stages.tsv"))
    if stages:
        L += ["## Stages", "", "| stage | exit | seconds |", "| --- | --- | --- |"]
        L += ["| " + " | ".join(line.split("\t")) + " |" for line in stages.splitlines() if line]
        L.append("")
    return "\n".join(L)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=os.environ.get("OUT"), help="results folder (default $OUT)")
    ap.add_argument("--work", default="/tmp/h200", help="run_all.sh work folder")
    ap.add_argument("--run-id", help="identifies the run (default: info.txt's '# run-id')")
    args = ap.parse_args()
    if not args.out:
        ap.error("give --out or set OUT")
    text = build_report(args.out, args.work, args.run_id)
    with open(os.path.join(args.out, "report.md"), "w") as f:
        f.write(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
