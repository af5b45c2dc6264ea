// Elementwise ONNX ops: arithmetic, activations, n-ary reductions over inputs.
#include <cmath>
#include <limits>

#include "onnx/importer.h"
#include "vkgraph/error.h"

namespace vkgraph::onnx_import {
namespace {

using ops::BinaryOp;
using ops::UnaryOp;
using ops::UnaryParams;

// Before opset 7, binary ops broadcast only with broadcast=1, aligning B at `axis`.
TensorRef legacy_broadcast(Importer& im, const onnx::NodeProto& node, const fold::Attrs& attrs,
                           TensorRef b) {
  if (im.opset() >= 7 || attrs.get_int("broadcast", 0) == 0) return b;
  Shape as = im.input(node, 0).shape, bs = im.input(node, 1).shape;
  auto it = attrs.ints.find("axis");
  if (it == attrs.ints.end()) return b;  // suffix alignment: NumPy rules already do this
  int64_t axis = it->second < 0 ? it->second + static_cast<int64_t>(as.size()) : it->second;
  if (axis < 0 || axis + bs.size() > as.size()) im.fail(node, "broadcast axis out of range");
  Shape aligned = bs;
  aligned.resize(as.size() - axis, 1);
  return im.graph().add_view(b, aligned);
}

Lowering binary_lowering(BinaryOp op) {
  return [op](Importer& im, const onnx::NodeProto& node, const fold::Attrs& attrs) {
    im.require_inputs(node, 2, 2);
    BinaryOp actual = op;
    if (op == BinaryOp::Mod && attrs.get_int("fmod", 0) == 1) actual = BinaryOp::FMod;
    if (op == BinaryOp::Mod && actual == BinaryOp::Mod && im.input(node, 0).dtype == DType::Float32)
      im.fail(node, "Mod on floats requires fmod=1");
    TensorRef a = im.tensor(node, 0), b = legacy_broadcast(im, node, attrs, im.tensor(node, 1));
    // Pow alone allows an exponent of another type; compute in the base's type.
    if (op == BinaryOp::Pow && im.input(node, 1).dtype != im.input(node, 0).dtype)
      b = ops::cast(im.graph(), b, im.input(node, 0).dtype);
    auto out = ops::binary(im.graph(), actual, a, b);
    return std::vector<Value>{Importer::device_value(im.graph(), out)};
  };
}

// Sum, Max, Min, Mean take any number of inputs; fold pairwise.
Lowering variadic_lowering(BinaryOp op, bool mean) {
  return [op, mean](Importer& im, const onnx::NodeProto& node, const fold::Attrs&) {
    im.require_inputs(node, 1, 1u << 16);
    TensorRef acc = im.tensor(node, 0);
    size_t n = im.num_inputs(node);
    for (size_t i = 1; i < n; ++i) acc = ops::binary(im.graph(), op, acc, im.tensor(node, i));
    if (mean && n > 1) {
      HostTensor scale = HostTensor::from(DType::Float32, {}, std::vector<float>{1.0f / n});
      acc = ops::binary(im.graph(), BinaryOp::Mul, acc, im.constant_tensor(scale));
    }
    return std::vector<Value>{Importer::device_value(im.graph(), acc)};
  };
}

// Clip with bounds computed at run time: max(min) as binary ops.
std::vector<Value> clip_with_tensors(Importer& im, const onnx::NodeProto& node) {
  TensorRef y = im.tensor(node, 0);
  if (im.has_input(node, 1)) y = ops::binary(im.graph(), BinaryOp::Max, y, im.tensor(node, 1));
  if (im.has_input(node, 2)) y = ops::binary(im.graph(), BinaryOp::Min, y, im.tensor(node, 2));
  return {Importer::device_value(im.graph(), y)};
}

Lowering unary_lowering() {
  return [](Importer& im, const onnx::NodeProto& node, const fold::Attrs& a) {
    // Integer Clip (opset 12+) is Max and Min, which have integer kernels; the activation
    // kernel is float only.
    const DType x_dtype = im.input(node, 0).dtype;
    if (node.op_type() == "Clip" && (x_dtype == DType::Int32 || x_dtype == DType::Int64))
      return clip_with_tensors(im, node);
    auto act = activation_of(node, a, im);
    if (!act && node.op_type() == "Clip") return clip_with_tensors(im, node);
    if (!act) im.fail(node, "unsupported attributes");
    im.require_inputs(node, 1, 3);
    auto out = ops::unary(im.graph(), act->first, im.tensor(node, 0), act->second);
    return std::vector<Value>{Importer::device_value(im.graph(), out)};
  };
}

Lowering passthrough() {
  return [](Importer& im, const onnx::NodeProto& node, const fold::Attrs&) {
    im.require_inputs(node, 1, 1);
    Value v = im.input(node, 0);
    return std::vector<Value>{v};
  };
}

HostTensor scalar_of(DType dtype, double v) {
  HostTensor t(dtype, {});
  switch (dtype) {
    case DType::Float32:
      t.data<float>()[0] = static_cast<float>(v);
      break;
    case DType::Int32:
      t.data<int32_t>()[0] = static_cast<int32_t>(v);
      break;
    case DType::Int64:
      t.data<int64_t>()[0] = static_cast<int64_t>(v);
      break;
    default:
      throw Error(ErrorKind::Unsupported, std::string("scalar of ") + dtype_name(dtype));
  }
  return t;
}

// PRelu(x, slope) = max(x, 0) + min(x, 0) * slope.
std::vector<Value> lower_prelu(Importer& im, const onnx::NodeProto& node, const fold::Attrs&) {
  im.require_inputs(node, 2, 2);
  ComputeGraph& g = im.graph();
  TensorRef x = im.tensor(node, 0), slope = im.tensor(node, 1);
  const Shape& xs = im.input(node, 0).shape;
  const Shape& ss = im.input(node, 1).shape;
  // Opset < 7 models give a per-channel slope [C] for [N, C, ...] inputs.
  if (im.opset() < 7 && ss.size() == 1 && xs.size() > 2 && ss[0] == xs[1]) {
    Shape per_channel(xs.size() - 1, 1);
    per_channel[0] = ss[0];
    slope = g.add_view(slope, per_channel);
  }
  TensorRef zero = im.constant_tensor(scalar_of(im.input(node, 0).dtype, 0));
  TensorRef pos = ops::binary(g, BinaryOp::Max, x, zero);
  TensorRef neg = ops::binary(g, BinaryOp::Mul, ops::binary(g, BinaryOp::Min, x, zero), slope);
  return {Importer::device_value(g, ops::binary(g, BinaryOp::Add, pos, neg))};
}

// Trilu keeps the upper or lower triangle of the last two dims: a mask built on the host.
std::vector<Value> lower_trilu(Importer& im, const onnx::NodeProto& node, const fold::Attrs& a) {
  im.require_inputs(node, 1, 2);
  const Shape& xs = im.input(node, 0).shape;
  if (xs.size() < 2) im.fail(node, "input rank must be at least 2");
  int64_t k = 0;
  if (im.has_input(node, 1)) {
    const HostTensor& kt = im.host_value(node, 1, "k");
    if (kt.numel() != 1) im.fail(node, "k must be a scalar");
    k = kt.as_int(0);
  }
  bool upper = a.get_int("upper", 1) != 0;
  int64_t rows = xs[xs.size() - 2], cols = xs.back();
  HostTensor mask(DType::Bool, {rows, cols});
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j)
      mask.data<uint8_t>()[i * cols + j] = upper ? (j - i >= k) : (j - i <= k);
  ComputeGraph& g = im.graph();
  TensorRef zero = im.constant_tensor(scalar_of(im.input(node, 0).dtype, 0));
  TensorRef y = ops::where(g, im.constant_tensor(std::move(mask)), im.tensor(node, 0), zero);
  return {Importer::device_value(g, y)};
}

float scalar_input(const Importer& im, const onnx::NodeProto& node, size_t i, float fallback) {
  if (!im.has_input(node, i)) return fallback;
  const HostTensor& t = im.host_value(node, i, "input " + std::to_string(i));
  if (t.numel() != 1) im.fail(node, "input " + std::to_string(i) + " must be a scalar");
  return static_cast<float>(t.as_double(0));
}

}  // namespace

namespace {

using Activation = std::pair<UnaryOp, UnaryParams>;

float attr(const fold::Attrs& a, const char* name, float fallback) {
  auto it = a.floats.find(name);
  return it == a.floats.end() ? fallback : it->second;
}

// Clip takes its bounds as attributes before opset 11, as constant inputs since.
std::optional<Activation> clip_activation(const onnx::NodeProto& node, const fold::Attrs& a,
                                          const Importer& im) {
  float lo = -std::numeric_limits<float>::infinity(), hi = std::numeric_limits<float>::infinity();
  if (im.opset() < 11) {
    lo = attr(a, "min", lo);
    hi = attr(a, "max", hi);
  } else {
    // Non-constant bounds cannot be fused or passed as parameters.
    for (size_t i = 1; i < 3; ++i)
      if (im.has_input(node, i) && !im.constant(node, i)) return std::nullopt;
    lo = scalar_input(im, node, 1, lo);
    hi = scalar_input(im, node, 2, hi);
  }
  return Activation{UnaryOp::Clip, UnaryParams{lo, hi}};
}

struct ActivationRule {
  UnaryOp op;
  // The node's attributes as UnaryParams (or, for Gelu, as the variant); nullptr: the op
  // takes none.
  std::optional<Activation> (*read)(const onnx::NodeProto&, const fold::Attrs&,
                                    const Importer&) = nullptr;
};

// The ONNX activations, one entry each: the op and how its attributes become UnaryParams.
// register_elementwise lowers each through ops::unary; activation_of lets conv and matmul
// fuse them.
const std::map<std::string, ActivationRule>& activation_rules() {
  using P = const onnx::NodeProto&;
  using A = const fold::Attrs&;
  using I = const Importer&;
  static const std::map<std::string, ActivationRule> rules = {
      {"Relu", {UnaryOp::Relu}},
      {"Sigmoid", {UnaryOp::Sigmoid}},
      {"Tanh", {UnaryOp::Tanh}},
      {"Exp", {UnaryOp::Exp}},
      {"Log", {UnaryOp::Log}},
      {"Neg", {UnaryOp::Neg}},
      {"Sqrt", {UnaryOp::Sqrt}},
      {"Abs", {UnaryOp::Abs}},
      {"Reciprocal", {UnaryOp::Reciprocal}},
      {"Floor", {UnaryOp::Floor}},
      {"Ceil", {UnaryOp::Ceil}},
      {"Round", {UnaryOp::Round}},
      {"Sign", {UnaryOp::Sign}},
      {"Sin", {UnaryOp::Sin}},
      {"Cos", {UnaryOp::Cos}},
      {"Erf", {UnaryOp::Erf}},
      {"Softplus", {UnaryOp::Softplus}},
      {"Mish", {UnaryOp::Mish}},
      {"HardSwish", {UnaryOp::HardSwish}},
      {"Tan", {UnaryOp::Tan}},
      {"Asin", {UnaryOp::Asin}},
      {"Acos", {UnaryOp::Acos}},
      {"Atan", {UnaryOp::Atan}},
      {"Sinh", {UnaryOp::Sinh}},
      {"Cosh", {UnaryOp::Cosh}},
      {"Asinh", {UnaryOp::Asinh}},
      {"Acosh", {UnaryOp::Acosh}},
      {"Atanh", {UnaryOp::Atanh}},
      {"Softsign", {UnaryOp::Softsign}},
      {"LeakyRelu",
       {UnaryOp::LeakyRelu,
        [](P, A a, I) -> std::optional<Activation> {
          return Activation{UnaryOp::LeakyRelu, {attr(a, "alpha", 0.01f), 0}};
        }}},
      {"ThresholdedRelu",
       {UnaryOp::ThresholdedRelu,
        [](P, A a, I) -> std::optional<Activation> {
          return Activation{UnaryOp::ThresholdedRelu, {attr(a, "alpha", 1.0f), 0}};
        }}},
      {"Celu",
       {UnaryOp::Celu,
        [](P, A a, I) -> std::optional<Activation> {
          return Activation{UnaryOp::Celu, {attr(a, "alpha", 1.0f), 0}};
        }}},
      {"Elu",
       {UnaryOp::Elu,
        [](P, A a, I) -> std::optional<Activation> {
          return Activation{UnaryOp::Elu, {attr(a, "alpha", 1.0f), 0}};
        }}},
      {"Selu",
       {UnaryOp::Selu,
        [](P, A a, I) -> std::optional<Activation> {
          return Activation{UnaryOp::Selu,
                            {attr(a, "alpha", 1.67326319217681884765625f),
                             attr(a, "gamma", 1.05070102214813232421875f)}};
        }}},
      {"HardSigmoid",
       {UnaryOp::HardSigmoid,
        [](P, A a, I) -> std::optional<Activation> {
          return Activation{UnaryOp::HardSigmoid, {attr(a, "alpha", 0.2f), attr(a, "beta", 0.5f)}};
        }}},
      {"Gelu",
       {UnaryOp::Gelu,
        [](P, A a, I) -> std::optional<Activation> {
          auto it = a.strings.find("approximate");
          bool tanh = it != a.strings.end() && it->second == "tanh";
          return Activation{tanh ? UnaryOp::GeluTanh : UnaryOp::Gelu, UnaryParams{}};
        }}},
      {"Clip", {UnaryOp::Clip, clip_activation}},
  };
  return rules;
}

}  // namespace

std::optional<std::pair<UnaryOp, UnaryParams>> activation_of(const onnx::NodeProto& node,
                                                             const fold::Attrs& attrs,
                                                             const Importer& im) {
  auto it = activation_rules().find(node.op_type());
  if (it == activation_rules().end()) return std::nullopt;
  const ActivationRule& rule = it->second;
  if (!rule.read) return Activation{rule.op, UnaryParams{}};
  return rule.read(node, attrs, im);
}

void register_elementwise(LoweringTable& t) {
  constexpr bool half = shaders::binary::float16;
  t["Add"] = {binary_lowering(BinaryOp::Add), half};
  t["Sub"] = {binary_lowering(BinaryOp::Sub), half};
  t["Mul"] = {binary_lowering(BinaryOp::Mul), half};
  t["Div"] = {binary_lowering(BinaryOp::Div), half};
  // Pow and Mod stay float32: Mod's float check and Pow's exponent cast look at float32.
  t["Pow"] = binary_lowering(BinaryOp::Pow);
  t["Mod"] = binary_lowering(BinaryOp::Mod);
  t["Sum"] = {variadic_lowering(BinaryOp::Add, false), half};
  t["Mean"] = {variadic_lowering(BinaryOp::Add, true), half};
  t["Max"] = {variadic_lowering(BinaryOp::Max, false), half};
  t["Min"] = {variadic_lowering(BinaryOp::Min, false), half};
  // Every activation, in float16 where the unary family declares the op's float16 variant.
  // (Gelu stands for GeluTanh too; Clip with computed bounds lowers to Max and Min, which
  // have float16 variants as well.)
  for (const auto& [op_type, rule] : activation_rules())
    t[op_type] = {unary_lowering(), shaders::unary::find(rule.op, DType::Float16).has_value()};
  t["PRelu"] = {lower_prelu, half};
  t["Trilu"] = lower_trilu;
  t["Identity"] = passthrough();
}

}  // namespace vkgraph::onnx_import
