// LRN (ops/lrn.h) and MeanVarianceNormalization, which is composed at load time from reduce
// and elementwise ops: (x - mean) / (sqrt(mean((x - mean)^2)) + 1e-9) over `axes`. The
// variance is taken of the centred values rather than as E[x^2] - E[x]^2 (ONNX's function
// body), which agrees to rounding and cannot go negative.
#include "onnx/importer.h"
#include "onnx/lower_util.h"
#include "vkgraph/error.h"

namespace vkgraph::onnx_import {
namespace {

float float_attr(const fold::Attrs& a, const char* name, float fallback) {
  auto it = a.floats.find(name);
  return it == a.floats.end() ? fallback : it->second;
}

std::vector<Value> lower_lrn(Importer& im, const onnx::NodeProto& node, const fold::Attrs& a) {
  im.require_inputs(node, 1, 1);
  if (!a.ints.count("size")) im.fail(node, "missing required attribute 'size'");
  ops::LrnParams p;
  p.size = a.ints.at("size");
  p.alpha = float_attr(a, "alpha", 1e-4f);
  p.beta = float_attr(a, "beta", 0.75f);
  p.bias = float_attr(a, "bias", 1.f);
  return with_node(im, node, [&] {
    return std::vector<Value>{device(im, ops::lrn(im.graph(), im.tensor(node, 0), p))};
  });
}

std::vector<Value> lower_mvn(Importer& im, const onnx::NodeProto& node, const fold::Attrs& a) {
  im.require_inputs(node, 1, 1);
  const auto* given = a.find_ints("axes");
  const std::vector<int64_t> axes = given ? *given : std::vector<int64_t>{0, 2, 3};
  return with_node(im, node, [&] {
    ComputeGraph& g = im.graph();
    using ops::BinaryOp;
    TensorRef x = im.tensor(node, 0);
    TensorRef centred =
        ops::binary(g, BinaryOp::Sub, x, ops::reduce(g, ops::ReduceOp::Mean, x, axes, true));
    TensorRef variance = ops::reduce(g, ops::ReduceOp::Mean,
                                     ops::binary(g, BinaryOp::Mul, centred, centred), axes, true);
    TensorRef epsilon =
        g.add_constant(HostTensor::from(DType::Float32, {}, std::vector<float>{1e-9f}));
    TensorRef deviation =
        ops::binary(g, BinaryOp::Add, ops::unary(g, ops::UnaryOp::Sqrt, variance), epsilon);
    return std::vector<Value>{device(im, ops::binary(g, BinaryOp::Div, centred, deviation))};
  });
}

}  // namespace

void register_local_norm(LoweringTable& t) {
  t["LRN"] = lower_lrn;
  t["MeanVarianceNormalization"] = lower_mvn;
}

}  // namespace vkgraph::onnx_import
