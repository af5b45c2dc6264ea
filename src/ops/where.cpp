// Where: a select with three-way NumPy broadcasting. It moves elements without arithmetic, so
// its shaders exist per element size.
#include "vkgraph/shaders/where.h"

#include "shape_ops.h"
#include "vkgraph/ops.h"

namespace vkgraph::ops {

TensorRef where(ComputeGraph& g, TensorRef cond, TensorRef a, TensorRef b) {
  const TensorInfo ci = g.info(cond), ai = g.info(a), bi = g.info(b);
  require_bool(g, cond, "where", "cond");
  if (ai.dtype != bi.dtype)
    throw Error(ErrorKind::InvalidArgument, std::string("where: dtypes differ (") +
                                                dtype_name(ai.dtype) + " vs " +
                                                dtype_name(bi.dtype) + ")");
  uint32_t bits = elem_bits(g, ai.dtype, "where");
  Shape out = broadcast_shapes(ci.shape, broadcast_shapes(ai.shape, bi.shape, "where"), "where");
  if (out.size() > static_cast<size_t>(kMaxRank))
    throw Error(ErrorKind::Unsupported,
                "where: rank " + std::to_string(out.size()) + " above " + std::to_string(kMaxRank));
  TensorRef y = g.add_tensor(out, ai.dtype);
  int64_t n = numel(out);
  PushConstants pc;
  pc.add(checked_i32(n, "where", "element count")).add(static_cast<int32_t>(out.size()));
  pc.add_array(to_i32(out, "where"), kMaxRank);
  pc.add_array(broadcast_strides(ci.shape, out), kMaxRank);
  pc.add_array(broadcast_strides(ai.shape, out), kMaxRank);
  pc.add_array(broadcast_strides(bi.shape, out), kMaxRank);
  add_elementwise(g, declared(shaders::where::find(bits), "where"),
                  {{cond, Access::Read}, {a, Access::Read}, {b, Access::Read}, {y, Access::Write}},
                  n, pc.take(), "where");
  return y;
}

}  // namespace vkgraph::ops
