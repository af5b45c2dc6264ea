#pragma once
// Session: load an ONNX model and run it, shaped like onnxruntime's InferenceSession.
//
//   vkgraph::Session s("model.onnx");
//   auto outputs = s.run({{"input", tensor}});   // one HostTensor per model output
//
// The model becomes a ComputeGraph at the first run (or at construction when every input
// shape is known): constant shape arithmetic is folded on the host, BatchNormalization is
// folded into a preceding Conv, and bias, a residual Add and activations are fused into
// Conv/Gemm/MatMul epilogues, as is a scalar scale after MatMul; Transposes that only MatMuls
// read are not copied. Later runs with the same input shapes replay the recorded command
// buffers; a new input shape re-plans and re-records.
//
// Threads: run() may be called from several threads at once; the runs take turns (a mutex
// inside the Session; one graph holds one execution's inputs and outputs), so each returns
// the outputs of its own feeds. For runs in parallel, use one Session per thread (they may
// share a Context). inputs() and outputs() can change during a run (needs_value marks found
// while building, output dtypes) and graph() is replaced by a run that rebuilds: read them
// while no run is in flight. Moving a Session is not thread-safe.
//
// Inputs whose values the model needs while it is built (a Reshape target shape, Slice
// starts, Resize scales, ... given as model inputs) are value-specialised: inputs() marks them
// `needs_value`, the graph is built for the values the first run gives, and a run with other
// values re-plans and re-records like a new shape does. They are still uploaded as inputs
// where the graph also reads them on the device. Such inputs are found while building, so
// they are marked after load when every input shape is static, else after the first run.
//
// Where such a value (or an If or Loop condition) is computed by the model from data, the
// Session runs the model in segments: a small graph computes the value, which is read back,
// and the rest is built for it. Each run replays those segments first (one more submission and
// readback each) and rebuilds only when a value read back changes.
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "vkgraph/graph/compute_graph.h"
#include "vkgraph/types.h"
#include "vkgraph/value_info.h"
#include "vkgraph/vk/context.h"

namespace vkgraph {

struct SessionOptions {
  std::shared_ptr<vk::Context> context;  // share a device between sessions; default: new one
  vk::ContextOptions context_options;    // used when `context` is null
  // Fixes dynamic (or overrides declared) input dims, e.g. {"input", {1, 3, 224, 224}}.
  std::map<std::string, Shape> input_shapes;
  GraphOptions graph;
  bool fuse = true;  // load-time fusions (BN into Conv, epilogues, transposed views)
  // Float16 mode: float32 tensors live on the device in float16 (weights and activations),
  // halving memory and bandwidth; arithmetic and accumulation stay float32. Inputs and
  // outputs are float32 as the model declares. Ops without float16 kernels compute in float32
  // behind casts. Constants beyond float16's range (masks of -1e9 or float32's lowest)
  // saturate to +-65504; computed values beyond it become infinite, as in any float16
  // arithmetic. Needs storageBuffer16BitAccess. Accuracy: see the README.
  bool fp16 = false;
  // The folder that a model's external data (tensors stored beside it, `location` relative to
  // it) is read from. Default: the model file's folder; a model given as bytes has none, and
  // one with external data then needs this. Locations cannot lead out of the folder.
  std::string external_data_dir;
};

// The model's metadata fields (ModelProto), for onnxruntime-style get_modelmeta().
struct ModelMetadata {
  std::string producer_name, producer_version, domain, description, graph_name, graph_description;
  int64_t model_version = 0;
  std::map<std::string, std::string> custom;  // metadata_props
};

// App memory that Session::run_bound reads an input from or writes an output into.
struct HostBinding {
  void* data = nullptr;
  // Bytes at `data`, at least the tensor's. Where `data` and `bytes` are multiples of the
  // device's features().min_imported_host_pointer_alignment (4096 on lavapipe), the device
  // imports the memory and reads or writes it in place; otherwise one memcpy each way.
  size_t bytes = 0;
  DType dtype = DType::Float32;
  Shape shape;
};

// A model input in the caller's memory, read during Session::run_views only (never kept).
struct HostView {
  DType dtype = DType::Float32;
  Shape shape;
  const void* data = nullptr;
  size_t bytes = 0;  // at `data`: exactly the tensor's
};

struct LoadTimes {
  double parse_ms = 0;    // protobuf parse and model checks
  double build_ms = 0;    // import: folding, fusion, graph construction
  double prepare_ms = 0;  // memory plan, allocation, prepack upload, pipeline creation
  int builds = 0;  // graphs built so far: per change of input shapes or needed values; segments too
};

class Session {
 public:
  // The model file (and its external data files) stay memory-mapped while the Session lives:
  // large weights are read from the mapping whenever a graph is built, the first one and any
  // rebuild for new input shapes. Replace the file by a new one (rename) rather than
  // rewriting it in place while a Session has it open.
  explicit Session(const std::string& path, SessionOptions options = {});
  Session(const void* model_bytes, size_t size, SessionOptions options = {});
  ~Session();
  Session(Session&&) noexcept;
  Session& operator=(Session&&) noexcept;

  const std::vector<ValueInfo>& inputs() const;
  const std::vector<ValueInfo>& outputs() const;
  int opset() const;  // the model's ai.onnx opset, as the importer reads it
  ModelMetadata metadata() const;

  // Runs with one tensor per model input (by name). Returns the outputs named in
  // `output_names`, or all outputs in model order when it is empty.
  std::vector<HostTensor> run(const std::map<std::string, HostTensor>& feeds,
                              const std::vector<std::string>& output_names = {});
  // run() over borrowed memory: each input is copied once, straight from `feeds` into the
  // graph's staging (what bindings use to feed arrays without a HostTensor copy first).
  std::vector<HostTensor> run_views(const std::map<std::string, HostView>& feeds,
                                    const std::vector<std::string>& output_names = {});

  // Zero-copy runs on app memory (IO binding): the graph is built with External inputs and
  // outputs bound to the memory with ComputeGraph::bind_host_pointer. prepare_bound builds it
  // for these inputs (shapes, and values where needs_value) and returns what each output
  // will be, so that the app can allocate them; run_bound runs with every input and output
  // bound and says, per name, whether the device imported the memory or it was copied.
  // Binding the same memory as the last run replays the recorded command buffers; other
  // memory re-records them, and switching between run() and run_bound() rebuilds the graph.
  // Outputs that are a constant or an input of the model are always copied.
  std::vector<ValueInfo> prepare_bound(const std::map<std::string, HostBinding>& inputs);
  std::map<std::string, HostIOPath> run_bound(const std::map<std::string, HostBinding>& inputs,
                                              const std::map<std::string, HostBinding>& outputs);

  // The graph of the last run (null before the first); for stats and profiling.
  ComputeGraph* graph();
  const LoadTimes& load_times() const;
  vk::Context& context();

 private:
  struct Impl;
  Impl& impl() const;  // InvalidState after a move
  std::unique_ptr<Impl> impl_;
};

}  // namespace vkgraph
