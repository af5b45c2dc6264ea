// Rotary position embedding (vkgraph/ops/rope.h): one invocation per rotated pair.
#include "vkgraph/ops/rope.h"

#include "shape_ops.h"
#include "vkgraph/shaders/rope.h"

namespace vkgraph::ops {

TensorRef rope(ComputeGraph& g, const StridedView& x, TensorRef cos, TensorRef sin) {
  const std::string op = "rope";
  const Shape& shape = x.shape;
  check(!shape.empty() && shape.size() <= static_cast<size_t>(kMaxRank), ErrorKind::InvalidArgument,
        op + ": x must be rank 1 to " + std::to_string(kMaxRank) + ", got " + shape_str(shape));
  check(shape.back() % 2 == 0, ErrorKind::InvalidArgument,
        op + ": the last dim of x " + shape_str(shape) + " must be even");
  check_strided_read(g, x.tensor, shape, x.strides, x.offset, op);
  const DType dtype = float_dtype(g, x.tensor, {cos, sin}, op);
  for (TensorRef t : {cos, sin}) {
    const Shape& ts = g.info(t).shape;
    check(shapes::broadcast({&ts, &shape}) == std::optional<Shape>(shape),
          ErrorKind::InvalidArgument,
          op + ": '" + g.info(t).name + "' " + shape_str(ts) + " does not broadcast to x " +
              shape_str(shape));
  }
  TensorRef y = g.add_tensor(shape, dtype);
  const int64_t n = numel(shape) / 2;
  if (n == 0) return y;
  const Shape& cs = g.info(cos).shape;
  const Shape& ss = g.info(sin).shape;
  PushConstants pc;
  pc.add(checked_i32(n, op, "element count")).add(static_cast<int32_t>(shape.size()));
  pc.add(checked_i32(shape.back() / 2, op, "dim")).add(checked_i32(x.offset, op, "offset"));
  pc.add_array(to_i32(shape, op), kMaxRank);
  std::vector<int32_t> xs;
  for (int64_t s : x.strides) xs.push_back(checked_i32(s, op, "stride"));
  pc.add_array(xs, kMaxRank);
  pc.add_array(broadcast_strides(cs, shape), kMaxRank);
  pc.add_array(broadcast_strides(ss, shape), kMaxRank);
  add_elementwise(
      g, declared(shaders::rope::find(dtype), op),
      {{x.tensor, Access::Read}, {cos, Access::Read}, {sin, Access::Read}, {y, Access::Write}}, n,
      pc.take(), op);
  return y;
}

}  // namespace vkgraph::ops
