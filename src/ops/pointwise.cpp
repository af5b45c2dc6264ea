// IsInf, IsNaN, Shrink and bfloat16 rounding: one invocation per element, float32 arithmetic on f32
// or f16 storage.
#include "vkgraph/ops/pointwise.h"

#include "shape_ops.h"

namespace vkgraph::ops {
namespace {

TensorRef pointwise(ComputeGraph& g, const std::string& op, TensorRef x, bool bool_result,
                    int32_t detect_negative, int32_t detect_positive, float lambd, float bias) {
  const TensorInfo xi = g.info(x);
  const std::string suffix = shader_suffix(float_dtype(g, xi.dtype, op));
  TensorRef y = g.add_tensor(xi.shape, bool_result ? DType::Bool : xi.dtype);
  if (bool_result) require_bool(g, y, op, "output");
  const int64_t n = numel(xi.shape);
  PushConstants pc;
  pc.add(checked_i32(n, op, "element count")).add(detect_negative).add(detect_positive);
  pc.add(lambd).add(bias);
  add_elementwise(g, op + "_" + suffix, {{x, Access::Read}, {y, Access::Write}}, n, pc.take(), op);
  return y;
}

}  // namespace

TensorRef is_inf(ComputeGraph& g, TensorRef x, bool detect_negative, bool detect_positive) {
  return pointwise(g, "is_inf", x, true, detect_negative, detect_positive, 0.f, 0.f);
}

TensorRef is_nan(ComputeGraph& g, TensorRef x) {
  return pointwise(g, "is_nan", x, true, 0, 0, 0.f, 0.f);
}

TensorRef shrink(ComputeGraph& g, TensorRef x, float lambd, float bias) {
  return pointwise(g, "shrink", x, false, 0, 0, lambd, bias);
}

TensorRef to_bfloat16(ComputeGraph& g, TensorRef x) {
  return pointwise(g, "to_bfloat16", x, false, 0, 0, 0.f, 0.f);
}

}  // namespace vkgraph::ops
