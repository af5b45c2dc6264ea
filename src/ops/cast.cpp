// Cast between f32, i32, i64 and Bool; one shader per (from, to) pair.
#include "shape_ops.h"
#include "vkgraph/ops.h"

namespace vkgraph::ops {

TensorRef cast(ComputeGraph& g, TensorRef x, DType to) {
  const TensorInfo xi = g.info(x);
  std::string from_name = typed_suffix(g, xi.dtype, "cast", true);
  std::string to_name = typed_suffix(g, to, "cast", true);
  if (to == xi.dtype) return g.add_view(x, xi.shape);
  TensorRef y = g.add_tensor(xi.shape, to);
  int64_t n = numel(xi.shape);
  PushConstants pc;
  pc.add(checked_i32(n, "cast", "element count"));
  add_elementwise(g, "cast_" + from_name + "_" + to_name, {{x, Access::Read}, {y, Access::Write}},
                  n, pc.take(), "cast");
  return y;
}

}  // namespace vkgraph::ops
