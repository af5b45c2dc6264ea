// Integer matmul and convolution (quant_gemm.comp): 8-bit operands, int32 sums, and for the
// QLinear ops one requantization in the epilogue. Zero points are subtracted as operands are
// loaded, so convolution padding (which ONNX fills with the zero point) adds nothing.
#include <algorithm>
#include <bit>

#include "quant_packed.h"
#include "vkgraph/ops/elementwise.h"

namespace vkgraph::ops {
namespace {

struct GemmDispatch {
  std::string shader;
  TensorRef a, b, y, a_zero, b_zero;
  int32_t rows = 0, cols = 0, depth = 0, a_zero_count = 1, b_zero_count = 1;
  uint32_t batches = 1;
  std::optional<Requant> requant;
  std::vector<int32_t> tail;  // the shader's last push constants (batch strides or conv window)
};

void add_gemm(ComputeGraph& g, const GemmDispatch& d, const std::string& op) {
  const bool a_signed = g.info(d.a).dtype == DType::Int8;
  const bool b_signed = g.info(d.b).dtype == DType::Int8;
  PushConstants pc;
  pc.add(d.rows).add(d.cols).add(d.depth);
  pc.add(int32_t{a_signed}).add(int32_t{b_signed}).add(d.a_zero_count).add(d.b_zero_count);
  std::vector<Binding> bindings = {{d.a, Access::Read},
                                   {d.b, Access::Read},
                                   {d.y, Access::Write},
                                   {d.a_zero, Access::Read},
                                   {d.b_zero, Access::Read}};
  if (d.requant) {
    const Requant& r = *d.requant;
    pc.add(r.a_scale_count).add(r.b_scale_count).add(r.range.min).add(r.range.max);
    pc.add(int32_t{r.bias.has_value()});
    TensorRef bias =
        r.bias ? *r.bias
               : g.add_constant(HostTensor::from(DType::Int32, {1}, std::vector<int32_t>{0}));
    bindings.insert(bindings.end(), {{r.a_scale, Access::Read},
                                     {r.b_scale, Access::Read},
                                     {r.y_scale, Access::Read},
                                     {r.y_zero, Access::Read},
                                     {bias, Access::Read}});
  }
  for (int32_t v : d.tail) pc.add(v);
  if (d.rows == 0 || d.cols == 0 || d.batches == 0) return;
  DispatchDesc desc;
  desc.shader = d.shader;
  desc.bindings = std::move(bindings);
  desc.groups = {static_cast<uint32_t>((d.cols + 63) / 64),
                 static_cast<uint32_t>((d.rows + 63) / 64), d.batches};
  check(desc.groups[1] <= 65535 && d.batches <= 65535, ErrorKind::Unsupported,
        op + ": " + std::to_string(d.rows) + " rows in " + std::to_string(d.batches) +
            " batches exceed the dispatch limits");
  desc.local = {256, 1, 1};
  desc.push = pc.take();
  desc.label = op;
  g.add_dispatch(std::move(desc));
}

// One scalar parameter (y's scale and zero point, a convolution's input zero point).
void require_scalar(ComputeGraph& g, TensorRef t, const std::string& op, const char* what) {
  check(numel(g.info(t).shape) == 1, ErrorKind::InvalidArgument,
        op + ": " + what + " must be a scalar (per-tensor), got " + shape_str(g.info(t).shape));
}

// An 8-bit operand, broadcast to `batch` + its matrix dims by copying when it is neither
// batched like the output nor a single matrix; returns its batch stride in elements.
int32_t batch_stride(ComputeGraph& g, TensorRef& t, const Shape& batch, const Shape& matrix,
                     const std::string& op) {
  const Shape s = g.info(t).shape;
  const Shape own(s.begin(), s.end() - 2);
  const int64_t size = matrix[0] * matrix[1];
  if (numel(own) == 1) return 0;
  if (own.size() != batch.size() || own != batch) {
    Shape full = batch;
    full.insert(full.end(), matrix.begin(), matrix.end());
    t = expand(g, t, full);
  }
  return checked_i32(size, op, "matrix size");
}

TensorRef integer_matmul(ComputeGraph& g, TensorRef a, TensorRef b, std::optional<TensorRef> a_zp,
                         std::optional<TensorRef> b_zp, std::optional<Requant> requant,
                         const std::string& op) {
  require_quantized(g, a, op, "a");
  require_quantized(g, b, op, "b");
  Shape sa = g.info(a).shape, sb = g.info(b).shape;
  check(!sa.empty() && !sb.empty(), ErrorKind::InvalidArgument,
        op + ": operands must not be scalars");
  const bool a_vector = sa.size() == 1, b_vector = sb.size() == 1;
  if (a_vector) sa.insert(sa.begin(), 1);
  if (b_vector) sb.push_back(1);
  const int64_t m = sa.end()[-2], k = sa.back(), n = sb.back();
  check(sb.end()[-2] == k, ErrorKind::InvalidArgument,
        op + ": inner dims differ: " + shape_str(g.info(a).shape) + " x " +
            shape_str(g.info(b).shape));
  a = g.add_view(a, sa);
  b = g.add_view(b, sb);
  const Shape batch_a(sa.begin(), sa.end() - 2), batch_b(sb.begin(), sb.end() - 2);
  GemmDispatch d;
  Shape out;
  if (numel(batch_b) == 1 && batch_b.size() <= batch_a.size()) {
    // One weight matrix: a's batch folds into its rows.
    out = batch_a;
    d.rows = checked_i32(checked_mul(numel(batch_a), m, op), op, "rows");
    d.tail = {0, 0};
  } else {
    out = broadcast_shapes(batch_a, batch_b, op.c_str());
    d.rows = checked_i32(m, op, "rows");
    d.batches = static_cast<uint32_t>(checked_i32(numel(out), op, "batch"));
    const int32_t a_stride = batch_stride(g, a, out, {m, k}, op);
    const int32_t b_stride = batch_stride(g, b, out, {k, n}, op);
    d.tail = {a_stride, b_stride};
  }
  const int64_t all_rows = checked_mul(numel(out), m, op);
  const int64_t all_cols = checked_mul(numel(out), n, op);
  out.push_back(m);
  out.push_back(n);
  d.cols = checked_i32(n, op, "columns");
  d.depth = checked_i32(k, op, "inner dim");
  d.a = a;
  d.b = b;
  d.a_zero = zero_point_i32(g, a_zp, op);
  d.a_zero_count = param_count(g, d.a_zero, m, all_rows, op, "a's zero point");
  if (b_zp) param_count(g, *b_zp, n, all_cols, op, "b's zero point");
  if (requant) {
    requant->a_scale_count = param_count(g, requant->a_scale, m, all_rows, op, "a's scale");
    requant->b_scale_count = param_count(g, requant->b_scale, n, all_cols, op, "b's scale");
    if (requant->bias)
      check(numel(g.info(*requant->bias).shape) == n &&
                g.info(*requant->bias).dtype == DType::Int32 && numel(batch_b) == 1,
            ErrorKind::InvalidArgument,
            op + ": bias must be int32 with one value per column (" + std::to_string(n) +
                ") of one weight matrix");
  }
  d.requant = requant;
  d.shader = requant ? "quant_matmul_requant" : "quant_matmul_i32";
  d.y = g.add_tensor(out, requant ? requant->stored() : DType::Int32);
  const bool one_matrix = d.batches == 1 && d.tail == std::vector<int32_t>{0, 0};
  std::optional<ByteTable> table_after;  // one the portable kernel does not apply
  if (!one_matrix ||
      !add_packed_matmul(g, {a, b, d.y, d.a_zero, b_zp, d.a_zero_count, d.rows, k, n}, requant,
                         op)) {
    if (requant && requant->table) {
      table_after = requant->table;
      requant->table.reset();
      d.requant = requant;
      d.y = g.add_tensor(out, requant->out);
    }
    d.b_zero = zero_point_i32(g, b_zp, op);
    d.b_zero_count = param_count(g, d.b_zero, n, all_cols, op, "b's zero point");
    add_gemm(g, d, op);
  }
  if (table_after) d.y = byte_table(g, d.y, table_after->bytes, table_after->out);
  Shape result = out;
  if (b_vector) result.pop_back();
  if (a_vector) result.erase(result.end() - (b_vector ? 1 : 2));
  return result == out ? d.y : g.add_view(d.y, result);
}

Requant make_requant(ComputeGraph& g, const QuantizedOperand& a, const QuantizedOperand& b,
                     const QuantizedOperand& y, DType out,
                     std::optional<std::array<int32_t, 2>> range, const std::string& op) {
  require_scalar(g, y.scale, op, "y's scale");
  if (y.zero_point) require_scalar(g, *y.zero_point, op, "y's zero point");
  Requant r;
  r.range = output_range(out, range, op);
  r.out = out;
  r.a_scale = scale_f32(g, a.scale, op);
  r.b_scale = scale_f32(g, b.scale, op);
  r.y_scale = scale_f32(g, y.scale, op);
  r.y_zero = zero_point_i32(g, y.zero_point, op);
  return r;
}

// A fused byte table's output type checked (Int8 or UInt8).
std::optional<ByteTable> checked_table(const std::optional<ByteTable>& t, const std::string& op) {
  check(!t || t->out == DType::Int8 || t->out == DType::UInt8, ErrorKind::InvalidArgument,
        op + ": a byte table's output must be Int8 or UInt8, got " +
            (t ? dtype_name(t->out) : std::string()));
  return t;
}

// A residual Add run after the convolution whose quantized output is y, its operands in the
// Add's order (qlinear_add's arithmetic depends on which is first).
TensorRef residual_add_after(ComputeGraph& g, TensorRef y, const ResidualAdd& r,
                             const QuantizedOperand& other) {
  const QuantizedOperand conv{y, r.conv_scale, r.conv_zero};
  return r.conv_second ? qlinear_add(g, other, conv, r.y_params, r.out, r.range)
                       : qlinear_add(g, conv, other, r.y_params, r.out, r.range);
}

TensorRef integer_conv(ComputeGraph& g, TensorRef x, TensorRef w, std::optional<TensorRef> x_zp,
                       std::optional<TensorRef> w_zp, const IntConvParams& params,
                       std::optional<Requant> requant, const std::string& op) {
  require_quantized(g, x, op, "x");
  require_quantized(g, w, op, "weight");
  Shape xs = g.info(x).shape, ws = g.info(w).shape;
  check((xs.size() == 3 || xs.size() == 4) && ws.size() == xs.size(), ErrorKind::Unsupported,
        op + ": needs x [N, C, L] or [N, C, H, W] and a weight of the same rank, got " +
            shape_str(xs) + " and " + shape_str(ws));
  IntConvParams p = params;
  const bool one_d = xs.size() == 3;
  if (one_d) {
    // 1-D is 2-D with a unit height: lift x, w and the attributes (given in index 0).
    xs.insert(xs.begin() + 2, 1);
    ws.insert(ws.begin() + 2, 1);
    p.strides = {1, params.strides[0]};
    p.dilations = {1, params.dilations[0]};
    p.pads = {0, params.pads[0], 0, params.pads[1]};
  }
  const int64_t batch = xs[0], channels = xs[1], h = xs[2], wd = xs[3];
  const int64_t out_ch = ws[0], kh = ws[2], kw = ws[3];
  check(p.groups > 0 && channels % p.groups == 0 && out_ch % p.groups == 0 &&
            ws[1] * p.groups == channels,
        ErrorKind::InvalidArgument,
        op + ": weight " + shape_str(g.info(w).shape) + " does not fit " +
            std::to_string(channels) + " input channels in " + std::to_string(p.groups) +
            " groups");
  for (int i = 0; i < 2; ++i)
    check(p.strides[i] > 0 && p.dilations[i] > 0 && p.pads[i] >= 0 && p.pads[i + 2] >= 0,
          ErrorKind::InvalidArgument, op + ": strides and dilations must be positive, pads >= 0");
  const int64_t ho = (h + p.pads[0] + p.pads[2] - p.dilations[0] * (kh - 1) - 1) / p.strides[0] + 1;
  const int64_t wo =
      (wd + p.pads[1] + p.pads[3] - p.dilations[1] * (kw - 1) - 1) / p.strides[1] + 1;
  check(ho > 0 && wo > 0, ErrorKind::InvalidArgument,
        op + ": the window does not fit the padded input " + shape_str(g.info(x).shape));
  GemmDispatch d;
  d.a = x;
  d.b = w;
  d.rows = checked_i32(checked_mul(ho, wo, op), op, "output pixels");
  d.cols = checked_i32(out_ch / p.groups, op, "channels");
  d.depth = checked_i32(checked_mul(ws[1], checked_mul(kh, kw, op), op), op, "window");
  d.batches = static_cast<uint32_t>(checked_i32(checked_mul(batch, p.groups, op), op, "batches"));
  if (x_zp) require_scalar(g, *x_zp, op, "x's zero point");
  d.a_zero = zero_point_i32(g, x_zp, op);
  if (w_zp) param_count(g, *w_zp, out_ch, out_ch, op, "weight's zero point");
  if (requant) {
    require_scalar(g, requant->a_scale, op, "x's scale");
    requant->b_scale_count = param_count(g, requant->b_scale, out_ch, out_ch, op, "weight's scale");
    if (requant->bias)
      check(numel(g.info(*requant->bias).shape) == out_ch &&
                g.info(*requant->bias).dtype == DType::Int32,
            ErrorKind::InvalidArgument,
            op + ": bias must be int32 with one value per output channel (" +
                std::to_string(out_ch) + ")");
  }
  Shape out = {batch, out_ch, ho, wo};
  // A residual Add the packed kernel does not fuse runs after the convolution.
  std::optional<ResidualAdd> residual_after;
  if (requant && requant->residual) {
    const Shape rs = g.info(requant->residual->add.residual.values).shape;
    check(rs == (one_d ? Shape{batch, out_ch, wo} : out), ErrorKind::InvalidArgument,
          op + ": the residual " + shape_str(rs) + " must have the output's shape");
  }
  d.requant = requant;
  d.shader = requant ? "quant_conv_requant" : "quant_conv_i32";
  for (int64_t v : {p.groups, ws[1], h, wd, kh, kw, ho, wo, p.strides[0], p.strides[1], p.pads[0],
                    p.pads[1], p.dilations[0], p.dilations[1]})
    d.tail.push_back(checked_i32(v, op, "convolution parameter"));
  PackedConv packed{x,
                    w,
                    TensorRef{},
                    d.a_zero,
                    w_zp,
                    batch,
                    channels,
                    h,
                    wd,
                    out_ch,
                    kh,
                    kw,
                    ho,
                    wo,
                    p.groups,
                    {p.strides[0], p.strides[1]},
                    {p.pads[0], p.pads[1]},
                    {p.dilations[0], p.dilations[1]}};
  if (requant && requant->residual && !packed_conv_fuses_residual(g, packed)) {
    residual_after = requant->residual->add;
    requant->residual.reset();
    d.requant = requant;
  }
  d.y = g.add_tensor(out, requant ? requant->stored() : DType::Int32);
  packed.y = d.y;
  // A byte table the portable kernel below does not apply runs after it.
  std::optional<ByteTable> table_after;
  if (!add_packed_conv(g, packed, requant, op)) {
    if (requant && requant->residual) {  // the tap table did not fit: no packed kernel
      residual_after = requant->residual->add;
      requant->residual.reset();
    }
    if (requant && requant->table) {
      table_after = requant->table;
      requant->table.reset();
    }
    if (residual_after || table_after) {
      d.requant = requant;
      d.y = g.add_tensor(out, requant->out);
    }
    d.b_zero = zero_point_i32(g, w_zp, op);
    d.b_zero_count = param_count(g, d.b_zero, out_ch, out_ch, op, "weight's zero point");
    add_gemm(g, d, op);
  }
  TensorRef y = d.y;
  if (residual_after) {
    const ResidualAdd& r = *residual_after;
    QuantizedOperand other = r.residual;
    if (one_d) other.values = g.add_view(other.values, out);
    y = residual_add_after(g, y, r, other);
  }
  if (table_after) y = byte_table(g, y, table_after->bytes, table_after->out);
  if (one_d) return g.add_view(y, {batch, out_ch, wo});
  return y;
}

// A scalar float32 or integer constant's value (zero points: 8-bit, or Int32 as the ONNX
// frontend holds them), or nothing (computed, or of another type).
std::optional<double> scalar_constant(ComputeGraph& g, std::optional<TensorRef> t, double absent) {
  if (!t) return absent;
  const HostTensor* v = g.constant_value(*t);
  if (!v || v->numel() != 1) return std::nullopt;
  if (v->dtype == DType::Float32) return v->data<float>()[0];
  if (v->dtype == DType::Int8 || v->dtype == DType::UInt8 || v->dtype == DType::Int32)
    return static_cast<double>(v->as_int(0));
  return std::nullopt;
}

// The packed kernel's form of a residual Add (quant_packed.glsl's add_residual parameters), or
// nothing where a parameter is not a constant: then qlinear_add runs after the convolution.
std::optional<ResidualRequant> residual_requant(ComputeGraph& g, const ResidualAdd& r,
                                                const std::string& op) {
  require_quantized(g, r.residual.values, op, "residual");
  const auto sc = scalar_constant(g, r.conv_scale, 0), zc = scalar_constant(g, r.conv_zero, 0);
  const auto sr = scalar_constant(g, r.residual.scale, 0),
             zr = scalar_constant(g, r.residual.zero_point, 0);
  const auto so = scalar_constant(g, r.y_params.scale, 0),
             zo = scalar_constant(g, r.y_params.zero_point, 0);
  for (TensorRef s : {r.conv_scale, r.residual.scale, r.y_params.scale})
    if (g.info(s).dtype != DType::Float32) return std::nullopt;
  if (!sc || !zc || !sr || !zr || !so || !zo) return std::nullopt;
  const QuantRange range = output_range(r.out, r.range, op);
  auto bits = [](double v) { return std::bit_cast<int32_t>(static_cast<float>(v)); };
  const std::array<int32_t, 12> params = {bits(*sc),
                                          static_cast<int32_t>(*zc),
                                          bits(*sr),
                                          static_cast<int32_t>(*zr),
                                          bits(*so),
                                          static_cast<int32_t>(*zo),
                                          range.min,
                                          range.max,
                                          int32_t{g.info(r.residual.values).dtype == DType::Int8},
                                          int32_t{r.conv_second},
                                          0,
                                          0};
  return ResidualRequant{r, params};
}

}  // namespace

TensorRef matmul_integer(ComputeGraph& g, TensorRef a, TensorRef b,
                         std::optional<TensorRef> a_zero_point,
                         std::optional<TensorRef> b_zero_point) {
  return integer_matmul(g, a, b, a_zero_point, b_zero_point, std::nullopt, "matmul_integer");
}

TensorRef qlinear_matmul(ComputeGraph& g, const QuantizedOperand& a, const QuantizedOperand& b,
                         const QuantizedOperand& y_params, DType out,
                         const RequantEpilogue& epilogue) {
  const std::string op = "qlinear_matmul";
  Requant r = make_requant(g, a, b, y_params, out, epilogue.range, op);
  r.bias = epilogue.bias;
  r.table = checked_table(epilogue.table, op);
  return integer_matmul(g, a.values, b.values, a.zero_point, b.zero_point, r, op);
}

TensorRef conv_integer(ComputeGraph& g, TensorRef x, TensorRef weight,
                       std::optional<TensorRef> x_zero_point, std::optional<TensorRef> w_zero_point,
                       const IntConvParams& params) {
  return integer_conv(g, x, weight, x_zero_point, w_zero_point, params, std::nullopt,
                      "conv_integer");
}

TensorRef qlinear_conv(ComputeGraph& g, const QuantizedOperand& x, const QuantizedOperand& w,
                       const QuantizedOperand& y_params, std::optional<TensorRef> bias,
                       const IntConvParams& params, DType out,
                       std::optional<std::array<int32_t, 2>> range,
                       const std::optional<ResidualAdd>& residual,
                       const std::optional<ByteTable>& table) {
  const std::string op = "qlinear_conv";
  Requant r = make_requant(g, x, w, y_params, out, range, op);
  r.bias = bias;
  r.table = checked_table(table, op);
  check(!(residual && table), ErrorKind::InvalidArgument,
        op + ": a residual Add and a byte table do not go together in one epilogue");
  if (residual) {
    // In the packed kernel's epilogue where it runs and the parameters are constants; else
    // the same values from a qlinear_add after the convolution.
    r.residual = residual_requant(g, *residual, op);
    if (!r.residual) {
      TensorRef y = integer_conv(g, x.values, w.values, x.zero_point, w.zero_point, params, r, op);
      return residual_add_after(g, y, *residual, residual->residual);
    }
  }
  return integer_conv(g, x.values, w.values, x.zero_point, w.zero_point, params, r, op);
}

TensorRef dynamic_quant_matmul(ComputeGraph& g, TensorRef x, TensorRef range, TensorRef w,
                               std::optional<TensorRef> w_zero, TensorRef w_scale,
                               const DynamicQuantEpilogue& e) {
  const std::string op = "dynamic_quant_matmul";
  const DType dtype = float_dtype(g, g.info(x).dtype, op);
  require_quantized(g, w, op, "w");
  const Shape xs = g.info(x).shape, ws = g.info(w).shape;
  check(!xs.empty() && ws.size() == 2 && xs.back() == ws[0], ErrorKind::InvalidArgument,
        op + ": needs x [..., K] and w [K, N], got " + shape_str(xs) + " and " + shape_str(ws));
  const int64_t k = ws[0], n = ws[1], rows = numel(xs) / std::max<int64_t>(k, 1);
  require_range(g, range, op);
  const Shape rs = g.info(range).shape;
  TensorRef scale = scale_f32(g, w_scale, op);
  const int32_t scale_count = param_count(g, scale, n, n, op, "w's scale");
  if (w_zero) param_count(g, *w_zero, n, n, op, "w's zero point");
  if (e.bias)
    check(g.info(*e.bias).dtype == dtype && numel(g.info(*e.bias).shape) == n,
          ErrorKind::InvalidArgument,
          op + ": bias must be " + dtype_name(dtype) + " (x's dtype) with one value per column (" +
              std::to_string(n) + ")");
  if (e.x_packed)
    check(g.info(*e.x_packed).dtype == DType::Int32 &&
              numel(g.info(*e.x_packed).shape) * 4 == numel(xs),
          ErrorKind::InvalidArgument,
          op + ": x_packed must be dynamic_quantize_packed's Int32 [numel(x) / 4], got " +
              shape_str(g.info(*e.x_packed).shape));
  Shape out = xs;
  out.back() = n;
  if (e.residual)
    check(g.info(*e.residual).dtype == dtype && g.info(*e.residual).shape == out,
          ErrorKind::InvalidArgument,
          op + ": the residual must be " + dtype_name(dtype) + " " + shape_str(out) + ", got " +
              dtype_name(g.info(*e.residual).dtype) + " " + shape_str(g.info(*e.residual).shape));
  int32_t act = 0;
  if (e.activation) {
    const auto code = epilogue_activation(*e.activation);
    check(code.has_value(), ErrorKind::Unsupported,
          op + ": activation UnaryOp #" + std::to_string(static_cast<int>(*e.activation)) +
              " cannot be fused (see ops::matmul_can_fuse)");
    act = static_cast<int32_t>(*code);
  }
  TensorRef y = g.add_tensor(out, dtype);
  PackedDynamicMatmul m;
  m.x = x;
  m.range = range;
  m.b = w;
  m.y = y;
  m.b_scale = scale;
  m.b_zero = w_zero;
  m.bias = e.bias;
  m.x_packed = e.x_packed;
  m.residual = e.residual;
  m.activation = act;
  m.activation_params = e.activation_params;
  m.range_count = checked_i32(rs[0], op, "partials");
  m.b_scale_count = scale_count;
  m.rows = rows;
  m.k = k;
  m.n = n;
  if (add_packed_dynamic_matmul(g, m, op)) return y;
  // The ops apart: the same values (the activation: the unary kernel's, within a few ulp of the
  // epilogue's), more dispatches and the 8-bit activation in memory. They compute in float32:
  // float16 operands are widened (exactly) and the result rounded once, as the GEMM stores it.
  if (dtype == DType::Float16) {
    DynamicQuantEpilogue e32 = e;
    if (e.bias) e32.bias = cast(g, *e.bias, DType::Float32);
    if (e.residual) e32.residual = cast(g, *e.residual, DType::Float32);
    return cast(g,
                dynamic_quant_matmul(g, cast(g, x, DType::Float32), range, w, w_zero, w_scale, e32),
                DType::Float16);
  }
  DynamicQuantized q = dynamic_quantize_linear(g, x, range);
  TensorRef acc = matmul_integer(g, q.y, w, q.zero_point, w_zero);
  TensorRef r = binary(g, BinaryOp::Mul, cast(g, acc, DType::Float32),
                       binary(g, BinaryOp::Mul, q.scale, scale));
  if (e.bias) r = binary(g, BinaryOp::Add, r, *e.bias);
  if (e.residual) r = binary(g, BinaryOp::Add, r, *e.residual);
  return e.activation ? unary(g, *e.activation, r, e.activation_params) : r;
}

}  // namespace vkgraph::ops
