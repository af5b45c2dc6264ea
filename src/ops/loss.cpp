// NegativeLogLikelihoodLoss: one pass writes each target element's weighted loss and the weight
// it applied; Sum and Mean then reduce those with the reduce op, so the division by the weight
// total is one scalar Div.
#include "vkgraph/ops/loss.h"

#include "shape_ops.h"
#include "vkgraph/ops.h"

namespace vkgraph::ops {
namespace {

void check_constant_targets(ComputeGraph& g, TensorRef target, int64_t classes,
                            const NllLossOptions& o) {
  const HostTensor* v = g.constant_value(target);
  if (!v) return;
  for (int64_t i = 0; i < v->numel(); ++i) {
    int64_t t = v->as_int(i);
    if (o.ignore_index && t == *o.ignore_index) continue;
    if (t < 0 || t >= classes)
      throw Error(ErrorKind::InvalidArgument, "nll_loss: target " + std::to_string(t) +
                                                  " out of range for " + std::to_string(classes) +
                                                  " classes");
  }
}

}  // namespace

TensorRef nll_loss(ComputeGraph& g, TensorRef log_prob, TensorRef target,
                   std::optional<TensorRef> weight, const NllLossOptions& o) {
  const std::string op = "nll_loss";
  const TensorInfo xi = g.info(log_prob), ti = g.info(target);
  require_dtype(g, log_prob, DType::Float32, op);
  require_index_dtype(g, target, op);
  if (xi.shape.size() < 2)
    throw Error(ErrorKind::InvalidArgument,
                op + ": input " + shape_str(xi.shape) + " needs at least [N, C]");
  Shape expected = xi.shape;
  expected.erase(expected.begin() + 1);
  if (ti.shape != expected)
    throw Error(ErrorKind::InvalidArgument, op + ": target " + shape_str(ti.shape) +
                                                " must be input " + shape_str(xi.shape) +
                                                " without its class dim, " + shape_str(expected));
  const int64_t classes = xi.shape[1];
  TensorRef w;
  if (weight) {
    require_dtype(g, *weight, DType::Float32, op);
    if (g.info(*weight).shape != Shape{classes})
      throw Error(ErrorKind::InvalidArgument, op + ": weight " + shape_str(g.info(*weight).shape) +
                                                  " must be [" + std::to_string(classes) + "]");
    w = *weight;
  } else {
    w = g.add_constant(HostTensor::from(DType::Float32, {classes},
                                        std::vector<float>(static_cast<size_t>(classes), 1.f)));
  }
  check_constant_targets(g, target, classes, o);

  const int64_t n = numel(ti.shape);
  const int64_t inner =
      xi.shape[0] == 0 || classes == 0 ? 1 : numel(xi.shape) / (xi.shape[0] * classes);
  checked_i32(numel(xi.shape), op, "element count");
  TensorRef loss = g.add_tensor(ti.shape, DType::Float32);
  TensorRef applied = g.add_tensor(ti.shape, DType::Float32);
  const int64_t ignore = o.ignore_index.value_or(0);
  PushConstants pc;
  pc.add(checked_i32(n, op, "element count"))
      .add(checked_i32(classes, op, "classes"))
      .add(checked_i32(inner, op, "inner size"))
      .add(static_cast<int32_t>(o.ignore_index.has_value()))
      .add(static_cast<int32_t>(static_cast<uint64_t>(ignore) & 0xffffffffu))
      .add(static_cast<int32_t>(static_cast<uint64_t>(ignore) >> 32));
  add_elementwise(g, "nll_loss_f32",
                  {{log_prob, Access::Read},
                   {target, Access::Read},
                   {w, Access::Read},
                   {loss, Access::Write},
                   {applied, Access::Write}},
                  n, pc.take(), op, {ti.dtype == DType::Int64 ? 1u : 0u});
  if (o.reduction == LossReduction::None) return loss;
  // Summed as flat vectors: the reduce op's rank limit does not apply to targets.
  auto sum = [&](TensorRef t) { return reduce(g, ReduceOp::Sum, g.add_view(t, {n}), {}, false); };
  TensorRef total = sum(loss);
  if (o.reduction == LossReduction::Sum) return total;
  return binary(g, BinaryOp::Div, total, sum(applied));
}

}  // namespace vkgraph::ops
