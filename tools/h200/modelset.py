#!/usr/bin/env python3
"""Issue 11's benchmark set on the H200 in one run: export every model with both PyTorch
exporters, time PyTorch fp32 and fp16 (eager and CUDA-graph replay) and vkgraph (fp32 and
--fp16), compare vkgraph's outputs with PyTorch's fp32 output, and write a report.

  modelset.py WORK_DIR --cli ./build-h200/vkgraph [--out $OUT] [--deadline 540]
              [--models vit_b_16,bert,...] [--exporters dynamo,legacy] [--runs 100]
  modelset.py WORK_DIR --cli build/vkgraph --cpu-smoke   (no GPU: tiny sizes, CPU, legacy)

Models, batch 1, seeded random weights (nothing is downloaded), weights embedded (< 2 GB
each): torchvision vit_b_16, convnext_tiny, resnet50, efficientnet_b0, mobilenet_v3_large,
swin_t at 224x224 (norms made non-trivial by export_zoo.realistic_norms; ViT's zero head and
ConvNeXt's 1e-6 layer scales re-initialised); from transformers configs: bert (bert-base, seq
128, input_ids + attention mask with the last quarter padded), gpt2 (small, seq 128, logits),
llama (LlamaForCausalLM: 8 layers, d 1024, 16 heads, 4 KV heads, RoPE, RMSNorm, SiLU MLP 2816,
vocab 32000, seq 128, logits).

Stages, each within --deadline so that the report is always written:
  export  a worker process per model (--jobs at a time), both exporters (dynamo: PyTorch's
          default; legacy: dynamo=False, opset 17); a failed or late export is recorded, skipped.
  torch   per model on CUDA: the fp32 reference (TF32 off), then fp32 and fp16 (a .half() copy)
          eager and CUDA-graph replay: host wall time per call (synchronised after each) and GPU
          time (CUDA events around back-to-back calls), p50.
  vkgraph per export: `vkgraph bench MODEL --runs N` and with --fp16 (host and GPU p50), and
          `vkgraph run --output-dir` in both modes: max|err| / max|ref| against PyTorch fp32.
  report  OUT/modelset.md (table, geo-means) and OUT/modelset.json (everything), rewritten
          after every model.

CUDA-graph capture of the Hugging Face models: their forward builds masks and position ids
itself, and some of that work cannot be captured (tensors made on the CPU; checks that read a
GPU value back, such as "is the mask all ones?" or transformers' find_packed_sequence_indices).
So they are wrapped (HFWrapper): position ids are a buffer of the wrapper, on the GPU with the
model, passed explicitly; masks are made on the GPU inside the wrapper as 4-D additive float
masks (0 or the dtype's lowest value), which transformers uses as given: the decoders get the
causal [1, 1, S, S] mask (batch 1, nothing padded); BERT's padding mask becomes [1, 1, 1, S]
and goes straight to the encoder after the embeddings; use_cache=False. The wrapper is what is
exported, too. A capture that still fails is recorded (torch_*.failed); eager numbers stay.

--cpu-smoke: the same code on the CPU with tiny sizes (ViT and Swin at test size, CNNs at
64x64), few iterations, the legacy exporter only and no CUDA graphs; models that need
transformers are skipped with a message when it is not installed.
"""

import argparse
import copy
import glob
import json
import math
import os
import subprocess
import sys
import time
import traceback

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "models"))
sys.path.insert(0, HERE)
import compare as zoo_compare  # noqa: E402  error statistics
import export_zoo  # noqa: E402  realistic_norms
import models as h200_models  # noqa: E402  exporter options, ViT/Swin builders, graph I/O
import peers  # noqa: E402  Clock (host and device timing)
import quant_models  # noqa: E402  `vkgraph bench` parsing, vkgraph's environment
import report as h200_report  # noqa: E402  number formatting

VISION = ["vit_b_16", "convnext_tiny", "resnet50", "efficientnet_b0", "mobilenet_v3_large",
          "swin_t"]
HF = ["bert", "gpt2", "llama"]
ALL_MODELS = VISION + HF
EXPORTERS = ["dynamo", "legacy"]
DISPLAY = {"bert": "bert-base S128", "gpt2": "gpt2 small S128",
           "llama": "llama L8 d1024 GQA S128"}


class Skip(Exception):
    """A model this environment cannot build (e.g. transformers missing)."""


# ---- Models ----------------------------------------------------------------------------------
class HFWrapper(torch.nn.Module):
    """A transformers model behind a forward that CUDA graphs can capture (module docstring)."""

    def __init__(self, model, seq, encoder_only):
        super().__init__()
        self.model, self.encoder_only = model, encoder_only
        self.register_buffer("position_ids", torch.arange(seq).unsqueeze(0), persistent=False)
        causal = torch.ones(seq, seq, dtype=torch.bool).tril()[None, None]
        self.register_buffer("causal", causal, persistent=False)

    @staticmethod
    def additive(keep, dtype):  # 0 where attended, the dtype's lowest value elsewhere
        return (1.0 - keep.to(dtype)) * torch.finfo(dtype).min

    def forward(self, input_ids, attention_mask=None):
        if self.encoder_only:  # BERT: embeddings, our own additive mask, the encoder
            hidden = self.model.embeddings(input_ids=input_ids, position_ids=self.position_ids)
            mask = self.additive(attention_mask[:, None, None, :], hidden.dtype)
            return self.model.encoder(hidden, attention_mask=mask)[0]
        # A 4-D mask is used as given (no padding or packed-sequence checks, which synchronise)
        mask = self.additive(self.causal, self.model.get_input_embeddings().weight.dtype)
        return self.model(input_ids=input_ids, attention_mask=mask,
                          position_ids=self.position_ids, use_cache=False)[0]


def randomize_rms_norms(model, seed):
    # export_zoo.realistic_norms knows nn.LayerNorm only; Llama's RMSNorm has a weight alone.
    g = torch.Generator().manual_seed(seed + 104729)
    with torch.no_grad():
        for m in model.modules():
            if type(m).__name__.endswith("RMSNorm"):
                m.weight.copy_(0.75 + 0.5 * torch.rand(m.weight.shape, generator=g))


def build_hf(name, smoke, seed):
    try:
        import transformers as tf
    except ImportError:
        raise Skip("transformers is not installed")
    seq = 16 if smoke else 128
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    if name == "bert":
        cfg = (tf.BertConfig(hidden_size=64, num_hidden_layers=2, num_attention_heads=2,
                             intermediate_size=128, vocab_size=1000) if smoke else tf.BertConfig())
        model = HFWrapper(tf.BertModel(cfg, add_pooling_layer=False), seq, encoder_only=True)
        mask = np.ones((1, seq), dtype=np.int64)
        mask[:, seq * 3 // 4:] = 0  # padding at the end, as a tokenizer leaves it
        inputs = {"input_ids": rng.integers(1, cfg.vocab_size, (1, seq)), "attention_mask": mask}
    elif name == "gpt2":
        cfg = (tf.GPT2Config(n_embd=64, n_layer=2, n_head=2, vocab_size=1000) if smoke
               else tf.GPT2Config())
        model = HFWrapper(tf.GPT2LMHeadModel(cfg), seq, encoder_only=False)
        inputs = {"input_ids": rng.integers(0, cfg.vocab_size, (1, seq))}
    else:
        dims = (dict(hidden_size=64, intermediate_size=176, num_hidden_layers=2,
                     num_attention_heads=4, num_key_value_heads=2, vocab_size=1000) if smoke
                else dict(hidden_size=1024, intermediate_size=2816, num_hidden_layers=8,
                          num_attention_heads=16, num_key_value_heads=4, vocab_size=32000))
        cfg = tf.LlamaConfig(max_position_embeddings=2048, hidden_act="silu",
                             tie_word_embeddings=False, **dims)
        model = HFWrapper(tf.LlamaForCausalLM(cfg), seq, encoder_only=False)
        inputs = {"input_ids": rng.integers(0, cfg.vocab_size, (1, seq))}
    model = export_zoo.realistic_norms(model.float().eval(), (1,), seed)
    randomize_rms_norms(model, seed)
    inputs = {k: v.astype(np.int64) for k, v in inputs.items()}
    attention = getattr(model.model.config, "_attn_implementation", "?")
    return model.eval(), inputs, f"transformers {tf.__version__}, attention {attention}"


def build_vision(name, smoke, seed):
    import torchvision

    if name in ("vit_b_16", "swin_t"):  # tools/h200/models.py's builders (head re-init)
        mini = {"vit_b_16": "vit_mini", "swin_t": "swin_mini"}[name] if smoke else name
        model, x, _, _, _ = h200_models.build(mini, seed)
        return model, {"input": x}, "torchvision" + (f" ({mini})" if smoke else "")
    torch.manual_seed(seed)
    model = getattr(torchvision.models, name)(weights=None).float().eval()
    with torch.no_grad():  # ConvNeXt's 1e-6 layer scales make its blocks nearly identity
        for pname, p in model.named_parameters():
            if pname.endswith("layer_scale"):
                p.uniform_(0.05, 0.15)
    shape = (1, 3, 64, 64) if smoke else (1, 3, 224, 224)
    model = export_zoo.realistic_norms(model, shape, seed)
    x = np.random.default_rng(seed).standard_normal(shape, dtype=np.float32)
    return model, {"input": x}, "torchvision" + (" at 64x64" if smoke else "")


def build(name, smoke, seed):
    """(eval-mode fp32 CPU module, {input name: array}, note); the same for every call."""
    if name in HF:
        return build_hf(name, smoke, seed)
    if name in VISION:
        return build_vision(name, smoke, seed)
    raise ValueError(f"unknown model {name!r}; known: {', '.join(ALL_MODELS)}")


# ---- Export (one worker process per model) ---------------------------------------------------
def export_one(cfg):
    """Worker: exports one model with each exporter into cfg.dir; writes MODEL_export.json."""
    torch.set_num_threads(cfg.threads)
    tf32_off()
    if hasattr(torch.backends, "mha") and hasattr(torch.backends.mha, "set_fastpath_enabled"):
        # ViT exports decomposed attention, as in issue 13; PyTorch's timings keep the fast path
        torch.backends.mha.set_fastpath_enabled(False)
    name, result = cfg.export_one, {}

    def save():
        with open(os.path.join(cfg.dir, f"{name}_export.json"), "w") as f:
            json.dump(result, f, indent=2)

    try:
        model, inputs, _ = build(name, cfg.cpu_smoke, cfg.seed)
    except Exception as e:
        result = {ex: {"error": f"build: {type(e).__name__}: {e}"} for ex in cfg.exporters}
        return save()
    args = tuple(torch.from_numpy(v) for v in inputs.values())
    # legacy first: the quicker one, saved before a dynamo export that overruns the export
    # stage gets this worker killed
    for exporter in sorted(cfg.exporters, key=lambda e: e != "legacy"):
        key, t0 = f"{name}_{exporter}", time.time()
        path = os.path.join(cfg.dir, key + ".onnx")
        entry = result[exporter] = {}
        try:
            kw = h200_models.export_kwargs(exporter)
            if exporter == "legacy":
                kw["opset_version"] = 17  # dynamo: the exporter's own (18 in PyTorch 2.11)
            torch.onnx.export(model, args, path, input_names=list(inputs),
                              output_names=["output"], **kw)
            if os.path.exists(path + ".data"):
                h200_models.embed_external_data(path)
            graph_inputs, outputs, opset = h200_models.graph_io(path)
            entry.update(onnx=key + ".onnx", inputs=graph_inputs, outputs=outputs, opset=opset,
                         mb=round(os.path.getsize(path) / 1e6, 1))
        except Exception as e:
            entry["error"] = f"export: {type(e).__name__}: {str(e)[:800]}"
            entry["traceback"] = traceback.format_exc(limit=4)[-2000:]
            if os.path.exists(path):
                os.remove(path)
        entry["export_s"] = round(time.time() - t0, 1)
        save()


def tf32_off():
    # Through the legacy flags only: torch.export reads them and PyTorch >= 2.9 refuses mixing
    # them with the fp32_precision API (tools/h200/models.py's note).
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False


def export_all(cfg, names, budget_s):
    """Runs the export workers, --jobs at a time; returns {model: {exporter: entry}}."""
    t_end, running, done = time.time() + budget_s, {}, {}
    slow = HF + ["swin_t", "vit_b_16", "convnext_tiny"]
    pending = sorted(names, key=lambda n: n not in slow)  # the slowest exports start first
    while pending or running:
        while pending and len(running) < cfg.jobs:
            name = pending.pop(0)
            if time.time() > t_end - 5:
                done[name] = {ex: {"error": "export: not started, out of time"}
                              for ex in cfg.exporters}
                continue
            cmd = [sys.executable, os.path.abspath(__file__), cfg.dir, "--export-one", name,
                   "--exporters", ",".join(cfg.exporters), "--seed", str(cfg.seed),
                   "--threads", str(cfg.threads)]
            cmd += ["--cpu-smoke"] if cfg.cpu_smoke else []
            stale = os.path.join(cfg.dir, f"{name}_export.json")
            if os.path.exists(stale):
                os.remove(stale)
            log = open(os.path.join(cfg.dir, f"{name}_export.log"), "w")
            running[name] = (subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT), log)
            print(f"[export] {name}: started", flush=True)
        for name, (proc, log) in list(running.items()):
            late = time.time() > t_end + 10
            if proc.poll() is None and not late:
                continue
            if late and proc.poll() is None:
                proc.kill()
                proc.wait()
            log.close()
            del running[name]
            done[name] = h200_report.load_json(os.path.join(cfg.dir, f"{name}_export.json")) or {}
            for ex in cfg.exporters:  # what a killed or crashed worker left unsaid
                done[name].setdefault(ex, {"error": f"export: worker exit status "
                                                    f"{proc.returncode} before it finished "
                                                    f"(out of time or crashed): see {log.name}"})
            print(f"[export] {name}: " + "; ".join(
                f"{ex} " + (e.get("error", "")[:200] or f"ok, {e['mb']} MB, {e['export_s']}s")
                for ex, e in done[name].items()), flush=True)
        time.sleep(0.5)
    return done


# ---- PyTorch ---------------------------------------------------------------------------------
def first_output(y):
    return h200_models.flatten_outputs(y)[0]


def error_vs(got, ref):
    r = zoo_compare.compare(np.asarray(got), np.asarray(ref))
    return r.get("max_abs_over_ref_absmax"), r


def capture(model, args):
    """A CUDA graph of model(*args) and its static output (warm-up on a side stream first)."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            model(*args)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        static_out = first_output(model(*args))
    graph.replay()
    torch.cuda.synchronize()
    return graph, static_out


def time_torch(res, model, args, ref, clock, cfg):
    """Fills res (eager, eager_gpu, graph, graph_gpu, error) as it goes."""
    with torch.no_grad():
        res["error"] = error_vs(first_output(model(*args)).float().cpu().numpy(), ref)[0]

        def call():
            model(*args)

        res["eager"] = clock.host_ms(call, cfg.warmup, cfg.iters)
        res["eager_gpu"] = clock.device_ms(call, 2, cfg.gpu_samples, cfg.gpu_calls)
        if not clock.cuda:
            return
        graph, out = capture(model, args)
        res["graph_error"] = error_vs(out.float().cpu().numpy(), ref)[0]
        res["graph"] = clock.host_ms(graph.replay, cfg.warmup, cfg.iters)
        res["graph_gpu"] = clock.device_ms(graph.replay, 2, cfg.gpu_samples, cfg.gpu_calls)


def bench_torch(rec, name, cfg, device):
    """Saves the inputs (rec["input_files"]) and the fp32 reference (DIR/MODEL_ref.npy), then
    times PyTorch (rec["torch_fp32"], rec["torch_fp16"])."""
    threads = torch.get_num_threads()
    torch.set_num_threads(cfg.threads)  # as the export worker: the same BatchNorm statistics
    model, inputs, rec["note"] = build(name, cfg.cpu_smoke, cfg.seed)
    torch.set_num_threads(threads)
    files = rec["input_files"] = {}
    for k, v in inputs.items():
        files[k] = os.path.join(cfg.dir, f"{name}_{k}.npy")
        np.save(files[k], v)
    clock = peers.Clock(device)
    args = tuple(torch.from_numpy(v).to(device) for v in inputs.values())
    model = model.to(device)
    with torch.no_grad():
        ref = first_output(model(*args)).float().cpu().numpy()
    np.save(os.path.join(cfg.dir, f"{name}_ref.npy"), ref)
    rec["output_shape"] = list(ref.shape)
    for tag, make in (("torch_fp32", lambda: model),
                      ("torch_fp16", lambda: copy.deepcopy(model).half())):
        res = rec[tag] = {}
        try:
            m = make()
            a = tuple(t.half() if t.is_floating_point() else t for t in args) \
                if tag == "torch_fp16" else args
            time_torch(res, m, a, ref, clock, cfg)
        except Exception as e:  # CPU half kernels are patchy; capture can fail: recorded
            res["failed"] = f"{type(e).__name__}: {str(e)[:600]}"


# ---- vkgraph ---------------------------------------------------------------------------------
def bench_vk(cfg, entry, input_files, ref, t_end):
    """vkgraph bench and run --output-dir in fp32 and fp16 mode on one export; the results go
    into its entry (vk_fp32, vk_fp16)."""
    path = os.path.join(cfg.dir, entry["onnx"])
    names = list(input_files)

    def timeout():
        left = t_end - time.time()
        if left < 5:
            raise TimeoutError("not run: --deadline reached")
        return min(cfg.vk_timeout, left)

    feed = []
    for i, graph_name in enumerate(entry["inputs"]):  # by name; by position if renamed
        src = input_files.get(graph_name) or input_files[names[min(i, len(names) - 1)]]
        feed += ["--input", f"{graph_name}={src}"]
    for mode in ("fp32", "fp16"):
        r = entry["vk_" + mode] = {}
        fp16 = mode == "fp16"
        out_dir = os.path.join(cfg.dir, f"out_{entry['onnx'][:-5]}_{mode}")
        try:
            r.update(quant_models.bench(cfg.cli, path, feed, cfg.runs, fp16, timeout()))
            quant_models.vk([cfg.cli, "run", path, *feed, "--output-dir", out_dir] +
                            (["--fp16"] if fp16 else []), timeout())
            name = quant_models.sanitize(entry["outputs"][0])
            r["error"], r["stats"] = error_vs(np.load(os.path.join(out_dir, name + ".npy")), ref)
        except Exception as e:
            r["failed"] = f"{type(e).__name__}: {str(e)[-1200:]}"


# ---- Report ----------------------------------------------------------------------------------
def p50(d, key):
    return ((d or {}).get(key) or {}).get("p50_ms")


def host_gpu(r):
    if not r or "host_p50_ms" not in r:
        return "fail" if r and "failed" in r else "-"
    return f"{h200_report.ms(r['host_p50_ms'])} ({h200_report.ms(r['gpu_p50_ms'])})"


def geo_mean(values):
    values = [v for v in values if v]
    if not values:
        return None, 0
    return math.exp(sum(math.log(v) for v in values) / len(values)), len(values)


def ratios(out, mode, exporter=None):
    """{model: vk host / torch CUDA-graph host}: the dynamo export (PyTorch's default), the
    legacy one where dynamo failed; or only `exporter`'s."""
    found = {}
    for name, rec in out["models"].items():
        torch_ms = p50(rec.get(f"torch_{mode}"), "graph")
        for ex in ([exporter] if exporter else EXPORTERS):
            vk = (rec.get("exports", {}).get(ex) or {}).get(f"vk_{mode}") or {}
            if torch_ms and vk.get("host_p50_ms") and name not in found:
                found[name] = vk["host_p50_ms"] / torch_ms
    return found


def geo_line(out, mode):
    found = ratios(out, mode)
    g, n = geo_mean(found.values())
    value = "-" if g is None else f"{g:.2f}"
    line = f"{mode} geo-mean vs PyTorch {mode} CUDA graph: {value} over {n} models"
    parts = [f"{ex} exports {ge:.2f} over {ne}" for ex in EXPORTERS
             for ge, ne in [geo_mean(ratios(out, mode, ex).values())] if ne]
    if found:
        worst = max(found, key=found.get)
        parts.append(f"worst {worst} {found[worst]:.2f}")
    return line + (f" ({'; '.join(parts)})" if parts else "")


def write_report(out, cfg):
    with open(os.path.join(cfg.out, "modelset.json"), "w") as f:
        json.dump(out, f, indent=2)
    m, fmt, sci = out["meta"], h200_report.ms, h200_report.sci
    lines = [f"# vkgraph model set, {m['time_utc']}", "",
             f"{m.get('gpu', 'CPU')}; torch {m['torch']}, transformers {m.get('transformers')}, "
             f"TF32 matmul {m['tf32_matmul']} cudnn {m['tf32_cudnn']}; vkgraph `{m['cli']}` "
             f"(commit {m['commit']}), `bench --runs {cfg.runs}`. Batch 1, p50 ms; host = wall "
             "time per call (vkgraph: upload, run, readback; PyTorch: inputs already on the "
             "GPU, synchronised after each call); (GPU) = device time. Ratios: vkgraph host / "
             "PyTorch CUDA-graph host. PyTorch (GPU): CUDA-event time per call over "
             f"{cfg.gpu_calls} back-to-back calls. Errors: max|out - ref| / max|ref| against "
             "PyTorch fp32.",
             "", f"**{geo_line(out, 'fp16')}**", "", f"**{geo_line(out, 'fp32')}**", "",
             "| model | exporter | vk fp32 host (GPU) | vk fp16 host (GPU) | torch fp32 eager "
             "(GPU) | torch fp32 graph (GPU) | torch fp16 eager (GPU) | torch fp16 graph (GPU) "
             "| vk fp32 / torch fp32 graph | vk fp16 / torch fp16 graph | vk fp32 err "
             "| vk fp16 err | torch fp16 err |", "|" + " --- |" * 13]
    problems = []

    def tcell(t, key):
        return f"{fmt(p50(t, key))} ({fmt(p50(t, key + '_gpu'))})" if p50(t, key) else "-"

    for name, rec in out["models"].items():
        t32, t16 = rec.get("torch_fp32") or {}, rec.get("torch_fp16") or {}
        for what in ("failed", "skipped"):
            if what in rec:
                problems.append(f"- {name}: {what}: {rec[what]}")
        for tag, t in (("torch fp32", t32), ("torch fp16", t16)):
            if "failed" in t:
                problems.append(f"- {name} {tag}: {t['failed']}")
        exports = rec.get("exports") or {}
        for ex, e in sorted(exports.items(), key=lambda kv: EXPORTERS.index(kv[0])):
            if "error" in e and "skipped" in rec:
                continue  # the model's skip says why
            if "error" in e:
                problems.append(f"- {name} {ex}: {e['error'].splitlines()[0][:300]}")
                continue
            v32, v16 = e.get("vk_fp32") or {}, e.get("vk_fp16") or {}
            for mode, v in (("fp32", v32), ("fp16", v16)):
                if "failed" in v:
                    problems.append(f"- {name} {ex} vkgraph {mode}: {v['failed'][-300:]}")
            lines.append(
                f"| {DISPLAY.get(name, name)} | {ex} | {host_gpu(v32)} | {host_gpu(v16)} | "
                f"{tcell(t32, 'eager')} | {tcell(t32, 'graph')} | {tcell(t16, 'eager')} | "
                f"{tcell(t16, 'graph')} | "
                f"{h200_report.ratio(v32.get('host_p50_ms'), p50(t32, 'graph'))} | "
                f"{h200_report.ratio(v16.get('host_p50_ms'), p50(t16, 'graph'))} | "
                f"{sci(v32.get('error'))} | {sci(v16.get('error'))} | {sci(t16.get('error'))} |")
    lines += ["", "Stages: " + ", ".join(f"{k} {v:.0f}s" for k, v in out["stages"].items())]
    if problems:
        lines += ["", "Failures and skips:", ""] + [p.replace("\n", " ") for p in problems]
    with open(os.path.join(cfg.out, "modelset.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    return "\n".join(lines)


def meta(cfg, device):
    m = {"torch": torch.__version__, "device": str(device), "cli": cfg.cli,
         "time_utc": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
         "tf32_matmul": torch.backends.cuda.matmul.allow_tf32,
         "tf32_cudnn": torch.backends.cudnn.allow_tf32, "smoke": cfg.cpu_smoke}
    commit = os.path.join(os.path.dirname(os.path.abspath(cfg.cli)), "COMMIT")
    m["commit"] = open(commit).read().strip() if os.path.exists(commit) else "unknown"
    for mod in ("torchvision", "transformers", "onnx"):
        try:
            m[mod] = __import__(mod).__version__
        except ImportError:
            m[mod] = None
    mha = getattr(torch.backends, "mha", None)
    m["mha_fastpath"] = mha.get_fastpath_enabled() if hasattr(mha, "get_fastpath_enabled") else None
    if device.type == "cuda":
        m["gpu"] = torch.cuda.get_device_name(device)
    return m


# ---- Main ------------------------------------------------------------------------------------
def run(cfg):
    t_start = time.time()
    t_end = t_start + cfg.deadline - 5  # a few seconds for the last report write
    os.makedirs(cfg.out, exist_ok=True)
    for stale in glob.glob(os.path.join(cfg.dir, "*_ref.npy")):
        os.remove(stale)  # a reference is only read back from this run
    tf32_off()
    device = torch.device("cpu" if cfg.cpu_smoke else "cuda")
    if not cfg.cpu_smoke and not torch.cuda.is_available():
        sys.exit("modelset.py: CUDA is not available (use --cpu-smoke without a GPU)")
    out = {"meta": meta(cfg, device), "config": {k: v for k, v in vars(cfg).items()},
           "models": {}, "stages": {}}
    exports = export_all(cfg, cfg.models, cfg.deadline * cfg.export_share)
    out["stages"]["export"] = time.time() - t_start
    for name in cfg.models:
        rec = out["models"][name] = {"exports": exports.get(name, {})}
        t0, left = time.time(), t_end - time.time()
        if left < cfg.min_model_s:
            rec["skipped"] = f"out of time ({left:.0f}s left of --deadline {cfg.deadline}s)"
            continue
        ref_path = os.path.join(cfg.dir, f"{name}_ref.npy")
        try:
            bench_torch(rec, name, cfg, device)
        except Skip as e:
            rec["skipped"] = str(e)
            print(f"SKIP {name}: {e}", flush=True)
            continue
        except Exception as e:  # the vkgraph stage still runs when the reference exists
            rec["failed"] = f"torch: {type(e).__name__}: {str(e)[:600]}"
            print(f"FAIL {name}: {rec['failed']}", flush=True)
        if device.type == "cuda":
            torch.cuda.empty_cache()  # PyTorch's models are gone; vkgraph gets the memory
        if os.path.exists(ref_path):
            for entry in rec["exports"].values():
                if "onnx" in entry:
                    bench_vk(cfg, entry, rec["input_files"], np.load(ref_path), t_end)
        out["stages"][name] = time.time() - t0
        print(f"[{name}] {time.time() - t0:.0f}s", flush=True)
        write_report(out, cfg)
    out["stages"]["total"] = time.time() - t_start
    print(write_report(out, cfg), flush=True)
    print(f"wrote {cfg.out}/modelset.md and modelset.json")
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dir", help="work folder: exports, inputs, references, vkgraph outputs")
    ap.add_argument("--cli", default=os.path.join(REPO, "build-h200", "vkgraph"))
    ap.add_argument("--out", default=None, help="report folder (default $OUT, else DIR)")
    ap.add_argument("--models", default=",".join(ALL_MODELS))
    ap.add_argument("--exporters", default=None, help="default dynamo,legacy (smoke: legacy)")
    ap.add_argument("--deadline", type=float, default=540, help="seconds for the whole run")
    ap.add_argument("--export-share", type=float, default=0.4,
                    help="part of --deadline the export stage may take (0.4)")
    ap.add_argument("--jobs", type=int, default=5, help="export workers at a time")
    ap.add_argument("--runs", type=int, default=None, help="vkgraph bench --runs (100)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--cpu-smoke", action="store_true", help="tiny sizes on the CPU, no CUDA")
    ap.add_argument("--export-one", help=argparse.SUPPRESS)  # the export worker
    ap.add_argument("--threads", type=int, default=0, help=argparse.SUPPRESS)
    cfg = ap.parse_args()
    cfg.models = [m for m in cfg.models.split(",") if m]
    bad = [m for m in cfg.models if m not in ALL_MODELS]
    if bad:
        ap.error(f"unknown models {bad}; known: {ALL_MODELS}")
    default_exporters = ["legacy"] if cfg.cpu_smoke else EXPORTERS
    cfg.exporters = cfg.exporters.split(",") if cfg.exporters else default_exporters
    # Torch threads of the export workers, and of the main process while it builds a model
    cfg.threads = cfg.threads or max(1, (os.cpu_count() or 2) // max(1, cfg.jobs))
    if cfg.export_one:
        return export_one(cfg) or 0
    cfg.out = cfg.out or os.environ.get("OUT") or cfg.dir
    os.makedirs(cfg.dir, exist_ok=True)
    smoke = cfg.cpu_smoke
    cfg.runs = cfg.runs or (3 if smoke else 100)
    cfg.warmup, cfg.iters = (1, 3) if smoke else (10, 100)
    cfg.gpu_samples, cfg.gpu_calls = (2, 2) if smoke else (10, 10)
    cfg.vk_timeout = 300 if smoke else 60
    cfg.min_model_s = 5 if smoke else 20
    return run(cfg)


if __name__ == "__main__":
    sys.exit(main())
