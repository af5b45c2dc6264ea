#include <limits>

#include "op_util.h"
#include "shape_ops.h"
#include "vkgraph/ops.h"

namespace vkgraph::ops {
namespace {

// Shader name stem, as in unary.cmake.
const char* unary_name(UnaryOp op) {
  switch (op) {
    case UnaryOp::Relu:
      return "relu";
    case UnaryOp::Sigmoid:
      return "sigmoid";
    case UnaryOp::Tanh:
      return "tanh";
    case UnaryOp::Gelu:
      return "gelu";
    case UnaryOp::GeluTanh:
      return "gelu_tanh";
    case UnaryOp::Exp:
      return "exp";
    case UnaryOp::Log:
      return "log";
    case UnaryOp::Neg:
      return "neg";
    case UnaryOp::Sqrt:
      return "sqrt";
    case UnaryOp::Abs:
      return "abs";
    case UnaryOp::Reciprocal:
      return "reciprocal";
    case UnaryOp::Floor:
      return "floor";
    case UnaryOp::Ceil:
      return "ceil";
    case UnaryOp::Round:
      return "round";
    case UnaryOp::Sign:
      return "sign";
    case UnaryOp::Sin:
      return "sin";
    case UnaryOp::Cos:
      return "cos";
    case UnaryOp::Erf:
      return "erf";
    case UnaryOp::Softplus:
      return "softplus";
    case UnaryOp::Mish:
      return "mish";
    case UnaryOp::LeakyRelu:
      return "leaky_relu";
    case UnaryOp::Elu:
      return "elu";
    case UnaryOp::Selu:
      return "selu";
    case UnaryOp::Clip:
      return "clip";
    case UnaryOp::HardSigmoid:
      return "hard_sigmoid";
    case UnaryOp::HardSwish:
      return "hard_swish";
    case UnaryOp::Identity:
      return "identity";
    case UnaryOp::Not:
      return "not";
    case UnaryOp::Tan:
      return "tan";
    case UnaryOp::Asin:
      return "asin";
    case UnaryOp::Acos:
      return "acos";
    case UnaryOp::Atan:
      return "atan";
    case UnaryOp::Sinh:
      return "sinh";
    case UnaryOp::Cosh:
      return "cosh";
    case UnaryOp::Asinh:
      return "asinh";
    case UnaryOp::Acosh:
      return "acosh";
    case UnaryOp::Atanh:
      return "atanh";
    case UnaryOp::Softsign:
      return "softsign";
    case UnaryOp::ThresholdedRelu:
      return "thresholded_relu";
    case UnaryOp::Celu:
      return "celu";
  }
  return "?";
}

// The shader suffix for `dtype`, or an error naming what `op` accepts.
std::string unary_suffix(ComputeGraph& g, UnaryOp op, DType dtype, const std::string& name) {
  auto unsupported = [&](const char* accepted) {
    return Error(ErrorKind::Unsupported, name + ": dtype " + dtype_name(dtype) +
                                             " not supported (accepts " + accepted + ")");
  };
  if (op == UnaryOp::Not) {
    if (dtype != DType::Bool) throw unsupported("bool");
    return typed_suffix(g, dtype, name, /*allow_bool=*/true);
  }
  if (dtype == DType::Float32 || dtype == DType::Float16) return float_suffix(g, dtype, name);
  bool integer_op = op == UnaryOp::Neg || op == UnaryOp::Abs || op == UnaryOp::Sign;
  if (!integer_op) throw unsupported("float32, float16");
  if (dtype != DType::Int32 && dtype != DType::Int64)
    throw unsupported("float32, float16, int32, int64");
  return typed_suffix(g, dtype, name);
}

}  // namespace

TensorRef unary(ComputeGraph& g, UnaryOp op, TensorRef x, UnaryParams params) {
  std::string name = unary_name(op);
  const TensorInfo xi = g.info(x);
  if (op == UnaryOp::Identity) {
    // A buffer copy serves every dtype and needs no pipeline.
    TensorRef y = g.add_tensor(xi.shape, xi.dtype);
    g.add_copy(x, y, 0, 0, xi.nbytes(), name);
    return y;
  }
  std::string suffix = unary_suffix(g, op, xi.dtype, name);
  int64_t n = numel(xi.shape);
  check(n <= std::numeric_limits<uint32_t>::max(), ErrorKind::Unsupported,
        name + ": " + std::to_string(n) + " elements exceed the 32-bit index range");
  TensorRef y = g.add_tensor(xi.shape, xi.dtype);
  PushConstants pc;
  pc.add(static_cast<uint32_t>(n)).add(params.alpha).add(params.beta);
  DispatchDesc d;
  d.shader = "unary_" + name + "_" + suffix;
  d.bindings = {{x, Access::Read}, {y, Access::Write}};
  d.groups = groups_for(n);
  d.local = {kLocal, 1, 1};
  d.push = pc.take();
  d.label = name;
  g.add_dispatch(std::move(d));
  return y;
}

}  // namespace vkgraph::ops
