// IsInf, IsNaN and Shrink (ops/pointwise.h), and Dropout, which at inference is the identity
// with an all-true mask.
#include "onnx/importer.h"
#include "onnx/lower_util.h"
#include "vkgraph/error.h"

namespace vkgraph::onnx_import {
namespace {

float float_attr(const fold::Attrs& a, const char* name, float fallback) {
  auto it = a.floats.find(name);
  return it == a.floats.end() ? fallback : it->second;
}

std::vector<Value> lower_is_inf(Importer& im, const onnx::NodeProto& node, const fold::Attrs& a) {
  im.require_inputs(node, 1, 1);
  return with_node(im, node, [&] {
    return std::vector<Value>{
        device(im, ops::is_inf(im.graph(), im.tensor(node, 0), a.get_int("detect_negative", 1) != 0,
                               a.get_int("detect_positive", 1) != 0))};
  });
}

std::vector<Value> lower_is_nan(Importer& im, const onnx::NodeProto& node, const fold::Attrs&) {
  im.require_inputs(node, 1, 1);
  return with_node(im, node, [&] {
    return std::vector<Value>{device(im, ops::is_nan(im.graph(), im.tensor(node, 0)))};
  });
}

std::vector<Value> lower_shrink(Importer& im, const onnx::NodeProto& node, const fold::Attrs& a) {
  im.require_inputs(node, 1, 1);
  return with_node(im, node, [&] {
    return std::vector<Value>{
        device(im, ops::shrink(im.graph(), im.tensor(node, 0), float_attr(a, "lambd", 0.5f),
                               float_attr(a, "bias", 0.f)))};
  });
}

// Dropout drops nothing unless training_mode is set (opset 12+) with a ratio above zero; that
// mode draws random numbers, which a deterministic inference runtime does not do.
std::vector<Value> lower_dropout(Importer& im, const onnx::NodeProto& node, const fold::Attrs& a) {
  im.require_inputs(node, 1, 3);
  bool training = false;
  if (im.has_input(node, 2)) training = im.host_value(node, 2, "training_mode").as_int(0) != 0;
  float ratio = float_attr(a, "ratio", 0.5f);
  a.ignore("seed");  // of the random mask, which only training mode draws
  if (training && im.has_input(node, 1))
    ratio = static_cast<float>(im.host_value(node, 1, "ratio").as_double(0));
  if (training && ratio != 0.f)
    im.fail(node, "training_mode with ratio " + std::to_string(ratio) +
                      " drops random elements; only inference (or ratio 0) is supported");
  std::vector<Value> outs{im.input(node, 0)};
  if (node.output_size() > 1 && !node.output(1).empty()) {
    Value mask;
    mask.shape = outs[0].shape;
    mask.dtype = DType::Bool;
    HostTensor ones(DType::Bool, mask.shape);
    std::fill(ones.bytes.begin(), ones.bytes.end(), uint8_t{1});
    mask.constant = std::move(ones);
    outs.push_back(std::move(mask));
  }
  return outs;
}

}  // namespace

void register_pointwise(LoweringTable& t) {
  t["IsInf"] = lower_is_inf;
  t["IsNaN"] = lower_is_nan;
  t["Shrink"] = lower_shrink;
  t["Dropout"] = lower_dropout;
}

}  // namespace vkgraph::onnx_import
