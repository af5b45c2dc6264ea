// BitShift (ops/bitshift.h). ONNX's unsigned types reach the device widened (uint8/16 in
// Int32, uint32/64 in Int64), so the lowering takes the width from the type the model
// declares for either operand (both have the same type).
#include "onnx/importer.h"
#include "onnx/lower_util.h"

namespace vkgraph::onnx_import {
namespace {

uint32_t unsigned_width(int32_t onnx_type) {
  switch (onnx_type) {
    case onnx::TensorProto::UINT8:
      return 8;
    case onnx::TensorProto::UINT16:
      return 16;
    case onnx::TensorProto::UINT32:
      return 32;
    case onnx::TensorProto::UINT64:
      return 64;
    default:
      return 0;
  }
}

std::vector<Value> lower_bit_shift(Importer& im, const onnx::NodeProto& node,
                                   const fold::Attrs& a) {
  im.require_inputs(node, 2, 2);
  const auto it = a.strings.find("direction");
  if (it == a.strings.end()) im.fail(node, "missing attribute 'direction'");
  if (it->second != "LEFT" && it->second != "RIGHT")
    throw Error(ErrorKind::InvalidArgument,
                im.where(node) + ": direction must be LEFT or RIGHT, got '" + it->second + "'");
  int32_t type = 0;
  for (size_t i = 0; i < 2 && type == 0; ++i) type = im.declared_elem_type(node.input(i));
  if (type == 0) type = im.declared_elem_type(node.output(0));
  uint32_t bits = unsigned_width(type);
  if (type == 0 && im.input(node, 0).int8_type == DType::UInt8) bits = 8;
  if (bits == 0)
    im.fail(node, type == 0 ? "the element type of its operands is not declared in the model"
                            : "operands must be uint8, uint16, uint32 or uint64");
  const ops::ShiftDirection direction =
      it->second == "LEFT" ? ops::ShiftDirection::Left : ops::ShiftDirection::Right;
  return with_node(im, node, [&] {
    TensorRef x = im.tensor(node, 0), amount = im.tensor(node, 1);
    return std::vector<Value>{device(im, ops::bit_shift(im.graph(), x, amount, direction, bits))};
  });
}

}  // namespace

void register_bitwise(LoweringTable& t) {
  t["BitShift"] = lower_bit_shift;
}

}  // namespace vkgraph::onnx_import
