#pragma once
// Pieces of the vkgraph command-line tool shared between its commands.
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "vkgraph/ops/tuning.h"
#include "vkgraph/session.h"

namespace vkgraph::cli {

// What every command takes (`vkgraph --help`, common options).
struct Common {
  vk::ContextOptions context;
  bool fp16 = false;                          // SessionOptions::fp16; bench-op in fp16
  std::shared_ptr<const ops::Tuning> tuning;  // VKGRAPH_TUNE, read once in main
};

// `vkgraph info`: devices, the chosen one, memory, features, limits.
int run_info(const Common& common);

// `vkgraph run MODEL` and `vkgraph bench MODEL`.
struct RunArgs {
  std::string model;
  std::vector<std::string> inputs;  // NAME=FILE (.npy or .pb)
  std::vector<std::string> shapes;  // NAME=D0,D1,...
  std::string output_dir, labels;   // run only
  int repeat = 1;                   // run only
  int warmup = 10, runs = 100;      // bench only
  size_t top = 15;                  // bench only
  std::string trace;                // bench only: Chrome trace file
};
int run_model(const RunArgs& args, const Common& common, bool bench);

// Prints every validation-layer message the context collected; 1 if there were any.
int report_validation(vk::Context& context);

// `vkgraph bench`: warm-up, timed runs, per-node table, optional Chrome trace.
int run_bench(Session& session, const std::map<std::string, HostTensor>& feeds, int warmup,
              int runs, size_t top, const std::string& trace_path);
// Pipeline count and creation time, and whether the disk cache was off, cold or warm.
void print_pipeline_cache(vk::Context& context);
// `vkgraph bench-op OP SIZES...`: one op on device-resident data, GPU time; or host cost per
// execute() of an N-node graph. The sizes that `op` takes; the others keep their defaults.
struct BenchOpArgs {
  std::string op;                // gemm, nbits, attention, conv, qconv, qgemm, add, io, overhead
  int64_t m = 0, n = 0, k = 0;   // gemm, nbits
  int64_t bits = 4, block = 32;  // nbits
  int64_t copies = 1;            // nbits: independent copies of the weights in one run
  int64_t accuracy_level = 0;    // nbits: MatMulNBits' accuracy_level (4: int8 a allowed)
  int64_t batch = 0, heads = 0, seq = 0, dim = 0;  // attention (batch: conv, qconv too)
  // conv, qconv: N (batch) C H W, M (n) output channels, K (k) window, stride, groups
  int64_t channels = 0, height = 0, width = 0, stride = 1, groups = 1;
  int64_t count = 100;   // add N, io N, overhead [N]
  bool check = false;    // gemm, nbits: compare with a host reference
  bool trans_b = false;  // gemm: B stored [N, K] (a Linear weight) and read transposed
  int runs = 20;
};
int run_bench_op(const BenchOpArgs& args, const Common& common);

// `vkgraph soak MODEL_A MODEL_B`: the two models alternating on one device, dynamic dims
// cycling through `sizes`, each output compared with the first run's, device and host memory
// sampled every `sample` runs. 0 when every output matched and device memory stayed flat after
// the warm-up.
struct SoakArgs {
  std::vector<std::string> models;  // two
  int64_t runs = 10000, sample = 500, shape_every = 25;
  std::vector<int64_t> sizes = {1, 2, 4, 3};
};
int run_soak(const SoakArgs& args, const Common& common);

// `vkgraph demo`: a built-in graph checked against a CPU reference. Returns 0 on success.
int run_demo(const Common& common);

struct CaseResult {
  enum class Status { Pass, Fail, Unsupported, Error } status;
  std::string detail;  // why it failed / what is unsupported
};

struct Tolerance {
  double rtol = 1e-3;
  double atol = 1e-4;
};
// What float16 mode (SessionOptions::fp16) is checked to: a float16 value alone is within
// 2^-11 relative, and a few ops of such values within a few times that.
constexpr Tolerance kFp16Tolerance{1e-2, 1e-2};

// Runs one ONNX test-layout folder (model.onnx + test_data_set_*/{input,output}_N.pb), in
// float16 mode with `fp16`.
CaseResult run_case(const std::string& dir, std::shared_ptr<vk::Context> context, Tolerance tol,
                    bool fp16 = false, std::shared_ptr<const ops::Tuning> tuning = nullptr);
const char* status_name(CaseResult::Status s);

// `vkgraph check CASE_DIR`: one case; a pass on stdout, anything else on stderr.
int run_check(const std::string& dir, const Common& common);

// `vkgraph conformance DIR...`: every case folder under each DIR whose name contains `filter`;
// prints a summary per DIR. With `expect`, fails (returns 1) if a case listed there does not
// pass. With `write_passes`, writes the passing cases there.
struct ConformanceArgs {
  std::vector<std::string> roots;
  std::string expect, write_passes, filter;
  bool verbose = false;  // each case that does not pass, and why
};
int run_conformance(const ConformanceArgs& args, const Common& common);

}  // namespace vkgraph::cli
