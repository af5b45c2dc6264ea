"""tools/h200/modelset.py: its --cpu-smoke run end to end (legacy exports, PyTorch on the CPU,
the vkgraph CLI on lavapipe) and its geo-mean lines on fabricated numbers. Skipped where torch,
torchvision or onnx cannot be imported (CI has no torch) or the CLI is not built; VKGRAPH_CLI
names the CLI (default build/vkgraph). Runs under pytest or as a script."""

import importlib.util
import inspect
import json
import os
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(ROOT, "tools", "h200", "modelset.py")
CLI = os.environ.get("VKGRAPH_CLI", os.path.join(ROOT, "build", "vkgraph"))
MISSING = [m for m in ("torch", "torchvision", "onnx") if importlib.util.find_spec(m) is None]
LAVAPIPE = {"VK_DRIVER_FILES": "/usr/share/vulkan/icd.d/lvp_icd.x86_64.json",
            "LP_NUM_THREADS": "2", "VK_LOADER_DEBUG": "none"}


def load_modelset():
    sys.path.insert(0, os.path.dirname(SCRIPT))
    spec = importlib.util.spec_from_file_location("modelset", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@unittest.skipIf(MISSING, f"not importable here: {', '.join(MISSING)}")
class ModelSetTest(unittest.TestCase):
    def test_geo_mean_lines(self):
        ms = load_modelset()

        def export(fp32, fp16):
            return {"vk_fp32": {"host_p50_ms": fp32, "gpu_p50_ms": fp32},
                    "vk_fp16": {"host_p50_ms": fp16, "gpu_p50_ms": fp16}}

        def torch_times(graph):
            return {"graph": {"p50_ms": graph}, "eager": {"p50_ms": 2 * graph}}

        out = {"models": {
            # dynamo counts where it exists; legacy stands in where dynamo failed
            "a": {"exports": {"dynamo": export(2.0, 1.0), "legacy": export(8.0, 8.0)},
                  "torch_fp32": torch_times(1.0), "torch_fp16": torch_times(1.0)},
            "b": {"exports": {"dynamo": {"error": "export: failed"}, "legacy": export(8.0, 4.0)},
                  "torch_fp32": torch_times(2.0), "torch_fp16": torch_times(1.0)},
            "c": {"skipped": "transformers is not installed", "exports": {}},
        }}
        # fp16: a 1.0, b 4.0 -> 2.00; fp32: a 2.0, b 4.0 -> 2.83
        self.assertEqual(ms.geo_line(out, "fp16"),
                         "fp16 geo-mean vs PyTorch fp16 CUDA graph: 2.00 over 2 models "
                         "(dynamo exports 1.00 over 1; legacy exports 5.66 over 2; worst b 4.00)")
        self.assertTrue(ms.geo_line(out, "fp32").startswith(
            "fp32 geo-mean vs PyTorch fp32 CUDA graph: 2.83 over 2 models"))

    def smoke(self, *args):
        """(modelset.json, modelset.md) of a --cpu-smoke run with these arguments."""
        with tempfile.TemporaryDirectory() as work:
            cmd = [sys.executable, SCRIPT, work, "--cli", CLI, "--cpu-smoke", "--jobs", "2", *args]
            env = dict(os.environ, **LAVAPIPE)
            env.pop("OUT", None)
            proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=900)
            self.assertEqual(proc.returncode, 0, proc.stdout[-3000:] + proc.stderr[-3000:])
            with open(os.path.join(work, "modelset.json")) as f, \
                    open(os.path.join(work, "modelset.md")) as g:
                return json.load(f), g.read()

    @unittest.skipUnless(os.path.exists(CLI), f"no vkgraph CLI at {CLI}")
    def test_deadline_still_writes_the_report(self):
        # The export stage gets 0.4 s and its worker is killed; every model is then skipped.
        out, report = self.smoke("--models", "vit_b_16,mobilenet_v3_large", "--deadline", "1")
        for name in ("vit_b_16", "mobilenet_v3_large"):
            self.assertIn("out of time", out["models"][name]["skipped"])
            self.assertIn(f"- {name}: skipped: out of time", report)
        self.assertIn("fp16 geo-mean vs PyTorch fp16 CUDA graph: - over 0 models", report)

    @unittest.skipUnless(os.path.exists(CLI), f"no vkgraph CLI at {CLI}")
    def test_cpu_smoke(self):
        out, report = self.smoke("--models", "mobilenet_v3_large,vit_b_16,bert",
                                 "--exporters", "legacy,dynamo", "--deadline", "600")
        self.assertIn("fp16 geo-mean vs PyTorch fp16 CUDA graph:", report)
        import torch

        has_dynamo = "dynamo" in inspect.signature(torch.onnx.export).parameters
        for name in ("mobilenet_v3_large", "vit_b_16"):
            rec = out["models"][name]
            dynamo = rec["exports"]["dynamo"]
            if not has_dynamo:  # a failed export is recorded and skipped, not fatal
                self.assertIn("no dynamo exporter", dynamo["error"])
                self.assertNotIn("vk_fp32", dynamo)
                self.assertIn(f"- {name} dynamo: export: RuntimeError", report)
            entry = rec["exports"]["legacy"]
            self.assertNotIn("error", entry)
            self.assertGreater(rec["torch_fp32"]["eager"]["p50_ms"], 0)
            for mode, tol in (("fp32", 1e-3), ("fp16", 3e-2)):
                vk = entry[f"vk_{mode}"]
                self.assertNotIn("failed", vk)
                self.assertGreater(vk["host_p50_ms"], 0)
                self.assertGreater(vk["gpu_p50_ms"], 0)
                self.assertLess(vk["error"], tol, f"{name} {mode}")
            self.assertIn(f"| {name} | legacy |", report)
        if importlib.util.find_spec("transformers") is None:
            self.assertIn("transformers", out["models"]["bert"]["skipped"])
            self.assertIn("bert: skipped: transformers is not installed", report)
        else:
            self.assertNotIn("error", out["models"]["bert"]["exports"]["legacy"])


if __name__ == "__main__":
    unittest.main()
