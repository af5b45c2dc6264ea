// CumSum: one invocation scans one line along the axis.
#include "vkgraph/shaders/cumsum.h"

#include "shape_ops.h"
#include "vkgraph/ops.h"

namespace vkgraph::ops {

TensorRef cumsum(ComputeGraph& g, TensorRef x, int64_t axis, bool exclusive, bool reverse) {
  const TensorInfo xi = g.info(x);
  DType dtype = typed_dtype(g, xi.dtype, "cumsum");
  if (xi.shape.empty()) throw Error(ErrorKind::InvalidArgument, "cumsum: input is a scalar");
  int a = normalize_axis(axis, xi.shape.size(), "cumsum");
  TensorRef y = g.add_tensor(xi.shape, xi.dtype);
  int64_t axis_len = xi.shape[a];
  int64_t inner = numel(Shape(xi.shape.begin() + a + 1, xi.shape.end()));
  int64_t lines = axis_len == 0 ? 0 : numel(xi.shape) / axis_len;
  PushConstants pc;
  pc.add(checked_i32(lines, "cumsum", "line count"))
      .add(checked_i32(axis_len, "cumsum", "dim"))
      .add(checked_i32(inner, "cumsum", "dim"))
      .add(static_cast<int32_t>(exclusive))
      .add(static_cast<int32_t>(reverse));
  add_elementwise(g, declared(shaders::cumsum::find(dtype), "cumsum"),
                  {{x, Access::Read}, {y, Access::Write}}, lines, pc.take(), "cumsum");
  return y;
}

}  // namespace vkgraph::ops
