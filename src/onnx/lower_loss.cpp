// The forward training losses: NegativeLogLikelihoodLoss on the device (ops::nll_loss), and
// SoftmaxCrossEntropyLoss as ONNX defines it, LogSoftmax over the class axis followed by it.
#include "onnx/importer.h"
#include "onnx/lower_util.h"
#include "vkgraph/error.h"

namespace vkgraph::onnx_import {
namespace {

ops::NllLossOptions loss_options(const Importer& im, const onnx::NodeProto& node,
                                 const fold::Attrs& a) {
  ops::NllLossOptions o;
  auto it = a.strings.find("reduction");
  const std::string reduction = it == a.strings.end() ? "mean" : it->second;
  if (reduction == "none")
    o.reduction = ops::LossReduction::None;
  else if (reduction == "sum")
    o.reduction = ops::LossReduction::Sum;
  else if (reduction == "mean")
    o.reduction = ops::LossReduction::Mean;
  else
    im.fail(node, "unknown reduction '" + reduction + "'");
  if (a.ints.count("ignore_index")) o.ignore_index = a.ints.at("ignore_index");
  return o;
}

std::optional<TensorRef> optional_weight(Importer& im, const onnx::NodeProto& node) {
  if (!im.has_input(node, 2)) return std::nullopt;
  return im.tensor(node, 2);
}

std::vector<Value> lower_nll(Importer& im, const onnx::NodeProto& node, const fold::Attrs& a) {
  im.require_inputs(node, 2, 3);
  return with_node(im, node, [&] {
    return std::vector<Value>{
        device(im, ops::nll_loss(im.graph(), im.tensor(node, 0), im.tensor(node, 1),
                                 optional_weight(im, node), loss_options(im, node, a)))};
  });
}

std::vector<Value> lower_softmax_cross_entropy(Importer& im, const onnx::NodeProto& node,
                                               const fold::Attrs& a) {
  im.require_inputs(node, 2, 3);
  return with_node(im, node, [&] {
    TensorRef log_prob = ops::softmax(im.graph(), im.tensor(node, 0), 1, /*log=*/true);
    TensorRef loss = ops::nll_loss(im.graph(), log_prob, im.tensor(node, 1),
                                   optional_weight(im, node), loss_options(im, node, a));
    return std::vector<Value>{device(im, loss), device(im, log_prob)};
  });
}

}  // namespace

void register_loss(LoweringTable& t) {
  t["NegativeLogLikelihoodLoss"] = lower_nll;
  t["SoftmaxCrossEntropyLoss"] = lower_softmax_cross_entropy;
}

}  // namespace vkgraph::onnx_import
