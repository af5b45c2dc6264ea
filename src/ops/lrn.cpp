// LRN: one invocation per element sums its channel window (windows are a few channels wide,
// so the re-reads cost less than a separate pass of squares).
#include "vkgraph/ops/lrn.h"

#include "shape_ops.h"

namespace vkgraph::ops {

TensorRef lrn(ComputeGraph& g, TensorRef x, const LrnParams& params) {
  const std::string op = "lrn";
  const TensorInfo xi = g.info(x);
  const std::string suffix = shader_suffix(float_dtype(g, xi.dtype, op));
  if (xi.shape.size() < 2)
    throw Error(ErrorKind::InvalidArgument,
                op + ": input " + shape_str(xi.shape) + " needs at least [N, C]");
  if (params.size < 1)
    throw Error(ErrorKind::InvalidArgument,
                op + ": size " + std::to_string(params.size) + " below 1");
  const int64_t n = numel(xi.shape);
  const int64_t channels = xi.shape[1];
  const int64_t inner = numel(Shape(xi.shape.begin() + 2, xi.shape.end()));
  TensorRef y = g.add_tensor(xi.shape, xi.dtype);
  PushConstants pc;
  pc.add(checked_i32(n, op, "element count"))
      .add(checked_i32(channels, op, "channels"))
      .add(checked_i32(std::max<int64_t>(inner, 1), op, "inner size"))
      .add(checked_i32((params.size - 1) / 2, op, "size"))
      .add(checked_i32(params.size - 1 - (params.size - 1) / 2, op, "size"))
      .add(params.alpha / static_cast<float>(params.size))
      .add(params.beta)
      .add(params.bias);
  add_elementwise(g, "lrn_" + suffix, {{x, Access::Read}, {y, Access::Write}}, n, pc.take(), op);
  return y;
}

}  // namespace vkgraph::ops
