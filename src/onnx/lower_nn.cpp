// Neural-network ONNX ops: Conv, Gemm/MatMul, pooling, normalization, softmax, reductions, and
// the fused nodes of the fusion pass (fuse.h) that extend Conv, Gemm and MatMul with epilogues.
#include <algorithm>
#include <array>
#include <cmath>

#include "onnx/fuse.h"
#include "onnx/importer.h"
#include "onnx/lower_util.h"
#include "vkgraph/error.h"
#include "vkgraph/ops/max_pool_indices.h"
#include "vkgraph/shaders/argmax.h"
#include "vkgraph/shaders/conv.h"
#include "vkgraph/shaders/matmul_tiled.h"
#include "vkgraph/shaders/norm.h"
#include "vkgraph/shaders/pool.h"
#include "vkgraph/shaders/reduce.h"
#include "vkgraph/shaders/softmax.h"
#include "vkgraph/shaders/strided_copy.h"

namespace vkgraph::onnx_import {
namespace {

using ops::UnaryOp;

Value out(Importer& im, TensorRef t) {
  return Importer::device_value(im.graph(), t);
}

std::vector<int64_t> ints_or(const fold::Attrs& a, const char* name,
                             std::vector<int64_t> fallback) {
  const auto* v = a.find_ints(name);
  return v ? *v : fallback;
}

float float_attr(const fold::Attrs& a, const char* name, float fallback) {
  auto it = a.floats.find(name);
  return it == a.floats.end() ? fallback : it->second;
}

// `v`, whose length the caller has checked, as an array.
template <size_t N>
std::array<int64_t, N> array(const std::vector<int64_t>& v) {
  std::array<int64_t, N> r;
  std::copy_n(v.begin(), N, r.begin());
  return r;
}

std::string string_attr(const fold::Attrs& a, const char* name, const std::string& fallback) {
  auto it = a.strings.find(name);
  return it == a.strings.end() ? fallback : it->second;
}

// Pads for `spatial` dims: explicit, or from auto_pad (SAME_UPPER/SAME_LOWER/VALID).
// Returns ONNX order: begins then ends.
std::vector<int64_t> resolve_pads(Importer& im, const onnx::NodeProto& node, const fold::Attrs& a,
                                  const Shape& in, const std::vector<int64_t>& kernel,
                                  const std::vector<int64_t>& strides,
                                  const std::vector<int64_t>& dilations) {
  size_t n = kernel.size();
  std::string auto_pad = string_attr(a, "auto_pad", "NOTSET");
  if (auto_pad == "NOTSET") {
    auto pads = ints_or(a, "pads", std::vector<int64_t>(2 * n, 0));
    if (pads.size() != 2 * n) im.fail(node, "pads has " + std::to_string(pads.size()) + " values");
    return pads;
  }
  std::vector<int64_t> pads(2 * n, 0);
  if (auto_pad == "VALID") return pads;
  if (auto_pad != "SAME_UPPER" && auto_pad != "SAME_LOWER")
    im.fail(node, "unsupported auto_pad '" + auto_pad + "'");
  // Checked here, before the arithmetic below (a stride of 0 divided by zero); the 2^31 bound
  // keeps every product in int64.
  constexpr int64_t kMax = int64_t{1} << 31;
  for (size_t i = 0; i < n; ++i)
    if (strides[i] < 1 || strides[i] > kMax || dilations[i] < 1 || dilations[i] > kMax ||
        kernel[i] < 1 || kernel[i] > kMax || in[2 + i] < 0 || in[2 + i] > kMax)
      im.fail(node, "auto_pad " + auto_pad +
                        " needs positive strides, dilations and kernel "
                        "sizes below 2^31 (axis " +
                        std::to_string(i) + ")");
  for (size_t i = 0; i < n; ++i) {
    int64_t size = in[2 + i];
    int64_t out = (size + strides[i] - 1) / strides[i];
    int64_t total =
        std::max<int64_t>(0, (out - 1) * strides[i] + (kernel[i] - 1) * dilations[i] + 1 - size);
    int64_t small = total / 2, big = total - small;
    pads[i] = auto_pad == "SAME_UPPER" ? small : big;
    pads[i + n] = auto_pad == "SAME_UPPER" ? big : small;
  }
  return pads;
}

// BatchNormalization's parameters (scale, bias, mean, var) folded into a Conv's float32
// weights and bias: w' = w * k, b' = (b - mean) * k + bias with k = scale / sqrt(var + eps).
void fold_batch_norm(HostTensor& weight, std::optional<HostTensor>& bias,
                     const std::array<const HostTensor*, 4>& p, float eps) {
  int64_t cout = weight.shape[0];
  int64_t per = weight.numel() / cout;
  if (!bias) bias = HostTensor(DType::Float32, {cout});
  for (int64_t c = 0; c < cout; ++c) {
    double k =
        p[0]->data<float>()[c] / std::sqrt(static_cast<double>(p[3]->data<float>()[c]) + eps);
    for (int64_t j = 0; j < per; ++j) weight.data<float>()[c * per + j] *= static_cast<float>(k);
    float& b = bias->data<float>()[c];
    b = static_cast<float>((b - p[2]->data<float>()[c]) * k + p[1]->data<float>()[c]);
  }
}

// The operands of one convolution: Conv's, or FusedConv's after BatchNorm folding.
struct ConvOperands {
  TensorRef weight;
  std::optional<TensorRef> bias, residual;
  std::optional<fuse::Activation> activation;
};

std::vector<Value> emit_conv(Importer& im, const onnx::NodeProto& node, const fold::Attrs& a,
                             const ConvOperands& c) {
  Shape x = im.input(node, 0).shape, w = im.input(node, 1).shape;
  if (x.size() < 3 || x.size() > 5)
    im.fail(node, "only 1-D, 2-D and 3-D convolutions are supported; input is " + shape_str(x));
  size_t n = x.size() - 2;
  if (w.size() != x.size())
    throw Error(ErrorKind::InvalidArgument, im.where(node) + ": weight " + shape_str(w) +
                                                " does not match input " + shape_str(x));
  std::vector<int64_t> kernel = ints_or(a, "kernel_shape", Shape(w.begin() + 2, w.end()));
  std::vector<int64_t> strides = ints_or(a, "strides", std::vector<int64_t>(n, 1));
  std::vector<int64_t> dil = ints_or(a, "dilations", std::vector<int64_t>(n, 1));
  if (kernel.size() != n || strides.size() != n || dil.size() != n)
    im.fail(node, "kernel_shape/strides/dilations do not match the input rank");
  std::vector<int64_t> pads = resolve_pads(im, node, a, x, kernel, strides, dil);
  int64_t groups = a.get_int("group", 1);
  std::optional<UnaryOp> act_op;
  ops::UnaryParams act_params;
  if (c.activation) act_op = c.activation->op, act_params = c.activation->params;

  const ops::ConvEpilogue epilogue{c.bias, act_op, act_params, c.residual};
  TensorRef y;
  if (n == 3) {
    ops::Conv3dParams p{array<3>(strides), array<6>(pads), array<3>(dil), groups};
    y = ops::conv3d(im.graph(), im.tensor(node, 0), c.weight, p, epilogue);
  } else if (n == 2) {
    ops::Conv2dParams p{array<2>(strides), array<4>(pads), array<2>(dil), groups};
    y = ops::conv2d(im.graph(), im.tensor(node, 0), c.weight, p, epilogue);
  } else {
    ops::Conv1dParams p;
    p.stride = strides[0];
    p.pads = {pads[0], pads[1]};
    p.dilation = dil[0];
    p.groups = groups;
    y = ops::conv1d(im.graph(), im.tensor(node, 0), c.weight, p, epilogue);
  }
  return {out(im, y)};
}

std::vector<Value> lower_conv(Importer& im, const onnx::NodeProto& node, const fold::Attrs& a) {
  im.require_inputs(node, 2, 3);
  ConvOperands c;
  c.weight = im.tensor(node, 1);
  if (im.has_input(node, 2)) c.bias = im.tensor(node, 2);
  return emit_conv(im, node, a, c);
}

// Conv with BatchNorm folded into its weights, a residual and an activation in its epilogue.
std::vector<Value> lower_fused_conv(Importer& im, const onnx::NodeProto& node,
                                    const fold::Attrs& a) {
  using namespace fuse;
  im.require_inputs(node, 2, kConvInputs);
  ConvOperands c;
  if (im.has_input(node, kBnScale)) {
    // The pass fuses BatchNormalization only where these are float32 host constants.
    std::array<const HostTensor*, 4> bn;
    for (int i = 0; i < 4; ++i) bn[i] = &im.host_value(node, kBnScale + i, "BatchNorm parameter");
    HostTensor wf = im.host_value(node, kConvW, "weight");
    std::optional<HostTensor> bf;
    if (im.has_input(node, kConvBias)) bf = im.host_value(node, kConvBias, "bias");
    fold_batch_norm(wf, bf, bn, float_attr(a, "bn_epsilon", 1e-5f));
    c.weight = im.constant_tensor(std::move(wf), node.input(kConvW) + "/bn_folded");
    c.bias = im.constant_tensor(std::move(*bf), node.name() + "/bn_bias");
  } else {
    c.weight = im.tensor(node, kConvW);
    if (im.has_input(node, kConvBias)) c.bias = im.tensor(node, kConvBias);
  }
  if (im.has_input(node, kConvResidual)) c.residual = im.tensor(node, kConvResidual);
  c.activation = activation(node, a);
  return emit_conv(im, node, a, c);
}

// ConvTranspose in 1-D (lifted to 2-D with a unit height), 2-D and 3-D. output_shape and auto_pad
// SAME_* decide the pads as ONNX defines: total = stride * (in - 1) + output_padding +
// (k - 1) * dilation + 1 - out, floor(total / 2) at the start for SAME_UPPER and at the end
// otherwise. A negative end pad (output_shape beyond the natural size) becomes extra
// output_padding.
std::vector<Value> lower_conv_transpose(Importer& im, const onnx::NodeProto& node,
                                        const fold::Attrs& a) {
  im.require_inputs(node, 2, 3);
  Shape x = im.input(node, 0).shape, w = im.input(node, 1).shape;
  const bool one_d = x.size() == 3;
  if (x.size() < 3 || x.size() > 5)
    im.fail(node, "only 1-D, 2-D and 3-D ConvTranspose are supported");
  if (w.size() != x.size()) im.fail(node, "weight rank differs from the input's");
  const size_t dims = x.size() - 2;
  std::vector<int64_t> s = ints_or(a, "strides", std::vector<int64_t>(dims, 1));
  std::vector<int64_t> d = ints_or(a, "dilations", std::vector<int64_t>(dims, 1));
  std::vector<int64_t> op = ints_or(a, "output_padding", std::vector<int64_t>(dims, 0));
  std::vector<int64_t> pads = ints_or(a, "pads", std::vector<int64_t>(2 * dims, 0));
  if (s.size() != dims || d.size() != dims || op.size() != dims || pads.size() != 2 * dims)
    im.fail(node, "strides/dilations/output_padding/pads do not match the input's rank");
  // The kernel is the weight's; a kernel_shape says the same or the model is wrong.
  if (const auto* k = a.find_ints("kernel_shape"); k && *k != Shape(w.begin() + 2, w.end()))
    throw Error(ErrorKind::ModelFormat, im.where(node) + ": kernel_shape " + shape_str(*k) +
                                            " differs from the weight's " + shape_str(w));
  const std::string auto_pad = string_attr(a, "auto_pad", "NOTSET");
  const auto* output_shape = a.find_ints("output_shape");
  if (auto_pad != "NOTSET" && auto_pad != "VALID" && auto_pad != "SAME_UPPER" &&
      auto_pad != "SAME_LOWER")
    im.fail(node, "auto_pad " + auto_pad + " is not supported");
  if (auto_pad == "VALID") pads.assign(2 * dims, 0);
  if (output_shape || auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
    if (output_shape && output_shape->size() != dims)
      im.fail(node, "output_shape does not match the input's rank");
    for (size_t i = 0; i < dims; ++i) {
      const int64_t in = x[2 + i], k = w[2 + i];
      const int64_t want = output_shape ? (*output_shape)[i] : in * s[i];
      const int64_t total = s[i] * (in - 1) + op[i] + (k - 1) * d[i] + 1 - want;
      const int64_t half = total >= 0 ? total / 2 : -((-total + 1) / 2);  // floor
      // SAME_UPPER puts the odd pad at the end; output_shape and SAME_LOWER at the start.
      const bool upper = auto_pad == "SAME_UPPER";
      pads[i] = upper ? half : total - half;
      pads[dims + i] = upper ? total - half : half;
      if (pads[i] < 0) im.fail(node, "output_shape larger than the transpose produces");
      if (pads[dims + i] < 0) {
        op[i] -= pads[dims + i];
        pads[dims + i] = 0;
      }
    }
  }
  if (one_d) {  // [N, C, L] as [N, C, 1, L]
    s.insert(s.begin(), 1);
    d.insert(d.begin(), 1);
    op.insert(op.begin(), 0);
    pads = {0, pads[0], 0, pads[1]};
  }
  std::optional<TensorRef> bias;
  if (im.has_input(node, 2)) bias = im.tensor(node, 2);
  ComputeGraph& g = im.graph();
  TensorRef xt = im.tensor(node, 0), wt = im.tensor(node, 1);
  if (dims == 3) {
    ops::ConvTranspose3dParams p;
    p.strides = {s[0], s[1], s[2]};
    p.dilations = {d[0], d[1], d[2]};
    p.output_padding = {op[0], op[1], op[2]};
    p.pads = {pads[0], pads[1], pads[2], pads[3], pads[4], pads[5]};
    p.groups = a.get_int("group", 1);
    return {out(im, ops::conv_transpose3d(g, xt, wt, bias, p))};
  }
  ops::ConvTranspose2dParams p;
  p.strides = {s[0], s[1]};
  p.dilations = {d[0], d[1]};
  p.output_padding = {op[0], op[1]};
  p.pads = {pads[0], pads[1], pads[2], pads[3]};
  p.groups = a.get_int("group", 1);
  if (one_d) {
    xt = g.add_view(xt, {x[0], x[1], 1, x[2]});
    wt = g.add_view(wt, {w[0], w[1], 1, w[2]});
  }
  TensorRef y = ops::conv_transpose2d(g, xt, wt, bias, p);
  if (one_d) {
    Shape ys = g.info(y).shape;
    y = g.add_view(y, {ys[0], ys[1], ys[3]});
  }
  return {out(im, y)};
}

// Gemm, and FusedGemm: Gemm with an activation or a residual in its epilogue.
std::vector<Value> lower_gemm(Importer& im, const onnx::NodeProto& node, const fold::Attrs& a) {
  im.require_inputs(node, 2, fuse::is_fused(node) ? fuse::kGemmInputs : 3);
  // Before opset 7: broadcast=0 asks for C of the full result shape, which broadcasting
  // leaves as it is; broadcast=1 is what every later opset does.
  a.ignore("broadcast");
  std::optional<TensorRef> c;
  if (im.has_input(node, 2)) c = im.tensor(node, 2);
  std::optional<UnaryOp> act_op;
  ops::UnaryParams act_params;
  if (auto act = fuse::activation(node, a)) act_op = act->op, act_params = act->params;
  ops::GemmOptions options;
  options.c = c;
  options.alpha = float_attr(a, "alpha", 1.f);
  options.beta = float_attr(a, "beta", 1.f);
  options.trans_a = a.get_int("transA", 0) != 0;
  options.trans_b = a.get_int("transB", 0) != 0;
  options.activation = act_op;
  options.activation_params = act_params;
  const std::vector<int64_t>* output_shape = a.find_ints("output_shape");
  if (im.has_input(node, fuse::kGemmResidual)) {
    // The residual is of the Add's shape, which views the result [M, N] in order.
    const Shape& bs = im.input(node, 1).shape;
    const int64_t n = bs.size() == 2 ? (options.trans_b ? bs[0] : bs[1]) : 0;
    const TensorRef r = im.tensor(node, fuse::kGemmResidual);
    const int64_t count = numel(im.graph().info(r).shape);
    if (!output_shape || n <= 0 || count % n != 0)
      im.fail(node, "a residual needs output_shape and a size that rows of N make");
    options.residual = im.graph().add_view(r, {count / n, n});
  }
  TensorRef y = ops::gemm(im.graph(), im.tensor(node, 0), im.tensor(node, 1), options);
  if (output_shape)
    y = ops::reshape(im.graph(), y, Shape(output_shape->begin(), output_shape->end()));
  return {out(im, y)};
}

// MatMul, and FusedMatMul: operands read through permutations (elided Transposes), a [N] bias,
// a scale, a residual and an activation in the epilogue.
std::vector<Value> lower_matmul(Importer& im, const onnx::NodeProto& node, const fold::Attrs& a) {
  im.require_inputs(node, 2, fuse::is_fused(node) ? fuse::kMatMulInputs : 2);
  ops::MatmulEpilogue epilogue;
  if (im.has_input(node, fuse::kMatMulBias)) epilogue.bias = im.tensor(node, fuse::kMatMulBias);
  if (im.has_input(node, fuse::kMatMulResidual))
    epilogue.residual = im.tensor(node, fuse::kMatMulResidual);
  if (auto act = fuse::activation(node, a))
    epilogue.activation = act->op, epilogue.activation_params = act->params;
  return {out(im, ops::matmul_permuted(
                      im.graph(), ops::PermutedView{im.tensor(node, 0), fuse::perm(node, a, 0)},
                      ops::PermutedView{im.tensor(node, 1), fuse::perm(node, a, 1)}, epilogue,
                      fuse::alpha(node, a)))};
}

// ChannelsFirstMatMul (fuse.cpp's matmul_channels_first): y [B, N, S...] = (x [B, S..., K] W
// [K, N] + bias) * scale, plus the residual, as the product W'ᵀ [N, K] by x read as [B, K, S]:
// the weight is transposed with the per-channel scale folded in (and the bias scaled) once at
// load, and x read transposed in place is the layout the tensor cores' B_T variants take.
std::vector<Value> lower_channels_first_matmul(Importer& im, const onnx::NodeProto& node,
                                               const fold::Attrs&) {
  using namespace fuse;
  im.require_inputs(node, 2, kChannelsFirstInputs);
  const Shape x = im.input(node, kChannelsFirstX).shape;
  const HostTensor& w = im.host_value(node, kChannelsFirstW, "weight");
  if (x.size() < 3 || w.dtype != DType::Float32 || w.shape.size() != 2 || w.shape[0] != x.back())
    im.fail(node, "needs x of rank >= 3 [B, S..., K] and a float32 weight [K, N]; got x " +
                      shape_str(x) + ", weight " + shape_str(w.shape));
  const int64_t k = w.shape[0], n = w.shape[1];
  int64_t s = 1;
  for (size_t d = 1; d + 1 < x.size(); ++d) s *= x[d];
  auto per_channel = [&](int input, const char* what) {
    std::vector<float> v;
    if (!im.has_input(node, input)) return v;
    const HostTensor& c = im.host_value(node, input, what);
    if (c.dtype != DType::Float32 || (c.numel() != 1 && c.numel() != n))
      im.fail(node, std::string(what) + " needs 1 or " + std::to_string(n) + " float32 values");
    v.assign(c.data<float>(), c.data<float>() + c.numel());
    if (v.size() == 1) v.resize(n, v[0]);
    return v;
  };
  const std::vector<float> bias = per_channel(kChannelsFirstBias, "bias");
  std::vector<float> scale = per_channel(kChannelsFirstScale, "scale");
  if (scale.empty()) scale.assign(n, 1.f);
  HostTensor wt(DType::Float32, {n, k});
  for (int64_t c = 0; c < n; ++c)
    for (int64_t i = 0; i < k; ++i)
      wt.data<float>()[c * k + i] = w.data<float>()[i * n + c] * scale[c];
  ComputeGraph& g = im.graph();
  ops::MatmulEpilogue epilogue;
  if (!bias.empty()) {
    HostTensor b(DType::Float32, {n, 1});
    for (int64_t c = 0; c < n; ++c) b.data<float>()[c] = bias[c] * scale[c];
    epilogue.bias = im.constant_tensor(std::move(b), node.name() + "/channel_bias");
  }
  if (im.has_input(node, kChannelsFirstResidual))
    epilogue.residual = g.add_view(im.tensor(node, kChannelsFirstResidual), {x[0], n, s});
  const TensorRef a =
      im.constant_tensor(std::move(wt), node.input(kChannelsFirstW) + "/channels_first");
  const TensorRef b = g.add_view(im.tensor(node, kChannelsFirstX), {x[0], s, k});
  TensorRef y = ops::matmul_permuted(g, {a, {}}, {b, {0, 2, 1}}, epilogue);
  Shape ys{x[0], n};
  ys.insert(ys.end(), x.begin() + 1, x.end() - 1);
  return {out(im, g.add_view(y, ys))};
}

// MaxPool's flat row-major Indices into `x` with the spatial part renumbered column-major
// (storage_order=1): (n, c) keep their offset, spatial coordinates (i0, i1, ..) of sizes
// (S0, S1, ..) count as i0 + i1 * S0 + i2 * S0 * S1 + ..., as onnxruntime numbers them.
TensorRef column_major_indices(ComputeGraph& g, TensorRef row_major, const Shape& x) {
  auto k = [&](int64_t v) {
    return g.add_constant(HostTensor::from(DType::Int64, {}, std::vector<int64_t>{v}));
  };
  using ops::BinaryOp;
  int64_t plane = 1;
  for (size_t d = 2; d < x.size(); ++d) plane *= x[d];
  TensorRef spatial = ops::binary(g, BinaryOp::Mod, row_major, k(plane));
  TensorRef result = ops::binary(g, BinaryOp::Sub, row_major, spatial);
  int64_t inner = plane, outer = 1;  // row-major stride of dim d; column-major stride
  for (size_t d = 2; d < x.size(); ++d) {
    inner /= x[d];
    TensorRef coordinate =
        ops::binary(g, BinaryOp::Mod, ops::binary(g, BinaryOp::Div, spatial, k(inner)), k(x[d]));
    result =
        ops::binary(g, BinaryOp::Add, result, ops::binary(g, BinaryOp::Mul, coordinate, k(outer)));
    outer *= x[d];
  }
  return result;
}

}  // namespace

std::vector<Value> lower_pool_of(Importer& im, const onnx::NodeProto& node, const fold::Attrs& a,
                                 TensorRef in) {
  bool max = fuse::model_op_type(node) == "MaxPool";
  const bool with_indices = max && node.output_size() > 1 && !node.output(1).empty();
  const int64_t storage_order = a.get_int("storage_order", 0);
  if (storage_order != 0 && storage_order != 1)
    throw Error(
        ErrorKind::InvalidArgument,
        im.where(node) + ": storage_order must be 0 or 1, got " + std::to_string(storage_order));
  Shape x = im.input(node, 0).shape;
  const auto* k = a.find_ints("kernel_shape");
  if (!k) im.fail(node, "missing kernel_shape");
  bool one_d = x.size() == 3;
  if (x.size() < 3 || x.size() > 5) im.fail(node, "only 1-D, 2-D and 3-D pooling is supported");
  size_t n = x.size() - 2;
  std::vector<int64_t> strides = ints_or(a, "strides", std::vector<int64_t>(n, 1));
  std::vector<int64_t> dil = ints_or(a, "dilations", std::vector<int64_t>(n, 1));
  if (k->size() != n || strides.size() != n || dil.size() != n)
    im.fail(node, "attribute ranks differ from input");
  std::vector<int64_t> pads = resolve_pads(im, node, a, x, *k, strides, dil);
  bool ceil_mode = a.get_int("ceil_mode", 0) != 0;
  bool include_pad = a.get_int("count_include_pad", 0) != 0;
  if (with_indices) {  // windows lifted to 3-D with unit leading dims
    auto lift = [&](const std::vector<int64_t>& v, int64_t unit) {
      std::vector<int64_t> r(3 - n, unit);
      r.insert(r.end(), v.begin(), v.end());
      return array<3>(r);
    };
    std::vector<int64_t> p6(3 - n, 0);
    p6.insert(p6.end(), pads.begin(), pads.begin() + n);
    p6.insert(p6.end(), 3 - n, 0);
    p6.insert(p6.end(), pads.begin() + n, pads.end());
    ops::Pool3dParams p{lift(*k, 1),  lift(strides, 1), array<6>(p6),
                        lift(dil, 1), ceil_mode,        include_pad};
    ops::MaxPoolWithIndices r = ops::max_pool_with_indices(im.graph(), in, p);
    TensorRef indices =
        storage_order == 1 ? column_major_indices(im.graph(), r.indices, x) : r.indices;
    return {out(im, r.values), out(im, indices)};
  }
  if (n == 3) {
    ops::Pool3dParams p{array<3>(*k),  array<3>(strides), array<6>(pads),
                        array<3>(dil), ceil_mode,         include_pad};
    return {out(im, max ? ops::max_pool3d(im.graph(), in, p) : ops::avg_pool3d(im.graph(), in, p))};
  }
  // 1-D pooling runs as 2-D over [N, C, 1, L].
  if (one_d) in = im.graph().add_view(in, {x[0], x[1], 1, x[2]});
  ops::Pool2dParams p;
  p.kernel = one_d ? std::array<int64_t, 2>{1, (*k)[0]} : std::array<int64_t, 2>{(*k)[0], (*k)[1]};
  p.strides = one_d ? std::array<int64_t, 2>{1, strides[0]}
                    : std::array<int64_t, 2>{strides[0], strides[1]};
  p.dilations = one_d ? std::array<int64_t, 2>{1, dil[0]} : std::array<int64_t, 2>{dil[0], dil[1]};
  p.pads = one_d ? std::array<int64_t, 4>{0, pads[0], 0, pads[1]}
                 : std::array<int64_t, 4>{pads[0], pads[1], pads[2], pads[3]};
  p.ceil_mode = ceil_mode;
  p.count_include_pad = include_pad;
  TensorRef y = max ? ops::max_pool2d(im.graph(), in, p) : ops::avg_pool2d(im.graph(), in, p);
  if (one_d) {
    Shape ys = im.graph().info(y).shape;
    y = im.graph().add_view(y, {ys[0], ys[1], ys[3]});
  }
  return {out(im, y)};
}

namespace {

std::vector<Value> lower_pool(Importer& im, const onnx::NodeProto& node, const fold::Attrs& a) {
  im.require_inputs(node, 1, 1);
  const Value& x = im.input(node, 0);
  // MaxPool of int8/uint8 (opset 12) runs the float kernels: float32 holds every 8-bit value
  // exactly, and a maximum only selects.
  if (node.op_type() != "MaxPool" || !x.int8_type || x.dtype != DType::Int32)
    return lower_pool_of(im, node, a, im.tensor(node, 0));
  const std::optional<DType> int8_type = x.int8_type;
  std::vector<Value> r =
      lower_pool_of(im, node, a, ops::cast(im.graph(), im.tensor(node, 0), DType::Float32));
  r[0] = out(im, ops::cast(im.graph(), r[0].tensor, DType::Int32));
  r[0].int8_type = int8_type;
  return r;
}

std::vector<Value> lower_global_pool(Importer& im, const onnx::NodeProto& node,
                                     const fold::Attrs&) {
  im.require_inputs(node, 1, 1);
  TensorRef x = im.tensor(node, 0);
  bool max = node.op_type() == "GlobalMaxPool";
  return {out(im, max ? ops::global_max_pool(im.graph(), x) : ops::global_avg_pool(im.graph(), x))};
}

// Training mode normalizes with the batch's own statistics (the population variance, as
// ONNX's reference computes it) and also returns the updated running statistics,
// running = input * momentum + batch * (1 - momentum): reductions and elementwise ops feeding
// the inference kernel.
std::vector<Value> lower_batch_norm_training(Importer& im, const onnx::NodeProto& node,
                                             const fold::Attrs& a) {
  ComputeGraph& g = im.graph();
  TensorRef x = im.tensor(node, 0);
  const Shape shape = g.info(x).shape;
  if (shape.size() < 2) im.fail(node, "input must be [N, C, ...]");
  std::vector<int64_t> axes{0};
  for (size_t d = 2; d < shape.size(); ++d) axes.push_back(static_cast<int64_t>(d));
  using ops::BinaryOp;
  TensorRef mean = ops::reduce(g, ops::ReduceOp::Mean, x, axes, true);
  TensorRef centred = ops::binary(g, BinaryOp::Sub, x, mean);
  TensorRef var = ops::reduce(g, ops::ReduceOp::Mean,
                              ops::binary(g, BinaryOp::Mul, centred, centred), axes, false);
  mean = g.add_view(mean, {shape[1]});
  TensorRef y = ops::batch_norm_inference(g, x, im.tensor(node, 1), im.tensor(node, 2), mean, var,
                                          float_attr(a, "epsilon", 1e-5f));
  const float momentum = float_attr(a, "momentum", 0.9f);
  auto running = [&](size_t input, TensorRef batch) {
    TensorRef keep =
        im.constant_tensor(HostTensor::from(DType::Float32, {}, std::vector<float>{momentum}));
    TensorRef take = im.constant_tensor(
        HostTensor::from(DType::Float32, {}, std::vector<float>{1.f - momentum}));
    return ops::binary(g, BinaryOp::Add,
                       ops::binary(g, BinaryOp::Mul, im.tensor(node, input), keep),
                       ops::binary(g, BinaryOp::Mul, batch, take));
  };
  return {out(im, y), out(im, running(3, mean)), out(im, running(4, var))};
}

std::vector<Value> lower_batch_norm(Importer& im, const onnx::NodeProto& node,
                                    const fold::Attrs& a) {
  im.require_inputs(node, 5, 5);
  if (a.get_int("training_mode", 0)) return lower_batch_norm_training(im, node, a);
  a.ignore("momentum");  // it updates running statistics, which inference does not
  // Opsets 6-8: is_test=0 means training, whose extra outputs are refused below; spatial=0
  // (statistics per element, not per channel) is not implemented.
  a.ignore("is_test");
  if (a.get_int("spatial", 1) == 0) im.fail(node, "spatial=0 is not supported");
  for (int i = 1; i < node.output_size(); ++i)
    if (!node.output(i).empty()) im.fail(node, "running mean/var outputs need training_mode=1");
  TensorRef y = ops::batch_norm_inference(im.graph(), im.tensor(node, 0), im.tensor(node, 1),
                                          im.tensor(node, 2), im.tensor(node, 3),
                                          im.tensor(node, 4), float_attr(a, "epsilon", 1e-5f));
  return {out(im, y)};
}

// LayerNormalization's operands and attributes, as lower_layer_norm and
// lower_layer_norm_range read them.
struct LayerNormArgs {
  TensorRef x, scale;
  std::optional<TensorRef> bias;
  int64_t axis;
  float epsilon;
};

LayerNormArgs layer_norm_args(Importer& im, const onnx::NodeProto& node, const fold::Attrs& a) {
  im.require_inputs(node, 2, 3);
  LayerNormArgs args;
  if (im.has_input(node, 2)) args.bias = im.tensor(node, 2);
  args.axis = a.get_int("axis", -1);
  args.epsilon = float_attr(a, "epsilon", 1e-5f);
  // The precision of the mean and variance: the kernel keeps them in float32, which serves
  // float32 (the default) and the 16-bit types; double it does not give.
  const int64_t stash = a.get_int("stash_type", onnx::TensorProto::FLOAT);
  if (stash != onnx::TensorProto::FLOAT && stash != onnx::TensorProto::FLOAT16 &&
      stash != onnx::TensorProto::BFLOAT16)
    throw Error(ErrorKind::Unsupported, im.where(node) + ": stash_type " + std::to_string(stash) +
                                            " (only float32 statistics are computed)");
  args.x = im.tensor(node, 0);
  args.scale = im.tensor(node, 1);
  return args;
}

std::vector<Value> lower_layer_norm(Importer& im, const onnx::NodeProto& node,
                                    const fold::Attrs& a) {
  const LayerNormArgs args = layer_norm_args(im, node, a);
  ComputeGraph& g = im.graph();
  const TensorRef x = args.x;
  int64_t axis = args.axis;
  std::vector<Value> outs{
      out(im, ops::layer_norm(g, x, args.scale, args.bias, axis, args.epsilon))};
  if (node.output_size() < 2) return outs;
  // The optional Mean and InvStdDev outputs (training graphs) are computed separately.
  int64_t rank = static_cast<int64_t>(im.input(node, 0).shape.size());
  if (axis < -rank || axis >= rank) im.fail(node, "axis out of range");
  if (axis < 0) axis += rank;
  std::vector<int64_t> axes;
  for (int64_t i = axis; i < rank; ++i) axes.push_back(i);
  // They are float32 (ONNX's default stash_type) whatever X is: in float16 an epsilon such as
  // 1e-12 would round to 0.
  TensorRef xf = g.info(x).dtype == DType::Float32 ? x : ops::cast(g, x, DType::Float32);
  TensorRef mean = ops::reduce(g, ops::ReduceOp::Mean, xf, axes, true);
  TensorRef centered = ops::binary(g, ops::BinaryOp::Sub, xf, mean);
  TensorRef var = ops::reduce(g, ops::ReduceOp::Mean,
                              ops::binary(g, ops::BinaryOp::Mul, centered, centered), axes, true);
  TensorRef eps_t =
      g.add_constant(HostTensor::from(DType::Float32, {}, std::vector<float>{args.epsilon}));
  TensorRef inv =
      ops::unary(g, UnaryOp::Reciprocal,
                 ops::unary(g, UnaryOp::Sqrt, ops::binary(g, ops::BinaryOp::Add, var, eps_t)));
  outs.push_back(out(im, mean));
  outs.push_back(out(im, inv));
  return outs;
}

// ChannelLayerNorm (fuse_norm.h): LayerNormalization's operands and attributes, x
// channels-first.
std::vector<Value> lower_channel_layer_norm(Importer& im, const onnx::NodeProto& node,
                                            const fold::Attrs& a) {
  const LayerNormArgs args = layer_norm_args(im, node, a);
  return {out(im, ops::channel_layer_norm(im.graph(), args.x, args.scale, args.bias, args.epsilon,
                                          a.get_int("channels_last", 1) != 0))};
}

// LayerNormRange (fuse_dynamic_quant.h, float32 only): a LayerNormalization of one output, and
// the range partials of it that the DynamicQuantRange reading it takes instead of its range pass.
std::vector<Value> lower_layer_norm_range(Importer& im, const onnx::NodeProto& node,
                                          const fold::Attrs& a) {
  const LayerNormArgs args = layer_norm_args(im, node, a);
  const ops::NormWithRange r = ops::layer_norm_with_range(im.graph(), args.x, args.scale, args.bias,
                                                          args.axis, args.epsilon);
  return {out(im, r.y), out(im, r.range)};
}

// FusedRmsNorm (fuse_norm.h): RMSNorm over the last axis, its weight or ones.
std::vector<Value> lower_fused_rms_norm(Importer& im, const onnx::NodeProto& node,
                                        const fold::Attrs& a) {
  im.require_inputs(node, 1, 2);
  TensorRef weight;
  if (im.has_input(node, 1)) {
    weight = im.tensor(node, 1);
  } else {
    const Shape& xs = im.input(node, 0).shape;
    HostTensor ones(DType::Float32, {xs.back()});
    std::fill(ones.data<float>(), ones.data<float>() + ones.numel(), 1.f);
    weight = im.constant_tensor(std::move(ones));
  }
  return {out(im, ops::rms_norm(im.graph(), im.tensor(node, 0), weight, -1,
                                float_attr(a, "epsilon", 1e-6f)))};
}

// SiblingMatMul (fuse_siblings.h): x times the members' weights concatenated along N (and their
// biases), one GEMM; the pass reads each member's result as a view of it.
std::vector<Value> lower_sibling_matmul(Importer& im, const onnx::NodeProto& node,
                                        const fold::Attrs& a) {
  const int64_t members = a.get_int("members", 0);
  if (members < 2 || (node.input_size() != 1 + members && node.input_size() != 1 + 2 * members))
    im.fail(node, "needs x and 2 or more weights (and as many biases)");
  const bool biased = node.input_size() == 1 + 2 * members;
  auto cat = [&](int first, bool bias) {
    std::vector<const HostTensor*> parts;
    int64_t k = -1, total = 0;
    for (int64_t i = 0; i < members; ++i) {
      const HostTensor* t = im.constant(node, first + static_cast<int>(i));
      if (!t || t->dtype != DType::Float32 || t->shape.size() != (bias ? 1u : 2u) ||
          (!bias && k >= 0 && t->shape[0] != k))
        im.fail(node, "weights and biases must be float32 constants [K, N_i] and [N_i]");
      k = bias ? 1 : t->shape[0];
      total += t->shape.back();
      parts.push_back(t);
    }
    HostTensor out(DType::Float32, bias ? Shape{total} : Shape{k, total});
    int64_t at = 0;
    for (const HostTensor* t : parts) {
      const int64_t n = t->shape.back();
      for (int64_t r = 0; r < k; ++r)
        std::copy_n(t->data<float>() + r * n, n, out.data<float>() + r * total + at);
      at += n;
    }
    return im.constant_tensor(std::move(out), node.name() + (bias ? "/bias" : "/weight"));
  };
  ops::MatmulEpilogue epilogue;
  if (biased) epilogue.bias = cat(1 + static_cast<int>(members), true);
  return {out(im, ops::matmul(im.graph(), im.tensor(node, 0), cat(1, false), epilogue))};
}

// DepthToSpace / SpaceToDepth: a reshape, a transpose, a reshape.
std::vector<Value> lower_depth_space(Importer& im, const onnx::NodeProto& node,
                                     const fold::Attrs& a) {
  im.require_inputs(node, 1, 1);
  Shape x = im.input(node, 0).shape;
  if (x.size() != 4) im.fail(node, "input must be 4-D");
  int64_t b = a.get_int("blocksize", 0), n = x[0], c = x[1], h = x[2], w = x[3];
  if (b <= 0) im.fail(node, "blocksize must be positive");
  ComputeGraph& g = im.graph();
  TensorRef in = im.tensor(node, 0), y;
  if (node.op_type() == "DepthToSpace") {
    if (c % (b * b)) im.fail(node, "channels not divisible by blocksize^2");
    bool crd = string_attr(a, "mode", "DCR") == "CRD";
    Shape split = crd ? Shape{n, c / (b * b), b, b, h, w} : Shape{n, b, b, c / (b * b), h, w};
    std::vector<int64_t> perm =
        crd ? std::vector<int64_t>{0, 1, 4, 2, 5, 3} : std::vector<int64_t>{0, 3, 4, 1, 5, 2};
    y = ops::transpose(g, g.add_view(in, split), perm);
    y = g.add_view(y, {n, c / (b * b), h * b, w * b});
  } else {
    if (h % b || w % b) im.fail(node, "spatial dims not divisible by blocksize");
    y = ops::transpose(g, g.add_view(in, {n, c, h / b, b, w / b, b}), {0, 3, 5, 1, 2, 4});
    y = g.add_view(y, {n, c * b * b, h / b, w / b});
  }
  return {out(im, y)};
}

std::vector<Value> lower_instance_norm(Importer& im, const onnx::NodeProto& node,
                                       const fold::Attrs& a) {
  im.require_inputs(node, 3, 3);
  return {out(im, ops::instance_norm(im.graph(), im.tensor(node, 0), im.tensor(node, 1),
                                     im.tensor(node, 2), float_attr(a, "epsilon", 1e-5f)))};
}

std::vector<Value> lower_group_norm(Importer& im, const onnx::NodeProto& node,
                                    const fold::Attrs& a) {
  im.require_inputs(node, 3, 3);
  int64_t groups = a.get_int("num_groups", 0);
  if (groups <= 0) im.fail(node, "num_groups must be positive");
  Shape x = im.input(node, 0).shape;
  if (x.size() < 2) im.fail(node, "input rank must be at least 2");
  int64_t channels = x[1];
  // Opset 18 gives scale/bias per group, opset 21 per channel: expand per-group constants.
  auto per_channel = [&](size_t i) -> TensorRef {
    const HostTensor* c = im.constant(node, i);
    if (c && c->numel() == groups && groups != channels && c->dtype == DType::Float32) {
      HostTensor e(DType::Float32, {channels});
      for (int64_t ch = 0; ch < channels; ++ch)
        e.data<float>()[ch] = c->data<float>()[ch / (channels / groups)];
      return im.constant_tensor(std::move(e));
    }
    return im.tensor(node, i);
  };
  return {out(im, ops::group_norm(im.graph(), im.tensor(node, 0), per_channel(1), per_channel(2),
                                  groups, float_attr(a, "epsilon", 1e-5f)))};
}

std::vector<Value> lower_softmax(Importer& im, const onnx::NodeProto& node, const fold::Attrs& a) {
  im.require_inputs(node, 1, 1);
  bool log = node.op_type() == "LogSoftmax";
  Shape x = im.input(node, 0).shape;
  TensorRef in = im.tensor(node, 0);
  if (im.opset() >= 13) return {out(im, ops::softmax(im.graph(), in, a.get_int("axis", -1), log))};
  // Before opset 13 the input is coerced to 2-D at `axis` (default 1).
  int64_t axis = a.get_int("axis", 1), rank = static_cast<int64_t>(x.size());
  if (axis < -rank || axis > rank) im.fail(node, "axis out of range");
  if (axis < 0) axis += rank;
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < rank; ++i) (i < axis ? outer : inner) *= x[i];
  TensorRef flat = im.graph().add_view(in, {outer, inner});
  TensorRef y = ops::softmax(im.graph(), flat, 1, log);
  return {out(im, im.graph().add_view(y, x))};
}

Lowering reduce_lowering(ops::ReduceOp op) {
  return [op](Importer& im, const onnx::NodeProto& node, const fold::Attrs& a) {
    im.require_inputs(node, 1, 2);
    std::vector<int64_t> axes;
    if (im.has_input(node, 1)) {
      const HostTensor& t = im.host_value(node, 1, "axes");
      for (int64_t i = 0; i < t.numel(); ++i) axes.push_back(t.as_int(i));
    } else if (const auto* v = a.find_ints("axes")) {
      axes = *v;
    }
    bool keep = a.get_int("keepdims", 1) != 0;  // read even where the node is a no-op
    // Read whether or not axes are given, so the attribute check sees it read.
    const bool noop_if_empty = a.get_int("noop_with_empty_axes", 0) != 0;
    if (axes.empty() && noop_if_empty) return std::vector<Value>{im.input(node, 0)};
    return std::vector<Value>{out(im, ops::reduce(im.graph(), op, im.tensor(node, 0), axes, keep))};
  };
}

std::vector<Value> lower_reduce_log_sum(Importer& im, const onnx::NodeProto& node,
                                        const fold::Attrs& a) {
  Value sum = reduce_lowering(ops::ReduceOp::Sum)(im, node, a)[0];
  return {out(im, ops::unary(im.graph(), UnaryOp::Log, im.tensor(sum, node.output(0) + "/sum")))};
}

Lowering arg_lowering(bool is_min) {
  return [is_min](Importer& im, const onnx::NodeProto& node, const fold::Attrs& a) {
    im.require_inputs(node, 1, 1);
    return std::vector<Value>{
        out(im, ops::argmax(im.graph(), im.tensor(node, 0), a.get_int("axis", 0),
                            a.get_int("keepdims", 1) != 0, a.get_int("select_last_index", 0) != 0,
                            is_min))};
  };
}

}  // namespace

void register_nn(LoweringTable& t) {
  t["Conv"] = {lower_conv, shaders::conv::float16};
  t[fuse::fused_key("FusedConv")] = {lower_fused_conv, shaders::conv::float16};
  t[fuse::fused_key("FusedGemm")] = {lower_gemm, shaders::matmul_tiled::float16};
  t[fuse::fused_key("FusedMatMul")] = {lower_matmul, shaders::matmul_tiled::float16};
  t[fuse::fused_key("ChannelsFirstMatMul")] = {lower_channels_first_matmul,
                                               shaders::matmul_tiled::float16};
  t[fuse::fused_key("SiblingMatMul")] = {lower_sibling_matmul, shaders::matmul_tiled::float16};
  t["ConvTranspose"] = {lower_conv_transpose, shaders::conv::float16};
  t["Gemm"] = {lower_gemm, shaders::matmul_tiled::float16};
  t["MatMul"] = {lower_matmul, shaders::matmul_tiled::float16};
  t["MaxPool"] = {lower_pool, shaders::pool::float16};
  t["AveragePool"] = {lower_pool, shaders::pool::float16};
  t["GlobalAveragePool"] = {lower_global_pool, shaders::pool::float16};
  t["GlobalMaxPool"] = {lower_global_pool, shaders::pool::float16};
  t["BatchNormalization"] = {lower_batch_norm, shaders::norm::float16};
  t["LayerNormalization"] = {lower_layer_norm, shaders::norm::float16};
  t[fuse::fused_key("ChannelLayerNorm")] = {lower_channel_layer_norm, shaders::norm::float16};
  t[fuse::fused_key("LayerNormRange")] = {lower_layer_norm_range, shaders::norm::float16};
  t[fuse::fused_key("FusedRmsNorm")] = {lower_fused_rms_norm, shaders::norm::float16};
  t["InstanceNormalization"] = {lower_instance_norm, shaders::norm::float16};
  t["GroupNormalization"] = {lower_group_norm, shaders::norm::float16};
  t["Softmax"] = {lower_softmax, shaders::softmax::float16};
  t["LogSoftmax"] = {lower_softmax, shaders::softmax::float16};
  t["ReduceSum"] = {reduce_lowering(ops::ReduceOp::Sum), shaders::reduce::float16};
  t["ReduceMean"] = {reduce_lowering(ops::ReduceOp::Mean), shaders::reduce::float16};
  t["ReduceMax"] = {reduce_lowering(ops::ReduceOp::Max), shaders::reduce::float16};
  t["ReduceMin"] = {reduce_lowering(ops::ReduceOp::Min), shaders::reduce::float16};
  t["ReduceProd"] = {reduce_lowering(ops::ReduceOp::Prod), shaders::reduce::float16};
  t["ReduceL1"] = {reduce_lowering(ops::ReduceOp::L1), shaders::reduce::float16};
  t["ReduceL2"] = {reduce_lowering(ops::ReduceOp::L2), shaders::reduce::float16};
  t["ReduceLogSumExp"] = {reduce_lowering(ops::ReduceOp::LogSumExp), shaders::reduce::float16};
  t["ReduceSumSquare"] = {reduce_lowering(ops::ReduceOp::SumSquare), shaders::reduce::float16};
  t["ReduceLogSum"] = {lower_reduce_log_sum, shaders::reduce::float16};
  t["DepthToSpace"] = {lower_depth_space, shaders::strided_copy::float16};
  t["SpaceToDepth"] = {lower_depth_space, shaders::strided_copy::float16};
  t["ArgMax"] = {arg_lowering(false), shaders::argmax::float16};
  t["ArgMin"] = {arg_lowering(true), shaders::argmax::float16};
}

}  // namespace vkgraph::onnx_import
