// The packed integer GEMM's host side (quant_packed.h): weight packing at load, the choice of
// tile, split-K and dot-product variant, and the dispatches.
#include "quant_packed.h"

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "matmul_config.h"
#include "op_util.h"
#include "vkgraph/shaders/qgemm.h"

namespace vkgraph::ops {
namespace {

using shaders::qgemm::Kind;

constexpr int64_t kSliceDepth = 32;  // quant_packed.comp's BK
constexpr uint32_t kLargeTile = 64, kSmallTile = 32;

uint32_t tile_threads(uint32_t tile) {
  return (tile / 4) * (tile / 4);
}

// A zero point's values, or nothing when it is computed on the device. An absent one is one 0.
std::optional<std::vector<int32_t>> constant_zeros(ComputeGraph& g, std::optional<TensorRef> t,
                                                   const std::string& op) {
  if (!t) return std::vector<int32_t>{0};
  require_zero_point_type(g, *t, op);
  const HostTensor* v = g.constant_value(*t);
  if (!v) return std::nullopt;
  std::vector<int32_t> r(static_cast<size_t>(v->numel()));
  for (int64_t i = 0; i < v->numel(); ++i) r[i] = static_cast<int32_t>(v->as_int(i));
  return r;
}

// The weights as [channels][K4 / 4] words, four k to a word (low byte first), padded to K4
// with the channel's zero point, and per channel {sum of the padded row, zero point}.
struct PackedWeights {
  TensorRef words, chan;
  int64_t k4 = 0;
  bool any_zero = false;  // some channel's zero point is not 0
};

// `at(c, k)`: the stored byte of channel c at depth k. `to_signed` packs unsigned weights as
// the int8 values w - 128 (zero points zw - 128), as the int8 tensor cores read them; the
// products' sums are unchanged.
template <typename At>
PackedWeights pack_weights(ComputeGraph& g, int64_t channels, int64_t k, bool is_signed,
                           const std::vector<int32_t>& zeros, At at, bool to_signed = false) {
  PackedWeights p;
  p.k4 = (k + 3) / 4 * 4;
  const bool flip = to_signed && !is_signed;
  if (flip) is_signed = true;
  std::vector<uint32_t> words(static_cast<size_t>(channels * p.k4 / 4));
  std::vector<int32_t> chan(static_cast<size_t>(channels * 2));
  for (int64_t c = 0; c < channels; ++c) {
    const int32_t zero = zeros[zeros.size() == 1 ? 0 : c] - (flip ? 128 : 0);
    p.any_zero = p.any_zero || zero != 0;
    int32_t sum = 0;
    for (int64_t kk = 0; kk < p.k4; ++kk) {
      const uint8_t byte =
          kk < k ? static_cast<uint8_t>(at(c, kk) ^ (flip ? 0x80 : 0)) : static_cast<uint8_t>(zero);
      sum += is_signed ? int32_t{static_cast<int8_t>(byte)} : int32_t{byte};
      words[c * p.k4 / 4 + kk / 4] |= uint32_t{byte} << (8 * (kk % 4));
    }
    chan[2 * c] = sum;
    chan[2 * c + 1] = zero;
  }
  p.words =
      g.add_constant(HostTensor::from(DType::Int32, {static_cast<int64_t>(words.size())}, words));
  p.chan = g.add_constant(HostTensor::from(DType::Int32, {channels, 2}, chan));
  return p;
}

// Dot-product instructions where the device calls them accelerated; tuning knob qgemm.dot = 0
// never, 1 wherever the device has them (tests force both variants with it).
bool use_dot(ComputeGraph& g) {
  const vk::DeviceFeatures& f = g.context().features();
  const uint32_t knob = tuned(g, "qgemm.dot", 2);
  if (knob == 2) return f.integer_dot_4x8_accelerated;
  return knob == 1 && f.integer_dot_product;
}

// The int8 tensor-core variants' fragment width (quant_packed.comp COOPMAT), or 0 where they do
// not run: tuning knob qgemm.coopmat (default 1: tensor cores where the device has them, since
// the H200's 128x768x768 25.3 -> 16.9 us and 128x3072x768 27.1 -> 19.5 us,
// docs/bench/2026-12-02-session8.md, call B; 0: the dot-product kernels) and weights that are
// signed once packed with a zero point of 0 (int8 with zw 0, uint8 with zw 128: symmetric
// quantization, as onnxruntime writes weights), since the tensor-core kernel sums no data
// (HAS_DSUM). Knob value 2 runs the emulated variants (width 1: the tensor-core kernels' staging
// and epilogue, plain sums) on any device, for tests.
uint32_t coopmat_width(ComputeGraph& g, bool w_signed, const std::vector<int32_t>& zeros) {
  const vk::DeviceFeatures& f = g.context().features();
  const uint32_t knob = tuned(g, "qgemm.coopmat", 1);
  const uint32_t width = knob == 2 ? 1 : knob == 1 && f.subgroup_size == 32 ? f.coopmat_s8_n : 0;
  const int32_t symmetric = w_signed ? 0 : 128;
  for (int32_t z : zeros)
    if (z != symmetric) return 0;
  return width;
}
// The variant in dispatch labels.
std::string coopmat_label(uint32_t width) {
  return width == 1 ? " coopmat emulated" : width ? " coopmat" : "";
}
constexpr uint32_t kCoopmatThreads = 128;  // quant_packed.comp COOPMAT: 2 x 2 subgroups of 32

// The float kernels' split-K policy (sk.*) with the depth measured in packed words. The float
// policy counted one multiply-add per element, so reading it in bytes split the integer
// kernel 4x finer: ResNet-50's layer4 3x3 convs ran as 29 slices of 160 bytes (5 BK steps),
// each writing a 32x32 int32 partial about as large as its inputs. Knobs qgemm.sk_threads,
// qgemm.sk_min_k, qgemm.sk_min_slice (words) and qgemm.sk_max override it for sweeps.
SplitKPolicy integer_split_k_policy(ComputeGraph& g) {
  SplitKPolicy p = split_k_policy(g);
  p.target_threads = tuned(g, "qgemm.sk_threads", static_cast<uint32_t>(p.target_threads));
  p.min_k = tuned(g, "qgemm.sk_min_k", static_cast<uint32_t>(p.min_k));
  p.min_slice =
      std::max<int64_t>(1, tuned(g, "qgemm.sk_min_slice", static_cast<uint32_t>(p.min_slice)));
  p.max_splits = tuned(g, "qgemm.sk_max", p.max_splits);
  return p;
}

// Tile and split-K, as conv.cpp decides them: split a deep GEMM with few small tiles, else
// large tiles where there are enough of them (knob qgemm.large_min, default 128). Knobs
// qgemm.tile (32 or 64) and qgemm.splits (1: never; n: n slices) force a choice.
struct Plan {
  uint32_t tile = kSmallTile;
  uint32_t splits = 1;
  int64_t chunk_words = 0;
};

Plan plan(ComputeGraph& g, int64_t channels, int64_t vectors, int64_t groups, int64_t k4,
          bool may_split = true) {
  auto tiles = [&](uint32_t t) {
    return static_cast<uint64_t>((channels + t - 1) / t * ((vectors + t - 1) / t) * groups);
  };
  Plan p;
  const uint32_t forced_tile = tuned(g, "qgemm.tile", 0);
  const uint32_t forced_splits = tuned(g, "qgemm.splits", 0);
  SplitK split;
  if (!may_split) {
  } else if (forced_splits > 1) {
    split.splits = forced_splits;
    split.k_chunk = (k4 + forced_splits - 1) / forced_splits;
  } else if (forced_splits == 0 && forced_tile != kLargeTile) {
    // Depth counted in words: one dot product each, the float kernels' one multiply-add.
    split = choose_split_k(tiles(kSmallTile), tile_threads(kSmallTile), k4 / 4,
                           integer_split_k_policy(g));
    split.k_chunk *= 4;
  }
  if (split.splits > 1) {
    // Whole slices of the kernel's BK, none empty.
    const int64_t depth = (split.k_chunk + kSliceDepth - 1) / kSliceDepth * kSliceDepth;
    p.chunk_words = depth / 4;
    p.splits = static_cast<uint32_t>((k4 + depth - 1) / depth);
  }
  if (p.splits > 1) return p;
  p.splits = 1;
  if (forced_tile == kLargeTile || forced_tile == kSmallTile)
    p.tile = forced_tile;
  else if (tiles(kLargeTile) >= tuned(g, "qgemm.large_min", 128))
    p.tile = kLargeTile;
  return p;
}

// The requantization's bindings, or the Int32 ops' none.
void bind_requant(ComputeGraph& g, std::vector<Binding>& b, const Requant& r) {
  TensorRef bias =
      r.bias ? *r.bias : g.add_constant(HostTensor::from(DType::Int32, {1}, std::vector{0}));
  b.insert(b.end(), {{r.a_scale, Access::Read},
                     {r.b_scale, Access::Read},
                     {r.y_scale, Access::Read},
                     {r.y_zero, Access::Read},
                     {bias, Access::Read}});
}

// The epilogue's bindings after bind_requant's (quant_packed.glsl): the residual Add's
// operand (a placeholder without one), then one Int32 constant of the residual's 12 parameters
// and the byte table's 256 bytes as 64 words, zeros for what is absent (spec constants
// HAS_RESIDUAL and HAS_TABLE say what is there).
void bind_epilogue(ComputeGraph& g, std::vector<Binding>& b, const Requant& r) {
  std::vector<int32_t> words(12 + 64, 0);
  if (r.residual) std::copy(r.residual->params.begin(), r.residual->params.end(), words.begin());
  if (r.table) std::memcpy(words.data() + 12, r.table->bytes.data(), 256);
  const TensorRef operand =
      r.residual ? r.residual->add.residual.values
                 : g.add_constant(HostTensor::from(DType::UInt8, {4}, std::vector<uint8_t>(4, 0)));
  b.insert(b.end(),
           {{operand, Access::Read},
            {g.add_constant(HostTensor::from(DType::Int32, {12 + 64}, words)), Access::Read}});
}

// The epilogue's spec constants: {HAS_RESIDUAL, HAS_TABLE}.
std::vector<uint32_t> epilogue_spec(const std::optional<Requant>& r) {
  return {uint32_t{r && r->residual.has_value()}, uint32_t{r && r->table.has_value()}};
}

// What the epilogue adds, for labels.
std::string epilogue_label(const std::optional<Requant>& r) {
  return std::string(r && r->residual ? " + residual add" : "") +
         (r && r->table ? " + byte table" : "");
}

// What the GEMM pass and the split-K reduce share.
struct Gemm {
  Kind kind;
  TensorRef data, y, data_zero;
  PackedWeights weights;
  int64_t channels, vectors, groups;
  int32_t data_zero_count;
  bool w_signed, d_signed;
  std::optional<TensorRef> taps;  // the im2col kernel's tap table (quant_packed.comp's Taps)
  int64_t plane;                  // the reduce's output layout: conv plane, 0 for a matmul
  std::vector<int32_t> geometry;  // the conv kernels' window push constants
  uint32_t coopmat = 0;           // coopmat_width: the weights were packed signed for it
};

// The GEMM pass of plan `pl`: writes m.y, or returns the split-K partials (Int32 [splits,
// numel(y)]) for a reduce to finish.
std::optional<TensorRef> add_gemm_pass(ComputeGraph& g, const Gemm& m,
                                       const std::optional<Requant>& requant, const Plan& pl,
                                       const std::string& op) {
  const bool split = pl.splits > 1;
  const bool dot = m.coopmat == 0 && use_dot(g);
  const Shape ys = g.info(m.y).shape;
  const int64_t total = numel(ys);
  TensorRef out = m.y;
  if (split) out = g.add_tensor({pl.splits, total}, DType::Int32);

  PushConstants pc;
  pc.add(checked_i32(m.channels, op, "channels")).add(checked_i32(m.vectors, op, "columns"));
  pc.add(checked_i32(m.weights.k4, op, "depth")).add(m.data_zero_count);
  pc.add(requant ? requant->a_scale_count : 1).add(requant ? requant->b_scale_count : 1);
  pc.add(requant ? requant->range.min : 0).add(requant ? requant->range.max : 0);
  pc.add(int32_t{requant && requant->bias.has_value()});
  pc.add(checked_i32(pl.chunk_words, op, "split-K slice"));
  for (int32_t v : m.geometry) pc.add(v);

  DispatchDesc d;
  d.shader = declared(shaders::qgemm::find(m.kind, pl.tile, requant && !split, split, dot,
                                           m.coopmat, DType::Float32),
                      op);
  d.bindings = {{m.weights.words, Access::Read},
                {m.data, Access::Read},
                {out, Access::Write},
                {m.data_zero, Access::Read},
                {m.weights.chan, Access::Read}};
  if (requant && !split) {
    bind_requant(g, d.bindings, *requant);
    bind_epilogue(g, d.bindings, *requant);
  }
  if (m.taps) d.bindings.push_back({*m.taps, Access::Read});
  const uint64_t gx = (m.vectors + pl.tile - 1) / pl.tile,
                 gy = (m.channels + pl.tile - 1) / pl.tile, gz = m.groups * pl.splits;
  check(gx <= 65535 && gy <= 65535 && gz <= 65535, ErrorKind::Unsupported,
        op + ": " + std::to_string(m.vectors) + " columns x " + std::to_string(m.channels) +
            " channels need too many workgroups");
  d.groups = {static_cast<uint32_t>(gx), static_cast<uint32_t>(gy), static_cast<uint32_t>(gz)};
  d.local = {m.coopmat ? kCoopmatThreads : tile_threads(pl.tile), 1, 1};
  d.spec = {uint32_t{m.w_signed}, uint32_t{m.d_signed}, uint32_t{m.weights.any_zero}};
  for (uint32_t s : epilogue_spec(split ? std::nullopt : requant)) d.spec.push_back(s);
  d.push = pc.take();
  // The variant in the label, so profiles (and tests) show which kernel ran.
  d.label = op + " (packed " + std::to_string(pl.tile) + (dot ? " dot" : "") +
            coopmat_label(m.coopmat) + (split ? " split " + std::to_string(pl.splits) : "") +
            epilogue_label(split ? std::nullopt : requant) + ")";
  g.add_dispatch(std::move(d));
  if (!split) return std::nullopt;
  return out;
}

void add_dispatches(ComputeGraph& g, const Gemm& m, const std::optional<Requant>& requant,
                    const std::string& op) {
  if (m.channels == 0 || m.vectors == 0) return;
  const Plan pl = plan(g, m.channels, m.vectors, m.groups, m.weights.k4);
  const std::optional<TensorRef> partials = add_gemm_pass(g, m, requant, pl, op);
  if (!partials) return;
  const TensorRef out = *partials;
  const int64_t total = numel(g.info(m.y).shape);

  PushConstants rp;
  rp.add(checked_i32(total, op, "output size"))
      .add(checked_i32(m.channels * m.groups, op, "channels"));
  rp.add(checked_i32(m.plane, op, "plane")).add(static_cast<int32_t>(pl.splits));
  rp.add(checked_i32(m.weights.k4, op, "depth")).add(m.data_zero_count);
  rp.add(requant ? requant->a_scale_count : 1).add(requant ? requant->b_scale_count : 1);
  rp.add(requant ? requant->range.min : 0).add(requant ? requant->range.max : 0);
  rp.add(int32_t{requant && requant->bias.has_value()});
  DispatchDesc r;
  r.shader = declared(shaders::qgemm::find(Kind::SplitkReduce, 0, requant.has_value(), false, false,
                                           0, DType::Float32),
                      op);
  r.bindings = {{out, Access::Read},
                {m.y, Access::Write},
                {m.data_zero, Access::Read},
                {m.weights.chan, Access::Read}};
  if (requant) {
    bind_requant(g, r.bindings, *requant);
    bind_epilogue(g, r.bindings, *requant);
    r.spec = epilogue_spec(requant);
  }
  r.groups = groups_for(static_cast<uint64_t>(total));
  r.local = {kLocal, 1, 1};
  r.push = rp.take();
  r.label = op + " (split-K reduce" + epilogue_label(requant) + ")";
  g.add_dispatch(std::move(r));
}

// Depthwise (one input channel per group): one invocation per output, weights as stored.
void add_depthwise(ComputeGraph& g, const PackedConv& c, const std::optional<Requant>& requant,
                   const std::string& op) {
  TensorRef w_zero = zero_point_i32(g, c.w_zero, op);
  const int64_t total = numel(g.info(c.y).shape);
  if (total == 0) return;
  PushConstants pc;
  pc.add(checked_i32(total, op, "output size")).add(checked_i32(c.out_c, op, "channels"));
  pc.add(checked_i32(c.out_c / c.groups, op, "channels per group"));
  pc.add(int32_t{g.info(c.x).dtype == DType::Int8}).add(int32_t{g.info(c.w).dtype == DType::Int8});
  pc.add(param_count(g, w_zero, c.out_c, c.out_c, op, "weight's zero point"));
  pc.add(requant ? requant->b_scale_count : 1);
  pc.add(requant ? requant->range.min : 0).add(requant ? requant->range.max : 0);
  pc.add(int32_t{requant && requant->bias.has_value()});
  for (int64_t v : {c.h, c.w_in, c.kh, c.kw, c.ho, c.wo, c.strides[0], c.strides[1], c.pads[0],
                    c.pads[1], c.dilations[0], c.dilations[1]})
    pc.add(checked_i32(v, op, "convolution parameter"));
  DispatchDesc d;
  d.shader = declared(shaders::qgemm::find(Kind::Depthwise, 0, requant.has_value(), false, false, 0,
                                           DType::Float32),
                      op);
  d.bindings = {{c.x, Access::Read},
                {c.w, Access::Read},
                {c.y, Access::Write},
                {c.x_zero, Access::Read},
                {w_zero, Access::Read}};
  if (requant) {
    bind_requant(g, d.bindings, *requant);
    bind_epilogue(g, d.bindings, *requant);
    d.spec = {uint32_t{requant->table.has_value()}};
  }
  d.groups = groups_for(static_cast<uint64_t>(total));
  d.local = {kLocal, 1, 1};
  d.push = pc.take();
  d.label = op + " (depthwise" + epilogue_label(requant) + ")";
  g.add_dispatch(std::move(d));
}

// quant_packed.comp's tap table: per depth k < K the tap's offset from the window's corner
// in x and its {dy, dx} (16 bits each), -1 beyond K. Nothing when a tap reaches too far.
std::optional<TensorRef> tap_table(ComputeGraph& g, const PackedConv& c, int64_t k4) {
  const int64_t cin_g = c.in_c / c.groups, taps = c.kh * c.kw;
  const int64_t dy_max = (c.kh - 1) * c.dilations[0], dx_max = (c.kw - 1) * c.dilations[1];
  const int64_t offset_max = (cin_g - 1) * c.h * c.w_in + dy_max * c.w_in + dx_max;
  if (dy_max > 0x7fff || dx_max > 0xffff || offset_max > INT32_MAX) return std::nullopt;
  std::vector<int32_t> table(static_cast<size_t>(2 * k4), -1);
  for (int64_t k = 0; k < cin_g * taps; ++k) {
    const int64_t ci = k / taps, ky = k % taps / c.kw, kx = k % c.kw;
    const int64_t dy = ky * c.dilations[0], dx = kx * c.dilations[1];
    table[2 * k] = static_cast<int32_t>(ci * c.h * c.w_in + dy * c.w_in + dx);
    table[2 * k + 1] = static_cast<int32_t>(dy << 16 | dx);
  }
  return g.add_constant(HostTensor::from(DType::Int32, {k4, 2}, table));
}

}  // namespace

namespace {

bool depthwise(const PackedConv& c) {
  return c.in_c == c.groups && c.groups > 1;
}

// The packed GEMM's condition: constant weights and weight zero point.
bool packed_gemm_applies(ComputeGraph& g, const PackedConv& c) {
  return g.constant_value(c.w) && (!c.w_zero || g.constant_value(*c.w_zero));
}

}  // namespace

bool packed_conv_fuses_residual(ComputeGraph& g, const PackedConv& c) {
  return tuned(g, "qgemm.packed", 1) != 0 && !depthwise(c) && packed_gemm_applies(g, c);
}

bool add_packed_conv(ComputeGraph& g, const PackedConv& c, const std::optional<Requant>& requant,
                     const std::string& op) {
  if (tuned(g, "qgemm.packed", 1) == 0) return false;
  const int64_t cin_g = c.in_c / c.groups, out_g = c.out_c / c.groups;
  if (requant && requant->residual && !packed_conv_fuses_residual(g, c)) return false;
  if (depthwise(c)) {
    add_depthwise(g, c, requant, op);
    return true;
  }
  if (!packed_gemm_applies(g, c)) return false;
  const auto zeros = constant_zeros(g, c.w_zero, op);
  if (!zeros) return false;
  const int64_t k = cin_g * c.kh * c.kw;
  const bool w_signed = g.info(c.w).dtype == DType::Int8;
  Gemm m;
  const bool pointwise = c.kh == 1 && c.kw == 1 && c.strides == std::array<int64_t, 2>{1, 1} &&
                         c.pads == std::array<int64_t, 2>{0, 0} && c.ho == c.h && c.wo == c.w_in;
  if (!pointwise) {
    m.taps = tap_table(g, c, (k + 3) / 4 * 4);
    if (!m.taps) return false;
  }
  // Read after tap_table: adding a constant may move the graph's constants, and with them
  // what an earlier constant_value() pointed to.
  const HostTensor* w = g.constant_value(c.w);
  m.coopmat = coopmat_width(g, w_signed, *zeros);
  m.weights = pack_weights(
      g, c.out_c, k, w_signed, *zeros,
      [&](int64_t ch, int64_t kk) { return w->bytes[ch * k + kk]; }, m.coopmat != 0);
  m.kind = pointwise ? Kind::ConvPointwise : Kind::Conv;
  m.data = c.x;
  m.y = c.y;
  m.data_zero = c.x_zero;
  m.data_zero_count = 1;
  m.channels = out_g;
  m.vectors = checked_mul(c.batch, checked_mul(c.ho, c.wo, op), op);
  m.groups = c.groups;
  m.w_signed = w_signed || m.coopmat;
  m.d_signed = g.info(c.x).dtype == DType::Int8;
  m.plane = c.ho * c.wo;
  for (int64_t v : {c.groups, cin_g, c.h, c.w_in, c.kh, c.kw, c.ho, c.wo, c.strides[0],
                    c.strides[1], c.pads[0], c.pads[1], c.dilations[0], c.dilations[1]})
    m.geometry.push_back(checked_i32(v, op, "convolution parameter"));
  add_dispatches(g, m, requant, op);
  return true;
}

bool add_packed_matmul(ComputeGraph& g, const PackedMatmul& mm,
                       const std::optional<Requant>& requant, const std::string& op) {
  if (tuned(g, "qgemm.packed", 1) == 0 || mm.k % 4 != 0) return false;
  const HostTensor* b = g.constant_value(mm.b);
  const auto zeros = constant_zeros(g, mm.b_zero, op);
  if (!b || !zeros) return false;
  const bool w_signed = g.info(mm.b).dtype == DType::Int8;
  Gemm m;
  m.coopmat = coopmat_width(g, w_signed, *zeros);
  m.weights = pack_weights(
      g, mm.n, mm.k, w_signed, *zeros,
      [&](int64_t col, int64_t kk) { return b->bytes[kk * mm.n + col]; }, m.coopmat != 0);
  m.kind = Kind::Matmul;
  m.data = mm.a;
  m.y = mm.y;
  m.data_zero = mm.a_zero;
  m.data_zero_count = mm.a_zero_count;
  m.channels = mm.n;
  m.vectors = mm.rows;
  m.groups = 1;
  m.w_signed = w_signed || m.coopmat;
  m.d_signed = g.info(mm.a).dtype == DType::Int8;
  m.plane = 0;
  add_dispatches(g, m, requant, op);
  return true;
}

bool add_packed_dynamic_matmul(ComputeGraph& g, const PackedDynamicMatmul& mm,
                               const std::string& op) {
  if (tuned(g, "qgemm.packed", 1) == 0 || mm.k % 4 != 0) return false;
  const HostTensor* b = g.constant_value(mm.b);
  const auto zeros = constant_zeros(g, mm.b_zero, op);
  if (!b || !zeros) return false;
  if (mm.rows == 0 || mm.n == 0) return true;
  // The tensor cores only on quantized bytes (quantizing as it loads stays on the dot kernel).
  const bool b_signed = g.info(mm.b).dtype == DType::Int8;
  const uint32_t coopmat = mm.x_packed ? coopmat_width(g, b_signed, *zeros) : 0;
  const bool w_signed = b_signed || coopmat;
  const PackedWeights w = pack_weights(
      g, mm.n, mm.k, b_signed, *zeros,
      [&](int64_t col, int64_t kk) { return b->bytes[kk * mm.n + col]; }, coopmat != 0);
  // The float activation's dtype, which y, the bias and the residual share.
  const DType dtype = g.info(mm.y).dtype;
  const auto placeholder = [&] { return g.add_constant(HostTensor(dtype, {1})); };  // zeros
  const TensorRef bias = mm.bias ? *mm.bias : placeholder();
  const TensorRef residual = mm.residual ? *mm.residual : placeholder();
  // The epilogue's push constants after the GEMM's or the reduce's own (quant_packed.comp's and
  // quant_packed_reduce.comp's DYNAMIC fields).
  auto add_epilogue = [&](PushConstants& pc) {
    pc.add(int32_t{mm.residual.has_value()}).add(mm.activation);
    pc.add(mm.activation_params.alpha).add(mm.activation_params.beta);
  };
  const std::string epilogue =
      std::string(mm.residual ? " + residual" : "") + (mm.activation ? " + activation" : "");
  // Split-K only on quantized bytes (knob qdyn.split, default 1): the plain packed matmul's
  // slices (their partials need no zero point), then a reduce that computes the parameters
  // from the partials and applies the float epilogue. Quantizing as it loads, every slice
  // would quantize its rows again.
  const Plan pl = plan(g, mm.n, mm.rows, 1, w.k4, mm.x_packed && tuned(g, "qdyn.split", 1) != 0);
  if (pl.splits > 1) {
    Gemm m;
    m.kind = Kind::Matmul;
    m.data = *mm.x_packed;
    m.y = mm.y;
    m.data_zero = zero_point_i32(g, std::nullopt, op);  // the slices do not read it
    m.weights = w;
    m.channels = mm.n;
    m.vectors = mm.rows;
    m.groups = 1;
    m.data_zero_count = 1;
    m.w_signed = w_signed;
    m.d_signed = false;
    m.plane = 0;
    m.coopmat = coopmat;
    const TensorRef partials = *add_gemm_pass(g, m, std::nullopt, pl, op);
    const int64_t total = mm.rows * mm.n;
    PushConstants rp;
    rp.add(checked_i32(total, op, "output size")).add(checked_i32(mm.n, op, "channels"));
    rp.add(int32_t{0}).add(static_cast<int32_t>(pl.splits));
    rp.add(checked_i32(w.k4, op, "depth")).add(mm.range_count);
    rp.add(int32_t{1}).add(mm.b_scale_count).add(int32_t{0}).add(int32_t{0});
    rp.add(int32_t{mm.bias.has_value()});
    add_epilogue(rp);
    DispatchDesc r;
    r.shader = declared(
        shaders::qgemm::find(Kind::MatmulDynamicBytes, 0, false, true, false, 0, dtype), op);
    r.bindings = {{partials, Access::Read}, {mm.y, Access::Write},      {mm.range, Access::Read},
                  {w.chan, Access::Read},   {mm.b_scale, Access::Read}, {bias, Access::Read},
                  {residual, Access::Read}};
    r.groups = groups_for(static_cast<uint64_t>(total));
    r.local = {kLocal, 1, 1};
    r.push = rp.take();
    r.label = op + " (split-K reduce dynamic" + epilogue + ")";
    g.add_dispatch(std::move(r));
    return true;
  }
  const bool dot = coopmat == 0 && use_dot(g);
  PushConstants pc;
  pc.add(checked_i32(mm.n, op, "channels")).add(checked_i32(mm.rows, op, "rows"));
  pc.add(checked_i32(w.k4, op, "depth")).add(mm.range_count);
  pc.add(int32_t{1}).add(mm.b_scale_count).add(int32_t{0}).add(int32_t{0});
  pc.add(int32_t{mm.bias.has_value()}).add(int32_t{0});
  add_epilogue(pc);
  DispatchDesc d;
  const Kind kind = mm.x_packed ? Kind::MatmulDynamicBytes : Kind::MatmulDynamic;
  d.shader = declared(shaders::qgemm::find(kind, pl.tile, false, false, dot, coopmat, dtype), op);
  d.bindings = {{w.words, Access::Read}, {mm.x_packed.value_or(mm.x), Access::Read},
                {mm.y, Access::Write},   {mm.range, Access::Read},
                {w.chan, Access::Read},  {mm.b_scale, Access::Read},
                {bias, Access::Read},    {residual, Access::Read}};
  const uint64_t gx = (mm.rows + pl.tile - 1) / pl.tile, gy = (mm.n + pl.tile - 1) / pl.tile;
  check(gx <= 65535 && gy <= 65535, ErrorKind::Unsupported,
        op + ": " + std::to_string(mm.rows) + " rows x " + std::to_string(mm.n) +
            " columns need too many workgroups");
  d.groups = {static_cast<uint32_t>(gx), static_cast<uint32_t>(gy), 1};
  d.local = {coopmat ? kCoopmatThreads : tile_threads(pl.tile), 1, 1};
  d.spec = {uint32_t{w_signed}, 0u, uint32_t{w.any_zero}, 0u};
  d.push = pc.take();
  d.label = op + " (packed " + std::to_string(pl.tile) + (dot ? " dot" : "") +
            coopmat_label(coopmat) + (mm.x_packed ? " dynamic bytes" : " dynamic") + epilogue + ")";
  g.add_dispatch(std::move(d));
  return true;
}

}  // namespace vkgraph::ops
