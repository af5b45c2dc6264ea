// The Importer's part for control flow: inlining a subgraph (If's branch, one iteration of a
// Loop or Scan body) under fresh names, and the value look-ups its lowerings use.
#include "onnx/importer.h"
#include "onnx/subgraph.h"
#include "vkgraph/error.h"
#include "vkgraph/onnx_tensor.h"

namespace vkgraph::onnx_import {

const Value& Importer::value(const std::string& name) const {
  auto it = values_.find(name);
  if (it == values_.end())
    throw Error(ErrorKind::ModelFormat, "value '" + name + "' is not defined");
  return it->second;
}

std::string Importer::scope_prefix(const onnx::NodeProto& owner) {
  const std::string base = (owner.name().empty() ? owner.op_type() : owner.name());
  int& n = scope_counts_[base];
  return base + "/" + std::to_string(n++) + "/";
}

std::vector<std::string> Importer::inline_graph(const onnx::NodeProto& owner,
                                                const onnx::GraphProto& body,
                                                const std::string& prefix,
                                                const std::vector<Value>& inputs) {
  if (static_cast<size_t>(body.input_size()) != inputs.size())
    throw Error(ErrorKind::ModelFormat, where(owner) + ": subgraph '" + body.name() + "' has " +
                                            std::to_string(body.input_size()) +
                                            " inputs, expected " + std::to_string(inputs.size()));
  // Unrolled loops multiply a body: past this many inlined nodes a model is refused rather than
  // left to exhaust memory and time.
  constexpr size_t kMaxInlinedNodes = size_t{1} << 17;
  if (inlined_.size() + body.node_size() > kMaxInlinedNodes)
    throw Error(ErrorKind::Unsupported, where(owner) + ": its subgraphs, unrolled, exceed " +
                                            std::to_string(kMaxInlinedNodes) + " nodes");
  std::map<std::string, std::string> renames;
  for (const std::string& name : local_names(body)) renames[name] = prefix + name;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const std::string name = prefix + body.input(i).name();
    values_[name] = inputs[i];
    if (auto it = staging_.computed.find(name); it != staging_.computed.end()) {
      values_[name].constant = it->second;  // read back by an earlier segment
      values_[name].sources.clear();
    }
  }
  for (auto& init : body.initializer()) {
    Value v;
    v.constant = onnx_io::tensor_from_proto(init);
    v.shape = v.constant->shape;
    v.dtype = v.constant->dtype;
    v.int8_type = int8_type_of(init.data_type());
    values_[prefix + init.name()] = std::move(v);
  }
  std::vector<const onnx::NodeProto*> nodes;
  for (const onnx::NodeProto& original : body.node()) {
    onnx::NodeProto& node = inlined_.emplace_back(original);
    node.set_name(prefix + (original.name().empty() ? original.op_type() : original.name()));
    for (std::string& in : *node.mutable_input())
      if (auto it = renames.find(in); it != renames.end()) in = it->second;
    for (std::string& out : *node.mutable_output())
      if (!out.empty()) out = prefix + out;
    for (onnx::AttributeProto& a : *node.mutable_attribute()) {
      if (a.has_g()) rename_captured(*a.mutable_g(), renames);
      for (onnx::GraphProto& sub : *a.mutable_graphs()) rename_captured(sub, renames);
    }
    if (node.output_size() == 0)
      throw Error(ErrorKind::ModelFormat, where(node) + ": has no output");
    register_node(node);
    nodes.push_back(&node);
  }
  // The node being lowered (the owner) keeps its float16 flags across the body's lowerings.
  const bool half = node_half_, demoted = node_demoted_;
  for (const onnx::NodeProto* node : nodes)
    if (is_constant_node(*node)) visit(*node);
  for (const onnx::NodeProto* node : nodes)
    if (!is_constant_node(*node)) visit(*node);
  node_half_ = half;
  node_demoted_ = demoted;
  std::vector<std::string> outputs;
  for (auto& out : body.output()) {
    auto it = renames.find(out.name());
    const std::string name = it != renames.end() ? it->second : out.name();
    if (blocked_.count(name)) throw SubgraphBlocked{};
    if (!values_.count(name))
      throw Error(ErrorKind::ModelFormat, where(owner) + ": subgraph '" + body.name() +
                                              "' output '" + out.name() + "' is never computed");
    outputs.push_back(name);
  }
  return outputs;
}

}  // namespace vkgraph::onnx_import
