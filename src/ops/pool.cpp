// Pooling: windowed max/average over NCHW (one invocation per output) and global max/average
// over all spatial dims (one workgroup per (n, c) row).
#include <algorithm>
#include <bit>
#include <limits>

#include "op_util.h"
#include "vkgraph/ops.h"

namespace vkgraph::ops {
namespace {

std::string dims_str(const std::array<int64_t, 2>& v) {
  return "[" + std::to_string(v[0]) + ", " + std::to_string(v[1]) + "]";
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

// Returns x's shape after checking the dtype, the rank and that 32-bit indices suffice.
Shape checked_input(ComputeGraph& g, TensorRef x, bool rank_exact, size_t rank,
                    const std::string& op, const char* layout) {
  require_dtype(g, x, DType::Float32, op);
  Shape s = g.info(x).shape;
  check(rank_exact ? s.size() == rank : s.size() >= rank, ErrorKind::InvalidArgument,
        op + ": input must be " + layout + ", got " + shape_str(s));
  check(numel(s) <= std::numeric_limits<int32_t>::max(), ErrorKind::Unsupported,
        op + ": input " + shape_str(s) + " has more than 2^31 elements");
  return s;
}

TensorRef pool2d(ComputeGraph& g, TensorRef x, const Pool2dParams& params, bool is_max) {
  const std::string op = is_max ? "max_pool2d" : "avg_pool2d";
  const Shape xs = checked_input(g, x, true, 4, op, "[N, C, H, W]");
  const auto& [kernel, strides, pads, dil, ceil_mode, include_pad] = params;
  check(kernel[0] >= 1 && kernel[1] >= 1, ErrorKind::InvalidArgument,
        op + ": kernel " + dims_str(kernel) + " must be positive");
  check(strides[0] >= 1 && strides[1] >= 1, ErrorKind::InvalidArgument,
        op + ": strides " + dims_str(strides) + " must be positive");
  check(dil[0] >= 1 && dil[1] >= 1, ErrorKind::InvalidArgument,
        op + ": dilations " + dims_str(dil) + " must be positive");
  for (int64_t pad : pads)
    check(pad >= 0, ErrorKind::InvalidArgument, op + ": pads must be non-negative");
  int64_t out_h = pool_out_size(xs[2], kernel[0], strides[0], pads[0], pads[2], dil[0], ceil_mode,
                                op, "height");
  int64_t out_w =
      pool_out_size(xs[3], kernel[1], strides[1], pads[1], pads[3], dil[1], ceil_mode, op, "width");
  Shape ys{xs[0], xs[1], out_h, out_w};
  TensorRef y = g.add_tensor(ys, DType::Float32);

  PushConstants pc;
  for (int64_t v : {numel(ys), xs[2], xs[3], out_h, out_w, kernel[0], kernel[1], strides[0],
                    strides[1], dil[0], dil[1], pads[0], pads[1], pads[2], pads[3]})
    pc.add(static_cast<int32_t>(v));
  pc.add(static_cast<int32_t>(include_pad ? 1 : 0));
  DispatchDesc d;
  d.shader = op + "_f32";
  d.bindings = {{x, Access::Read}, {y, Access::Write}};
  d.groups = groups_for(static_cast<uint64_t>(numel(ys)));
  d.local = {kLocal, 1, 1};
  d.push = pc.take();
  d.label = op;
  g.add_dispatch(std::move(d));
  return y;
}

TensorRef global_pool(ComputeGraph& g, TensorRef x, bool is_max) {
  const std::string op = is_max ? "global_max_pool" : "global_avg_pool";
  const Shape xs = checked_input(g, x, false, 3, op, "[N, C, D1, ...]");
  check(numel(xs) > 0, ErrorKind::InvalidArgument, op + ": input " + shape_str(xs) + " is empty");
  Shape ys(xs.size(), 1);
  ys[0] = xs[0];
  ys[1] = xs[1];
  const int64_t rows = xs[0] * xs[1], cols = numel(xs) / rows;
  TensorRef y = g.add_tensor(ys, DType::Float32);

  // A power of two (row_reduce.glsl), no wider than a short row needs.
  auto local = static_cast<uint32_t>(
      std::clamp<uint64_t>(std::bit_ceil(static_cast<uint64_t>(cols)), 32, 256));
  PushConstants pc;
  pc.add(static_cast<int32_t>(rows)).add(static_cast<int32_t>(cols));
  DispatchDesc d;
  d.shader = op + "_f32";
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
  return pool2d(g, x, params, true);
}

TensorRef avg_pool2d(ComputeGraph& g, TensorRef x, const Pool2dParams& params) {
  return pool2d(g, x, params, false);
}

TensorRef global_avg_pool(ComputeGraph& g, TensorRef x) {
  return global_pool(g, x, false);
}
TensorRef global_max_pool(ComputeGraph& g, TensorRef x) {
  return global_pool(g, x, true);
}

}  // namespace vkgraph::ops
