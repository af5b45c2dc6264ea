#include "onnx/model_check.h"

#include <onnx/checker.h>
#include <onnx/defs/schema.h>

#include <vector>

namespace vkgraph::onnx_import {

namespace {
int newest_known_opset() {
  const auto& ranges = onnx::OpSchemaRegistry::DomainToVersionRange::Instance().Map();
  auto it = ranges.find(onnx::ONNX_DOMAIN);
  return it == ranges.end() ? 0 : it->second.second;
}

const char* type_name(onnx::AttributeProto::AttributeType t) {
  return onnx::AttributeProto::AttributeType_Name(t).c_str();
}
}  // namespace

bool onnx_checker_knows(const onnx::ModelProto& model) {
  if (model.ir_version() > onnx::IR_VERSION) return false;
  for (const auto& op : model.opset_import())
    if ((op.domain().empty() || op.domain() == "ai.onnx") && op.version() > newest_known_opset())
      return false;
  return true;
}

void check_with_onnx(onnx::ModelProto& model, const std::string& what) {
  if (!onnx_checker_knows(model)) return;
  // ONNX's IR lets a graph input or output omit its shape (any shape), but the checker demands
  // the field (onnx/onnx#2492, #2932): such values get an empty one, scalar-looking, for the
  // check only, and lose it again however the check ends.
  std::vector<onnx::TypeProto_Tensor*> shapeless;
  for (auto* values :
       {model.mutable_graph()->mutable_input(), model.mutable_graph()->mutable_output()})
    for (onnx::ValueInfoProto& v : *values)
      if (v.type().has_tensor_type() && !v.type().tensor_type().has_shape())
        shapeless.push_back(v.mutable_type()->mutable_tensor_type());
  struct Restore {
    std::vector<onnx::TypeProto_Tensor*>& types;
    ~Restore() {
      for (auto* t : types) t->clear_shape();
    }
  } restore{shapeless};
  for (auto* t : shapeless) t->mutable_shape();
  try {
    onnx::checker::check_model(model);
  } catch (const onnx::checker::ValidationError& e) {
    throw Error(ErrorKind::ModelFormat, what + ": rejected by ONNX's checker: " + e.what());
  } catch (const std::exception& e) {
    // The checker runs shape-free schema checks that may throw other ONNX exceptions.
    throw Error(ErrorKind::ModelFormat, what + ": rejected by ONNX's checker: " + e.what());
  }
}

Error unread_attribute(const std::string& where, const std::string& op_type,
                       const onnx::NodeProto& node, int opset, const std::string& name) {
  const onnx::AttributeProto* attr = nullptr;
  for (const auto& a : node.attribute())
    if (a.name() == name) attr = &a;
  const std::string type = attr ? type_name(attr->type()) : "?";
  const onnx::OpSchema* schema =
      node.domain().empty() || node.domain() == "ai.onnx" || node.domain() == "ai.vkgraph"
          ? onnx::OpSchemaRegistry::Schema(op_type, opset, onnx::ONNX_DOMAIN)
          : nullptr;
  // Beyond the opsets this libonnx knows, its newest schema may lack what a newer opset added,
  // so an attribute it does not list is not known to be misspelled.
  if (schema && opset <= newest_known_opset()) {
    auto it = schema->attributes().find(name);
    if (it == schema->attributes().end())
      return Error(ErrorKind::ModelFormat, where + ": unknown attribute '" + name + "' (ONNX's " +
                                               op_type + " has no such attribute)");
    if (attr && it->second.type != attr->type())
      return Error(ErrorKind::ModelFormat, where + ": attribute '" + name + "' is " + type +
                                               ", ONNX declares it " + type_name(it->second.type));
  }
  return Error(ErrorKind::Unsupported, where + ": attribute '" + name + "' (" + type +
                                           ") is not one that vkgraph's " + op_type +
                                           " reads: misspelled, of the wrong type, or "
                                           "not supported (it would be ignored)");
}

}  // namespace vkgraph::onnx_import
