// Det and ReverseSequence (ops/det.h, ops/reverse_sequence.h).
#include "onnx/importer.h"
#include "onnx/lower_util.h"
#include "vkgraph/error.h"

namespace vkgraph::onnx_import {
namespace {

std::vector<Value> lower_det(Importer& im, const onnx::NodeProto& node, const fold::Attrs&) {
  im.require_inputs(node, 1, 1);
  return with_node(im, node, [&] {
    return std::vector<Value>{device(im, ops::det(im.graph(), im.tensor(node, 0)))};
  });
}

std::vector<Value> lower_reverse_sequence(Importer& im, const onnx::NodeProto& node,
                                          const fold::Attrs& a) {
  im.require_inputs(node, 2, 2);
  return with_node(im, node, [&] {
    return std::vector<Value>{
        device(im, ops::reverse_sequence(im.graph(), im.tensor(node, 0), im.tensor(node, 1),
                                         a.get_int("batch_axis", 1), a.get_int("time_axis", 0)))};
  });
}

}  // namespace

void register_linalg(LoweringTable& t) {
  t["Det"] = lower_det;
  t["ReverseSequence"] = lower_reverse_sequence;
}

}  // namespace vkgraph::onnx_import
