// NodeProto -> fold::Attrs. Kept apart from fold.cpp so that the evaluators themselves never
// touch protobuf types.
#include <onnx/onnx_pb.h>

#include "onnx/fold.h"
#include "vkgraph/error.h"
#include "vkgraph/onnx_tensor.h"

namespace vkgraph::fold {

Attrs attrs_from_node(const onnx::NodeProto& node) {
  Attrs attrs;
  for (const onnx::AttributeProto& a : node.attribute()) {
    check(a.ref_attr_name().empty(), ErrorKind::Unsupported,
          node.op_type() + ": attribute '" + a.name() + "' refers to a function attribute");
    switch (a.type()) {
      case onnx::AttributeProto::INT:
        attrs.ints[a.name()] = a.i();
        break;
      case onnx::AttributeProto::INTS:
        attrs.int_lists[a.name()].assign(a.ints().begin(), a.ints().end());
        break;
      case onnx::AttributeProto::FLOAT:
        attrs.floats[a.name()] = a.f();
        break;
      case onnx::AttributeProto::FLOATS:
        attrs.float_lists[a.name()].assign(a.floats().begin(), a.floats().end());
        break;
      case onnx::AttributeProto::STRING:
        attrs.strings[a.name()] = a.s();
        break;
      case onnx::AttributeProto::TENSOR:
        try {
          attrs.tensors[a.name()] = onnx_io::tensor_from_proto(a.t());
        } catch (const Error& e) {
          // Attribute tensors are usually unnamed; say which node and attribute it was.
          // what() is "<kind>: <message>", so drop the kind to avoid printing it twice.
          const std::string what = e.what();
          const std::string prefix = std::string(to_string(e.kind())) + ": ";
          throw Error(e.kind(),
                      node.op_type() + " attribute '" + a.name() +
                          "': " + (what.rfind(prefix, 0) == 0 ? what.substr(prefix.size()) : what));
        }
        break;
      default:
        attrs.other_types.push_back(a.name());  // graphs, sparse tensors, type protos
        break;
    }
  }
  return attrs;
}

}  // namespace vkgraph::fold
