#include "onnx/subgraph.h"

namespace vkgraph::onnx_import {

std::vector<const onnx::GraphProto*> subgraphs_of(const onnx::NodeProto& node) {
  std::vector<const onnx::GraphProto*> graphs;
  for (const onnx::AttributeProto& a : node.attribute()) {
    if (a.has_g()) graphs.push_back(&a.g());
    for (const onnx::GraphProto& g : a.graphs()) graphs.push_back(&g);
  }
  return graphs;
}

std::set<std::string> local_names(const onnx::GraphProto& g) {
  std::set<std::string> names;
  for (auto& in : g.input()) names.insert(in.name());
  for (auto& init : g.initializer()) names.insert(init.name());
  for (auto& node : g.node())
    for (auto& out : node.output())
      if (!out.empty()) names.insert(out);
  return names;
}

std::set<std::string> captured_names(const onnx::GraphProto& g) {
  const std::set<std::string> locals = local_names(g);
  std::set<std::string> captured;
  auto read = [&](const std::string& name) {
    if (!name.empty() && !locals.count(name)) captured.insert(name);
  };
  for (auto& node : g.node()) {
    for (auto& in : node.input()) read(in);
    for (const onnx::GraphProto* sub : subgraphs_of(node))
      for (const std::string& name : captured_names(*sub)) read(name);
  }
  for (auto& out : g.output()) read(out.name());
  return captured;
}

namespace {
void rename_in_node(onnx::NodeProto& node, const std::map<std::string, std::string>& renames) {
  for (std::string& in : *node.mutable_input())
    if (auto it = renames.find(in); it != renames.end()) in = it->second;
  for (onnx::AttributeProto& a : *node.mutable_attribute()) {
    if (a.has_g()) rename_captured(*a.mutable_g(), renames);
    for (onnx::GraphProto& sub : *a.mutable_graphs()) rename_captured(sub, renames);
  }
}
}  // namespace

void rename_captured(onnx::GraphProto& g, const std::map<std::string, std::string>& renames) {
  std::map<std::string, std::string> visible = renames;
  for (const std::string& name : local_names(g)) visible.erase(name);
  if (visible.empty()) return;
  for (onnx::NodeProto& node : *g.mutable_node()) rename_in_node(node, visible);
  for (onnx::ValueInfoProto& out : *g.mutable_output())
    if (auto it = visible.find(out.name()); it != visible.end()) out.set_name(it->second);
}

}  // namespace vkgraph::onnx_import
