#pragma once
// ONNX ModelProto -> ComputeGraph. Nodes are visited in order; a node whose inputs are all
// known on the host is folded there (fold.h); the fusion pass (fuse.h) may rewrite a node, with
// consumers it absorbs, into one fused node; everything else is lowered to graph ops by a
// per-op lowering function. Lowerings live in lower_*.cpp, grouped by op family.
#include <onnx/onnx_pb.h>

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "onnx/fold.h"
#include "onnx/fuse.h"
#include "vkgraph/error.h"
#include "vkgraph/graph/compute_graph.h"
#include "vkgraph/ops.h"

namespace vkgraph::onnx_import {

// A value of the model: known on the host (a constant), on the device, or both.
struct Value {
  std::optional<HostTensor> constant;
  TensorRef tensor;  // valid once on the device
  // In float16 mode a float32 value may live on the device in float16 (`tensor` is then a
  // Float16 tensor); `other` caches it in the other precision once a consumer needed that.
  TensorRef other;
  Shape shape;
  DType dtype = DType::Float32;  // the model's dtype, whatever precision the device holds
  // Int8 or UInt8 where the model declares the value int8 or uint8: `dtype` is then Int32, the
  // type other ops compute it in, and `tensor` may hold it in 8-bit storage (lower_quant.cpp).
  std::optional<DType> int8_type;
  // The declared type is INT4 / UINT4 (opset 21): int8_type says the signedness, the values
  // stay within 4 bits and are held in 8-bit storage on the device.
  bool four_bit = false;
  // Model inputs whose values would make this value known on the host through folding; empty
  // when it is known already or no input's value could make it so.
  std::set<std::string> sources;
};

// Int8 / UInt8 for the ONNX element types INT8 / UINT8 (Value::int8_type), else nullopt.
std::optional<DType> int8_type_of(int32_t onnx_type);

// Thrown when a lowering needs on the host a value that the model's inputs determine, e.g. a
// Reshape whose target shape is a model input. The Session then builds with those inputs'
// values as constants (a graph specialised to them), re-planning when they change.
class NeedsInputValues : public Error {
 public:
  NeedsInputValues(const std::string& message, std::set<std::string> inputs)
      : Error(ErrorKind::InvalidArgument, message), inputs_(std::move(inputs)) {}
  const std::set<std::string>& inputs() const { return inputs_; }

 private:
  std::set<std::string> inputs_;
};

class Importer;
using Lowering =
    std::function<std::vector<Value>(Importer&, const onnx::NodeProto&, const fold::Attrs&)>;
// A lowering and whether, in float16 mode, it computes float32 values in float16: every op it
// emits has float16 variants (the `float16` property of their shader families, vkgraph/shaders/)
// and every float constant it makes goes through Importer::constant_tensor. Lowerings without
// it get float32 tensors, cast on the device where a value lives in float16.
struct LoweringEntry {
  LoweringEntry() = default;
  LoweringEntry(Lowering l, bool computes_in_half = false)
      : lower(std::move(l)), half(computes_in_half) {}
  template <typename F>
  LoweringEntry(F f, bool computes_in_half = false) : lower(std::move(f)), half(computes_in_half) {}
  Lowering lower;
  bool half = false;
};
using LoweringTable = std::map<std::string, LoweringEntry>;

// Each lower_*.cpp adds its ops.
void register_einsum(LoweringTable& table);
void register_elementwise(LoweringTable& table);
void register_nn(LoweringTable& table);
void register_attention(LoweringTable& table);
void register_tensor(LoweringTable& table);
void register_loss(LoweringTable& table);
void register_grid_sample(LoweringTable& table);
void register_linalg(LoweringTable& table);
void register_local_norm(LoweringTable& table);
void register_signal(LoweringTable& table);
void register_nd_index(LoweringTable& table);
void register_one_hot(LoweringTable& table);
void register_pointwise(LoweringTable& table);
void register_quant(LoweringTable& table);  // also com.microsoft ops, keyed "com.microsoft.Op"

class Importer {
 public:
  // `input_shapes` gives the concrete shape of every graph input; `input_values` the values of
  // those the graph is specialised to: they fold like constants and are still graph inputs
  // for the ops that read them on the device.
  Importer(const onnx::ModelProto& model, ComputeGraph& graph,
           const std::map<std::string, Shape>& input_shapes,
           const std::map<std::string, HostTensor>& input_values, bool fuse, bool fp16 = false,
           IOMode io = IOMode::Staged);
  void build();
  // With IOMode::External: the outputs made External. The others (a constant, an input or a
  // tensor another output already owns, given as an output) stay Staged.
  const std::set<std::string>& external_outputs() const { return external_outputs_; }

  // --- for lowerings ---
  ComputeGraph& graph() { return graph_; }
  int opset() const { return opset_; }
  size_t num_inputs(const onnx::NodeProto& node) const;  // counts trailing omitted as absent
  bool has_input(const onnx::NodeProto& node, size_t i) const;
  // Whether input `i` exists and has been computed already (fusion looks at nodes ahead).
  bool available(const onnx::NodeProto& node, size_t i) const;
  const Value& input(const onnx::NodeProto& node, size_t i) const;
  // The input as a device tensor, uploading a constant on first use. In float16 mode a
  // float32 value comes in float16 to the ops that compute in it (see half_ops) and in float32
  // to the others, cast on the device where it lives in the other precision.
  TensorRef tensor(const onnx::NodeProto& node, size_t i);
  TensorRef tensor(Value& value, const std::string& name);
  // A constant the lowering made (folded weights, a scalar operand), in the precision that
  // tensor() gives the node's float32 inputs; in float16, finite values saturate at 65504.
  TensorRef constant_tensor(HostTensor value, const std::string& name = "");
  // The input's host value, or null when it is only known on the device.
  const HostTensor* constant(const onnx::NodeProto& node, size_t i) const;
  // The host value of input `i`, which the lowering cannot do without (`what` names it for
  // the error): throws NeedsInputValues when model inputs' values would make it known.
  const HostTensor& host_value(const onnx::NodeProto& node, size_t i,
                               const std::string& what) const;
  // For lowerings that need several host values: throws NeedsInputValues naming the model
  // inputs that all of `inputs` wait for, so that one build learns them together.
  void require_host_values(const onnx::NodeProto& node, std::initializer_list<size_t> inputs) const;
  // "Conv node 'conv1' (opset 13)": for error messages.
  std::string where(const onnx::NodeProto& node) const;
  [[noreturn]] void fail(const onnx::NodeProto& node, const std::string& problem) const;
  void require_inputs(const onnx::NodeProto& node, size_t min, size_t max) const;

  // --- for the fusion pass ---
  // The nodes that read `value`, in model order.
  const std::vector<const onnx::NodeProto*>& consumers(const std::string& value) const;
  // The node whose output `value` is; null for graph inputs and initializers.
  const onnx::NodeProto* producer(const std::string& value) const;
  bool is_model_output(const std::string& value) const { return graph_outputs_.count(value) > 0; }

  static Value device_value(ComputeGraph& g, TensorRef t);

 private:
  void add_inputs(const std::map<std::string, Shape>& input_shapes,
                  const std::map<std::string, HostTensor>& input_values);
  void visit(const onnx::NodeProto& node);
  void lower(const onnx::NodeProto& node, const fold::Attrs& attrs, bool absorbed_others);
  std::set<std::string> fold_sources(const onnx::NodeProto& node) const;
  [[noreturn]] void needs_values(const onnx::NodeProto& node, const std::string& what,
                                 const std::set<std::string>& inputs) const;
  void block(const onnx::NodeProto& node);
  bool try_fold(const onnx::NodeProto& node, const fold::Attrs& attrs);

  const onnx::ModelProto& model_;
  ComputeGraph& graph_;
  bool fuse_;
  bool fp16_;  // SessionOptions::fp16
  IOMode io_;  // how model inputs and outputs are declared
  std::set<std::string> external_outputs_;
  bool node_half_ = false;     // the node being lowered computes float32 values in float16
  bool node_demoted_ = false;  // ... and tensor() gave it a float32 value in float16
  int opset_ = 0;
  LoweringTable lowerings_;
  std::map<std::string, Value> values_;
  std::map<std::string, std::vector<const onnx::NodeProto*>> consumers_;
  std::map<std::string, const onnx::NodeProto*> producers_;
  std::set<std::string> graph_outputs_;
  fuse::Pass fusion_{*this};
  std::set<const onnx::NodeProto*> absorbed_;  // computed by a fused node: not visited
  // Nodes that wait for model input values are skipped, with all that depends on them, so
  // that one build learns every input value it needs; build() then throws for them all.
  std::set<std::string> blocked_;
  std::set<std::string> needed_;
  std::string first_need_;
};

// The activation that UnaryOp + params express for an ONNX activation node, if any.
std::optional<std::pair<ops::UnaryOp, ops::UnaryParams>> activation_of(const onnx::NodeProto& node,
                                                                       const Importer& importer);

}  // namespace vkgraph::onnx_import
