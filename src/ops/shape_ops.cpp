// Reshape, transpose, concat, split, slice and expand: all of them either reuse the bytes (a
// view), copy contiguous runs (buffer copies), or run the one strided-copy shader.
#include "shape_ops.h"

#include <cstring>
#include <limits>

#include "vkgraph/ops.h"
#include "vkgraph/shaders/strided_copy.h"

namespace vkgraph::ops {

std::array<uint32_t, 2> value_words(DType dtype, double value, const std::string& op) {
  double lo = dtype == DType::Int32 ? -2147483648.0 : -9223372036854775808.0;
  if ((dtype == DType::Int32 || dtype == DType::Int64) && !(value >= lo && value < -lo))
    throw Error(ErrorKind::InvalidArgument,
                op + ": value " + std::to_string(value) + " does not fit " + dtype_name(dtype));
  uint64_t bits = 0;
  if (dtype == DType::Float32) {
    float f = static_cast<float>(value);
    uint32_t w;
    std::memcpy(&w, &f, 4);
    bits = w;
  } else if (dtype == DType::Float16) {
    bits = float_to_half(static_cast<float>(value));
  } else if (dtype == DType::Bool) {
    bits = value != 0.0;
  } else {
    bits = static_cast<uint64_t>(static_cast<int64_t>(value));
  }
  return {static_cast<uint32_t>(bits), static_cast<uint32_t>(bits >> 32)};
}

uint32_t elem_bits(ComputeGraph& g, DType dtype, const std::string& op) {
  switch (dtype) {
    case DType::Float32:
    case DType::Int32:
      return 32;
    case DType::Int64:
      return 64;
    case DType::Float16:
      check(g.context().features().storage_buffer_16bit, ErrorKind::Unsupported,
            op + ": Float16 tensors need storageBuffer16BitAccess, which " +
                g.context().properties().deviceName + " lacks");
      return 16;
    case DType::Bool:
    case DType::Int8:
    case DType::UInt8:
      check(g.context().features().storage_buffer_8bit, ErrorKind::Unsupported,
            op + ": " + dtype_name(dtype) + " tensors need storageBuffer8BitAccess, which " +
                g.context().properties().deviceName + " lacks");
      return 8;
    default:
      throw Error(ErrorKind::Unsupported,
                  op + ": dtype " + dtype_name(dtype) + " is not supported");
  }
}

DType typed_dtype(ComputeGraph& g, DType dtype, const std::string& op, bool allow_bool) {
  switch (dtype) {
    case DType::Float32:
    case DType::Int32:
      return dtype;
    case DType::Int64:
      check(g.context().features().shader_int64, ErrorKind::Unsupported,
            op + ": Int64 tensors need shaderInt64, which " + g.context().properties().deviceName +
                " lacks");
      return dtype;
    case DType::Bool:
      if (allow_bool) {
        elem_bits(g, dtype, op);
        return dtype;
      }
      [[fallthrough]];
    default:
      throw Error(ErrorKind::Unsupported,
                  op + ": dtype " + dtype_name(dtype) + " is not supported");
  }
}

void require_bool(ComputeGraph& g, TensorRef t, const std::string& op, const std::string& what) {
  DType dtype = g.info(t).dtype;
  if (dtype != DType::Bool)
    throw Error(ErrorKind::InvalidArgument,
                op + ": " + what + " must be Bool, not " + dtype_name(dtype));
  elem_bits(g, dtype, op);
}

void require_index_dtype(ComputeGraph& g, TensorRef t, const std::string& op) {
  DType dtype = g.info(t).dtype;
  if (dtype != DType::Int32 && dtype != DType::Int64)
    throw Error(ErrorKind::InvalidArgument,
                op + ": indices must be Int32 or Int64, not " + dtype_name(dtype));
}

int32_t checked_i32(int64_t v, const std::string& op, const char* what) {
  if (v < std::numeric_limits<int32_t>::min() || v > std::numeric_limits<int32_t>::max())
    throw Error(ErrorKind::Unsupported,
                op + ": " + what + " " + std::to_string(v) + " does not fit in 32 bits");
  return static_cast<int32_t>(v);
}

void add_elementwise(ComputeGraph& g, vk::ShaderRef shader, std::vector<Binding> bindings,
                     int64_t n, std::vector<uint8_t> push, std::string label,
                     std::vector<uint32_t> spec) {
  if (n == 0) return;
  checked_i32(n, label, "element count");
  DispatchDesc d;
  d.shader = std::move(shader);
  d.bindings = std::move(bindings);
  d.groups = groups_for(static_cast<uint64_t>(n));
  d.local = {kLocal, 1, 1};
  d.spec = std::move(spec);
  d.push = std::move(push);
  d.label = std::move(label);
  g.add_dispatch(std::move(d));
}

namespace {

// Drops size-1 dims and merges neighbours that are contiguous on both sides, so most copies
// become one run (a buffer copy) or a low-rank shader with fewer divisions per element.
StridedCopy simplified(const StridedCopy& c) {
  StridedCopy out{{}, {}, {}, c.src_offset, c.dst_offset};
  for (size_t d = 0; d < c.shape.size(); ++d) {
    if (c.shape[d] == 1) continue;
    if (!out.shape.empty() && out.src_stride.back() == c.src_stride[d] * c.shape[d] &&
        out.dst_stride.back() == c.dst_stride[d] * c.shape[d]) {
      out.shape.back() *= c.shape[d];
      out.src_stride.back() = c.src_stride[d];
      out.dst_stride.back() = c.dst_stride[d];
    } else {
      out.shape.push_back(c.shape[d]);
      out.src_stride.push_back(c.src_stride[d]);
      out.dst_stride.push_back(c.dst_stride[d]);
    }
  }
  return out;
}

bool one_run(const StridedCopy& s) {
  return s.shape.empty() || (s.shape.size() == 1 && s.src_stride[0] == 1 && s.dst_stride[0] == 1);
}

std::vector<int32_t> i32s(const std::vector<int64_t>& v, const std::string& op, const char* what) {
  std::vector<int32_t> out;
  for (int64_t x : v) out.push_back(checked_i32(x, op, what));
  return out;
}

}  // namespace

void add_strided_copy(ComputeGraph& g, TensorRef src, TensorRef dst, const StridedCopy& copy,
                      const std::string& label) {
  DType dtype = g.info(src).dtype;
  uint32_t bits = elem_bits(g, dtype, label);
  int64_t n = numel(copy.shape);
  if (n == 0) return;
  StridedCopy s = simplified(copy);
  uint64_t esize = dtype_size(dtype);
  if (one_run(s)) {
    g.add_copy(src, dst, s.src_offset * esize, s.dst_offset * esize, n * esize, label);
    return;
  }
  if (s.shape.size() > static_cast<size_t>(kMaxRank))
    throw Error(ErrorKind::Unsupported, label + ": copy of shape " + shape_str(copy.shape) +
                                            " needs rank " + std::to_string(s.shape.size()) +
                                            " after merging dims, above " +
                                            std::to_string(kMaxRank));
  PushConstants pc;
  pc.add(checked_i32(n, label, "element count")).add(static_cast<int32_t>(s.shape.size()));
  pc.add(checked_i32(s.src_offset, label, "offset"))
      .add(checked_i32(s.dst_offset, label, "offset"));
  pc.add_array(i32s(s.shape, label, "dim"), kMaxRank);
  pc.add_array(i32s(s.src_stride, label, "stride"), kMaxRank);
  pc.add_array(i32s(s.dst_stride, label, "stride"), kMaxRank);
  add_elementwise(g, declared(shaders::strided_copy::find(bits), label),
                  {{src, Access::Read}, {dst, Access::Write}}, n, pc.take(), label);
}

TensorRef read_strided(ComputeGraph& g, TensorRef src, const Shape& shape,
                       const std::vector<int64_t>& src_stride, int64_t src_offset,
                       const std::string& label) {
  const TensorInfo si = g.info(src);
  elem_bits(g, si.dtype, label);
  StridedCopy copy{shape, src_stride, shapes::contiguous_strides(shape), src_offset, 0};
  if (src_offset == 0 && numel(shape) == numel(si.shape) && one_run(simplified(copy)))
    return g.add_view(src, shape);
  TensorRef out = g.add_tensor(shape, si.dtype);
  add_strided_copy(g, src, out, copy, label);
  return out;
}

void check_strided_read(ComputeGraph& g, TensorRef t, const Shape& shape,
                        const std::vector<int64_t>& strides, int64_t offset,
                        const std::string& op) {
  const int64_t stored = numel(g.info(t).shape);
  check(strides.size() == shape.size(), ErrorKind::InvalidArgument,
        op + ": " + std::to_string(strides.size()) + " strides for " + shape_str(shape));
  int64_t last = offset;
  bool empty = false;
  for (size_t i = 0; i < shape.size(); ++i) {
    check(strides[i] >= 0 && shape[i] >= 0, ErrorKind::InvalidArgument,
          op + ": negative stride or dim in " + shape_str(shape));
    empty |= shape[i] == 0;
    last += (shape[i] - 1) * strides[i];
  }
  check(offset >= 0 && (empty || last < stored), ErrorKind::InvalidArgument,
        op + ": " + shape_str(shape) + " at offset " + std::to_string(offset) + " reads past the " +
            std::to_string(stored) + " elements of " + shape_str(g.info(t).shape));
}

TensorRef as_strided(ComputeGraph& g, TensorRef x, const Shape& shape,
                     const std::vector<int64_t>& strides, int64_t offset) {
  check_strided_read(g, x, shape, strides, offset, "as_strided");
  return read_strided(g, x, shape, strides, offset, "view");
}

TensorRef reshape(ComputeGraph& g, TensorRef x, const Shape& shape, bool allowzero) {
  return g.add_view(x, shapes::resolve_reshape(g.info(x).shape, shape, allowzero, "reshape"));
}

std::vector<int64_t> resolve_perm(const Shape& shape, std::vector<int64_t> perm,
                                  const std::string& op) {
  return shapes::resolve_perm(shape, std::move(perm), op);
}

TensorRef transpose(ComputeGraph& g, TensorRef x, const std::vector<int64_t>& perm) {
  const TensorInfo xi = g.info(x);
  const size_t rank = xi.shape.size();
  const std::vector<int64_t> p = resolve_perm(xi.shape, perm, "transpose");
  std::vector<int64_t> strides = shapes::contiguous_strides(xi.shape), src_stride(rank);
  Shape out(rank);
  for (size_t d = 0; d < rank; ++d) {
    out[d] = xi.shape[p[d]];
    src_stride[d] = strides[p[d]];
  }
  return read_strided(g, x, out, src_stride, 0, "transpose");
}

TensorRef concat(ComputeGraph& g, const std::vector<TensorRef>& inputs, int64_t axis) {
  std::vector<StridedView> parts;
  for (TensorRef t : inputs) {
    const Shape shape = g.info(t).shape;
    parts.push_back({t, shape, shapes::contiguous_strides(shape), 0});
  }
  return concat_views(g, parts, axis);
}

TensorRef concat_views(ComputeGraph& g, const std::vector<StridedView>& parts, int64_t axis) {
  check(!parts.empty(), ErrorKind::InvalidArgument, "concat: no inputs");
  const Shape& first = parts[0].shape;
  const DType dtype = g.info(parts[0].tensor).dtype;
  if (first.empty()) throw Error(ErrorKind::InvalidArgument, "concat: inputs are scalars");
  int a = normalize_axis(axis, first.size(), "concat");
  Shape out = first;
  out[a] = 0;
  for (const StridedView& v : parts) {
    const TensorInfo ti = g.info(v.tensor);
    if (ti.dtype != dtype || !shapes::concat_compatible(first, v.shape, a))
      throw Error(ErrorKind::InvalidArgument,
                  "concat: input '" + ti.name + "' " + shape_str(v.shape) + " " +
                      dtype_name(ti.dtype) + " does not match " + shape_str(first) + " " +
                      dtype_name(dtype) + " outside axis " + std::to_string(a));
    check_strided_read(g, v.tensor, v.shape, v.strides, v.offset, "concat");
    out[a] += v.shape[a];
  }
  elem_bits(g, dtype, "concat");
  TensorRef result = g.add_tensor(out, dtype);
  std::vector<int64_t> out_strides = shapes::contiguous_strides(out);
  int64_t offset = 0;
  for (const StridedView& v : parts) {
    add_strided_copy(g, v.tensor, result,
                     {v.shape, v.strides, out_strides, v.offset, offset * out_strides[a]},
                     "concat");
    offset += v.shape[a];
  }
  return result;
}

std::vector<TensorRef> split(ComputeGraph& g, TensorRef x, int64_t axis,
                             const std::vector<int64_t>& sizes) {
  const TensorInfo xi = g.info(x);
  int a = normalize_axis(axis, xi.shape.size(), "split");
  bool valid = !sizes.empty() && !xi.shape.empty();
  int64_t total = 0;
  for (int64_t s : sizes) {
    valid = valid && s >= 0 && s <= std::numeric_limits<int64_t>::max() - total;
    if (valid) total += s;
  }
  if (!valid || total != xi.shape[a])
    throw Error(ErrorKind::InvalidArgument, "split: sizes " + shape_str(sizes) +
                                                " do not split axis " + std::to_string(a) + " of " +
                                                shape_str(xi.shape));
  std::vector<int64_t> strides = shapes::contiguous_strides(xi.shape);
  std::vector<TensorRef> outputs;
  int64_t offset = 0;
  for (int64_t s : sizes) {
    Shape piece = xi.shape;
    piece[a] = s;
    outputs.push_back(read_strided(g, x, piece, strides, offset * strides[a], "split"));
    offset += s;
  }
  return outputs;
}

TensorRef slice(ComputeGraph& g, TensorRef x, const std::vector<int64_t>& starts,
                const std::vector<int64_t>& ends, const std::vector<int64_t>& axes,
                const std::vector<int64_t>& steps) {
  const TensorInfo xi = g.info(x);
  size_t rank = xi.shape.size();
  size_t n = starts.size();
  if (ends.size() != n || (!axes.empty() && axes.size() != n) ||
      (!steps.empty() && steps.size() != n))
    throw Error(ErrorKind::InvalidArgument,
                "slice: starts, ends, axes and steps differ in length (" + std::to_string(n) +
                    ", " + std::to_string(ends.size()) + ", " + std::to_string(axes.size()) + ", " +
                    std::to_string(steps.size()) + ")");
  Shape out = xi.shape;
  std::vector<int64_t> strides = shapes::contiguous_strides(xi.shape), src_stride = strides;
  std::vector<bool> seen(rank, false);
  int64_t offset = 0;
  for (size_t i = 0; i < n; ++i) {
    int a = normalize_axis(axes.empty() ? static_cast<int64_t>(i) : axes[i], rank, "slice");
    if (seen[a])
      throw Error(ErrorKind::InvalidArgument, "slice: axis " + std::to_string(a) + " repeated");
    seen[a] = true;
    int64_t step = steps.empty() ? 1 : steps[i];
    if (step == 0)
      throw Error(ErrorKind::InvalidArgument, "slice: step 0 on axis " + std::to_string(a));
    const shapes::SliceRange r = shapes::resolve_slice(xi.shape[a], starts[i], ends[i], step);
    out[a] = r.count;
    offset += r.first * strides[a];
    // A dim of one element or none never steps; 0 keeps it out of the stride arithmetic.
    src_stride[a] = r.count > 1 ? strides[a] * r.step : 0;
  }
  return read_strided(g, x, out, src_stride, offset, "slice");
}

TensorRef expand(ComputeGraph& g, TensorRef x, const Shape& shape) {
  const TensorInfo xi = g.info(x);
  for (int64_t d : shape)
    if (d < 0)
      throw Error(ErrorKind::InvalidArgument, "expand: negative dim in " + shape_str(shape));
  Shape out = broadcast_shapes(xi.shape, shape, "expand");
  return read_strided(g, x, out, shapes::broadcast_strides(xi.shape, out), 0, "expand");
}

}  // namespace vkgraph::ops
