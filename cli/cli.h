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

// `text` as a whole decimal integer in [lo, hi], else InvalidArgument naming `what` (the
// option or argument) and the value: "--repeat abc", "-5" or "0" are errors, not 1.
int64_t parse_int(const std::string& text, const std::string& what, int64_t lo, int64_t hi);

// Prints every validation-layer message the context collected; 1 if there were any.
int report_validation(vk::Context& context);

// `vkgraph bench`: warm-up, timed runs, per-node table, optional Chrome trace.
int run_bench(Session& session, const std::map<std::string, HostTensor>& feeds, int warmup,
              int runs, size_t top, const std::string& trace_path);
// Pipeline count and creation time, and whether the disk cache was off, cold or warm.
void print_pipeline_cache(vk::Context& context);
// `vkgraph bench-op gemm M N K | add N | io N | overhead [N]`: one op on device-resident
// data, GPU time; or host cost per execute() of an N-node graph.
int run_bench_op(const std::vector<std::string>& args, const vk::ContextOptions& options, int runs,
                 bool fp16, std::shared_ptr<const ops::Tuning> tuning);

// `vkgraph soak MODEL_A MODEL_B [--runs N] [--sample N] [--shape-every N] [--sizes 1,2,4,3]`:
// the two models alternating on one device, dynamic dims cycling through `sizes`, each output
// compared with the first run's, device and host memory sampled. 0 when every output matched
// and device memory stayed flat after the warm-up.
int run_soak(const std::vector<std::string>& args, const vk::ContextOptions& options, bool fp16);

// `vkgraph demo`: a built-in graph checked against a CPU reference. Returns 0 on success.
int run_demo(const vk::ContextOptions& options);

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

// `vkgraph conformance DIR...`: every case folder under each DIR; prints a summary per DIR.
// With `expect_file`, fails (returns 1) if a case listed there does not pass. With
// `write_passes`, writes the passing cases there.
int run_conformance(const std::vector<std::string>& roots, const std::string& expect_file,
                    const std::string& write_passes, const std::string& filter,
                    const vk::ContextOptions& options, bool verbose, bool fp16,
                    std::shared_ptr<const ops::Tuning> tuning);

}  // namespace vkgraph::cli
