// OneHot on the device, per element size; Hardmax is argmax followed by it, so ties and NaN
// follow argmax's rules.
#include "vkgraph/ops/one_hot.h"

#include "shape_ops.h"
#include "vkgraph/ops.h"

namespace vkgraph::ops {

TensorRef one_hot(ComputeGraph& g, TensorRef indices, int64_t depth, TensorRef values,
                  int64_t axis) {
  const std::string op = "one_hot";
  const TensorInfo ii = g.info(indices), vi = g.info(values);
  require_index_dtype(g, indices, op);
  const std::string bits = std::to_string(elem_bits(g, vi.dtype, op));
  if (vi.shape != Shape{2})
    throw Error(ErrorKind::InvalidArgument,
                op + ": values " + shape_str(vi.shape) + " must be [2] (off, on)");
  if (depth < 1)
    throw Error(ErrorKind::InvalidArgument, op + ": depth " + std::to_string(depth) + " below 1");
  const int a = normalize_axis(axis, ii.shape.size() + 1, op);
  Shape out = ii.shape;
  out.insert(out.begin() + a, depth);
  const int64_t inner = numel(Shape(ii.shape.begin() + a, ii.shape.end()));
  const int64_t n = numel(out);
  TensorRef y = g.add_tensor(out, vi.dtype);
  PushConstants pc;
  pc.add(checked_i32(n, op, "element count"))
      .add(checked_i32(depth, op, "depth"))
      .add(checked_i32(std::max<int64_t>(inner, 1), op, "inner size"));
  add_elementwise(g, "one_hot_" + bits,
                  {{indices, Access::Read}, {values, Access::Read}, {y, Access::Write}}, n,
                  pc.take(), op, {ii.dtype == DType::Int64 ? 1u : 0u});
  return y;
}

TensorRef hardmax(ComputeGraph& g, TensorRef x, int64_t axis) {
  const TensorInfo xi = g.info(x);
  const std::string suffix = shader_suffix(float_dtype(g, xi.dtype, "hardmax"));
  if (xi.shape.empty()) throw Error(ErrorKind::InvalidArgument, "hardmax: input is a scalar");
  const int a = normalize_axis(axis, xi.shape.size(), "hardmax");
  HostTensor off_on(xi.dtype, {2});
  if (xi.dtype == DType::Float16) {
    off_on.data<uint16_t>()[0] = float_to_half(0.f);
    off_on.data<uint16_t>()[1] = float_to_half(1.f);
  } else {
    off_on.data<float>()[1] = 1.f;
  }
  TensorRef first_max = argmax(g, x, a, /*keepdims=*/false);
  return one_hot(g, first_max, xi.shape[a], g.add_constant(std::move(off_on)), a);
}

}  // namespace vkgraph::ops
