// Comparisons and logical ops: broadcast binary ops whose result is Bool.
#include "shape_ops.h"
#include "vkgraph/ops.h"

namespace vkgraph::ops {
namespace {

TensorRef add_bool_result(ComputeGraph& g, vk::ShaderId shader, TensorRef a, TensorRef b,
                          const std::string& op) {
  const TensorInfo ai = g.info(a), bi = g.info(b);
  elem_bits(g, DType::Bool, op);
  Shape out = broadcast_shapes(ai.shape, bi.shape, op.c_str());
  if (out.size() > static_cast<size_t>(kMaxRank))
    throw Error(ErrorKind::Unsupported,
                op + ": rank " + std::to_string(out.size()) + " above " + std::to_string(kMaxRank));
  TensorRef c = g.add_tensor(out, DType::Bool);
  int64_t n = numel(out);
  PushConstants pc;
  pc.add(checked_i32(n, op, "element count")).add(static_cast<int32_t>(out.size()));
  pc.add_array(to_i32(out, op), kMaxRank);
  pc.add_array(broadcast_strides(ai.shape, out), kMaxRank);
  pc.add_array(broadcast_strides(bi.shape, out), kMaxRank);
  add_elementwise(g, shader, {{a, Access::Read}, {b, Access::Read}, {c, Access::Write}}, n,
                  pc.take(), op);
  return c;
}

}  // namespace

TensorRef compare(ComputeGraph& g, CompareOp op, TensorRef a, TensorRef b) {
  std::string name = shaders::compare::name(op);
  DType da = g.info(a).dtype, db = g.info(b).dtype;
  if (da != db)
    throw Error(ErrorKind::InvalidArgument,
                name + ": dtypes differ (" + dtype_name(da) + " vs " + dtype_name(db) + ")");
  vk::ShaderId shader = declared(shaders::compare::find(op, typed_dtype(g, da, name, true)), name);
  return add_bool_result(g, shader, a, b, name);
}

TensorRef logical(ComputeGraph& g, LogicalOp op, TensorRef a, TensorRef b) {
  std::string name = std::string("logical_") + shaders::logical::name(op);
  require_bool(g, a, name, "a");
  require_bool(g, b, name, "b");
  return add_bool_result(g, declared(shaders::logical::find(op), name), a, b, name);
}

TensorRef logical_not(ComputeGraph& g, TensorRef x) {
  require_bool(g, x, "logical_not", "x");
  // The shader is the binary one; its second operand is bound but unused.
  return add_bool_result(g, vk::ShaderId::logical_not, x, x, "logical_not");
}

}  // namespace vkgraph::ops
