// Normalization: inference batch norm is elementwise; layer, instance and group norm share one
// row kernel (norm.comp) that differs only in how rows are cut and how the affine parameters
// are indexed.
#include "vkgraph/shaders/norm.h"

#include <algorithm>
#include <bit>
#include <limits>

#include "op_util.h"
#include "vkgraph/ops.h"

namespace vkgraph::ops {
namespace {

// Returns x's shape after checking its minimum rank and that 32-bit indices suffice. Dtypes
// are checked where the shader is chosen (float_dtype): x's and the parameters' must match.
Shape checked_input(ComputeGraph& g, TensorRef x, size_t min_rank, const std::string& op,
                    const char* layout) {
  Shape s = g.info(x).shape;
  check(s.size() >= min_rank, ErrorKind::InvalidArgument,
        op + ": input must be " + layout + ", got " + shape_str(s));
  check(numel(s) <= std::numeric_limits<int32_t>::max(), ErrorKind::Unsupported,
        op + ": input " + shape_str(s) + " has more than 2^31 elements");
  return s;
}

void check_per_channel(ComputeGraph& g, TensorRef t, int64_t channels, const std::string& op,
                       const char* role) {
  Shape s = g.info(t).shape;
  check(s == Shape{channels}, ErrorKind::InvalidArgument,
        op + ": " + role + " must be [" + std::to_string(channels) + "], got " + shape_str(s));
}

int64_t product(Shape::const_iterator begin, Shape::const_iterator end) {
  int64_t p = 1;
  for (auto it = begin; it != end; ++it) p *= *it;
  return p;
}

// norm.comp reads parameter `(affine_base + col) / div % mod`.
struct AffineIndex {
  int64_t div = 1;
  int64_t mod = 1;
};

// A parameter broadcast (right-aligned) to the normalized dims `dims` is indexable by
// div/mod when its non-1 dims form one run matching `dims`: [D] or [S, D] for [S, D], [S, 1].
AffineIndex broadcast_index(ComputeGraph& g, TensorRef param, const Shape& dims,
                            const std::string& op, const char* role) {
  const Shape ps = g.info(param).shape;
  const std::string fail = op + ": " + role + " " + shape_str(ps) +
                           " does not broadcast to the normalized dims " + shape_str(dims);
  check(ps.size() <= dims.size(), ErrorKind::InvalidArgument, fail);
  Shape aligned(dims.size() - ps.size(), 1);
  aligned.insert(aligned.end(), ps.begin(), ps.end());
  size_t lo = dims.size(), hi = 0;
  for (size_t i = 0; i < dims.size(); ++i) {
    check(aligned[i] == 1 || aligned[i] == dims[i], ErrorKind::InvalidArgument, fail);
    if (aligned[i] != 1) lo = std::min(lo, i), hi = i + 1;
  }
  if (lo >= hi) return {};
  check(std::equal(aligned.begin() + lo, aligned.begin() + hi, dims.begin() + lo),
        ErrorKind::Unsupported,
        op + ": " + role + " " + shape_str(ps) + " broadcasts over dims in the middle of " +
            shape_str(dims));
  return {product(dims.begin() + hi, dims.end()), product(dims.begin() + lo, dims.begin() + hi)};
}

struct RowLayout {
  int64_t rows, cols, groups;
  AffineIndex scale, bias;
  // norm.comp's x_inner, y_inner: 0 for contiguous rows, else x (y) is [N, cols, inner].
  int64_t x_inner = 0, y_inner = 0;
};

// norm_subgroup.comp's launch for `layout`, where it applies: contiguous rows whose scale and
// bias are plain [cols] vectors, short enough for one subgroup's registers (GROUPS <= 8 groups
// of four columns a lane: 1024 columns at subgroups of 32), on a device with subgroup sums.
// Knobs: norm.subgroup = 0 keeps norm.comp (2: the kernel's path for subgroups that are not
// full, for tests); norm.subgroup_rows rows (subgroups) a workgroup.
struct SubgroupRows {
  uint32_t rows_per_group, groups;
  bool by_workgroup;
};
std::optional<SubgroupRows> subgroup_rows(ComputeGraph& g, const RowLayout& layout, bool has_bias) {
  constexpr int64_t kMaxGroups = 8;
  const vk::DeviceFeatures& f = g.context().features();
  auto plain = [&](const AffineIndex& a) { return a.div == 1 && a.mod == layout.cols; };
  const int64_t width = f.subgroup_size;
  if (layout.x_inner || layout.y_inner || layout.groups != 1 || !plain(layout.scale) ||
      (has_bias && !plain(layout.bias)) || !f.subgroup_arithmetic || width < 4 || width > 128 ||
      layout.cols > 4 * kMaxGroups * width)
    return std::nullopt;
  const uint32_t knob = tuned(g, "norm.subgroup", 1);
  if (knob == 0) return std::nullopt;
  const uint32_t rows = std::clamp(tuned(g, "norm.subgroup_rows", 2), 1u, 256u / f.subgroup_size);
  return SubgroupRows{rows, static_cast<uint32_t>((layout.cols + 4 * width - 1) / (4 * width)),
                      knob == 2};
}

// `range`, where given, receives a Float32 [rows, 2] tensor of each row's (min, max) of y as
// stored, 0 included: dynamic_quant_range's partials. Both row kernels write them.
TensorRef norm_rows(ComputeGraph& g, const std::string& op, TensorRef x, TensorRef scale,
                    std::optional<TensorRef> bias, const RowLayout& layout, float epsilon,
                    bool rms = false, TensorRef* range = nullptr,
                    std::optional<Shape> y_shape = std::nullopt) {
  const DType dtype = float_dtype(g, x, {scale, bias.value_or(scale)}, op);
  TensorRef y = g.add_tensor(y_shape.value_or(g.info(x).shape), g.info(x).dtype);
  DispatchDesc d;
  d.bindings = {{x, Access::Read},
                {scale, Access::Read},
                {bias.value_or(scale), Access::Read},
                {y, Access::Write}};
  if (range) {
    check(layout.rows > 0, ErrorKind::InvalidArgument,
          op + ": input " + shape_str(g.info(x).shape) + " has no rows to take the range of");
    *range = g.add_tensor({layout.rows, 2}, DType::Float32);
    d.bindings.push_back({*range, Access::Write});
  }
  PushConstants pc;
  d.label = op;
  if (auto sub = subgroup_rows(g, layout, bias.has_value())) {
    d.shader = declared(
        shaders::norm::find(shaders::norm::Kind::SubgroupRows, dtype, range != nullptr), op);
    pc.add(static_cast<int32_t>(layout.rows)).add(static_cast<int32_t>(layout.cols)).add(epsilon);
    d.groups = groups_for(static_cast<uint64_t>(layout.rows), sub->rows_per_group);
    d.local = {sub->rows_per_group * g.context().features().subgroup_size, 1, 1};
    d.spec = {bias ? 1u : 0u,
              rms ? 1u : 0u,
              sub->rows_per_group,
              sub->groups,
              layout.cols % 4 == 0 ? 1u : 0u,
              sub->by_workgroup ? 1u : 0u};
    d.label += " (subgroup rows)";
  } else {
    d.shader =
        declared(shaders::norm::find(shaders::norm::Kind::Rows, dtype, range != nullptr), op);
    for (int64_t v : {layout.rows, layout.cols, layout.groups, layout.scale.div, layout.scale.mod,
                      layout.bias.div, layout.bias.mod})
      pc.add(static_cast<int32_t>(v));
    pc.add(epsilon);
    pc.add(static_cast<int32_t>(layout.x_inner)).add(static_cast<int32_t>(layout.y_inner));
    d.groups = groups_for(static_cast<uint64_t>(layout.rows), 1);
    // A power of two (row_reduce.glsl), no wider than a short row needs.
    d.local = {static_cast<uint32_t>(std::clamp<uint64_t>(
                   std::bit_ceil(static_cast<uint64_t>(layout.cols)), 32, 256)),
               1, 1};
    d.spec = {bias ? 1u : 0u, rms ? 1u : 0u, layout.x_inner || layout.y_inner ? 1u : 0u};
  }
  d.push = pc.take();
  g.add_dispatch(std::move(d));
  return y;
}

// LayerNormalization's and RMSNormalization's rows: one per index of x's dims before `axis`,
// normalised over the rest, which scale (and bias) broadcast to.
RowLayout trailing_rows(ComputeGraph& g, const std::string& op, TensorRef x, int64_t axis,
                        TensorRef scale, std::optional<TensorRef> bias) {
  const Shape xs = checked_input(g, x, 1, op, "at least 1-D");
  const int a = normalize_axis(axis, xs.size(), op);
  const Shape dims(xs.begin() + a, xs.end());
  RowLayout layout{product(xs.begin(), xs.begin() + a), numel(dims), 1, {}, {}};
  check(layout.cols > 0, ErrorKind::InvalidArgument,
        op + ": normalized dims " + shape_str(dims) + " are empty");
  layout.scale = broadcast_index(g, scale, dims, op, "scale");
  if (bias) layout.bias = broadcast_index(g, *bias, dims, op, "bias");
  return layout;
}

}  // namespace

TensorRef batch_norm_inference(ComputeGraph& g, TensorRef x, TensorRef scale, TensorRef bias,
                               TensorRef mean, TensorRef var, float epsilon) {
  const std::string op = "batch_norm";
  const Shape xs = checked_input(g, x, 2, op, "[N, C, ...]");
  const int64_t channels = xs[1];
  check_per_channel(g, scale, channels, op, "scale");
  check_per_channel(g, bias, channels, op, "bias");
  check_per_channel(g, mean, channels, op, "mean");
  check_per_channel(g, var, channels, op, "var");
  const DType dtype = float_dtype(g, x, {scale, bias, mean, var}, op);
  TensorRef y = g.add_tensor(xs, g.info(x).dtype);
  const int64_t total = numel(xs);
  PushConstants pc;
  pc.add(static_cast<int32_t>(total)).add(static_cast<int32_t>(channels));
  pc.add(static_cast<int32_t>(product(xs.begin() + 2, xs.end()))).add(epsilon);
  DispatchDesc d;
  d.shader = declared(shaders::norm::find(shaders::norm::Kind::Batch, dtype, false), op);
  d.bindings = {{x, Access::Read},    {scale, Access::Read}, {bias, Access::Read},
                {mean, Access::Read}, {var, Access::Read},   {y, Access::Write}};
  d.groups = groups_for(static_cast<uint64_t>(total));
  d.local = {kLocal, 1, 1};
  d.push = pc.take();
  d.label = op;
  g.add_dispatch(std::move(d));
  return y;
}

TensorRef layer_norm(ComputeGraph& g, TensorRef x, TensorRef scale, std::optional<TensorRef> bias,
                     int64_t axis, float epsilon) {
  const std::string op = "layer_norm";
  const RowLayout layout = trailing_rows(g, op, x, axis, scale, bias);
  return norm_rows(g, op, x, scale, bias, layout, epsilon);
}

TensorRef channel_layer_norm(ComputeGraph& g, TensorRef x, TensorRef scale,
                             std::optional<TensorRef> bias, float epsilon, bool channels_last) {
  const std::string op = "channel_layer_norm";
  const Shape xs = checked_input(g, x, 3, op, "[N, C, D1, ...]");
  const int64_t spatial = product(xs.begin() + 2, xs.end());
  check(xs[1] > 0 && spatial > 0, ErrorKind::InvalidArgument,
        op + ": input " + shape_str(xs) + " is empty");
  RowLayout layout{xs[0] * spatial, xs[1], 1, {}, {}};
  layout.scale = broadcast_index(g, scale, {xs[1]}, op, "scale");
  if (bias) layout.bias = broadcast_index(g, *bias, {xs[1]}, op, "bias");
  layout.x_inner = spatial;
  Shape ys = xs;
  if (channels_last) {
    ys.erase(ys.begin() + 1);
    ys.push_back(xs[1]);
  } else {
    layout.y_inner = spatial;
  }
  return norm_rows(g, op, x, scale, bias, layout, epsilon, /*rms=*/false, nullptr, ys);
}

NormWithRange layer_norm_with_range(ComputeGraph& g, TensorRef x, TensorRef scale,
                                    std::optional<TensorRef> bias, int64_t axis, float epsilon) {
  const std::string op = "layer_norm";
  // float16 y would need the range of the rounded values, and a driver may fold the rounding
  // away between the store and the range (NVIDIA 580 did: partials of the unrounded values).
  check(g.info(x).dtype == DType::Float32, ErrorKind::Unsupported,
        op + ": the range partials are computed for Float32 tensors only, got " +
            dtype_name(g.info(x).dtype));
  const RowLayout layout = trailing_rows(g, op, x, axis, scale, bias);
  NormWithRange r;
  r.y = norm_rows(g, op, x, scale, bias, layout, epsilon, /*rms=*/false, &r.range);
  return r;
}

TensorRef rms_norm(ComputeGraph& g, TensorRef x, TensorRef scale, int64_t axis, float epsilon) {
  const std::string op = "rms_norm";
  const RowLayout layout = trailing_rows(g, op, x, axis, scale, std::nullopt);
  return norm_rows(g, op, x, scale, std::nullopt, layout, epsilon, /*rms=*/true);
}

TensorRef instance_norm(ComputeGraph& g, TensorRef x, TensorRef scale, TensorRef bias,
                        float epsilon) {
  const std::string op = "instance_norm";
  const Shape xs = checked_input(g, x, 3, op, "[N, C, D1, ...]");
  check_per_channel(g, scale, xs[1], op, "scale");
  check_per_channel(g, bias, xs[1], op, "bias");
  const int64_t spatial = product(xs.begin() + 2, xs.end());
  check(spatial > 0, ErrorKind::InvalidArgument, op + ": input " + shape_str(xs) + " is empty");
  const AffineIndex per_channel{spatial, xs[1]};
  RowLayout layout{xs[0] * xs[1], spatial, xs[1], per_channel, per_channel};
  return norm_rows(g, op, x, scale, bias, layout, epsilon);
}

TensorRef group_norm(ComputeGraph& g, TensorRef x, TensorRef scale, TensorRef bias, int64_t groups,
                     float epsilon) {
  const std::string op = "group_norm";
  const Shape xs = checked_input(g, x, 2, op, "[N, C, ...]");
  const int64_t channels = xs[1];
  check(groups >= 1 && channels % groups == 0, ErrorKind::InvalidArgument,
        op + ": groups " + std::to_string(groups) + " must divide the " + std::to_string(channels) +
            " channels of " + shape_str(xs));
  check_per_channel(g, scale, channels, op, "scale");
  check_per_channel(g, bias, channels, op, "bias");
  const int64_t spatial = product(xs.begin() + 2, xs.end());
  check(spatial > 0, ErrorKind::InvalidArgument, op + ": input " + shape_str(xs) + " is empty");
  const AffineIndex per_channel{spatial, channels};
  RowLayout layout{xs[0] * groups, channels / groups * spatial, groups, per_channel, per_channel};
  return norm_rows(g, op, x, scale, bias, layout, epsilon);
}

}  // namespace vkgraph::ops
