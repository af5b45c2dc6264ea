// Convolutions: conv1d, conv2d and conv3d are one 3-D convolution (unit leading spatial dims)
// that picks one of four kernels (depthwise, pointwise GEMM, implicit GEMM, each in a 2-D
// variant for trivial depth windows and a 3-D one; a matrix-vector product for pointwise
// convolutions of one-pixel images), all sharing conv_common.glsl's push constants and bias +
// activation epilogue; conv_transpose2d and conv_transpose3d gather.
#include "vkgraph/shaders/conv.h"

#include <cstddef>
#include <limits>

#include "core/shape_rules.h"
#include "matmul_config.h"
#include "op_util.h"
#include "shape_ops.h"
#include "vkgraph/ops.h"

namespace vkgraph::ops {
namespace {

// activation.glsl's ACT_* code, the conv shaders' specialization constant.
std::optional<uint32_t> activation_code(UnaryOp op) {
  auto a = epilogue_activation(op);
  if (!a) return std::nullopt;
  return static_cast<uint32_t>(*a);
}

// Everything conv_common.glsl's push constants describe, in their order. 1-D and 2-D
// convolutions are 3-D ones with unit leading spatial dims.
struct ConvGeometry {
  int64_t batch, in_c, in_d, in_h, in_w, out_c, out_d, out_h, out_w, k_d, k_h, k_w, stride_d,
      stride_h, stride_w, pad_f, pad_t, pad_l, dil_d, dil_h, dil_w, in_c_g, out_c_g;
  int64_t out_volume() const { return out_d * out_h * out_w; }
};

// Inserts unit dims after N and C so that `s` has three spatial dims.
Shape lift_shape(const Shape& s) {
  Shape r(s.begin(), s.begin() + 2);
  r.insert(r.end(), 5 - s.size(), 1);
  r.insert(r.end(), s.begin() + 2, s.end());
  return r;
}

// An N-D window as a 3-D one whose leading spatial dims are trivial.
template <size_t N>
Conv3dParams lift(const std::array<int64_t, N>& strides, const std::array<int64_t, 2 * N>& pads,
                  const std::array<int64_t, N>& dilations, int64_t groups) {
  Conv3dParams p;
  for (size_t i = 0, at = 3 - N; i < N; ++i, ++at) {
    p.strides[at] = strides[i];
    p.dilations[at] = dilations[i];
    p.pads[at] = pads[i];
    p.pads[3 + at] = pads[N + i];
  }
  p.groups = groups;
  return p;
}

// xs, ws: lifted to 5-D; the weight's last three dims are the kernel. The output size is the
// caller's.
ConvGeometry geometry(const Shape& xs, const Shape& ws, int64_t out_c, const Conv3dParams& p) {
  ConvGeometry c{};
  c.batch = xs[0];
  c.in_c = xs[1];
  c.in_d = xs[2];
  c.in_h = xs[3];
  c.in_w = xs[4];
  c.out_c = out_c;
  c.k_d = ws[2];
  c.k_h = ws[3];
  c.k_w = ws[4];
  c.stride_d = p.strides[0];
  c.stride_h = p.strides[1];
  c.stride_w = p.strides[2];
  c.pad_f = p.pads[0];
  c.pad_t = p.pads[1];
  c.pad_l = p.pads[2];
  c.dil_d = p.dilations[0];
  c.dil_h = p.dilations[1];
  c.dil_w = p.dilations[2];
  c.in_c_g = c.in_c / p.groups;
  c.out_c_g = out_c / p.groups;
  return c;
}

// Sizes, strides, pads and dilations come from the model: each must fit the shaders' int.
std::vector<uint8_t> conv_push(const ConvGeometry& c, UnaryParams act, int64_t k_chunk,
                               const std::string& op) {
  PushConstants pc;
  for (int64_t v : {c.batch, c.in_c,  c.in_d,  c.in_h,  c.in_w,     c.out_c,    c.out_d,    c.out_h,
                    c.out_w, c.k_d,   c.k_h,   c.k_w,   c.stride_d, c.stride_h, c.stride_w, c.pad_f,
                    c.pad_t, c.pad_l, c.dil_d, c.dil_h, c.dil_w,    c.in_c_g,   c.out_c_g})
    pc.add(checked_i32(v, op, "size, stride, pad or dilation"));
  pc.add(act.alpha).add(act.beta).add(checked_i32(k_chunk, op, "split-K slice"));
  return pc.take();
}

// The last `n` values of a lifted window attribute, as the caller wrote them.
std::string dims_str(const int64_t* end, size_t n) {
  std::string s = "[";
  for (size_t i = 0; i < n; ++i) s += (i ? ", " : "") + std::to_string(*(end - n + i));
  return s + "]";
}

// `spatial`: how many of the lifted dims the caller has (for messages).
void check_window(const std::string& op, const Conv3dParams& p, size_t spatial) {
  auto positive = [](const std::array<int64_t, 3>& v) {
    return v[0] >= 1 && v[1] >= 1 && v[2] >= 1;
  };
  check(positive(p.strides), ErrorKind::InvalidArgument,
        op + ": strides " + dims_str(p.strides.data() + 3, spatial) + " must be positive");
  check(positive(p.dilations), ErrorKind::InvalidArgument,
        op + ": dilations " + dims_str(p.dilations.data() + 3, spatial) + " must be positive");
  for (int64_t pad : p.pads)
    check(pad >= 0, ErrorKind::InvalidArgument, op + ": pads must be non-negative");
  check(p.groups >= 1, ErrorKind::InvalidArgument,
        op + ": groups " + std::to_string(p.groups) + " must be positive");
}

void check_rank(ComputeGraph& g, TensorRef t, size_t rank, const std::string& op, const char* role,
                const std::string& layout) {
  Shape s = g.info(t).shape;
  check(s.size() == rank, ErrorKind::InvalidArgument,
        op + ": " + role + " must be " + layout + ", got " + shape_str(s));
}

void check_weight(ComputeGraph& g, TensorRef weight, size_t rank, const std::string& op,
                  const std::string& layout) {
  check_rank(g, weight, rank, op, "weight", layout);
  Shape s = g.info(weight).shape;
  for (int64_t d : s)
    check(d > 0, ErrorKind::InvalidArgument, op + ": weight " + shape_str(s) + " has an empty dim");
}

void check_bias(ComputeGraph& g, std::optional<TensorRef> bias, int64_t out_c,
                const std::string& op) {
  if (!bias) return;
  Shape s = g.info(*bias).shape;
  check(s == Shape{out_c}, ErrorKind::InvalidArgument,
        op + ": bias must be [" + std::to_string(out_c) + "], got " + shape_str(s));
}

// Shader indices are 32-bit.
void check_index_range(const Shape& s, const std::string& op) {
  check(numel(s) <= std::numeric_limits<int32_t>::max(), ErrorKind::Unsupported,
        op + ": tensor " + shape_str(s) + " has more than 2^31 elements");
}

int64_t conv_out_size(int64_t in, int64_t k, int64_t stride, int64_t pad_begin, int64_t pad_end,
                      int64_t dilation, const std::string& op, const char* dim) {
  // Model-given pads and dilations may be huge: overflow is an error, not undefined behaviour.
  const int64_t padded = checked_add(checked_add(in, pad_begin, op), pad_end, op);
  const int64_t reach = checked_mul(dilation, k - 1, op);
  const int64_t span = padded - reach - 1;
  check(span >= 0, ErrorKind::InvalidArgument,
        op + ": dilated kernel " + std::to_string(reach + 1) + " exceeds padded " + dim + " " +
            std::to_string(padded));
  return span / stride + 1;
}

// Implicit-GEMM tile shapes of the convolution kernels, matching conv.cmake's variants (not
// matmul's GemmTile: these are fixed at build time). A variant's tile key is its BM.
struct ConvTile {
  uint32_t m, n;     // BM, BN
  uint32_t threads;  // conv.comp: (BM / TM) * (BN / TN) with TM = TN = 4
};
constexpr ConvTile kLargeTile{64, 64, 256};
constexpr ConvTile kSmallTile{32, 32, 64};
// conv_coopmat.comp: 2 x 2 subgroups of 32, each 2 x 2 or 4 x 2 fragments.
constexpr ConvTile kTensorCoreTile{64, 64, 128};
constexpr ConvTile kTensorCoreTallTile{128, 64, 128};

uint64_t gemm_tiles(const ConvGeometry& c, int64_t groups, const ConvTile& tile) {
  uint64_t m = c.out_c_g, n = c.batch * c.out_volume();
  return shapes::ceil_div(m, tile.m) * shapes::ceil_div(n, tile.n) * groups;
}

// Float16 convolutions may run on tensor cores where the device has 16x16x16 fp16 cooperative
// matrices and subgroups of 32, when the GEMM is at least one fragment deep and tall. The
// default since the H200 run of 2026-12-02 (docs/bench/2026-12-02-session6.md, run 2): with
// vector staging and 16-byte stores it beat the fp32-arithmetic kernel on 13 of 15 ResNet-50
// layers (3x3 56x56 0.0376 -> 0.0297 ms; the 7x7 1x1 layers lose ~15%).
// VKGRAPH_TUNE=conv.coopmat=0 turns it off. Knob conv.tc_min_tiles (default 64): fewer 64x64
// tiles than that take the float32-arithmetic kernel, whose 32x32 tiles give 4x the
// workgroups; the 2026-12-02 profiles have fp16 1x1 layers at 14x14 and 7x7 (8-44 tiles)
// 1.4-1.8x slower than fp32 (EfficientNet-B0's 192 -> 1152 at 7x7: 23 us vs 13). The H200 A/B
// (docs/bench/2026-12-02-session8.md, call B): EfficientNet-B0 fp16 0.877 ms at 0, 0.865 at 32,
// 0.857 at 64, 0.861 at 128; MobileNetV3 unchanged. That threshold holds for 1x1 kernels
// only: kernels wider than 1x1 (knob conv.tc_min_tiles_kxk, default 1) take the
// tensor cores however few their tiles, since the H100 run of 2026-12-07
// (docs/bench/2026-12-07-session19.md): ResNet-50's 3x3 layers of 49, 16 and 8 tiles took
// 30.7 / 33.3 / 35.1 us there against 37.9 / 37.1 / 40.4 us in the float32-arithmetic kernel
// (fp32 mode: 33.5 / 33.5 / 36.9).
bool use_tensor_cores(ComputeGraph& g, const ConvGeometry& c, DType dtype) {
  const vk::DeviceFeatures& f = g.context().features();
  const uint32_t min_tiles = c.k_d * c.k_h * c.k_w == 1 ? tuned(g, "conv.tc_min_tiles", 64)
                                                        : tuned(g, "conv.tc_min_tiles_kxk", 1);
  return dtype == DType::Float16 && f.coopmat_f16_16x16x16 && f.subgroup_size == 32 &&
         c.out_c_g >= 16 && c.in_c_g * c.k_d * c.k_h * c.k_w >= 16 &&
         tuned(g, "conv.coopmat", 1) != 0 &&
         gemm_tiles(c, c.in_c / c.in_c_g, kTensorCoreTile) >= min_tiles;
}
// Large tiles load each element for more multiply-adds, but pay off only with enough of them to
// occupy every compute unit of a big GPU (tuning knob conv.large_min, default 128); below
// that, small tiles give more parallelism.
uint64_t min_large_tile_groups(ComputeGraph& g) {
  return tuned(g, "conv.large_min", 128);
}

// The tensor-core tile: the tall one (more multiply-adds per loaded im2col element) where its
// tiles alone fill the GPU as min_large_tile_groups() says, else 64x64. Knob conv.tc_tile: 64 or
// 128 forces one, 0 (default) chooses.
const ConvTile& tensor_core_tile(ComputeGraph& g, const ConvGeometry& c, int64_t groups) {
  const uint32_t forced = tuned(g, "conv.tc_tile", 0);
  if (forced == kTensorCoreTallTile.m) return kTensorCoreTallTile;
  if (forced == kTensorCoreTile.m) return kTensorCoreTile;
  return c.out_c_g >= kTensorCoreTallTile.m &&
                 gemm_tiles(c, groups, kTensorCoreTallTile) >= min_large_tile_groups(g)
             ? kTensorCoreTallTile
             : kTensorCoreTile;
}

// The one split-K decision for convolutions. Splitting happens only with few small tiles, far
// below min_large_tile_groups(), so split passes always use small tiles (or the tensor-core
// tile `tc`, when not null).
SplitK conv_split_k(ComputeGraph& g, const ConvGeometry& c, int64_t groups, const ConvTile* tc) {
  const ConvTile& tile = tc ? *tc : kSmallTile;
  return choose_split_k(gemm_tiles(c, groups, tile), tile.threads, c.in_c_g * c.k_d * c.k_h * c.k_w,
                        split_k_policy(g));
}

// Which GEMM shader: pointwise reads X as a matrix whatever its spatial rank; otherwise the
// 3-D variant decodes a depth tap, which 2-D convolutions (depth window trivial) skip.
enum class GemmKind { Pointwise, Im2col2d, Im2col3d };

// What the kernels apply to each output element: + bias[channel], + residual[element] (a skip
// connection of Y's shape), then the activation; `dtype` is the tensors' dtype.
struct KernelEpilogue {
  std::optional<TensorRef> bias, residual;
  uint32_t act_code;
  UnaryParams act_params;
  DType dtype;
  // The variant of `kind` (tile 0: a kernel without tiles) applying this epilogue.
  vk::ShaderId variant(shaders::conv::Kind kind, uint32_t tile = 0) const {
    return declared(shaders::conv::find(kind, tile, residual.has_value(), false, dtype),
                    shaders::conv::name(kind));
  }
};

// `splits` > 1 selects the split-K partial pass, one z layer of workgroups per (slice, group).
DispatchDesc gemm_dispatch(ComputeGraph& g, const std::string& op, const ConvGeometry& c,
                           int64_t groups, GemmKind kind, uint32_t splits, const ConvTile* tc,
                           const KernelEpilogue& e) {
  uint64_t m = c.out_c_g, n = c.batch * c.out_volume();
  const bool tensor_cores = tc != nullptr;
  bool large = splits == 1 && gemm_tiles(c, groups, kLargeTile) >= min_large_tile_groups(g);
  const ConvTile& tile = tc ? *tc : large ? kLargeTile : kSmallTile;
  uint64_t gx = shapes::ceil_div(n, tile.n), gy = shapes::ceil_div(m, tile.m), gz = groups * splits;
  check(gx <= 65535 && gy <= 65535 && gz <= 65535, ErrorKind::Unsupported,
        op + ": output of " + std::to_string(n) + " pixels x " + std::to_string(m) +
            " channels needs too many workgroups");
  DispatchDesc d;
  using shaders::conv::Kind;
  const Kind family =
      kind == GemmKind::Pointwise ? (tensor_cores ? Kind::Conv2dPointwiseTc : Kind::Conv2dPointwise)
      : kind == GemmKind::Im2col2d ? (tensor_cores ? Kind::Conv2dGemmTc : Kind::Conv2dGemm)
                                   : (tensor_cores ? Kind::Conv3dGemmTc : Kind::Conv3dGemm);
  // The partial pass leaves the epilogue to the reduce pass.
  d.shader = splits > 1 ? declared(shaders::conv::find(family, tile.m, false, true, e.dtype), op)
                        : e.variant(family, tile.m);
  d.groups = {static_cast<uint32_t>(gx), static_cast<uint32_t>(gy), static_cast<uint32_t>(gz)};
  d.local = {tile.threads, 1, 1};
  // conv_coopmat.comp's VEC_STORE (constant 5; finish_dispatch puts 3 and 4 in front): 16-byte
  // epilogue stores (conv.tc_vec_store=0: one element each, the A/B of the H200 run: the
  // vector stores took every layer measured from 0.8-1.4x of the default path to 0.7-1.2x).
  if (tensor_cores) d.spec = {tuned(g, "conv.tc_vec_store", 1) != 0 ? 1u : 0u};
  return d;
}

// One invocation per output element (depthwise, transposed).
DispatchDesc elementwise_dispatch(vk::ShaderId shader, const ConvGeometry& c) {
  DispatchDesc d;
  d.shader = shader;
  d.groups = groups_for(static_cast<uint64_t>(c.batch * c.out_c * c.out_volume()));
  d.local = {kLocal, 1, 1};
  return d;
}

// conv_matvec.comp: LANES invocations per output row, enough that each issues one round of its
// 8 unrolled loads, up to the whole workgroup.
DispatchDesc matvec_dispatch(vk::ShaderId shader, const ConvGeometry& c) {
  uint32_t lanes = 4;
  while (lanes < kLocal && lanes * 8 < c.in_c) lanes *= 2;
  DispatchDesc d;
  d.shader = shader;
  d.groups = groups_for(static_cast<uint64_t>(c.batch * c.out_c) * lanes, kLocal);
  d.local = {kLocal, 1, 1};
  d.spec = {lanes};
  return d;
}

// Binds x, weight, bias (the weight again when absent: the shader never reads it), y and, for
// shaders that apply it (`with_residual`), the residual; sets the epilogue's specialization
// constants (3 and 4), ahead of any of the kernel's own that `d` holds.
void finish_dispatch(ComputeGraph& g, DispatchDesc d, TensorRef x, TensorRef weight, TensorRef y,
                     const ConvGeometry& c, const KernelEpilogue& e, const std::string& label,
                     bool with_residual, int64_t k_chunk = 0) {
  d.bindings = {{x, Access::Read},
                {weight, Access::Read},
                {e.bias.value_or(weight), Access::Read},
                {y, Access::Write}};
  if (with_residual && e.residual) d.bindings.push_back({*e.residual, Access::Read});
  d.spec.insert(d.spec.begin(), {e.act_code, e.bias ? 1u : 0u});
  d.push = conv_push(c, e.act_params, k_chunk, label);
  d.label = label;
  g.add_dispatch(std::move(d));
}

// The implicit GEMM, split along K into partials plus a reduce pass when the output alone
// would leave most of the GPU idle; the reduce pass then applies the epilogue.
void add_gemm(ComputeGraph& g, const std::string& op, TensorRef x, TensorRef weight, TensorRef y,
              const ConvGeometry& c, int64_t groups, GemmKind kind, const KernelEpilogue& e) {
  const ConvTile* tc = use_tensor_cores(g, c, e.dtype) ? &tensor_core_tile(g, c, groups) : nullptr;
  SplitK split = conv_split_k(g, c, groups, tc);
  DispatchDesc d = gemm_dispatch(g, op, c, groups, kind, split.splits, tc, e);
  if (split.splits == 1) {
    finish_dispatch(g, std::move(d), x, weight, y, c, e, op, true);
    return;
  }
  Shape partial_shape{split.splits, c.batch, c.out_c, c.out_volume()};
  check_index_range(partial_shape, op);
  // A graph tensor, so the memory planner places it and the hazard tracker orders the passes.
  // Partials stay float32 whatever the dtype.
  TensorRef partials = g.add_tensor(partial_shape, DType::Float32);
  finish_dispatch(g, std::move(d), x, weight, partials, c, e, op, false, split.k_chunk);
  finish_dispatch(g, elementwise_dispatch(e.variant(shaders::conv::Kind::Conv2dSplitkReduce), c),
                  partials, partials, y, c, e, op + " (split-K reduce)", true, split.k_chunk);
}

// Every convolution, with its window lifted to 3-D; `spatial` is the caller's spatial rank and
// `x_layout`, `w_layout` its layouts, for messages.
TensorRef conv_nd(ComputeGraph& g, const std::string& op, size_t spatial, const char* x_layout,
                  const char* w_layout, TensorRef x, TensorRef weight, const Conv3dParams& params,
                  const ConvEpilogue& epilogue) {
  const auto& [bias, activation, activation_params, residual] = epilogue;
  check_rank(g, x, spatial + 2, op, "input", x_layout);
  check_weight(g, weight, spatial + 2, op, w_layout);
  const DType dtype =
      float_dtype(g, x, {weight, bias.value_or(weight), residual.value_or(weight)}, op);
  check_window(op, params, spatial);
  const Shape xs = g.info(x).shape, ws = g.info(weight).shape;
  const int64_t groups = params.groups, in_c = xs[1], out_c = ws[0];
  check(in_c % groups == 0 && out_c % groups == 0, ErrorKind::InvalidArgument,
        op + ": groups " + std::to_string(groups) + " must divide input channels " +
            std::to_string(in_c) + " and output channels " + std::to_string(out_c));
  check(ws[1] * groups == in_c, ErrorKind::InvalidArgument,
        op + ": weight " + shape_str(ws) + " with groups " + std::to_string(groups) + " expects " +
            std::to_string(ws[1] * groups) + " input channels, input " + shape_str(xs) + " has " +
            std::to_string(in_c));
  check_bias(g, bias, out_c, op);
  std::optional<uint32_t> act = activation_code(activation.value_or(UnaryOp::Identity));
  check(act.has_value(), ErrorKind::Unsupported,
        op + ": activation UnaryOp(" + std::to_string(static_cast<int>(*activation)) +
            ") cannot be fused (see conv_can_fuse)");

  const auto& s = params.strides;
  const auto& pads = params.pads;
  const auto& dil = params.dilations;
  ConvGeometry c = geometry(lift_shape(xs), lift_shape(ws), out_c, params);
  c.out_d = conv_out_size(c.in_d, c.k_d, s[0], pads[0], pads[3], dil[0], op, "depth");
  c.out_h = conv_out_size(c.in_h, c.k_h, s[1], pads[1], pads[4], dil[1], op, "height");
  c.out_w = conv_out_size(c.in_w, c.k_w, s[2], pads[2], pads[5], dil[2], op, "width");
  // The caller's rank: the shaders see only the lifted geometry.
  Shape ys{c.batch, out_c, c.out_d, c.out_h, c.out_w};
  ys.erase(ys.begin() + 2, ys.begin() + 5 - static_cast<std::ptrdiff_t>(spatial));
  for (const Shape& shape : {xs, ws, ys}) check_index_range(shape, op);
  if (residual && g.info(*residual).shape != ys) {
    // A residual that broadcasts: the plain convolution, then the add, then the activation.
    TensorRef sum = binary(g, BinaryOp::Add,
                           conv_nd(g, op, spatial, x_layout, w_layout, x, weight, params,
                                   ConvEpilogue{bias, std::nullopt, {}, std::nullopt}),
                           *residual);
    return activation ? unary(g, *activation, sum, activation_params) : sum;
  }
  const bool pointwise = c.k_d == 1 && c.k_h == 1 && c.k_w == 1 &&
                         s == std::array<int64_t, 3>{1, 1, 1} &&
                         pads == std::array<int64_t, 6>{0, 0, 0, 0, 0, 0};
  // Float16 pointwise convolutions of few pixels as the matrix product W [M, K] X [N, K, P]
  // through matmul's tiles chosen by shape (knob conv.pw_matmul_pixels: at most that many
  // output pixels per image, default 196 = 14 x 14; 0 turns it off). conv.comp's float16 variant
  // ran these layers 12-37% slower than its float32 one; the H100 A/B at 946caca
  // (docs/bench/2026-12-07-session21.md): EfficientNet-B0 fp16 0.812 -> 0.786 ms (49: 0.799),
  // MobileNetV3-Large 0.624 -> 0.599 (49: 0.618).
  if (pointwise && groups == 1 && dtype == DType::Float16 && c.out_volume() > 1 &&
      static_cast<uint64_t>(c.out_volume()) <= tuned(g, "conv.pw_matmul_pixels", 196)) {
    const int64_t pixels = c.out_volume();
    MatmulEpilogue me{
        bias ? std::optional(reshape(g, *bias, {out_c, 1})) : std::nullopt, activation,
        activation_params,
        residual ? std::optional(reshape(g, *residual, {c.batch, out_c, pixels})) : std::nullopt};
    return reshape(
        g, matmul(g, reshape(g, weight, {out_c, in_c}), reshape(g, x, {c.batch, in_c, pixels}), me),
        ys);
  }
  TensorRef y = g.add_tensor(ys, g.info(x).dtype);
  const KernelEpilogue e{bias, residual, *act, activation_params, dtype};

  const bool depth = c.in_d > 1 || c.k_d > 1 || pads[0] > 0 || pads[3] > 0;
  if (groups == in_c && groups > 1) {
    vk::ShaderId shader = e.variant(depth ? shaders::conv::Kind::Conv3dDepthwise
                                          : shaders::conv::Kind::Conv2dDepthwise);
    finish_dispatch(g, elementwise_dispatch(shader, c), x, weight, y, c, e, op, true);
    return y;
  }
  // One-pixel images (squeeze-excite FC layers): a matrix-vector product per image, not a GEMM
  // of one column (knob conv.matvec=0: the implicit GEMM, as before).
  if (pointwise && groups == 1 && c.out_volume() == 1 && tuned(g, "conv.matvec", 1) != 0) {
    finish_dispatch(g, matvec_dispatch(e.variant(shaders::conv::Kind::Conv2dMatvec), c), x, weight,
                    y, c, e, op + " (matvec)", true);
    return y;
  }
  GemmKind kind = pointwise ? GemmKind::Pointwise : depth ? GemmKind::Im2col3d : GemmKind::Im2col2d;
  add_gemm(g, op, x, weight, y, c, groups, kind, e);
  return y;
}

}  // namespace

bool conv_can_fuse(UnaryOp activation) {
  return activation_code(activation).has_value();
}

TensorRef conv3d(ComputeGraph& g, TensorRef x, TensorRef weight, const Conv3dParams& params,
                 const ConvEpilogue& epilogue) {
  return conv_nd(g, "conv3d", 3, "[N, C, D, H, W]", "[Cout, Cin/groups, kD, kH, kW]", x, weight,
                 params, epilogue);
}

TensorRef conv2d(ComputeGraph& g, TensorRef x, TensorRef weight, const Conv2dParams& params,
                 const ConvEpilogue& epilogue) {
  return conv_nd(g, "conv2d", 2, "[N, C, H, W]", "[Cout, Cin/groups, kH, kW]", x, weight,
                 lift(params.strides, params.pads, params.dilations, params.groups), epilogue);
}

TensorRef conv1d(ComputeGraph& g, TensorRef x, TensorRef weight, const Conv1dParams& params,
                 const ConvEpilogue& epilogue) {
  return conv_nd(g, "conv1d", 1, "[N, C, L]", "[Cout, Cin/groups, k]", x, weight,
                 lift<1>({params.stride}, params.pads, {params.dilation}, params.groups), epilogue);
}

namespace {

// Every transposed convolution, with its window lifted to 3-D (unit leading spatial dims);
// `spatial` is the caller's spatial rank, `x_layout` and `w_layout` its layouts, for messages.
TensorRef conv_transpose_nd(ComputeGraph& g, const std::string& op, size_t spatial,
                            const char* x_layout, const char* w_layout, TensorRef x,
                            TensorRef weight, std::optional<TensorRef> bias,
                            const ConvTranspose3dParams& params) {
  const Conv3dParams window{params.strides, params.pads, params.dilations, params.groups};
  check_rank(g, x, spatial + 2, op, "input", x_layout);
  check_weight(g, weight, spatial + 2, op, w_layout);
  const DType dtype = float_dtype(g, x, {weight, bias.value_or(weight)}, op);
  check_window(op, window, spatial);
  const Shape xs = g.info(x).shape, ws = g.info(weight).shape;
  const int64_t groups = params.groups, in_c = xs[1], out_c = ws[1] * groups;
  check(ws[0] == in_c, ErrorKind::InvalidArgument,
        op + ": weight " + shape_str(ws) + " expects " + std::to_string(ws[0]) +
            " input channels, input " + shape_str(xs) + " has " + std::to_string(in_c));
  check(in_c % groups == 0, ErrorKind::InvalidArgument,
        op + ": groups " + std::to_string(groups) + " must divide input channels " +
            std::to_string(in_c));
  const auto& out_pad = params.output_padding;
  check(out_pad[0] >= 0 && out_pad[1] >= 0 && out_pad[2] >= 0, ErrorKind::InvalidArgument,
        op + ": output_padding " + dims_str(out_pad.data() + 3, spatial) + " must be non-negative");
  check_bias(g, bias, out_c, op);

  ConvGeometry c = geometry(lift_shape(xs), lift_shape(ws), out_c, window);
  const std::array<int64_t, 3> in{c.in_d, c.in_h, c.in_w}, k{c.k_d, c.k_h, c.k_w};
  std::array<int64_t, 3> out{};
  for (size_t i = 0; i < 3; ++i) {
    // In 128 bits: strides, pads and dilations come from the model and may be huge.
    const __int128 size = __int128{in[i] - 1} * params.strides[i] - params.pads[i] -
                          params.pads[3 + i] + __int128{params.dilations[i]} * (k[i] - 1) +
                          out_pad[i] + 1;
    check(
        size >= std::numeric_limits<int64_t>::min() && size <= std::numeric_limits<int64_t>::max(),
        ErrorKind::InvalidArgument, op + ": strides, pads or dilations overflow the output size");
    out[i] = static_cast<int64_t>(size);
  }
  check(out[0] > 0 && out[1] > 0 && out[2] > 0, ErrorKind::InvalidArgument,
        op + ": pads leave an empty output " + dims_str(out.data() + 3, spatial));
  c.out_d = out[0];
  c.out_h = out[1];
  c.out_w = out[2];
  Shape ys{c.batch, out_c};
  ys.insert(ys.end(), out.end() - spatial, out.end());
  for (const Shape& shape : {xs, ws, ys}) check_index_range(shape, op);
  TensorRef y = g.add_tensor(ys, g.info(x).dtype);
  const KernelEpilogue e{bias, std::nullopt, *activation_code(UnaryOp::Identity), {}, dtype};
  finish_dispatch(g, elementwise_dispatch(e.variant(shaders::conv::Kind::ConvTranspose), c), x,
                  weight, y, c, e, op, false);
  return y;
}

}  // namespace

TensorRef conv_transpose3d(ComputeGraph& g, TensorRef x, TensorRef weight,
                           std::optional<TensorRef> bias, const ConvTranspose3dParams& params) {
  return conv_transpose_nd(g, "conv_transpose3d", 3, "[N, C, D, H, W]",
                           "[Cin, Cout/groups, kD, kH, kW]", x, weight, bias, params);
}

TensorRef conv_transpose2d(ComputeGraph& g, TensorRef x, TensorRef weight,
                           std::optional<TensorRef> bias, const ConvTranspose2dParams& params) {
  const Conv3dParams window = lift(params.strides, params.pads, params.dilations, params.groups);
  ConvTranspose3dParams lifted{window.strides,
                               window.pads,
                               window.dilations,
                               {0, params.output_padding[0], params.output_padding[1]},
                               params.groups};
  return conv_transpose_nd(g, "conv_transpose2d", 2, "[N, C, H, W]", "[Cin, Cout/groups, kH, kW]",
                           x, weight, bias, lifted);
}

}  // namespace vkgraph::ops
