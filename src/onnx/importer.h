#pragma once
// ONNX ModelProto -> ComputeGraph. Nodes are visited in order; a node whose inputs are all
// known on the host is folded there (fold.h); the fusion pass (fuse.h) may rewrite a node, with
// consumers it absorbs, into one fused node; everything else is lowered to graph ops by a
// per-op lowering function. Lowerings live in lower_*.cpp, grouped by op family.
#include <onnx/onnx_pb.h>

#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "onnx/fold.h"
#include "onnx/fuse.h"
#include "onnx/host_constant.h"
#include "onnx/load.h"
#include "vkgraph/error.h"
#include "vkgraph/graph/compute_graph.h"
#include "vkgraph/ops.h"

namespace vkgraph::onnx_import {

// A value of the model: known on the host (a constant), on the device, or both.
struct Value {
  HostConstant constant;
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

// Thrown when a lowering needs on the host a value that the graph computes on the device from
// data (an If condition, a Loop's `cond`, a Reshape shape computed by a Gather of a tensor).
// The Session (segments.h) then builds a segment that computes `values()`, reads them back and
// builds the next segment with them known. `roots()` are the model's own values whose
// producers yield them (a Loop's outputs for the `cond` of one of its iterations): the segment
// computes what those need, nothing else.
class NeedsComputedValues : public Error {
 public:
  NeedsComputedValues(const std::string& message, std::set<std::string> values,
                      std::set<std::string> roots = {})
      : Error(ErrorKind::Unsupported, message),
        values_(std::move(values)),
        roots_(std::move(roots)) {}
  const std::set<std::string>& values() const { return values_; }
  const std::set<std::string>& roots() const { return roots_; }

 private:
  std::set<std::string> values_, roots_;
};

// A build that is one segment of a staged model (segments.h): the values earlier segments
// computed and read back, which fold like constants here; and, for a segment that computes
// values for a later one, those values (its outputs instead of the model's) and the model
// values they come from.
struct Staging {
  std::map<std::string, HostTensor> computed;
  std::set<std::string> targets;  // empty: the model's outputs
  std::set<std::string> roots;
  bool active() const { return !computed.empty() || !targets.empty(); }
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
void register_data_dependent(LoweringTable& table);
void register_bitwise(LoweringTable& table);
void register_training(LoweringTable& table);  // ai.onnx.preview.training
void register_text(LoweringTable& table);
void register_quant(LoweringTable& table);  // also com.microsoft ops, keyed "com.microsoft.Op"
void register_control_flow(LoweringTable& table);
void register_recurrent(LoweringTable& table);

class Importer {
 public:
  // `input_shapes` gives the concrete shape of every graph input; `input_values` the values of
  // those the graph is specialised to: they fold like constants and are still graph inputs
  // for the ops that read them on the device.
  // `model` (with the mapped files of its weights) must outlive the graph's build.
  Importer(const ParsedModel& model, ComputeGraph& graph,
           const std::map<std::string, Shape>& input_shapes,
           const std::map<std::string, HostTensor>& input_values, bool fuse, bool fp16 = false,
           IOMode io = IOMode::Staged);
  // Before build(): build one segment of a staged model.
  void set_staging(Staging staging);
  void build();
  // With IOMode::External: the outputs made External. The others (a constant, an input or a
  // tensor another output already owns, given as an output) stay Staged.
  const std::set<std::string>& external_outputs() const { return external_outputs_; }
  // Float32 model outputs left in float16 on the device (fp16 mode, staged I/O): read them
  // with ComputeGraph::read_output(i, DType::Float32).
  const std::set<std::string>& widened_outputs() const { return widened_outputs_; }

  // --- for lowerings ---
  ComputeGraph& graph() { return graph_; }
  int opset() const { return opset_; }
  bool fp16() const { return fp16_; }  // SessionOptions::fp16: float values held in float16
  size_t num_inputs(const onnx::NodeProto& node) const;  // counts trailing omitted as absent
  bool has_input(const onnx::NodeProto& node, size_t i) const;
  // Whether input `i` exists and has been computed already (fusion looks at nodes ahead).
  bool available(const onnx::NodeProto& node, size_t i) const;
  // The value `name` where it has been computed already, else null (fusion, by name).
  const Value* computed(const std::string& name) const;
  const Value& input(const onnx::NodeProto& node, size_t i) const;
  // The input as a device tensor, uploading a constant on first use. In float16 mode a
  // float32 value comes in float16 to the ops that compute in it (see half_ops) and in float32
  // to the others, cast on the device where it lives in the other precision.
  TensorRef tensor(const onnx::NodeProto& node, size_t i);
  TensorRef tensor(Value& value, const std::string& name);
  // The input as tensor() gives it to ops that compute in float32: a float32 value in float32
  // even for a node that computes in float16 (a quantization scale, which float16 would round).
  TensorRef float32_tensor(const onnx::NodeProto& node, size_t i);
  // Keeps `t`, input `i` held in another representation (an 8-bit tensor of a widened Int32
  // value, say), as its `other` for the next reader, where `other` is free.
  void keep_other(const onnx::NodeProto& node, size_t i, TensorRef t);
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
  // The ONNX element type (TensorProto::DataType) the model declares for `value` (graph
  // input, output, value_info or initializer), or 0 when it declares none. Values keep only
  // the dtype they compute in; ops that depend on the declared width (BitShift) ask here.
  int32_t declared_elem_type(const std::string& value) const;
  // "Conv node 'conv1' (opset 13)": for error messages.
  std::string where(const onnx::NodeProto& node) const;
  [[noreturn]] void fail(const onnx::NodeProto& node, const std::string& problem) const;
  void require_inputs(const onnx::NodeProto& node, size_t min, size_t max) const;

  // --- for control flow (lower_control_flow.cpp) ---
  // Inlines `body`, a subgraph attribute of `owner`: its local names get `prefix`, its inputs
  // take `inputs` (in order), the names it captures resolve in the enclosing scope, and its
  // nodes are visited as the model's. Returns the names of the body's outputs, in order.
  std::vector<std::string> inline_graph(const onnx::NodeProto& owner, const onnx::GraphProto& body,
                                        const std::string& prefix,
                                        const std::vector<Value>& inputs);
  const Value& value(const std::string& name) const;
  // A unique prefix for the names one inlining of `owner` makes.
  std::string scope_prefix(const onnx::NodeProto& owner);
  // Throws NeedsComputedValues (or NeedsInputValues, where model inputs determine it) for the
  // host value of `name`, which the graph computes; `what` names it for the message.
  [[noreturn]] void needs_host_value(const onnx::NodeProto& node, const std::string& name,
                                     const std::string& what) const;

  // --- for the fusion pass ---
  // The nodes that read `value`, in model order.
  const std::vector<const onnx::NodeProto*>& consumers(const std::string& value) const;
  // The node whose output `value` is; null for graph inputs and initializers.
  const onnx::NodeProto* producer(const std::string& value) const;
  bool is_model_output(const std::string& value) const { return graph_outputs_.count(value) > 0; }
  // Folds `value` now, ahead of model order, where it is a host constant in the making: made by
  // Constant or foldable nodes from constants and shapes of values computed already (exporters
  // write a mask, a scale or a Reshape's shape after the first node of the pattern that needs
  // it). The nodes folded are skipped when the importer reaches them. Whether it is a constant.
  bool fold_ahead(const std::string& value);

  static Value device_value(ComputeGraph& g, TensorRef t);
  static Value host_constant(HostTensor t);

 private:
  // Thrown through an inlining whose subgraph waits for values (a node in it was blocked), so
  // that the control-flow node owning it is blocked in its turn.
  struct SubgraphBlocked {};
  void add_inputs(const std::map<std::string, Shape>& input_shapes,
                  const std::map<std::string, HostTensor>& input_values);
  void visit(const onnx::NodeProto& node);
  void visit_top(const onnx::NodeProto& node);
  void visit_node(const onnx::NodeProto& node);
  void register_node(const onnx::NodeProto& node);
  void lower(const onnx::NodeProto& node, const fold::Attrs& attrs, bool absorbed_others);
  std::set<std::string> fold_sources(const onnx::NodeProto& node) const;
  [[noreturn]] void needs_values(const onnx::NodeProto& node, const std::string& what,
                                 const std::set<std::string>& inputs) const;
  void block(const onnx::NodeProto& node);
  // Values for the outputs of `node` that the fusion pass elided as views (shape, no tensor).
  void add_views(const onnx::NodeProto& node);
  // Whether the device holds `name` (or will: a view the fusion pass elided).
  bool on_device(const std::string& name) const;
  // The values a node reads: its inputs and, for control flow, those its subgraphs capture.
  std::vector<std::string> uses(const onnx::NodeProto& node) const;
  std::set<const onnx::NodeProto*> live_nodes() const;  // a staged build's nodes to visit
  bool take_computed(const onnx::NodeProto& node);      // outputs read back by a segment
  bool try_fold(const onnx::NodeProto& node, const fold::Attrs& attrs);
  // Every attribute of a node that was folded or lowered has been read by what computed it
  // (fold::AttrTable records the reads); otherwise an error names the first one left.
  void check_attributes_read(const onnx::NodeProto& node, const fold::Attrs& attrs) const;

  const ParsedModel& parsed_;
  const onnx::ModelProto& model_;  // parsed_.proto
  ComputeGraph& graph_;
  bool fuse_;
  bool fp16_;  // SessionOptions::fp16
  IOMode io_;  // how model inputs and outputs are declared
  std::set<std::string> external_outputs_;
  std::set<std::string> widened_outputs_;
  bool node_half_ = false;     // the node being lowered computes float32 values in float16
  bool node_demoted_ = false;  // ... and tensor() gave it a float32 value in float16
  int opset_ = 0;
  LoweringTable lowerings_;
  std::map<std::string, Value> values_;
  std::map<std::string, std::vector<const onnx::NodeProto*>> consumers_;
  std::map<std::string, const onnx::NodeProto*> producers_;
  std::set<std::string> graph_outputs_;
  fuse::Pass fusion_{*this};
  std::set<const onnx::NodeProto*> absorbed_;      // computed by a fused node: not visited
  std::set<const onnx::NodeProto*> folded_ahead_;  // by fold_ahead: not visited again
  // Nodes that wait for model input values are skipped, with all that depends on them, so
  // that one build learns every input value it needs; build() then throws for them all.
  std::set<std::string> blocked_;
  std::set<std::string> needed_;
  std::string first_need_;
  // Values the graph computes that lowerings need on the host (NeedsComputedValues).
  std::set<std::string> computed_needed_, computed_roots_;
  std::string first_computed_need_;
  Staging staging_;
  const onnx::NodeProto* top_node_ = nullptr;  // the model node being visited
  std::map<const onnx::NodeProto*, std::vector<std::string>> captured_;  // by subgraphs
  std::deque<onnx::NodeProto> inlined_;  // nodes of inlined subgraphs (stable addresses)
  std::map<std::string, int> scope_counts_;
  std::set<std::string> model_values_;  // outputs of the model's own nodes
};

// ai.onnx's Constant: visited before the other nodes of its graph.
bool is_constant_node(const onnx::NodeProto& node);

// The activation that UnaryOp + params express for an ONNX activation node, if any.
// `attrs` are the node's, read through so the reads count (fold::AttrTable).
std::optional<std::pair<ops::UnaryOp, ops::UnaryParams>> activation_of(const onnx::NodeProto& node,
                                                                       const fold::Attrs& attrs,
                                                                       const Importer& importer);

}  // namespace vkgraph::onnx_import
