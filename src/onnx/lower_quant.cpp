// Quantization ONNX ops: QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear,
// MatMulInteger, QLinearMatMul, ConvInteger, QLinearConv, and com.microsoft MatMulNBits.
//
// The frontend computes int8/uint8 values in Int32 (Value::dtype) but remembers the declared
// 8-bit type (Value::int8_type). These lowerings give the integer kernels 8-bit tensors:
// an 8-bit device tensor as it is, a constant narrowed on the host, a widened device value
// narrowed on the device. Their 8-bit results stay 8-bit on the device; other ops get them
// widened to Int32 by Importer::tensor(), once.
#include <algorithm>
#include <cmath>
#include <limits>

#include "onnx/fuse_dynamic_quant.h"
#include "onnx/fuse_qdq.h"
#include "onnx/fuse_weight_only.h"
#include "onnx/importer.h"
#include "onnx/lower_util.h"
#include "vkgraph/error.h"
#include "vkgraph/onnx_tensor.h"
#include "vkgraph/ops/quant.h"
#include "vkgraph/shaders/qgemm.h"

namespace vkgraph::onnx_import {
namespace {

bool is_8bit(DType d) {
  return d == DType::Int8 || d == DType::UInt8;
}

// The declared 8-bit type of input `i`.
DType int8_type(Importer& im, const onnx::NodeProto& node, size_t i, const std::string& what) {
  const Value& v = im.input(node, i);
  if (v.int8_type) return *v.int8_type;
  for (TensorRef t : {v.tensor, v.other})
    if (t.valid() && is_8bit(im.graph().info(t).dtype)) return im.graph().info(t).dtype;
  im.fail(node, what + " must be int8 or uint8, got " + dtype_name(v.dtype));
}

// Input `i` as an Int8/UInt8 device tensor.
TensorRef quantized(Importer& im, const onnx::NodeProto& node, size_t i, const std::string& what) {
  const Value& v = im.input(node, i);
  ComputeGraph& g = im.graph();
  for (TensorRef t : {v.tensor, v.other})
    if (t.valid() && is_8bit(g.info(t).dtype)) return t;
  const DType type = int8_type(im, node, i, what);
  if (v.constant) {
    HostTensor q(type, v.constant->shape);
    for (int64_t j = 0; j < q.numel(); ++j)
      q.bytes[j] = static_cast<uint8_t>(v.constant->as_int(j));
    return g.add_constant(std::move(q), node.input(i));
  }
  // A widened 8-bit value (a model input, say): narrowed once, for every reader.
  const TensorRef narrowed = ops::convert_quantized(g, im.tensor(node, i), type);
  im.keep_other(node, i, narrowed);
  return narrowed;
}

// Input `i` for the dequantizing side: 8-bit where it is held so, else the widened Int32.
TensorRef quantized_or_widened(Importer& im, const onnx::NodeProto& node, size_t i) {
  const Value& v = im.input(node, i);
  for (TensorRef t : {v.tensor, v.other})
    if (t.valid() && is_8bit(im.graph().info(t).dtype)) return t;
  if (v.constant && v.int8_type) return quantized(im, node, i, "input");
  if (v.dtype != DType::Int32) im.fail(node, "input must be int8 or uint8");
  return im.tensor(node, i);
}

std::optional<TensorRef> optional_tensor(Importer& im, const onnx::NodeProto& node, size_t i) {
  if (!im.has_input(node, i)) return std::nullopt;
  return im.tensor(node, i);
}

// An 8-bit result: the model sees an int8/uint8 value (computed in Int32 by other ops).
Value quantized_value(Importer& im, TensorRef t) {
  Value v = Importer::device_value(im.graph(), t);
  v.int8_type = v.dtype;
  v.dtype = DType::Int32;
  return v;
}

ops::QuantAxis quant_axis(Importer& im, const onnx::NodeProto& node, const fold::Attrs& a) {
  ops::QuantAxis q;
  q.axis = a.get_int("axis", 1);
  q.block_size = a.get_int("block_size", 0);
  if (q.block_size < 0) im.fail(node, "block_size must not be negative");
  return q;
}

std::vector<Value> lower_quantize(Importer& im, const onnx::NodeProto& node, const fold::Attrs& a) {
  im.require_inputs(node, 2, 3);
  DType out = im.has_input(node, 2) ? int8_type(im, node, 2, "y_zero_point") : DType::UInt8;
  bool four_bit = im.has_input(node, 2) && im.input(node, 2).four_bit;
  if (int64_t t = a.get_int("output_dtype", 0); t != 0) {
    const bool wanted_4bit = onnx_io::is_4bit_onnx_type(static_cast<int32_t>(t));
    const std::optional<DType> wanted = int8_type_of(static_cast<int32_t>(t));
    if (!wanted)
      im.fail(node,
              "output_dtype " + std::to_string(t) + " is not supported (int8, uint8, int4, uint4)");
    if (im.has_input(node, 2) && (*wanted != out || wanted_4bit != four_bit))
      im.fail(node, "output_dtype differs from y_zero_point's type");
    out = *wanted;
    four_bit = wanted_4bit;
  }
  std::optional<std::array<int32_t, 2>> range;
  if (four_bit)
    range = out == DType::Int8 ? std::array<int32_t, 2>{-8, 7} : std::array<int32_t, 2>{0, 15};
  TensorRef y =
      ops::quantize_linear(im.graph(), im.tensor(node, 0), im.tensor(node, 1),
                           optional_tensor(im, node, 2), out, quant_axis(im, node, a), range);
  Value v = quantized_value(im, y);
  v.four_bit = four_bit;
  return {v};
}

std::vector<Value> lower_dequantize(Importer& im, const onnx::NodeProto& node,
                                    const fold::Attrs& a) {
  im.require_inputs(node, 2, 3);
  TensorRef y =
      ops::dequantize_linear(im.graph(), quantized_or_widened(im, node, 0), im.tensor(node, 1),
                             optional_tensor(im, node, 2), quant_axis(im, node, a));
  // From opset 19 the result has the scale's type, which may be float16.
  if (im.input(node, 1).dtype == DType::Float16) y = ops::cast(im.graph(), y, DType::Float16);
  return {Importer::device_value(im.graph(), y)};
}

std::vector<Value> lower_dynamic_quantize(Importer& im, const onnx::NodeProto& node,
                                          const fold::Attrs&) {
  im.require_inputs(node, 1, 1);
  ops::DynamicQuantized r = ops::dynamic_quantize_linear(im.graph(), im.tensor(node, 0));
  return {quantized_value(im, r.y), Importer::device_value(im.graph(), r.scale),
          quantized_value(im, r.zero_point)};
}

std::vector<Value> lower_matmul_integer(Importer& im, const onnx::NodeProto& node,
                                        const fold::Attrs&) {
  im.require_inputs(node, 2, 4);
  TensorRef y =
      ops::matmul_integer(im.graph(), quantized(im, node, 0, "A"), quantized(im, node, 1, "B"),
                          optional_tensor(im, node, 2), optional_tensor(im, node, 3));
  return {Importer::device_value(im.graph(), y)};
}

// QLinear ops' operand at inputs first, first + 1 (scale), first + 2 (zero point).
ops::QuantizedOperand operand(Importer& im, const onnx::NodeProto& node, size_t first,
                              const std::string& what) {
  return {quantized(im, node, first, what), im.tensor(node, first + 1),
          optional_tensor(im, node, first + 2)};
}

std::vector<Value> lower_qlinear_matmul(Importer& im, const onnx::NodeProto& node,
                                        const fold::Attrs&) {
  im.require_inputs(node, 8, 8);
  const DType out = int8_type(im, node, 7, "y_zero_point");
  ops::QuantizedOperand y_params{TensorRef{}, im.tensor(node, 6), im.tensor(node, 7)};
  TensorRef y = ops::qlinear_matmul(im.graph(), operand(im, node, 0, "a"),
                                    operand(im, node, 3, "b"), y_params, out);
  return {quantized_value(im, y)};
}

// ConvInteger / QLinearConv attributes; x is [N, C, L] or [N, C, H, W].
ops::IntConvParams conv_params(Importer& im, const onnx::NodeProto& node, const fold::Attrs& a,
                               const Shape& x, const Shape& w) {
  if ((x.size() != 3 && x.size() != 4) || w.size() != x.size())
    im.fail(node, "only 1-D and 2-D convolutions are supported; input " + shape_str(x) +
                      ", weight " + shape_str(w));
  const size_t n = x.size() - 2;
  auto ints = [&](const char* name, int64_t fill, size_t len) {
    const auto* v = a.find_ints(name);
    std::vector<int64_t> r = v ? *v : std::vector<int64_t>(len, fill);
    if (r.size() != len)
      im.fail(node, std::string(name) + " has " + std::to_string(r.size()) + " values, expected " +
                        std::to_string(len));
    return r;
  };
  const std::vector<int64_t> kernel = ints("kernel_shape", 0, n);
  for (size_t i = 0; i < n; ++i)
    if (a.find_ints("kernel_shape") && kernel[i] != w[2 + i])
      im.fail(node, "kernel_shape differs from the weight's shape " + shape_str(w));
  auto it = a.strings.find("auto_pad");
  const std::string auto_pad = it == a.strings.end() ? "NOTSET" : it->second;
  if (auto_pad != "NOTSET" && auto_pad != "VALID")
    im.fail(node, "auto_pad " + auto_pad + " is not supported (NOTSET, VALID)");
  const std::vector<int64_t> strides = ints("strides", 1, n), dil = ints("dilations", 1, n);
  const std::vector<int64_t> pads =
      auto_pad == "VALID" ? std::vector<int64_t>(2 * n, 0) : ints("pads", 0, 2 * n);
  ops::IntConvParams p;
  p.groups = a.get_int("group", 1);
  for (size_t i = 0; i < n; ++i) {
    p.strides[i] = strides[i];
    p.dilations[i] = dil[i];
    p.pads[i] = pads[i];
    p.pads[n + i] = pads[n + i];
  }
  return p;
}

std::vector<Value> lower_conv_integer(Importer& im, const onnx::NodeProto& node,
                                      const fold::Attrs& a) {
  im.require_inputs(node, 2, 4);
  ops::IntConvParams p = conv_params(im, node, a, im.input(node, 0).shape, im.input(node, 1).shape);
  TensorRef y =
      ops::conv_integer(im.graph(), quantized(im, node, 0, "x"), quantized(im, node, 1, "w"),
                        optional_tensor(im, node, 2), optional_tensor(im, node, 3), p);
  return {Importer::device_value(im.graph(), y)};
}

std::vector<Value> lower_qlinear_conv(Importer& im, const onnx::NodeProto& node,
                                      const fold::Attrs& a) {
  im.require_inputs(node, 8, 9);
  ops::IntConvParams p = conv_params(im, node, a, im.input(node, 0).shape, im.input(node, 3).shape);
  const DType out = int8_type(im, node, 7, "y_zero_point");
  ops::QuantizedOperand y_params{TensorRef{}, im.tensor(node, 6), im.tensor(node, 7)};
  TensorRef y = ops::qlinear_conv(im.graph(), operand(im, node, 0, "x"), operand(im, node, 3, "w"),
                                  y_params, optional_tensor(im, node, 8), p, out);
  return {quantized_value(im, y)};
}

std::vector<Value> lower_matmul_nbits(Importer& im, const onnx::NodeProto& node,
                                      const fold::Attrs& a) {
  im.require_inputs(node, 3, 6);
  ops::NBitsParams p;
  p.k = a.get_int("K", 0);
  p.n = a.get_int("N", 0);
  p.bits = a.get_int("bits", 4);
  p.block_size = a.get_int("block_size", 0);
  p.accuracy_level = a.get_int("accuracy_level", 0);
  if (p.accuracy_level < 0 || p.accuracy_level > 4)
    im.fail(node, "accuracy_level must be 0..4, got " + std::to_string(p.accuracy_level));
  if (a.get_int("weight_prepacked", 0) != 0) im.fail(node, "prepacked weights are not supported");
  std::optional<TensorRef> zero_points;
  if (im.has_input(node, 3)) {
    const Value& z = im.input(node, 3);
    zero_points =
        z.int8_type == DType::UInt8 ? quantized(im, node, 3, "zero_points") : im.tensor(node, 3);
  }
  TensorRef y = ops::matmul_nbits(im.graph(), im.tensor(node, 0), quantized(im, node, 1, "B"),
                                  im.tensor(node, 2), p, zero_points, optional_tensor(im, node, 4),
                                  optional_tensor(im, node, 5));
  return {Importer::device_value(im.graph(), y)};
}

// WeightOnlyMatMul (fuse_weight_only.h). The blocked weight w_q [K, N] is re-laid at load in
// MatMulNBits' layout: per output row n, codes packed low bit first along K, blocks padded with
// code 0; signed codes shifted by 2^(bits-1) to unsigned, their zero points with them (an absent
// signed one is then 2^(bits-1), the kernel's default; an absent unsigned one is 0, packed
// explicitly). Scales transposed to [N, blocks] in x's float type.
std::vector<Value> lower_weight_only_matmul(Importer& im, const onnx::NodeProto& node,
                                            const fold::Attrs& a) {
  using namespace fuse;
  const HostTensor* w = im.constant(node, kWeightOnlyW);
  const HostTensor* s = im.constant(node, kWeightOnlyScale);
  if (!w || !s) im.fail(node, "the weights and scales must be constants");
  const Value& wv = im.input(node, kWeightOnlyW);
  const int64_t bits = wv.four_bit ? 4 : 8, block = a.get_int("block_size", 0);
  const int64_t k = w->shape[0], n = w->shape[1], blocks = (k + block - 1) / block;
  const int64_t offset = wv.int8_type == DType::Int8 ? int64_t{1} << (bits - 1) : 0;
  // Codes `values` [rows, cols] as unsigned `bits`-bit fields, entry (r, c) at bit
  // c * row_bits + r * bits, so a column of values is one packed row.
  auto pack_columns = [&](const HostTensor& values, int64_t rows, int64_t row_bits, Shape shape) {
    HostTensor out(DType::UInt8, std::move(shape));
    std::fill(out.bytes.begin(), out.bytes.end(), uint8_t{0});
    const int64_t cols = values.numel() / rows;
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c) {
        const int64_t code = values.as_int(r * cols + c) + offset, bit = c * row_bits + r * bits;
        out.bytes[bit / 8] |= static_cast<uint8_t>(code << (bit % 8));
      }
    return out;
  };
  HostTensor b = pack_columns(*w, k, blocks * block * bits, {n, blocks, block * bits / 8});
  const TensorRef x = im.tensor(node, kWeightOnlyX);
  ComputeGraph& g = im.graph();
  const DType fdt = g.info(x).dtype;
  HostTensor scales(fdt, {n, blocks});
  for (int64_t c = 0; c < n; ++c)
    for (int64_t blk = 0; blk < blocks; ++blk) {
      const float v = static_cast<float>(s->as_double(blk * n + c));
      if (fdt == DType::Float16)
        scales.data<uint16_t>()[c * blocks + blk] = float_to_half(v);
      else
        scales.data<float>()[c * blocks + blk] = v;
    }
  std::optional<TensorRef> zero_points;
  const int64_t zero_row_bits = (blocks * bits + 7) / 8 * 8;
  if (im.has_input(node, kWeightOnlyZero)) {
    zero_points = g.add_constant(pack_columns(*im.constant(node, kWeightOnlyZero), blocks,
                                              zero_row_bits, {n * zero_row_bits / 8}));
  } else if (offset == 0) {
    HostTensor zeros(DType::UInt8, {n * zero_row_bits / 8});
    std::fill(zeros.bytes.begin(), zeros.bytes.end(), uint8_t{0});
    zero_points = g.add_constant(std::move(zeros));
  }
  const ops::NBitsParams p{k, n, bits, block};
  TensorRef y = ops::matmul_nbits(g, x, g.add_constant(std::move(b)),
                                  g.add_constant(std::move(scales)), p, zero_points);
  return {Importer::device_value(g, y)};
}

// QuantizeLinear of one float32 value as ONNX defines it: v / scale in float32, rounded half to
// even, plus the zero point (NaN: the zero point), saturated to [qmin, qmax].
int64_t quantize_on_host(float v, float scale, int64_t zero, int64_t qmin, int64_t qmax) {
  const float scaled = v / scale;
  const double q =
      std::isnan(scaled) ? double(zero) : std::nearbyint(double(scaled)) + double(zero);
  return static_cast<int64_t>(std::clamp(q, double(qmin), double(qmax)));
}

// y's type and a fused Relu / Clip of a QDQ node (fuse_qdq.h) as y's integer range:
// Q(clip(v, lo, hi)) = clamp(Q(v), Q(lo), Q(hi)), Q being QuantizeLinear (quantize_on_host).
DType fused_y_type(const fold::Attrs& a) {
  return a.get_int("y_dtype", 0) == onnx::TensorProto::INT8 ? DType::Int8 : DType::UInt8;
}

// `prefix` "act": the node's own output (inputs kQdqYScale, kQdqYZero); "sum_act": a fused
// residual Add's (kQdqSumScale, kQdqSumZero).
std::optional<std::array<int32_t, 2>> fused_range(Importer& im, const onnx::NodeProto& node,
                                                  const fold::Attrs& a,
                                                  const std::string& prefix = "act") {
  const std::string lo = prefix + "_lo", hi = prefix + "_hi";
  if (!a.floats.count(lo)) return std::nullopt;
  const bool sum = prefix != "act";
  const int scale_at = sum ? fuse::kQdqSumScale : fuse::kQdqYScale;
  const int zero_at = sum ? fuse::kQdqSumZero : fuse::kQdqYZero;
  const float y_scale = im.host_value(node, scale_at, "y_scale").data<float>()[0];
  const int64_t y_zero =
      im.has_input(node, zero_at) ? im.host_value(node, zero_at, "y_zero_point").as_int(0) : 0;
  constexpr int64_t kMin = std::numeric_limits<int32_t>::min();
  constexpr int64_t kMax = std::numeric_limits<int32_t>::max();
  auto q = [&](float v) {
    return static_cast<int32_t>(quantize_on_host(v, y_scale, y_zero, kMin, kMax));
  };
  return std::array<int32_t, 2>{q(a.floats.at(lo)), q(a.floats.at(hi))};
}

// A QDQ unary op's byte table (fuse_qdq.h): each of x's 256 byte values dequantized, through the
// op and the fused Relu / Clip, then quantized as QuantizeLinear does (quantize_on_host). The op
// is a QdqTable's (`after` false: attributes "activation", "act_lo", ..., parameters at kQdqX..
// and kQdqY..) or one fused after a QdqConv / QdqMatMul / QdqGemm's requantization (`after`:
// the "table_" attributes and kQdqTable.. parameters), whose x is that node's y (`x_signed`).
ops::ByteTable qdq_byte_table(Importer& im, const onnx::NodeProto& node, const fold::Attrs& a,
                              bool after, bool x_signed) {
  using namespace fuse;
  const std::string pre = after ? "table_" : "";
  const auto op = a.ints.find(pre + "activation");
  if (op == a.ints.end()) im.fail(node, "the fused table names no unary op");
  ops::UnaryParams params;
  if (const auto p = a.float_lists.find(pre + "activation_params");
      p != a.float_lists.end() && p->second.size() == 2)
    params = {p->second[0], p->second[1]};
  auto zero_point = [&](int at, const char* what) {
    return im.has_input(node, at) ? im.host_value(node, at, what).as_int(0) : int64_t{0};
  };
  const int x_at = after ? kQdqTableXScale : kQdqXScale,
            y_at = after ? kQdqTableYScale : kQdqYScale;
  const float x_scale = im.host_value(node, x_at, "x_scale").data<float>()[0];
  const int64_t x_zero = zero_point(x_at + 1, "x_zero_point");
  const float y_scale = im.host_value(node, y_at, "y_scale").data<float>()[0];
  const int64_t y_zero = zero_point(y_at + 1, "y_zero_point");
  constexpr float kInf = std::numeric_limits<float>::infinity();
  const auto lo = a.floats.find(pre + "act_lo"), hi = a.floats.find(pre + "act_hi");
  const float lo_v = lo != a.floats.end() ? lo->second : -kInf;
  const float hi_v = hi != a.floats.end() ? hi->second : kInf;
  ops::ByteTable t;
  t.out = a.get_int(pre + (after ? "dtype" : "y_dtype"), 0) == onnx::TensorProto::INT8
              ? DType::Int8
              : DType::UInt8;
  const int64_t qmin = t.out == DType::Int8 ? -128 : 0, qmax = t.out == DType::Int8 ? 127 : 255;
  for (int byte = 0; byte < 256; ++byte) {
    const int code = x_signed ? static_cast<int8_t>(byte) : byte;
    const float v = static_cast<float>(code - x_zero) * x_scale;
    const std::optional<float> f = unary_on_host(static_cast<ops::UnaryOp>(op->second), params, v);
    if (!f) im.fail(node, "its unary op has no host evaluation");
    const float clipped = std::isnan(*f) ? *f : std::clamp(*f, lo_v, hi_v);
    t.bytes[byte] = static_cast<uint8_t>(quantize_on_host(clipped, y_scale, y_zero, qmin, qmax));
  }
  return t;
}

// A QDQ residual Add or gate Mul (fuse_qdq.h) as one integer kernel. Operands of one shape,
// or for Mul one repeated over the other's trailing dims (either way round: the product is
// symmetric); other broadcasts take the three ops apart instead.
std::vector<Value> lower_qdq_add(Importer& im, const onnx::NodeProto& node, const fold::Attrs& a) {
  using namespace fuse;
  ComputeGraph& g = im.graph();
  const bool mul = node.op_type() == "QdqMul";
  const DType out = fused_y_type(a);
  const auto range = fused_range(im, node, a);
  ops::QuantizedOperand x{quantized(im, node, kQdqX, "a"), im.tensor(node, kQdqXScale),
                          optional_tensor(im, node, kQdqXZero)};
  ops::QuantizedOperand w{quantized(im, node, kQdqW, "b"), im.tensor(node, kQdqWScale),
                          optional_tensor(im, node, kQdqWZero)};
  const ops::QuantizedOperand y{TensorRef{}, im.tensor(node, kQdqYScale),
                                optional_tensor(im, node, kQdqYZero)};
  const Shape xs = g.info(x.values).shape, ws = g.info(w.values).shape;
  if (xs == ws) {
    return {quantized_value(im, mul ? ops::qlinear_mul(g, x, w, y, out, range)
                                    : ops::qlinear_add(g, x, w, y, out, range))};
  }
  if (mul && (ops::qlinear_mul_broadcasts(xs, ws) || ops::qlinear_mul_broadcasts(ws, xs))) {
    if (!ops::qlinear_mul_broadcasts(xs, ws)) std::swap(x, w);
    return {quantized_value(im, ops::qlinear_mul(g, x, w, y, out, range))};
  }
  TensorRef sum = ops::binary(g, mul ? ops::BinaryOp::Mul : ops::BinaryOp::Add,
                              ops::dequantize_linear(g, x.values, x.scale, x.zero_point),
                              ops::dequantize_linear(g, w.values, w.scale, w.zero_point));
  if (a.floats.count("act_lo"))
    sum = ops::unary(g, ops::UnaryOp::Clip, sum, {a.floats.at("act_lo"), a.floats.at("act_hi")});
  return {quantized_value(im, ops::quantize_linear(g, sum, y.scale, y.zero_point, out))};
}

// QDQ patterns (fuse_qdq.h) as one integer kernel. Everything but x (and a MatMul's device
// weight) is a host constant: the weight is narrowed to 8 bits once (transposed for Gemm's
// transB), the bias becomes int32 in units of x_scale * w_scale, and a fused Relu / Clip
// becomes the output's integer range.
std::vector<Value> lower_qdq(Importer& im, const onnx::NodeProto& node, const fold::Attrs& a) {
  using namespace fuse;
  ComputeGraph& g = im.graph();
  const bool conv = node.op_type() == "QdqConv";
  const bool trans_b = node.op_type() == "QdqGemm" && a.get_int("transB", 0) != 0;
  const DType out = fused_y_type(a);
  const float x_scale = im.host_value(node, kQdqXScale, "x_scale").data<float>()[0];
  const HostTensor& w_scale = im.host_value(node, kQdqWScale, "w_scale");
  const HostTensor* w = im.constant(node, kQdqW);
  TensorRef wq;
  if (w && trans_b) {
    const int64_t n = w->shape[0], k = w->shape[1];
    HostTensor t(int8_type(im, node, kQdqW, "weight"), {k, n});
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < k; ++j)
        t.bytes[j * n + i] = static_cast<uint8_t>(w->as_int(i * k + j));
    wq = g.add_constant(std::move(t), node.input(kQdqW));
  } else {
    wq = quantized(im, node, kQdqW, "weight");
  }
  const Shape w_shape = g.info(wq).shape;
  const int64_t channels = conv ? w_shape[0] : w_shape.back();

  std::optional<TensorRef> bias;
  if (im.has_input(node, kQdqBias)) {
    const HostTensor& b = im.host_value(node, kQdqBias, "bias");
    const HostTensor* b_scale = im.has_input(node, kQdqBiasScale)
                                    ? &im.host_value(node, kQdqBiasScale, "bias scale")
                                    : nullptr;
    HostTensor q(DType::Int32, {channels});
    for (int64_t c = 0; c < channels; ++c) {
      const float ws = w_scale.data<float>()[w_scale.numel() == 1 ? 0 : c];
      double v;
      if (b_scale) {
        // ONNX Runtime writes bias scales of exactly x_scale * w_scale: then the values are
        // the int32 sums' units already.
        const float bs = b_scale->data<float>()[b_scale->numel() == 1 ? 0 : c];
        v = bs == x_scale * ws ? static_cast<double>(b.as_int(c))
                               : std::nearbyint(double(b.as_int(c)) * bs / (double(x_scale) * ws));
      } else {
        v = std::nearbyint(double(b.data<float>()[c]) / (double(x_scale) * ws));
      }
      if (!(std::abs(v) <= std::numeric_limits<int32_t>::max()))
        im.fail(node, "bias " + std::to_string(c) + " does not fit int32 in units of x * w scale");
      q.data<int32_t>()[c] = static_cast<int32_t>(v);
    }
    bias = g.add_constant(std::move(q), node.input(kQdqBias));
  }

  const std::optional<std::array<int32_t, 2>> range = fused_range(im, node, a);
  std::optional<ops::ByteTable> table;  // a QDQ unary op after the requantization
  if (im.has_input(node, kQdqTableYScale)) {
    a.ignore("table_op");  // names the model's op, for people reading the fused graph
    table = qdq_byte_table(im, node, a, true, out == DType::Int8);
  }
  const ops::QuantizedOperand x{quantized(im, node, kQdqX, "x"), im.tensor(node, kQdqXScale),
                                optional_tensor(im, node, kQdqXZero)};
  const ops::QuantizedOperand wo{wq, im.tensor(node, kQdqWScale),
                                 optional_tensor(im, node, kQdqWZero)};
  const ops::QuantizedOperand y{TensorRef{}, im.tensor(node, kQdqYScale),
                                optional_tensor(im, node, kQdqYZero)};
  TensorRef r;
  if (conv) {
    ops::IntConvParams p = conv_params(im, node, a, im.input(node, kQdqX).shape, w_shape);
    std::optional<ops::ResidualAdd> residual;
    if (im.has_input(node, kQdqRes)) {
      residual = ops::ResidualAdd{
          im.tensor(node, kQdqConvOutScale),
          optional_tensor(im, node, kQdqConvOutZero),
          {quantized(im, node, kQdqRes, "residual"), im.tensor(node, kQdqResScale),
           optional_tensor(im, node, kQdqResZero)},
          {TensorRef{}, im.tensor(node, kQdqSumScale), optional_tensor(im, node, kQdqSumZero)},
          a.get_int("sum_dtype", 0) == onnx::TensorProto::INT8 ? DType::Int8 : DType::UInt8,
          fused_range(im, node, a, "sum_act"),
          a.get_int("sum_conv_second", 0) != 0};
    }
    r = ops::qlinear_conv(g, x, wo, y, bias, p, out, range, residual, table);
  } else {
    r = ops::qlinear_matmul(g, x, wo, y, out, {bias, range, table});
  }
  return {quantized_value(im, r)};
}

// QDQ pooling (fuse_qdq.h): MaxPool of the bytes and Flatten as a view of them (the pattern
// required one scale and zero point on both sides), GlobalAveragePool with its integer sum
// requantized.
std::vector<Value> lower_qdq_pool(Importer& im, const onnx::NodeProto& node, const fold::Attrs& a) {
  using namespace fuse;
  const DType out = fused_y_type(a);
  const TensorRef x = quantized(im, node, kQdqX, "x");
  const std::string& op = fuse::model_op_type(node);
  if (op == "MaxPool" || op == "Flatten") {
    if (im.graph().info(x).dtype != out) im.fail(node, "x and y must have one 8-bit type");
    if (op == "MaxPool") return {quantized_value(im, lower_pool_of(im, node, a, x)[0].tensor)};
    const Shape s = im.graph().info(x).shape;
    int64_t axis = a.get_int("axis", 1);
    if (axis < 0) axis += static_cast<int64_t>(s.size());
    if (axis < 0 || axis > static_cast<int64_t>(s.size()))
      im.fail(node, "axis " + std::to_string(a.get_int("axis", 1)) + " is out of range for " +
                        shape_str(s));
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < static_cast<int64_t>(s.size()); ++d) (d < axis ? outer : inner) *= s[d];
    return {quantized_value(im, im.graph().add_view(x, {outer, inner}))};
  }
  const ops::QuantizedOperand xo{x, im.tensor(node, kQdqXScale),
                                 optional_tensor(im, node, kQdqXZero)};
  const ops::QuantizedOperand y{TensorRef{}, im.tensor(node, kQdqYScale),
                                optional_tensor(im, node, kQdqYZero)};
  return {quantized_value(im, ops::qlinear_global_avg_pool(im.graph(), xo, y, out))};
}

// A QDQ unary op (fuse_qdq.h's QdqTable): the lookup kernel reading its byte table.
std::vector<Value> lower_qdq_table(Importer& im, const onnx::NodeProto& node,
                                   const fold::Attrs& a) {
  using namespace fuse;
  a.ignore("model_op");  // names the model's op in messages (model_op_type)
  const TensorRef x = quantized(im, node, kQdqX, "x");
  const ops::ByteTable t =
      qdq_byte_table(im, node, a, false, im.graph().info(x).dtype == DType::Int8);
  return {quantized_value(im, ops::byte_table(im.graph(), x, t.bytes, t.out))};
}

// quantize_dynamic's layers (fuse_dynamic_quant.h): the activation's range once and x quantized
// once (where that applies; else an empty Int32 placeholder, and the GEMMs quantize x as they
// load it), then per layer one GEMM. In float16 mode x, the bias, the residual and y are
// float16; the range partials and the weight's scale stay float32 (float32_tensor). Input 1,
// where present, is x's partials from the LayerNormRange that computed x: taken for the range
// pass where x is the very tensor they were computed from (not a copy in another precision).
std::vector<Value> lower_dynamic_quant_range(Importer& im, const onnx::NodeProto& node,
                                             const fold::Attrs&) {
  im.require_inputs(node, 1, 2);
  ComputeGraph& g = im.graph();
  const TensorRef x = im.tensor(node, 0);
  const TensorRef range = im.has_input(node, 1) && im.input(node, 0).tensor == x
                              ? im.float32_tensor(node, 1)
                              : ops::dynamic_quant_range(g, x);
  std::vector<Value> out{Importer::device_value(g, range)};
  if (node.output_size() > 1) {
    const std::optional<TensorRef> packed = ops::dynamic_quantize_packed(g, x, range);
    out.push_back(Importer::device_value(g, packed ? *packed : g.add_tensor({0}, DType::Int32)));
  }
  return out;
}

// DynamicQuantMatMul's packed x, or nothing for the placeholder (or an older node without it).
std::optional<TensorRef> packed_input(Importer& im, const onnx::NodeProto& node,
                                      size_t i = fuse::kDqPacked) {
  const std::optional<TensorRef> t = optional_tensor(im, node, i);
  if (!t || numel(im.graph().info(*t).shape) == 0) return std::nullopt;
  return t;
}

std::vector<Value> lower_dynamic_quant_matmul(Importer& im, const onnx::NodeProto& node,
                                              const fold::Attrs& a) {
  using namespace fuse;
  im.require_inputs(node, kDqWScale + 1, kDqInputs);
  ops::DynamicQuantEpilogue e;
  e.bias = optional_tensor(im, node, kDqBias);
  e.x_packed = packed_input(im, node);
  e.residual = optional_tensor(im, node, kDqResidual);
  if (auto act = fuse::activation(node, a)) {
    e.activation = act->op;
    e.activation_params = act->params;
  }
  TensorRef y = ops::dynamic_quant_matmul(
      im.graph(), im.tensor(node, kDqX), im.float32_tensor(node, kDqRange),
      quantized(im, node, kDqW, "w"), optional_tensor(im, node, kDqWZero),
      im.float32_tensor(node, kDqWScale), e);
  return {Importer::device_value(im.graph(), y)};
}

// quantize_dynamic's sibling layers (fuse_dynamic_quant.h): the members' weights concatenated
// along N, their zero points (where any member has one), scales and biases per column, then
// one GEMM, which computes each column exactly as the member's own layer would.
std::vector<Value> lower_dynamic_quant_sibling_matmul(Importer& im, const onnx::NodeProto& node,
                                                      const fold::Attrs& a) {
  using namespace fuse;
  const int64_t members = a.get_int("members", 0);
  if (members < 2 || node.input_size() != kDqsMembers + kDqsPerMember * members)
    im.fail(node,
            "needs x, the range, the packed x and per member (2 or more) a weight, zero "
            "point, scale and bias");
  auto at = [](int64_t m, int i) {
    return static_cast<size_t>(kDqsMembers + kDqsPerMember * m + i);
  };
  const DType w_type = int8_type(im, node, at(0, 0), "w");
  const bool zeros = [&] {
    for (int64_t m = 0; m < members; ++m)
      if (im.has_input(node, at(m, 1))) return true;
    return false;
  }();
  const bool biased = im.has_input(node, at(0, 3));
  std::vector<const HostTensor*> w(members), z(members), s(members), b(members);
  int64_t k = -1, total = 0;
  for (int64_t m = 0; m < members; ++m) {
    w[m] = im.constant(node, at(m, 0));
    z[m] = im.constant(node, at(m, 1));
    s[m] = im.constant(node, at(m, 2));
    b[m] = im.constant(node, at(m, 3));
    if (!w[m] || w[m]->shape.size() != 2 || (k >= 0 && w[m]->shape[0] != k) ||
        int8_type(im, node, at(m, 0), "w") != w_type)
      im.fail(node, "weights must be 8-bit constants [K, N_i] of one type");
    k = w[m]->shape[0];
    const int64_t n = w[m]->shape[1];
    auto per_column = [&](const HostTensor* t) {
      return t && (t->numel() == 1 || t->shape == Shape{n});
    };
    if ((im.has_input(node, at(m, 1)) &&
         (!per_column(z[m]) || int8_type(im, node, at(m, 1), "zero point") != w_type)) ||
        !per_column(s[m]) || s[m]->dtype != DType::Float32 ||
        im.has_input(node, at(m, 3)) != biased ||
        (biased && (!b[m] || b[m]->dtype != DType::Float32 || b[m]->shape != Shape{n})))
      im.fail(node,
              "zero points and scales must be constants of 1 or N_i values (float32 "
              "scales, zero points of the weight's type), biases float32 [N_i] on every "
              "member or none");
    total += n;
  }
  HostTensor w_cat(w_type, {k, total}), z_cat(w_type, {total});
  HostTensor s_cat(DType::Float32, {total}), b_cat(DType::Float32, {total});
  int64_t col = 0;
  for (int64_t m = 0; m < members; ++m) {
    const int64_t n = w[m]->shape[1];
    for (int64_t r = 0; r < k; ++r)
      for (int64_t c = 0; c < n; ++c)
        w_cat.bytes[r * total + col + c] = static_cast<uint8_t>(w[m]->as_int(r * n + c));
    for (int64_t c = 0; c < n; ++c) {
      const int64_t one = s[m]->numel() == 1 ? 0 : c;
      s_cat.data<float>()[col + c] = s[m]->data<float>()[one];
      if (z[m])
        z_cat.bytes[col + c] = static_cast<uint8_t>(z[m]->as_int(z[m]->numel() == 1 ? 0 : c));
      if (biased) b_cat.data<float>()[col + c] = b[m]->data<float>()[c];
    }
    col += n;
  }
  ComputeGraph& g = im.graph();
  ops::DynamicQuantEpilogue e;
  if (biased) e.bias = im.constant_tensor(std::move(b_cat), node.name() + "/bias");
  e.x_packed = packed_input(im, node, kDqsPacked);
  const TensorRef wt = g.add_constant(std::move(w_cat), node.name() + "/weight");
  const std::optional<TensorRef> zt =
      zeros ? std::optional(g.add_constant(std::move(z_cat), node.name() + "/zero_point"))
            : std::nullopt;
  // Float32 in float16 mode too, as Importer::float32_tensor gives a single layer's scale.
  const TensorRef st = g.add_constant(std::move(s_cat), node.name() + "/scale");
  TensorRef y = ops::dynamic_quant_matmul(g, im.tensor(node, kDqsX),
                                          im.float32_tensor(node, kDqsRange), wt, zt, st, e);
  return {Importer::device_value(g, y)};
}

}  // namespace

void register_quant(LoweringTable& t) {
  // quant.cmake declares float16 variants of the range, pack and dynamic GEMM kernels.
  t[fuse::fused_key("DynamicQuantRange")] = {lower_dynamic_quant_range, /*computes_in_half=*/true};
  t[fuse::fused_key("DynamicQuantMatMul")] = {lower_dynamic_quant_matmul, shaders::qgemm::float16};
  t[fuse::fused_key("DynamicQuantSiblingMatMul")] = {lower_dynamic_quant_sibling_matmul,
                                                     shaders::qgemm::float16};
  for (const char* op : {"QdqConv", "QdqMatMul", "QdqGemm"}) t[fuse::fused_key(op)] = lower_qdq;
  t[fuse::fused_key("QdqAdd")] = lower_qdq_add;
  t[fuse::fused_key("QdqMul")] = lower_qdq_add;
  t[fuse::fused_key("QdqMaxPool")] = lower_qdq_pool;
  t[fuse::fused_key("QdqGlobalAveragePool")] = lower_qdq_pool;
  t[fuse::fused_key("QdqFlatten")] = lower_qdq_pool;
  t[fuse::fused_key("QdqTable")] = lower_qdq_table;
  t["QuantizeLinear"] = lower_quantize;
  t["DequantizeLinear"] = lower_dequantize;
  t["DynamicQuantizeLinear"] = lower_dynamic_quantize;
  t["MatMulInteger"] = lower_matmul_integer;
  t["QLinearMatMul"] = lower_qlinear_matmul;
  t["ConvInteger"] = lower_conv_integer;
  t["QLinearConv"] = lower_qlinear_conv;
  // The 4-bit and 8-bit weight-only kernels have float16 variants (quant.cmake); their scales,
  // bias and float zero points take the activation's dtype, as ops::matmul_nbits requires.
  t["com.microsoft.MatMulNBits"] = {lower_matmul_nbits, /*computes_in_half=*/true};
  t[fuse::fused_key("WeightOnlyMatMul")] = {lower_weight_only_matmul, /*computes_in_half=*/true};
}

}  // namespace vkgraph::onnx_import
