#pragma once
// Names in ONNX subgraphs (If branches, Loop and Scan bodies), which see the values of their
// enclosing scopes by name (lexical scoping): what a subgraph captures, and renaming those
// references when the enclosing subgraph is inlined under new names.
#include <onnx/onnx_pb.h>

#include <map>
#include <set>
#include <string>
#include <vector>

namespace vkgraph::onnx_import {

// The graph attributes of a node (If's branches, Loop's and Scan's body).
std::vector<const onnx::GraphProto*> subgraphs_of(const onnx::NodeProto& node);

// The names `g` defines: its inputs, initializers and node outputs.
std::set<std::string> local_names(const onnx::GraphProto& g);

// The names `g` reads (in its nodes, nested subgraphs and outputs) that it does not define.
std::set<std::string> captured_names(const onnx::GraphProto& g);

// Renames the references in `g` (and nested subgraphs) to names of enclosing scopes, as
// `renames` maps them; names `g` defines itself shadow the enclosing ones.
void rename_captured(onnx::GraphProto& g, const std::map<std::string, std::string>& renames);

}  // namespace vkgraph::onnx_import
