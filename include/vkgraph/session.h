#pragma once
// Session: load an ONNX model and run it, shaped like onnxruntime's InferenceSession.
//
//   vkgraph::Session s("model.onnx");
//   auto outputs = s.run({{"input", tensor}});   // one HostTensor per model output
//
// The model becomes a ComputeGraph at the first run (or at construction when every input
// shape is known): constant shape arithmetic is folded on the host, BatchNormalization is
// folded into a preceding Conv, bias and activations are fused into Conv/Gemm/MatMul. Later
// runs with the same input shapes replay the recorded command buffers; a new input shape
// re-plans and re-records. One Session is used by one thread at a time.
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "vkgraph/graph/compute_graph.h"
#include "vkgraph/types.h"
#include "vkgraph/vk/context.h"

namespace vkgraph {

struct SessionOptions {
  std::shared_ptr<vk::Context> context;  // share a device between sessions; default: new one
  vk::ContextOptions context_options;    // used when `context` is null
  // Fixes dynamic (or overrides declared) input dims, e.g. {"input", {1, 3, 224, 224}}.
  std::map<std::string, Shape> input_shapes;
  GraphOptions graph;
  bool fuse = true;  // load-time fusions (BN into Conv, bias/activation epilogues)
};

struct ValueInfo {
  std::string name;
  Shape shape;  // -1 marks a dynamic dimension
  DType dtype;
};

struct LoadTimes {
  double parse_ms = 0;    // protobuf parse and model checks
  double build_ms = 0;    // import: folding, fusion, graph construction
  double prepare_ms = 0;  // memory plan, allocation, prepack upload, pipeline creation
};

class Session {
 public:
  explicit Session(const std::string& path, SessionOptions options = {});
  Session(const void* model_bytes, size_t size, SessionOptions options = {});
  ~Session();
  Session(Session&&) noexcept;
  Session& operator=(Session&&) noexcept;

  const std::vector<ValueInfo>& inputs() const;
  const std::vector<ValueInfo>& outputs() const;
  int opset() const;

  // Runs with one tensor per model input (by name). Returns the outputs named in
  // `output_names`, or all outputs in model order when it is empty.
  std::vector<HostTensor> run(const std::map<std::string, HostTensor>& feeds,
                              const std::vector<std::string>& output_names = {});

  // The graph of the last run (null before the first); for stats and profiling.
  ComputeGraph* graph();
  const LoadTimes& load_times() const;
  vk::Context& context();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace vkgraph
