#include <limits>

#include "op_util.h"
#include "shape_ops.h"
#include "vkgraph/ops.h"

namespace vkgraph::ops {
namespace {

// The variant for `dtype`, or an error naming what `op` accepts.
vk::ShaderId unary_variant(ComputeGraph& g, UnaryOp op, DType dtype, const std::string& name) {
  auto unsupported = [&](const char* accepted) {
    return Error(ErrorKind::Unsupported, name + ": dtype " + dtype_name(dtype) +
                                             " not supported (accepts " + accepted + ")");
  };
  auto variant = [&](DType checked) { return declared(shaders::unary::find(op, checked), name); };
  if (op == UnaryOp::Not) {
    if (dtype != DType::Bool) throw unsupported("bool");
    return variant(typed_dtype(g, dtype, name, /*allow_bool=*/true));
  }
  if (dtype == DType::Float32 || dtype == DType::Float16)
    return variant(float_dtype(g, dtype, name));
  bool integer_op = shaders::unary::find(op, DType::Int32).has_value();
  if (!integer_op) throw unsupported("float32, float16");
  if (dtype != DType::Int32 && dtype != DType::Int64)
    throw unsupported("float32, float16, int32, int64");
  return variant(typed_dtype(g, dtype, name));
}

}  // namespace

TensorRef unary(ComputeGraph& g, UnaryOp op, TensorRef x, UnaryParams params) {
  std::string name = shaders::unary::name(op);
  const TensorInfo xi = g.info(x);
  if (op == UnaryOp::Identity) {
    // A buffer copy serves every dtype and needs no pipeline.
    TensorRef y = g.add_tensor(xi.shape, xi.dtype);
    g.add_copy(x, y, 0, 0, xi.nbytes(), name);
    return y;
  }
  vk::ShaderId shader = unary_variant(g, op, xi.dtype, name);
  int64_t n = numel(xi.shape);
  check(n <= std::numeric_limits<uint32_t>::max(), ErrorKind::Unsupported,
        name + ": " + std::to_string(n) + " elements exceed the 32-bit index range");
  TensorRef y = g.add_tensor(xi.shape, xi.dtype);
  PushConstants pc;
  pc.add(static_cast<uint32_t>(n)).add(params.alpha).add(params.beta);
  DispatchDesc d;
  d.shader = shader;
  d.bindings = {{x, Access::Read}, {y, Access::Write}};
  d.groups = groups_for(n);
  d.local = {kLocal, 1, 1};
  d.push = pc.take();
  d.label = name;
  g.add_dispatch(std::move(d));
  return y;
}

}  // namespace vkgraph::ops
