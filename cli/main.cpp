// vkgraph: the command-line tool. Its grammar, on CLI11: each command, its arguments and
// options, what values they take. One clear line on stderr and a non-zero exit on any error.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "cli.h"
#include "vkgraph/error.h"

using namespace vkgraph;

namespace {

constexpr int64_t kMaxCount = 1'000'000'000;

// An integer option or argument bound to `target`, a whole number in [lo, hi]: "abc", "3x",
// "-5" and "0" (where lo is 1) are errors naming it, never a default.
template <class T>
CLI::Option* add_integer(CLI::App& app, const std::string& name, T& target, int64_t lo, int64_t hi,
                         const std::string& description) {
  return app.add_option(name, target, description)
      ->check(CLI::Validator(
          [](std::string& text) -> std::string {
            // CLI11's own conversion, with a message that says what is wrong.
            return CLI::TypeValidator<int64_t>()(text).empty() ? ""
                                                               : "'" + text + "' is not an integer";
          },
          ""))
      ->check(CLI::Range(lo, hi).description(""))
      ->type_name("")
      ->option_text("INT in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
}

// The options every command takes, given before or after the command's name.
void add_common(CLI::App& app, cli::Common& common) {
  const std::string group = "Common options";
  app.add_option_function<std::string>(
         "--device", [&](const std::string& v) { common.context.device = v; },
         "Vulkan device by index or name (default: VKGRAPH_DEVICE or the best)")
      ->type_name("N|NAME")
      ->group(group);
  app.add_flag_callback(
         "--validation", [&] { common.context.validation = true; },
         "Khronos validation with synchronization validation")
      ->group(group);
  app.add_flag("--fp16", common.fp16,
               "float16 mode: models hold tensors in float16 and compute in float32; "
               "bench-op gemm, nbits, layernorm, attention in fp16")
      ->group(group);
  app.add_option_function<std::string>(
         "--pipeline-cache", [&](const std::string& v) { common.context.pipeline_cache = v; },
         "on-disk pipeline cache folder, or off (default: VKGRAPH_PIPELINE_CACHE, else "
         "$XDG_CACHE_HOME/vkgraph or ~/.cache/vkgraph)")
      ->type_name("DIR|off")
      ->group(group);
}

void add_common_everywhere(CLI::App& app, cli::Common& common) {
  add_common(app, common);
  for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; }))
    add_common_everywhere(*sub, common);
}

// The feeds of `run` and `bench`.
void add_feeds(CLI::App& cmd, cli::RunArgs& args) {
  cmd.add_option("MODEL", args.model, "ONNX model file")->required();
  cmd.add_option("--input", args.inputs,
                 "an input from .npy or ONNX TensorProto .pb (random where not given)")
      ->type_name("NAME=FILE");
  cmd.add_option("--shape", args.shapes, "the shape of a dynamic input")
      ->type_name("NAME=D0,D1,...");
}

void add_run(CLI::App& app, cli::RunArgs& args) {
  CLI::App& run = *app.add_subcommand("run", "run an ONNX model");
  add_feeds(run, args);
  run.add_option("--output-dir", args.output_dir, "write each output as DIR/<name>.npy")
      ->type_name("DIR");
  add_integer(run, "--repeat", args.repeat, 1, kMaxCount, "run N times and report timing");
  run.add_option("--labels", args.labels,
                 ".npy of int64 class labels: report argmax accuracy of output 0")
      ->type_name("FILE");
}

void add_bench(CLI::App& app, cli::RunArgs& args) {
  CLI::App& bench = *app.add_subcommand(
      "bench",
      "time a model: warm-up, N runs, host and GPU p50/p90, per-node GPU table, load-time "
      "split, peak memory");
  add_feeds(bench, args);
  add_integer(bench, "--warmup", args.warmup, 0, kMaxCount, "untimed runs first");
  add_integer(bench, "--runs", args.runs, 0, kMaxCount,
              "timed runs (0: load, print the load-time split, stop)");
  add_integer(bench, "--top", args.top, 1, kMaxCount, "rows of the per-node table");
  bench.add_option("--trace", args.trace, "Chrome trace with one slice per node (Perfetto)")
      ->type_name("FILE.json");
}

CLI::App& add_bench_op(CLI::App& app, cli::BenchOpArgs& args) {
  CLI::App& cmd = *app.add_subcommand(
      "bench-op",
      "one op on device-resident data: GPU time, TFLOP/s or GB/s (VKGRAPH_TUNE=key=value,... "
      "overrides kernel tuning knobs)");
  cmd.require_subcommand(1);
  cmd.add_flag("--check", args.check, "gemm, nbits: compare with a host reference");
  add_integer(cmd, "--runs", args.runs, 1, kMaxCount, "timed runs");
  // Each op's sizes are its positional arguments; the flags above may follow them.
  auto op = [&](const char* name, const char* description) -> CLI::App& {
    CLI::App& sub = *cmd.add_subcommand(name, description);
    sub.fallthrough();
    return sub;
  };
  auto size = [](CLI::App& sub, const char* name, int64_t& target, const char* description) {
    add_integer(sub, name, target, 1, INT32_MAX, description)->required();
  };
  CLI::App& gemm = op("gemm", "C[M, N] = A[M, K] B[K, N]");
  size(gemm, "M", args.m, "rows of A and C");
  size(gemm, "N", args.n, "columns of B and C");
  size(gemm, "K", args.k, "columns of A, rows of B");
  gemm.add_flag("--trans-b", args.trans_b, "B stored [N, K] (a Linear weight), read transposed");
  CLI::App& nbits =
      op("nbits", "MatMulNBits: GB/s over the packed weight bytes; M = 1 is the decode GEMV");
  size(nbits, "M", args.m, "rows of the activations");
  size(nbits, "N", args.n, "output features");
  size(nbits, "K", args.k, "input features");
  add_integer(nbits, "BITS", args.bits, 2, 8, "bits per weight (4)");
  add_integer(nbits, "BLOCK", args.block, 16, 4096, "weights per scale (32)");
  add_integer(nbits, "--copies", args.copies, 1, 64,
              "independent matmuls, each on its own weights, in one run (time per copy)");
  add_integer(nbits, "--accuracy-level", args.accuracy_level, 0, 4,
              "MatMulNBits' accuracy_level (4: a may be quantized to int8)");
  CLI::App& layernorm = op("layernorm",
                           "LayerNormalization over the last dim, with bias (VKGRAPH_TUNE=norm.* "
                           "picks the kernel): GB/s over x read and y written");
  size(layernorm, "ROWS", args.m, "rows");
  size(layernorm, "COLS", args.n, "columns normalized together");
  CLI::App& attention =
      op("attention", "fused self-attention (VKGRAPH_TUNE=attention.* picks the kernel)");
  size(attention, "B", args.batch, "batch");
  size(attention, "H", args.heads, "heads");
  size(attention, "S", args.seq, "sequence length");
  size(attention, "D", args.dim, "head size");
  // conv and qconv time one layer shape on the float and the int8 (QDQ-style) kernels.
  for (const char* name : {"conv", "qconv"}) {
    CLI::App& conv =
        op(name, std::string(name) == "conv"
                     ? "K x K convolution padded K / 2, Relu epilogue (--fp16: float16)"
                     : "the same as QLinearConv: uint8 x, int8 weights per channel");
    size(conv, "N", args.batch, "batch");
    size(conv, "C", args.channels, "input channels");
    size(conv, "H", args.height, "input height");
    size(conv, "W", args.width, "input width");
    size(conv, "M", args.n, "output channels");
    size(conv, "K", args.k, "window size");
    size(conv, "STRIDE", args.stride, "stride");
    add_integer(conv, "GROUPS", args.groups, 1, INT32_MAX, "groups (1)");
  }
  CLI::App& qgemm = op("qgemm", "QLinearMatMul: uint8 a [M, K], int8 constant b [K, N]");
  size(qgemm, "M", args.m, "rows of a");
  size(qgemm, "N", args.n, "columns of b");
  size(qgemm, "K", args.k, "columns of a, rows of b");
  CLI::App& qdyn = op("qdyn",
                      "quantize_dynamic's linear layer: float a [M, K] quantized (range pass, "
                      "qdyn.prequant), int8 constant b [K, N], float bias, float out");
  size(qdyn, "M", args.m, "rows of a");
  size(qdyn, "N", args.n, "columns of b");
  size(qdyn, "K", args.k, "columns of a, rows of b");
  size(op("add", "y = a + b over N floats"), "N", args.count, "elements");
  add_integer(op("io", "host-to-host y = 2x: staged copies vs bound host memory"), "N", args.count,
              1, INT64_MAX, "floats")
      ->required();
  add_integer(op("overhead",
                 "host time per execute() of a chain of N tiny adds, minus GPU time: what the "
                 "runtime adds per execution"),
              "N", args.count, 1, 100'000, "nodes (100)");
  return cmd;
}

void add_soak(CLI::App& app, cli::SoakArgs& args) {
  CLI::App& soak = *app.add_subcommand(
      "soak",
      "two models alternating, dynamic dims cycling, every output checked against the first "
      "run's, device and host memory sampled");
  soak.add_option("MODELS", args.models, "MODEL_A MODEL_B")->required()->expected(2);
  add_integer(soak, "--runs", args.runs, 1, kMaxCount, "runs in all (10000)");
  add_integer(soak, "--sample", args.sample, 1, kMaxCount, "print memory every N runs (500)");
  add_integer(soak, "--shape-every", args.shape_every, 1, kMaxCount,
              "runs of a model before its next shape (25)");
  add_integer(soak, "--sizes", args.sizes, 1, 1 << 20, "batch sizes in turn (1,2,4,3)")
      ->delimiter(',');
}

void add_conformance(CLI::App& app, cli::ConformanceArgs& args) {
  CLI::App& conf = *app.add_subcommand(
      "conformance", "run every ONNX test-layout case folder under each DIR; print a summary");
  conf.add_option("DIR", args.roots, "folders of case folders")->required();
  conf.add_option("--expect", args.expect, "fail if a case listed in FILE does not pass")
      ->type_name("FILE");
  conf.add_option("--write-passes", args.write_passes, "write the passing cases to FILE")
      ->type_name("FILE");
  conf.add_option("--filter", args.filter, "only cases whose name contains S")->type_name("S");
  conf.add_flag("-v,--verbose", args.verbose, "each case that does not pass, and why");
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"vkgraph: run ONNX models on any Vulkan GPU", "vkgraph"};
  app.require_subcommand(1);
  app.footer(
      "Environment: VKGRAPH_DEVICE, VKGRAPH_VALIDATION=1, VKGRAPH_PIPELINE_CACHE, "
      "VKGRAPH_TUNE=key=value,... (kernel tuning knobs).");
  cli::Common common;
  cli::RunArgs run_args, bench_args;
  cli::BenchOpArgs bench_op_args;
  cli::SoakArgs soak_args;
  cli::ConformanceArgs conformance_args;
  std::string case_dir;
  CLI::App* info =
      app.add_subcommand("info", "Vulkan devices, the chosen one, memory, features, limits");
  CLI::App* demo =
      app.add_subcommand("demo", "run a built-in graph and check it against a CPU reference");
  add_run(app, run_args);
  add_bench(app, bench_args);
  CLI::App& bench_op = add_bench_op(app, bench_op_args);
  add_soak(app, soak_args);
  CLI::App* check =
      app.add_subcommand("check", "run an ONNX test-layout folder and compare with its outputs");
  check->add_option("CASE_DIR", case_dir, "folder with model.onnx and test_data_set_*")->required();
  add_conformance(app, conformance_args);
  add_common_everywhere(app, common);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // The help to read is that of the command being parsed, e.g. `vkgraph bench-op gemm`.
    std::string command = "vkgraph";
    CLI::App* at = &app;
    while (!at->get_subcommands().empty()) {
      at = at->get_subcommands().back();
      command += " " + at->get_name();
    }
    const std::vector<std::string> rest = at->remaining();
    if (at->get_require_subcommand_min() > 0 && !rest.empty())
      std::fprintf(stderr, "vkgraph: error: unknown command '%s' (see %s --help)\n",
                   rest[0].c_str(), command.c_str());
    else
      std::fprintf(stderr, "vkgraph: error: %s (see %s --help)\n", e.what(), command.c_str());
    return 1;
  }
  try {
    // The one read of VKGRAPH_TUNE: every graph built below gets these knobs explicitly.
    if (const char* spec = std::getenv("VKGRAPH_TUNE"))
      common.tuning = std::make_shared<ops::Tuning>(ops::Tuning::from_knobs(spec));
    if (*info) return cli::run_info(common);
    if (*demo) return cli::run_demo(common);
    if (app.got_subcommand("run")) return cli::run_model(run_args, common, false);
    if (app.got_subcommand("bench")) return cli::run_model(bench_args, common, true);
    if (bench_op) {
      bench_op_args.op = bench_op.get_subcommands().at(0)->get_name();
      return cli::run_bench_op(bench_op_args, common);
    }
    if (app.got_subcommand("soak")) return cli::run_soak(soak_args, common);
    if (*check) return cli::run_check(case_dir, common);
    return cli::run_conformance(conformance_args, common);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "vkgraph: error: %s\n", e.what());
    return 1;
  }
}
