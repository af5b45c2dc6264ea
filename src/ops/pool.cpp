// Pooling: windowed max/average over NCHW or NCDHW, one kernel with 2-D windows lifted to 3-D
// (one invocation per output), and global max/average over all spatial dims (one workgroup per
// (n, c) row).
#include "vkgraph/shaders/pool.h"

#include <algorithm>
#include <bit>
#include <limits>

#include "op_util.h"
#include "quant_util.h"
#include "vkgraph/ops.h"
#include "vkgraph/ops/max_pool_indices.h"

namespace vkgraph::ops {
namespace {

// The last `n` values of a lifted window attribute, as the caller wrote them.
std::string dims_str(const std::array<int64_t, 3>& v, size_t n) {
  std::string s = "[";
  for (size_t i = 3 - n; i < 3; ++i) s += (i > 3 - n ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

// ONNX output size. In ceil_mode the last window may hang past the padding, but a window that
// would start inside the end padding is dropped.
int64_t pool_out_size(int64_t in, int64_t k, int64_t stride, int64_t pad_begin, int64_t pad_end,
                      int64_t dilation, bool ceil_mode, const std::string& op, const char* dim) {
  int64_t window = dilation * (k - 1) + 1;
  int64_t span = in + pad_begin + pad_end - window;
  check(span >= 0, ErrorKind::InvalidArgument,
        op + ": window " + std::to_string(window) + " exceeds padded " + dim + " " +
            std::to_string(in + pad_begin + pad_end));
  if (!ceil_mode) return span / stride + 1;
  int64_t out = (span + stride - 1) / stride + 1;
  if ((out - 1) * stride >= in + pad_begin) --out;
  return out;
}

// Returns x's shape after checking its rank and that 32-bit indices suffice.
Shape checked_input(ComputeGraph& g, TensorRef x, bool rank_exact, size_t rank,
                    const std::string& op, const char* layout) {
  Shape s = g.info(x).shape;
  check(rank_exact ? s.size() == rank : s.size() >= rank, ErrorKind::InvalidArgument,
        op + ": input must be " + layout + ", got " + shape_str(s));
  check(numel(s) <= std::numeric_limits<int32_t>::max(), ErrorKind::Unsupported,
        op + ": input " + shape_str(s) + " has more than 2^31 elements");
  return s;
}

// Every windowed pooling, with its window lifted to 3-D; `spatial` is the caller's spatial
// rank and `layout` its input layout, for messages.
// With `indices` (max only), also makes and fills MaxPool's Int64 Indices output.
TensorRef pool_nd(ComputeGraph& g, TensorRef x, size_t spatial, const char* layout,
                  const Pool3dParams& params, bool is_max, TensorRef* indices = nullptr) {
  const std::string op =
      std::string(is_max ? "max_pool" : "avg_pool") + std::to_string(spatial) + "d";
  // 8-bit values (a QDQ MaxPool, fuse_qdq.h) are compared as integers: max of bytes.
  const bool bytes = is_quantized(g.info(x).dtype);
  if (bytes) {
    check(is_max && !indices, ErrorKind::Unsupported,
          op + ": 8-bit input is supported by MaxPool without indices only");
    require_8bit_storage(g, op);
  }
  const DType dtype = bytes ? DType::Float32 : float_dtype(g, g.info(x).dtype, op);
  const Shape xs = checked_input(g, x, true, spatial + 2, op, layout);
  const auto& [kernel, strides, pads, dil, ceil_mode, include_pad] = params;
  auto positive = [](const std::array<int64_t, 3>& v) {
    return v[0] >= 1 && v[1] >= 1 && v[2] >= 1;
  };
  check(positive(kernel), ErrorKind::InvalidArgument,
        op + ": kernel " + dims_str(kernel, spatial) + " must be positive");
  check(positive(strides), ErrorKind::InvalidArgument,
        op + ": strides " + dims_str(strides, spatial) + " must be positive");
  check(positive(dil), ErrorKind::InvalidArgument,
        op + ": dilations " + dims_str(dil, spatial) + " must be positive");
  for (int64_t pad : pads)
    check(pad >= 0, ErrorKind::InvalidArgument, op + ": pads must be non-negative");
  // Input and output sizes with unit leading spatial dims.
  std::array<int64_t, 3> in{1, 1, 1}, out{};
  std::copy(xs.begin() + 2, xs.end(), in.end() - spatial);
  const char* names[3] = {"depth", "height", "width"};
  for (size_t i = 0; i < 3; ++i)
    out[i] = pool_out_size(in[i], kernel[i], strides[i], pads[i], pads[i + 3], dil[i], ceil_mode,
                           op, names[i]);
  Shape ys(xs.begin(), xs.begin() + 2);
  ys.insert(ys.end(), out.end() - spatial, out.end());
  TensorRef y = g.add_tensor(ys, g.info(x).dtype);

  PushConstants pc;
  pc.add(static_cast<int32_t>(numel(ys)));
  for (const std::array<int64_t, 3>& v : {in, out, kernel, strides, dil})
    for (int64_t e : v) pc.add(static_cast<int32_t>(e));
  for (int64_t e : pads) pc.add(static_cast<int32_t>(e));
  pc.add(static_cast<int32_t>(include_pad ? 1 : 0));
  if (bytes) pc.add(int32_t{g.info(x).dtype == DType::Int8});
  DispatchDesc d;
  if (bytes)
    d.shader = "quant_max_pool";
  else
    d.shader = declared(shaders::pool::find(is_max ? (indices ? shaders::pool::Kind::MaxPoolIndices
                                                              : shaders::pool::Kind::MaxPool)
                                                   : shaders::pool::Kind::AvgPool,
                                            dtype),
                        op);
  d.bindings = {{x, Access::Read}, {y, Access::Write}};
  if (indices) {
    *indices = g.add_tensor(ys, DType::Int64);
    d.bindings.push_back({*indices, Access::Write});
  }
  d.groups = groups_for(static_cast<uint64_t>(numel(ys)));
  d.local = {kLocal, 1, 1};
  d.push = pc.take();
  d.label = op;
  g.add_dispatch(std::move(d));
  return y;
}

// A 2-D window as a 3-D one with a trivial depth.
Pool3dParams lift(const Pool2dParams& p) {
  Pool3dParams r;
  r.kernel = {1, p.kernel[0], p.kernel[1]};
  r.strides = {1, p.strides[0], p.strides[1]};
  r.pads = {0, p.pads[0], p.pads[1], 0, p.pads[2], p.pads[3]};
  r.dilations = {1, p.dilations[0], p.dilations[1]};
  r.ceil_mode = p.ceil_mode;
  r.count_include_pad = p.count_include_pad;
  return r;
}

TensorRef global_pool(ComputeGraph& g, TensorRef x, bool is_max) {
  const std::string op = is_max ? "global_max_pool" : "global_avg_pool";
  const DType dtype = float_dtype(g, g.info(x).dtype, op);
  const Shape xs = checked_input(g, x, false, 3, op, "[N, C, D1, ...]");
  check(numel(xs) > 0, ErrorKind::InvalidArgument, op + ": input " + shape_str(xs) + " is empty");
  Shape ys(xs.size(), 1);
  ys[0] = xs[0];
  ys[1] = xs[1];
  const int64_t rows = xs[0] * xs[1], cols = numel(xs) / rows;
  TensorRef y = g.add_tensor(ys, g.info(x).dtype);

  // A power of two (row_reduce.glsl), no wider than a short row needs.
  auto local = static_cast<uint32_t>(
      std::clamp<uint64_t>(std::bit_ceil(static_cast<uint64_t>(cols)), 32, 256));
  PushConstants pc;
  pc.add(static_cast<int32_t>(rows)).add(static_cast<int32_t>(cols));
  DispatchDesc d;
  d.shader = declared(
      shaders::pool::find(
          is_max ? shaders::pool::Kind::GlobalMaxPool : shaders::pool::Kind::GlobalAvgPool, dtype),
      op);
  d.bindings = {{x, Access::Read}, {y, Access::Write}};
  d.groups = groups_for(static_cast<uint64_t>(rows), 1);
  d.local = {local, 1, 1};
  d.push = pc.take();
  d.label = op;
  g.add_dispatch(std::move(d));
  return y;
}

}  // namespace

TensorRef max_pool2d(ComputeGraph& g, TensorRef x, const Pool2dParams& params) {
  return pool_nd(g, x, 2, "[N, C, H, W]", lift(params), true);
}
TensorRef avg_pool2d(ComputeGraph& g, TensorRef x, const Pool2dParams& params) {
  return pool_nd(g, x, 2, "[N, C, H, W]", lift(params), false);
}
TensorRef max_pool3d(ComputeGraph& g, TensorRef x, const Pool3dParams& params) {
  return pool_nd(g, x, 3, "[N, C, D, H, W]", params, true);
}
TensorRef avg_pool3d(ComputeGraph& g, TensorRef x, const Pool3dParams& params) {
  return pool_nd(g, x, 3, "[N, C, D, H, W]", params, false);
}

MaxPoolWithIndices max_pool_with_indices(ComputeGraph& g, TensorRef x, const Pool3dParams& params) {
  const size_t rank = g.info(x).shape.size();
  check(rank >= 3 && rank <= 5, ErrorKind::InvalidArgument,
        "max_pool_with_indices: input must be [N, C, D1, ...] with 1 to 3 spatial dims, got " +
            shape_str(g.info(x).shape));
  const size_t spatial = rank - 2;
  // Lifted dims must be trivial: unit kernel, stride and dilation, no pads.
  for (size_t i = 0; i < 3 - spatial; ++i)
    check(params.kernel[i] == 1 && params.strides[i] == 1 && params.dilations[i] == 1 &&
              params.pads[i] == 0 && params.pads[i + 3] == 0,
          ErrorKind::InvalidArgument,
          "max_pool_with_indices: the window has more dims than the input's " +
              std::to_string(spatial));
  // The 3-D kernel reads a rank-5 view; 1-D and 2-D inputs get unit leading spatial dims.
  Shape xs = g.info(x).shape, lifted(xs.begin(), xs.begin() + 2);
  lifted.insert(lifted.end(), 3 - spatial, 1);
  lifted.insert(lifted.end(), xs.begin() + 2, xs.end());
  TensorRef indices;
  TensorRef y = pool_nd(g, g.add_view(x, lifted), 3, "[N, C, D, H, W]", params, true, &indices);
  Shape ys = g.info(y).shape, out(ys.begin(), ys.begin() + 2);
  out.insert(out.end(), ys.end() - spatial, ys.end());
  return {g.add_view(y, out), g.add_view(indices, out)};
}

TensorRef global_avg_pool(ComputeGraph& g, TensorRef x) {
  return global_pool(g, x, false);
}
TensorRef global_max_pool(ComputeGraph& g, TensorRef x) {
  return global_pool(g, x, true);
}

}  // namespace vkgraph::ops
