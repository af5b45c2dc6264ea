// TopK: every element computes its own rank in its line (see topk.comp).
#include "vkgraph/shaders/topk.h"

#include "shape_ops.h"
#include "vkgraph/ops.h"

namespace vkgraph::ops {

TopKResult topk(ComputeGraph& g, TensorRef x, int64_t k, int64_t axis, bool largest) {
  const TensorInfo xi = g.info(x);
  DType dtype = typed_dtype(g, xi.dtype, "topk");
  if (xi.shape.empty()) throw Error(ErrorKind::InvalidArgument, "topk: input is a scalar");
  int a = normalize_axis(axis, xi.shape.size(), "topk");
  int64_t axis_len = xi.shape[a];
  if (k < 0 || k > axis_len)
    throw Error(ErrorKind::InvalidArgument, "topk: k = " + std::to_string(k) + " outside [0, " +
                                                std::to_string(axis_len) + "] for axis " +
                                                std::to_string(a) + " of " + shape_str(xi.shape));
  Shape out = xi.shape;
  out[a] = k;
  TopKResult r{g.add_tensor(out, xi.dtype), g.add_tensor(out, DType::Int64)};
  int64_t inner = numel(Shape(xi.shape.begin() + a + 1, xi.shape.end()));
  int64_t n = k == 0 ? 0 : numel(xi.shape);
  PushConstants pc;
  pc.add(checked_i32(n, "topk", "element count"))
      .add(checked_i32(axis_len, "topk", "dim"))
      .add(checked_i32(inner, "topk", "dim"))
      .add(static_cast<int32_t>(k))
      .add(static_cast<int32_t>(largest));
  add_elementwise(g, declared(shaders::topk::find(dtype), "topk"),
                  {{x, Access::Read}, {r.values, Access::Write}, {r.indices, Access::Write}}, n,
                  pc.take(), "topk");
  return r;
}

}  // namespace vkgraph::ops
