#pragma once
// What ONNX itself says about a model: its checker (libonnx's onnx::checker::check_model) over
// the whole model, and its operator schemas for telling a misspelled attribute from one that
// vkgraph does not implement. The importer's own rule (every attribute of a lowered node is
// read by its lowering, fold::AttrTable) catches what a schema cannot: valid attributes that a
// lowering would ignore, and the ops of other domains.
#include <onnx/onnx_pb.h>

#include <string>

#include "vkgraph/error.h"

namespace vkgraph::onnx_import {

// Runs ONNX's checker; throws Error(ModelFormat, "<what>: rejected by ONNX's checker: <its
// message>"). A model newer than the checker (IR version or ai.onnx opset beyond what this
// libonnx knows) is not checked: the old schemas would reject valid newer nodes.
// Graph inputs and outputs without a shape (valid IR) are not refused; the model is unchanged
// when it returns.
void check_with_onnx(onnx::ModelProto& model, const std::string& what);

// Whether check_with_onnx judges this model (see above).
bool onnx_checker_knows(const onnx::ModelProto& model);

// The error for attribute `name` of `node` that its lowering did not read. ModelFormat when
// ONNX's schema of the op at `opset` has no such attribute or declares another type;
// Unsupported otherwise: the attribute is valid but vkgraph would ignore it, or the opset is
// newer than this libonnx's schemas. `where` names the node.
Error unread_attribute(const std::string& where, const std::string& op_type,
                       const onnx::NodeProto& node, int opset, const std::string& name);

}  // namespace vkgraph::onnx_import
