// Linear quantization, dequantization, DynamicQuantizeLinear and conversions between 8-bit and
// int32 tensors (quant.comp, quant_dynamic.comp). Quantized tensors are bytes; their signedness
// travels as a push constant, so one shader serves Int8 and UInt8.
#include <algorithm>
#include <bit>

#include "quant_util.h"

namespace vkgraph::ops {

void require_8bit_storage(ComputeGraph& g, const std::string& op) {
  check(g.context().features().storage_buffer_8bit, ErrorKind::Unsupported,
        op + ": quantized tensors need storageBuffer8BitAccess, which " +
            std::string(g.context().properties().deviceName) + " lacks");
}

void require_quantized(ComputeGraph& g, TensorRef t, const std::string& op, const char* what) {
  const TensorInfo ti = g.info(t);
  check(is_quantized(ti.dtype), ErrorKind::Unsupported,
        op + ": " + what + " is " + dtype_name(ti.dtype) + ", expected int8 or uint8");
  require_8bit_storage(g, op);
}

QuantRange quant_range(DType dtype) {
  if (dtype == DType::Int8) return {-128, 127};
  if (dtype == DType::UInt8) return {0, 255};
  throw Error(ErrorKind::Unsupported,
              std::string("quantized type must be int8 or uint8, not ") + dtype_name(dtype));
}

QuantRange output_range(DType dtype, std::optional<std::array<int32_t, 2>> range,
                        const std::string& op) {
  const QuantRange full = quant_range(dtype);
  if (!range) return full;
  const QuantRange r{std::clamp((*range)[0], full.min, full.max),
                     std::clamp((*range)[1], full.min, full.max)};
  check(r.min <= r.max, ErrorKind::InvalidArgument,
        op + ": the fused output range [" + std::to_string((*range)[0]) + ", " +
            std::to_string((*range)[1]) + "] is empty");
  return r;
}

TensorRef zero_point_i32(ComputeGraph& g, std::optional<TensorRef> zero_point,
                         const std::string& op) {
  if (!zero_point)
    return g.add_constant(HostTensor::from(DType::Int32, {}, std::vector<int32_t>{0}));
  require_zero_point_type(g, *zero_point, op);
  if (g.info(*zero_point).dtype == DType::Int32) return *zero_point;
  return convert_quantized(g, *zero_point, DType::Int32);
}

void require_zero_point_type(ComputeGraph& g, TensorRef zero_point, const std::string& op) {
  const DType dtype = g.info(zero_point).dtype;
  check(is_quantized(dtype) || dtype == DType::Int32, ErrorKind::Unsupported,
        op + ": zero point is " + dtype_name(dtype) + ", expected int8, uint8 or int32");
}

TensorRef scale_f32(ComputeGraph& g, TensorRef scale, const std::string& op) {
  const DType dtype = g.info(scale).dtype;
  if (dtype == DType::Float32) return scale;
  check(dtype == DType::Float16, ErrorKind::Unsupported,
        op + ": scale is " + dtype_name(dtype) + ", expected float32 or float16");
  return cast(g, scale, DType::Float32);
}

int32_t param_count(ComputeGraph& g, TensorRef param, int64_t expect, int64_t total,
                    const std::string& op, const char* what) {
  const int64_t n = numel(g.info(param).shape);
  if (n == 1) return 1;
  // expect is a dim's length and may be 0 (an empty tensor): then no count but 1 fits.
  check(n > 0 && expect > 0 && n % expect == 0 && total % n == 0, ErrorKind::InvalidArgument,
        op + ": " + what + " has " + std::to_string(n) + " values, expected 1 or one per " +
            (expect > 0 ? std::to_string(expect) : std::string("0")) + "-long dim");
  return checked_i32(n, op, what);
}

namespace {

// The scale (as float32) and zero point (as int32) of `q`, both one value, appended to
// `bindings`: the kernels that take them read element 0.
void bind_per_tensor(ComputeGraph& g, const QuantizedOperand& q, const std::string& op,
                     std::vector<Binding>& bindings) {
  for (std::optional<TensorRef> t : {std::optional<TensorRef>(q.scale), q.zero_point})
    if (t)
      check(numel(g.info(*t).shape) == 1, ErrorKind::InvalidArgument,
            op + ": scales and zero points must be per tensor, got " + shape_str(g.info(*t).shape));
  bindings.push_back({scale_f32(g, q.scale, op), Access::Read});
  bindings.push_back({zero_point_i32(g, q.zero_point, op), Access::Read});
}

// How a scale (and its zero point) map onto x's elements: quant.comp's param_index.
struct ParamLayout {
  int32_t mode = 0, axis_len = 1, inner = 1, block = 1, blocks = 1;
};

ParamLayout param_layout(const Shape& x, const Shape& scale, std::optional<Shape> zero,
                         const QuantAxis& q, const std::string& op) {
  if (zero)
    check(*zero == scale || numel(*zero) == numel(scale), ErrorKind::InvalidArgument,
          op + ": zero point shape " + shape_str(*zero) + " differs from scale shape " +
              shape_str(scale));
  ParamLayout l;
  if (q.block_size == 0 && numel(scale) == 1 && scale.size() <= 1) return l;
  check(!x.empty(), ErrorKind::InvalidArgument,
        op + ": a scalar input needs a scalar scale, got " + shape_str(scale));
  const int axis = normalize_axis(q.axis, x.size(), op);
  const int64_t len = x[axis];
  int64_t inner = 1;
  for (size_t d = axis + 1; d < x.size(); ++d) inner = checked_mul(inner, x[d], op);
  l.axis_len = checked_i32(len, op, "axis length");
  l.inner = checked_i32(inner, op, "inner size");
  if (q.block_size == 0) {
    check(scale.size() == 1 && scale[0] == len, ErrorKind::InvalidArgument,
          op + ": per-axis scale must be 1-D of length " + std::to_string(len) + " (axis " +
              std::to_string(axis) + " of " + shape_str(x) + "), got " + shape_str(scale));
    l.mode = 1;
    return l;
  }
  check(q.block_size > 0, ErrorKind::InvalidArgument,
        op + ": block_size must be positive, got " + std::to_string(q.block_size));
  Shape want = x;
  want[axis] = (len + q.block_size - 1) / q.block_size;
  check(scale == want, ErrorKind::InvalidArgument,
        op + ": blocked scale must have shape " + shape_str(want) + " (block_size " +
            std::to_string(q.block_size) + " along axis " + std::to_string(axis) + "), got " +
            shape_str(scale));
  l.mode = 2;
  l.block = checked_i32(q.block_size, op, "block_size");
  l.blocks = checked_i32(want[axis], op, "blocks");
  return l;
}

void push_layout(PushConstants& pc, const ParamLayout& l) {
  pc.add(l.mode).add(l.axis_len).add(l.inner).add(l.block).add(l.blocks);
}

}  // namespace

TensorRef quantize_linear(ComputeGraph& g, TensorRef x, TensorRef scale,
                          std::optional<TensorRef> zero_point, DType out, QuantAxis axis,
                          std::optional<std::array<int32_t, 2>> narrower) {
  const std::string op = "quantize_linear";
  const TensorInfo xi = g.info(x);
  const std::string suffix = shader_suffix(float_dtype(g, xi.dtype, op));
  const QuantRange range = output_range(out, narrower, op);
  require_8bit_storage(g, op);
  std::optional<Shape> zero_shape;
  if (zero_point) zero_shape = g.info(*zero_point).shape;
  const ParamLayout l = param_layout(xi.shape, g.info(scale).shape, zero_shape, axis, op);
  TensorRef s = scale_f32(g, scale, op), z = zero_point_i32(g, zero_point, op);
  TensorRef y = g.add_tensor(xi.shape, out);
  const int64_t n = numel(xi.shape);
  PushConstants pc;
  pc.add(checked_i32(n, op, "element count")).add(int32_t{0}).add(range.min).add(range.max);
  push_layout(pc, l);
  add_elementwise(g, "quant_quantize_" + suffix,
                  {{x, Access::Read}, {s, Access::Read}, {z, Access::Read}, {y, Access::Write}}, n,
                  pc.take(), op);
  return y;
}

TensorRef dequantize_linear(ComputeGraph& g, TensorRef x, TensorRef scale,
                            std::optional<TensorRef> zero_point, QuantAxis axis) {
  const std::string op = "dequantize_linear";
  const TensorInfo xi = g.info(x);
  check(is_quantized(xi.dtype) || xi.dtype == DType::Int32, ErrorKind::Unsupported,
        op + ": input is " + dtype_name(xi.dtype) + ", expected int8, uint8 or int32");
  if (is_quantized(xi.dtype)) require_8bit_storage(g, op);
  std::optional<Shape> zero_shape;
  if (zero_point) zero_shape = g.info(*zero_point).shape;
  const ParamLayout l = param_layout(xi.shape, g.info(scale).shape, zero_shape, axis, op);
  TensorRef s = scale_f32(g, scale, op), z = zero_point_i32(g, zero_point, op);
  TensorRef y = g.add_tensor(xi.shape, DType::Float32);
  const int64_t n = numel(xi.shape);
  PushConstants pc;
  pc.add(checked_i32(n, op, "element count")).add(int32_t{xi.dtype == DType::Int8});
  pc.add(int32_t{0}).add(int32_t{0});
  push_layout(pc, l);
  add_elementwise(g, xi.dtype == DType::Int32 ? "quant_dequantize_i32" : "quant_dequantize_u8",
                  {{x, Access::Read}, {s, Access::Read}, {z, Access::Read}, {y, Access::Write}}, n,
                  pc.take(), op);
  return y;
}

TensorRef convert_quantized(ComputeGraph& g, TensorRef x, DType to) {
  const std::string op = "cast";
  const TensorInfo xi = g.info(x);
  check((is_quantized(xi.dtype) || xi.dtype == DType::Int32) &&
            (is_quantized(to) || to == DType::Int32),
        ErrorKind::Unsupported,
        op + ": no conversion from " + std::string(dtype_name(xi.dtype)) + " to " + dtype_name(to) +
            " (8-bit tensors convert to and from int32)");
  if (xi.dtype == to) return g.add_view(x, xi.shape);
  require_8bit_storage(g, op);
  if (is_quantized(xi.dtype) && is_quantized(to))
    return convert_quantized(g, convert_quantized(g, x, DType::Int32), to);
  TensorRef y = g.add_tensor(xi.shape, to);
  const int64_t n = numel(xi.shape);
  PushConstants pc;
  pc.add(checked_i32(n, op, "element count")).add(int32_t{xi.dtype == DType::Int8});
  add_elementwise(g, to == DType::Int32 ? "quant_widen" : "quant_narrow",
                  {{x, Access::Read}, {y, Access::Write}}, n, pc.take(), op);
  return y;
}

namespace {

// qlinear_add and qlinear_mul: one kernel (quant_add.comp) of a and b, b repeated over a's
// trailing elements where b_inner > 1.
TensorRef qlinear_binary(ComputeGraph& g, const QuantizedOperand& a, const QuantizedOperand& b,
                         const QuantizedOperand& y_params, DType out,
                         std::optional<std::array<int32_t, 2>> range, bool mul) {
  const std::string op = mul ? "qlinear_mul" : "qlinear_add";
  require_quantized(g, a.values, op, "a");
  require_quantized(g, b.values, op, "b");
  const Shape shape = g.info(a.values).shape, b_shape = g.info(b.values).shape;
  check(b_shape == shape || (mul && qlinear_mul_broadcasts(shape, b_shape)),
        ErrorKind::InvalidArgument,
        op + ": a " + shape_str(shape) + " and b " + shape_str(b_shape) +
            (mul ? " must have one shape, or b a's with trailing dims 1" : " must have one shape"));
  const int64_t b_inner = numel(b_shape) == 0 ? 1 : numel(shape) / numel(b_shape);
  const QuantRange r = output_range(out, range, op);
  std::vector<Binding> bindings = {{a.values, Access::Read}, {b.values, Access::Read}};
  for (const QuantizedOperand* q : {&a, &b, &y_params}) bind_per_tensor(g, *q, op, bindings);
  TensorRef y = g.add_tensor(shape, out);
  bindings.push_back({y, Access::Write});
  const int64_t n = numel(shape);
  PushConstants pc;
  pc.add(checked_i32(n, op, "element count"));
  pc.add(int32_t{g.info(a.values).dtype == DType::Int8});
  pc.add(int32_t{g.info(b.values).dtype == DType::Int8});
  pc.add(r.min).add(r.max);
  pc.add(checked_i32(std::max<int64_t>(b_inner, 1), op, "b's repeat"));
  add_elementwise(g, mul ? "quant_mul" : "quant_add", std::move(bindings), n, pc.take(), op);
  return y;
}

}  // namespace

bool qlinear_mul_broadcasts(const Shape& a, const Shape& b) {
  if (a.size() != b.size()) return false;
  size_t d = 0;
  while (d < a.size() && a[d] == b[d]) ++d;  // the leading dims b has whole
  for (; d < a.size(); ++d)
    if (b[d] != 1) return false;
  return true;
}

TensorRef qlinear_add(ComputeGraph& g, const QuantizedOperand& a, const QuantizedOperand& b,
                      const QuantizedOperand& y_params, DType out,
                      std::optional<std::array<int32_t, 2>> range) {
  return qlinear_binary(g, a, b, y_params, out, range, false);
}

TensorRef qlinear_mul(ComputeGraph& g, const QuantizedOperand& a, const QuantizedOperand& b,
                      const QuantizedOperand& y_params, DType out,
                      std::optional<std::array<int32_t, 2>> range) {
  return qlinear_binary(g, a, b, y_params, out, range, true);
}

TensorRef byte_table(ComputeGraph& g, TensorRef x, const std::array<uint8_t, 256>& table,
                     DType out) {
  const std::string op = "byte_table";
  require_quantized(g, x, op, "x");
  check(out == DType::Int8 || out == DType::UInt8, ErrorKind::InvalidArgument,
        op + ": the output must be Int8 or UInt8, got " + dtype_name(out));
  const Shape shape = g.info(x).shape;
  HostTensor t(DType::UInt8, {256});
  std::copy(table.begin(), table.end(), t.bytes.begin());
  TensorRef y = g.add_tensor(shape, out);
  const int64_t n = numel(shape);
  PushConstants pc;
  pc.add(checked_i32(n, op, "element count"));
  add_elementwise(
      g, "quant_table",
      {{x, Access::Read}, {g.add_constant(std::move(t)), Access::Read}, {y, Access::Write}}, n,
      pc.take(), op);
  return y;
}

TensorRef qlinear_global_avg_pool(ComputeGraph& g, const QuantizedOperand& x,
                                  const QuantizedOperand& y_params, DType out) {
  const std::string op = "qlinear_global_avg_pool";
  require_quantized(g, x.values, op, "x");
  const Shape xs = g.info(x.values).shape;
  check(xs.size() >= 3 && numel(xs) > 0, ErrorKind::InvalidArgument,
        op + ": x must be a non-empty [N, C, D1, ...], got " + shape_str(xs));
  const int64_t rows = xs[0] * xs[1], cols = numel(xs) / rows;
  // Partial sums of up to cols * 255 in magnitude must be exact in float32.
  check(cols * 255 < (int64_t{1} << 24), ErrorKind::Unsupported,
        op + ": " + std::to_string(cols) + " elements per channel are too many to sum exactly");
  const QuantRange r = quant_range(out);
  std::vector<Binding> bindings = {{x.values, Access::Read}};
  TensorRef y = g.add_tensor(
      [&] {
        Shape ys(xs.size(), 1);
        ys[0] = xs[0];
        ys[1] = xs[1];
        return ys;
      }(),
      out);
  bindings.push_back({y, Access::Write});
  for (const QuantizedOperand* q : {&x, &y_params}) bind_per_tensor(g, *q, op, bindings);
  // A power of two (row_reduce.glsl), no wider than a short row needs.
  const auto local = static_cast<uint32_t>(
      std::clamp<uint64_t>(std::bit_ceil(static_cast<uint64_t>(cols)), 32, 256));
  PushConstants pc;
  pc.add(checked_i32(rows, op, "rows")).add(checked_i32(cols, op, "columns"));
  pc.add(int32_t{g.info(x.values).dtype == DType::Int8}).add(r.min).add(r.max);
  DispatchDesc d;
  d.shader = "quant_global_avg_pool";
  d.bindings = std::move(bindings);
  d.groups = groups_for(static_cast<uint64_t>(rows), 1);
  d.local = {local, 1, 1};
  d.push = pc.take();
  d.label = op;
  g.add_dispatch(std::move(d));
  return y;
}

TensorRef dynamic_quant_range(ComputeGraph& g, TensorRef x) {
  const std::string op = "dynamic_quantize_linear";
  const TensorInfo xi = g.info(x);
  const std::string suffix = shader_suffix(float_dtype(g, xi.dtype, op));
  const int64_t n = numel(xi.shape);
  // quant_dynamic.comp's LOCAL; its UNROLL (spec constant 3): elements per invocation and chunk.
  constexpr uint32_t kLocal = 256, kUnroll = 16;
  // A chunk a workgroup where that spreads the tensor, few enough for one workgroup to finish.
  const uint32_t groups = static_cast<uint32_t>(
      std::clamp<int64_t>((n + kLocal * kUnroll - 1) / (kLocal * kUnroll), 1, 1024));
  TensorRef partial = g.add_tensor({groups, 2}, DType::Float32);
  DispatchDesc minmax;
  minmax.shader = "quant_minmax_" + suffix;
  minmax.bindings = {{x, Access::Read}, {partial, Access::Write}};
  minmax.groups = {groups, 1, 1};
  minmax.local = {kLocal, 1, 1};
  minmax.spec = {kUnroll};
  minmax.push = PushConstants().add(checked_i32(n, op, "element count")).take();
  minmax.label = op + " range";
  g.add_dispatch(std::move(minmax));
  return partial;
}

void require_range(ComputeGraph& g, TensorRef range, const std::string& op) {
  const Shape rs = g.info(range).shape;
  check(rs.size() == 2 && rs[1] == 2 && rs[0] > 0 && g.info(range).dtype == DType::Float32,
        ErrorKind::InvalidArgument,
        op + ": range must be the Float32 [partials, 2] of dynamic_quant_range, got " +
            shape_str(rs));
}

std::optional<TensorRef> dynamic_quantize_packed(ComputeGraph& g, TensorRef x, TensorRef range) {
  const std::string op = "dynamic_quantize_linear";
  const std::string suffix = shader_suffix(float_dtype(g, g.info(x).dtype, op));
  require_range(g, range, op);
  const int64_t n = numel(g.info(x).shape);
  // Without the packed GEMM (qgemm.packed = 0) no layer would read it.
  if (tuned(g, "qdyn.prequant", 1) == 0 || tuned(g, "qgemm.packed", 1) == 0 || n % 4 != 0 || n == 0)
    return std::nullopt;
  // quant_dynamic.comp's LOCAL; its UNROLL (spec constant 3): words per invocation and chunk.
  constexpr uint32_t kLocal = 256, kUnroll = 4;
  const int64_t words = n / 4;
  // A chunk of words a workgroup: each workgroup first reduces the partials itself.
  const uint32_t groups = static_cast<uint32_t>(
      std::clamp<int64_t>((words + kLocal * kUnroll - 1) / (kLocal * kUnroll), 1, 65535));
  TensorRef y = g.add_tensor({words}, DType::Int32);
  DispatchDesc d;
  d.shader = "quant_dynamic_pack_" + suffix;
  d.bindings = {{range, Access::Read}, {x, Access::Read}, {y, Access::Write}};
  d.groups = {groups, 1, 1};
  d.local = {kLocal, 1, 1};
  d.spec = {kUnroll};
  d.push = PushConstants()
               .add(checked_i32(g.info(range).shape[0], op, "partials"))
               .add(checked_i32(words, op, "element count"))
               .take();
  d.label = op + " (packed)";
  g.add_dispatch(std::move(d));
  return y;
}

DynamicQuantized dynamic_quantize_linear(ComputeGraph& g, TensorRef x, TensorRef range) {
  const std::string op = "dynamic_quantize_linear";
  require_dtype(g, x, DType::Float32, op);
  require_8bit_storage(g, op);
  require_range(g, range, op);
  const Shape rs = g.info(range).shape;
  DynamicQuantized r;
  r.scale = g.add_tensor({}, DType::Float32);
  r.zero_point = g.add_tensor({}, DType::UInt8);
  TensorRef zero = g.add_tensor({}, DType::Int32);
  DispatchDesc params;
  params.shader = "quant_dynamic_params";
  params.bindings = {{range, Access::Read},
                     {r.scale, Access::Write},
                     {zero, Access::Write},
                     {r.zero_point, Access::Write}};
  params.groups = {1, 1, 1};
  params.local = {256, 1, 1};
  params.push = PushConstants().add(checked_i32(rs[0], op, "partials")).take();
  params.label = op + " parameters";
  g.add_dispatch(std::move(params));

  r.y = quantize_linear(g, x, r.scale, zero, DType::UInt8);
  return r;
}

DynamicQuantized dynamic_quantize_linear(ComputeGraph& g, TensorRef x) {
  require_dtype(g, x, DType::Float32, "dynamic_quantize_linear");
  require_8bit_storage(g, "dynamic_quantize_linear");
  return dynamic_quantize_linear(g, x, dynamic_quant_range(g, x));
}

}  // namespace vkgraph::ops
