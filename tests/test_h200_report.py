"""tools/h200/report.py and append_bench.sh on a small fabricated run (tests/h200_report/:
the files run_all.sh leaves in $OUT and its work folder; numbers from docs/bench run 2, one
model failed, one passed validation; fabricated --fp16 sections and PyTorch fp16 numbers)."""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools", "h200"))
import report  # noqa: E402

FIXTURE = os.path.join(ROOT, "tests", "h200_report")
APPEND = os.path.join(ROOT, "tools", "h200", "append_bench.sh")
RUN_ID = "2026-11-29T213500Z-h200-7857193"

BENCHMARKS = """# Benchmarks

Intro.

## 2026-11-29, run 2 (commit 7857193)

| model | vkgraph host |
| --- | --- |
"""


class ReportTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp()
        self.out = os.path.join(self.tmp, "out")
        shutil.copytree(os.path.join(FIXTURE, "out"), self.out)
        self.text = report.build_report(self.out, os.path.join(FIXTURE, "work"))
        self.section = self.text.split(report.SECTION_END)[0]

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def test_section_names_date_device_driver_commit_and_run(self):
        first = self.section.splitlines()[0]
        self.assertEqual(first, "## 2026-11-29, NVIDIA H200, driver NVIDIA 580.159.04 "
                                "(commit 7857193)")
        self.assertIn(f"{report.RUN_ID_PREFIX}{RUN_ID} -->", self.section)
        self.assertIn(f"docs/bench/{RUN_ID}.md", self.section)

    def test_ratio_table_in_benchmarks_format(self):
        self.assertIn("| MLP 4x Linear(1024) | 0.109 | 0.054 | 0.108 | 0.024 | 0.127 | 4.54x | "
                      "1.01x | 0.86x | 4.8e-08 |", self.section)
        self.assertIn("| mobilenet_v2 | failed: map::at |", self.section)

    def test_microbenchmarks_against_pytorch(self):
        self.assertIn("| GEMM 1024³ fp32 | 17.1 TFLOP/s | 27.6 TFLOP/s | 0.62x |", self.section)
        # The newer bench-op format, "(min ..., N runs)" after the time, against torch fp16.
        self.assertIn("| GEMM 1024³ fp16 | 93.4 TFLOP/s | 57.5 TFLOP/s | 1.62x |", self.section)
        self.assertIn("| add 268435456 fp32 | 1589 GB/s | 4307 GB/s | 0.37x |", self.section)
        self.assertIn("staged 62.341 ms, host memory imported (zero-copy) 6.573 ms |  | 9.48x |",
                      self.section)
        self.assertIn("| execute() host overhead, 100 nodes, 2 command buffers, fence wait polls "
                      "200 us (target < 50 us) | 28.7 us (host 60.2 us - GPU 31.5 us) |",
                      self.section)
        self.assertIn("messages: mlp 0.", self.section)

    def test_fp16_table(self):
        self.assertIn("fp16 mode (SessionOptions::fp16 / --fp16): float16 storage, float32 "
                      "arithmetic", self.section)
        # vk fp16 host (GPU), vk fp32 host, torch fp16 graph, ratio, torch fp16 eager, errors.
        self.assertIn("| MLP 4x Linear(1024) | 0.071 (0.030) | 0.109 | 0.020 | 3.55x | 0.101 | "
                      "0.00021 | 0.00039 |", self.section)
        self.assertIn("| mobilenet_v2 | failed: map::at | - | - | - | - | - | - |", self.section)
        self.assertIn("fp32 and --fp16 runs, messages: mlp 0.", self.section)
        self.assertIn("| mlp | 0 | 1.0 | 199 | 0.080 | 61.000 | 4 in 14.500 ms, disk cache warm | "
                      "290.4 | True | 0 | 2.7e-05 | 0.00016 |", self.text)
        self.assertIn("- mobilenet_v2: compare --fp16: no vkgraph output .npy", self.text)

    def test_fp32_fields_come_only_from_before_the_fp16_marker(self):
        text = ("device: D\nvkgraph: error: boom\n# exit status 1 after 2 s\n" +
                report.FP16_MARK + "\nrun x9: host p50 1.5 ms, p90 2.0 ms; GPU p50 1.0 ms\n"
                "# exit status 0 after 3 s\n")
        r = report.parse_vk(text)
        self.assertNotIn("host_p50", r)
        self.assertEqual((r["exit"], r["errors"]), (1, ["boom"]))
        self.assertEqual((r["fp16"]["host_p50"], r["fp16"]["gpu_p50"], r["fp16"]["exit"]),
                         (1.5, 1.0, 0))
        self.assertEqual(r["fp16"]["errors"], [])

    def test_run_without_fp16_data_has_no_fp16_table(self):
        for name in ("vk_mlp.txt", "vk_mobilenet_v2.txt"):
            path = os.path.join(self.out, name)
            with open(path) as f:
                text = f.read()
            fp32, _, rest = text.partition(report.FP16_MARK)
            _, mark, validation = rest.partition(report.VALIDATION_MARK)
            with open(path, "w") as f:  # as an older run_all.sh wrote it: one validation run
                f.write(fp32 + mark + validation.split(report.VALIDATION_MARK)[0])
        peers = os.path.join(self.out, "peers.json")
        with open(peers) as f:
            data = json.load(f)
        for r in data["models"].values():
            for k in [k for k in r if k.endswith("_fp16")]:
                del r[k]
        with open(peers, "w") as f:
            json.dump(data, f)
        work = os.path.join(self.tmp, "work")
        shutil.copytree(os.path.join(FIXTURE, "work"), work)
        os.remove(os.path.join(work, "compare_fp16.json"))
        text = report.build_report(self.out, work)
        self.assertNotIn("fp16 mode", text)
        self.assertNotIn("--fp16 details", text)
        self.assertIn("| MLP 4x Linear(1024) | 0.109 | 0.054 | 0.108 | 0.024 | 0.127 | 4.54x | ",
                      text)
        self.assertIn("synchronization validation), messages: mlp 0.", text)

    def test_driver_falls_back_on_nvidia_smi(self):
        info = os.path.join(self.out, "info.txt")
        with open(info) as f:
            lines = [ln for ln in f if not ln.startswith("driver:")]
        with open(info, "w") as f:
            f.writelines(lines)
        text = report.build_report(self.out, os.path.join(FIXTURE, "work"))
        self.assertIn("driver 580.159.04 (commit 7857193)", text.splitlines()[0])

    def test_append_is_idempotent(self):
        path = os.path.join(self.out, "report.md")
        with open(path, "w") as f:
            f.write(self.text + "\n")
        bench = os.path.join(self.tmp, "BENCHMARKS.md")
        with open(bench, "w") as f:
            f.write(BENCHMARKS)
        docs = os.path.join(self.tmp, "bench")
        run = [APPEND, path, bench, docs]
        subprocess.run(run, check=True, capture_output=True)
        with open(bench) as f:
            merged = f.read()
        self.assertTrue(merged.startswith("# Benchmarks\n\nIntro.\n\n## 2026-11-29, NVIDIA H200"))
        self.assertIn("messages: mlp 0.\n\n## 2026-11-29, run 2", merged)
        self.assertNotIn(report.SECTION_END, merged)
        self.assertNotIn("run_all.sh report", merged)
        self.assertTrue(os.path.exists(os.path.join(docs, RUN_ID + ".md")))

        again = subprocess.run(run, capture_output=True, text=True)
        self.assertNotEqual(again.returncode, 0)
        self.assertIn("already in", again.stderr)
        with open(bench) as f:
            self.assertEqual(f.read(), merged)


if __name__ == "__main__":
    unittest.main()
