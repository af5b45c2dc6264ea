// com.microsoft MatMulNBits: weight-only low-bit matmul. M = 1 (decode, no g_idx) runs a GEMV
// built to stream the packed weights at memory bandwidth (quant_nbits_gemv.comp). Prompt-sized
// M (>= 16 by default) dequantizes the weights into a float [K, N] scratch in one
// bandwidth-bound pass (quant_nbits_dequant.comp) and runs the float GEMM on it (tensor cores
// where the device has them); the M in between (and knob nbits.dequant = 0) a tiled GEMM that
// unpacks each weight slice into shared memory for 64 rows of a (quant_nbits_tiled.comp).
// Design: docs/notes/w4-5.md, docs/notes/w4b-5.md.
#include <algorithm>
#include <bit>
#include <cstring>
#include <limits>

#include "quant_util.h"
#include "vkgraph/ops/matmul.h"
#include "vkgraph/ops/tuning.h"
#include "vkgraph/vk/context.h"

namespace vkgraph::ops {
namespace {

// How one MatMulNBits weight is laid out: N rows of K codes in blocks.
struct NBitsLayout {
  int64_t n, k, bits, block, blocks, row_words, zero_row_bytes;
  int32_t zero_mode;
  // Words of a row that hold codes with k < K (the rest is block padding).
  int64_t words() const { return std::min(row_words, (k * bits + 31) / 32); }
};

uint32_t nbits_knob(ComputeGraph& g, const char* name, uint32_t fallback) {
  const Tuning* tuning = g.options().tuning.get();
  return tuning ? tuning->knob(name, fallback) : fallback;
}

constexpr uint32_t kLanes = 32;  // invocations per row set (quant_nbits_gemv.comp's LANES)
constexpr uint32_t kSets = 4;    // row sets per workgroup (SETS) unless split wider

// The GEMV's 16-byte-load layout of a constant weight (PREPACKED): rows padded to a multiple
// of 4 words; within each full step of `vec` * 32 words, natural word s0 + v * 32 + l (lane l's
// v-th word) moves to s0 + ((v / 4) * 32 + l) * 4 + v % 4, so lane l's words of a step are
// vec / 4 consecutive uvec4s. The last partial step keeps the natural order.
HostTensor prepack_gemv_weights(const HostTensor& b, const NBitsLayout& l, int64_t vec,
                                int64_t stride) {
  HostTensor out(DType::UInt8, {l.n, stride * 4});
  const int64_t step = vec * kLanes, full = l.words() / step * step;
  const uint8_t* src = b.bytes.data();
  uint8_t* dst = out.bytes.data();
  for (int64_t r = 0; r < l.n; ++r) {
    const uint8_t* row = src + r * l.row_words * 4;
    uint8_t* to = dst + r * stride * 4;
    for (int64_t s0 = 0; s0 < full; s0 += step)
      for (int64_t v = 0; v < vec; ++v)
        for (int64_t lane = 0; lane < kLanes; ++lane)
          std::memcpy(to + 4 * (s0 + ((v / 4) * kLanes + lane) * 4 + v % 4),
                      row + 4 * (s0 + v * kLanes + lane), 4);
    std::memcpy(to + 4 * full, row + 4 * full, 4 * (l.row_words - full));
  }
  return out;
}

// Both GEMVs' push constants (quant_nbits_gemv*.comp's Params) for a row stride of `stride`
// words.
std::vector<uint8_t> gemv_push(const NBitsLayout& l, int64_t stride, bool has_bias) {
  const std::string op = "matmul_nbits";
  PushConstants pc;
  pc.add(checked_i32(l.n, op, "N")).add(checked_i32(l.k, op, "K"));
  pc.add(static_cast<int32_t>(l.block)).add(checked_i32(l.blocks, op, "blocks"));
  pc.add(checked_i32(stride, op, "row words")).add(checked_i32(l.words(), op, "words"));
  pc.add(checked_i32(l.zero_row_bytes, op, "zero point bytes")).add(l.zero_mode);
  pc.add(int32_t{has_bias});
  return pc.take();
}

// The GEMV's bindings (the same in both kernels) with `words` as the weights.
std::vector<Binding> gemv_bindings(TensorRef a, TensorRef words, TensorRef scales,
                                   TensorRef zp_packed, TensorRef zp_float, TensorRef bias,
                                   TensorRef y) {
  return {{a, Access::Read},         {words, Access::Read},    {scales, Access::Read},
          {zp_packed, Access::Read}, {zp_float, Access::Read}, {bias, Access::Read},
          {y, Access::Write}};
}

// The first decode GEMV (quant_nbits_gemv.comp, knob nbits.gemv = 1). Knobs: nbits.subgroup =
// 0 forces the shared-memory reduction, nbits.rows the rows per row set (default 2 where that
// leaves >= 512 row sets, else 1), nbits.vec the words per lane and row in flight (a multiple
// of 4, default 8), nbits.prepack = 0 reads a constant weight in its natural layout,
// nbits.split (1, 2, 4 or 8; default 1) the row sets that share rows, each taking every
// split-th step (a workgroup of max(4, split) row sets).
void add_gemv(ComputeGraph& g, TensorRef a, TensorRef b, TensorRef scales, TensorRef zp_packed,
              TensorRef zp_float, TensorRef bias, TensorRef y, const NBitsLayout& l, bool has_bias,
              const std::string& suffix) {
  const std::string op = "matmul_nbits";
  const vk::DeviceFeatures& f = g.context().features();
  auto knob = [&](const char* name, uint32_t fallback) { return nbits_knob(g, name, fallback); };
  const bool subgroup = f.subgroup_arithmetic && knob("nbits.subgroup", 1) != 0;
  const uint32_t rows = std::clamp(knob("nbits.rows", l.n >= 2 * 512 ? 2u : 1u), 1u, kLanes);
  const uint32_t vec = std::clamp(knob("nbits.vec", 8) / 4 * 4, 4u, 32u);
  const uint32_t split = std::bit_floor(std::clamp(knob("nbits.split", 1), 1u, 8u));
  const uint32_t sets = std::max(kSets, split);
  const HostTensor* value = g.constant_value(b);
  const bool prepack = value && l.words() >= int64_t{vec} * kLanes && knob("nbits.prepack", 1) != 0;
  int64_t stride = l.row_words;
  TensorRef words = b;
  if (prepack) {
    stride = (l.row_words + 3) / 4 * 4;
    words = g.add_constant(prepack_gemv_weights(*value, l, vec, stride));
  }
  DispatchDesc d;
  d.shader = std::string(subgroup ? "quant_nbits_gemv_subgroup_" : "quant_nbits_gemv_") + suffix;
  d.bindings = gemv_bindings(a, words, scales, zp_packed, zp_float, bias, y);
  const int64_t per_group = int64_t{sets / split} * rows;
  const int64_t groups = (l.n + per_group - 1) / per_group;
  check(groups <= 65535, ErrorKind::Unsupported,
        op + ": N = " + std::to_string(l.n) + " exceeds the dispatch limits");
  d.groups = {static_cast<uint32_t>(groups), 1, 1};
  d.local = {kLanes * sets, 1, 1};
  d.spec = {rows, vec, static_cast<uint32_t>(l.bits), uint32_t{prepack}, sets, split};
  d.push = gemv_push(l, stride, has_bias);
  d.label = op;
  g.add_dispatch(std::move(d));
}

// The grid of a GEMV of row sets (quant_nbits_gemv_wide.comp, quant_nbits_gemv_dot.comp): `rows`
// rows a workgroup, the most of `most`, most / 2, ... 1 that still gives >= 512 workgroups
// unless the knob `rows_knob` says otherwise (1..16), and T <= max_threads invocations, a
// multiple of 32 covering a row's quads (4 words) in as few even passes as possible, so every
// invocation has work in each pass.
struct RowSetGrid {
  uint32_t rows, threads, groups;
};
RowSetGrid row_set_grid(ComputeGraph& g, const NBitsLayout& l, uint32_t most, const char* rows_knob,
                        int64_t max_threads) {
  uint32_t rows = most;
  while (rows > 1 && (l.n + rows - 1) / rows < 512) rows /= 2;
  rows = std::clamp(nbits_knob(g, rows_knob, rows), 1u, 16u);
  const int64_t quads = (l.words() + 3) / 4;
  const int64_t passes = (quads + max_threads - 1) / max_threads;
  const int64_t threads = std::min(max_threads, ((quads + passes - 1) / passes + 31) / 32 * 32);
  const int64_t groups = (l.n + rows - 1) / rows;
  check(groups <= 65535, ErrorKind::Unsupported,
        "matmul_nbits: N = " + std::to_string(l.n) + " exceeds the dispatch limits");
  return {rows, static_cast<uint32_t>(threads), static_cast<uint32_t>(groups)};
}

// The wide-load GEMV (quant_nbits_gemv_wide.comp, knob nbits.gemv = 2; needs subgroup
// arithmetic). row_set_grid with nbits.wide_rows rows (8, at most 2 with float16 activations;
// >= 512 workgroups is about 4 per SM on a 132-SM GPU) and nbits.wide_threads invocations at
// most (default 256, 64 with float16 activations). Natural layout: no prepacked copy.
// The float16 defaults are the H100 sweep's (docs/bench/2026-12-07-session19.md): 2 rows and
// 64 invocations against 8 and 128 gave 4096 x 4096 872 against 716 GB/s, 14336 x 4096 1253
// against 1126, 4096 x 14336 1294 against 1092, 11008 x 4096 (block 128) 1163 against 1014,
// 8-bit 1548 against 1326; with float32 activations 597 against 748, so those keep theirs.
// nbits.wide_prefetch = 1 loads each pass while the previous one computes (two passes in
// registers; pays only with several passes, i.e. with nbits.wide_threads below a row's quads).
void add_gemv_wide(ComputeGraph& g, TensorRef a, TensorRef b, TensorRef scales, TensorRef zp_packed,
                   TensorRef zp_float, TensorRef bias, TensorRef y, const NBitsLayout& l,
                   bool has_bias, const std::string& suffix) {
  const bool half = suffix == "f16";
  const int64_t max_threads =
      std::clamp(nbits_knob(g, "nbits.wide_threads", half ? 64 : 256), 32u, 256u) / 32 * 32;
  const RowSetGrid grid = row_set_grid(g, l, half ? 2 : 8, "nbits.wide_rows", max_threads);
  // 4-bit codes in fp16 mode: float16 arithmetic, two codes an instruction (default off until
  // measured: docs/notes/gemv4-6.md).
  const bool half_math = suffix == "f16" && l.bits == 4 && g.context().features().shader_float16 &&
                         nbits_knob(g, "nbits.half_math", 0) != 0;
  DispatchDesc d;
  d.shader = half_math ? "quant_nbits_gemv_wide_half_f16" : "quant_nbits_gemv_wide_" + suffix;
  d.bindings = gemv_bindings(a, b, scales, zp_packed, zp_float, bias, y);
  d.groups = {grid.groups, 1, 1};
  d.local = {grid.threads, 1, 1};
  d.spec = {grid.rows, static_cast<uint32_t>(l.bits), static_cast<uint32_t>(l.block),
            uint32_t{l.row_words % 4 == 0}, nbits_knob(g, "nbits.wide_prefetch", 0) != 0 ? 1u : 0u};
  d.push = gemv_push(l, l.row_words, has_bias);
  d.label = "matmul_nbits";
  g.add_dispatch(std::move(d));
}

// The integer-dot-product GEMV (quant_nbits_gemv_dot.comp) where accuracy_level 4 allows a in
// int8: 4-bit codes, blocks of 32..256 (whole quads of one block; a block's quads on lanes of
// one subgroup), the device's 4x8-bit dot products accelerated (knob nbits.dot: 2, the default,
// accelerated only; 1 whenever the device has them; 0 never) and subgroup shuffles for a block
// wider than 32. row_set_grid with nbits.dot_rows rows (8 with float32 activations, 4 with
// float16) and at most 256 invocations. Measured on an H100 (docs/bench/2026-12-07-session23.md,
// GB/s over the packed weights, the float GEMV in brackets): float32 activations 807 (747) at
// 4096 x 4096, 1115 (1024) at 14336 x 4096, 1198 (1025) at 4096 x 14336; float16 with 4 rows
// 877 (872), 1276 (1250), 1320 (1292), with 8 rows 824, 998, 1073. The per-code arithmetic
// was not what bound the float kernel: both stay below half of the memory's speed.
bool gemv_dot_fits(ComputeGraph& g, const NBitsLayout& l, int64_t accuracy_level) {
  const vk::DeviceFeatures& f = g.context().features();
  const uint32_t knob = nbits_knob(g, "nbits.dot", 2);
  const bool dot = knob == 2 ? f.integer_dot_4x8_accelerated : knob == 1 && f.integer_dot_product;
  return dot && accuracy_level == 4 && l.bits == 4 && l.block >= 32 && l.block <= 256 &&
         f.subgroup_arithmetic && f.subgroup_size >= l.block / 32 &&
         (l.block == 32 || f.subgroup_shuffle);
}

void add_gemv_dot(ComputeGraph& g, TensorRef a, TensorRef b, TensorRef scales, TensorRef zp_packed,
                  TensorRef zp_float, TensorRef bias, TensorRef y, const NBitsLayout& l,
                  bool has_bias, const std::string& suffix) {
  const RowSetGrid grid = row_set_grid(g, l, suffix == "f16" ? 4 : 8, "nbits.dot_rows", 256);
  DispatchDesc d;
  d.shader = "quant_nbits_gemv_dot_" + suffix;
  d.bindings = gemv_bindings(a, b, scales, zp_packed, zp_float, bias, y);
  d.groups = {grid.groups, 1, 1};
  d.local = {grid.threads, 1, 1};
  d.spec = {grid.rows, static_cast<uint32_t>(l.block)};  // rows of whole quads: block >= 32
  d.push = gemv_push(l, l.row_words, has_bias);
  d.label = "matmul_nbits (int8 dot)";
  g.add_dispatch(std::move(d));
}

// Whether M rows of a take the dequantize-then-GEMM path: from nbits.dequant_min_m rows (default
// 16, where the float GEMM's tiles and split-K beat the tiled kernel's one workgroup per 64 x 64
// tile; H200, M 128, K = N = 4096: 1.9 TFLOP/s there); nbits.dequant = 0 keeps the tiled kernel.
bool dequantize_for_gemm(ComputeGraph& g, int64_t m) {
  return nbits_knob(g, "nbits.dequant", 1) != 0 && m >= nbits_knob(g, "nbits.dequant_min_m", 16);
}

// The weights as a float [K, N] of `dtype` (a graph tensor: the planner reuses its memory once
// the GEMM has read it).
TensorRef dequantize_weights(ComputeGraph& g, TensorRef b, TensorRef scales, TensorRef zp_packed,
                             TensorRef zp_float, TensorRef gi, bool has_g_idx, const NBitsLayout& l,
                             DType dtype, const std::string& suffix) {
  const std::string op = "matmul_nbits";
  check(l.k * l.n <= std::numeric_limits<int32_t>::max(), ErrorKind::Unsupported,
        op + ": K * N = " + std::to_string(l.k * l.n) + " exceeds the dequantized weights' " +
            "32-bit indexing");
  TensorRef w = g.add_tensor({l.k, l.n}, dtype);
  PushConstants pc;
  pc.add(checked_i32(l.n, op, "N")).add(checked_i32(l.k, op, "K"));
  pc.add(static_cast<int32_t>(l.block)).add(checked_i32(l.blocks, op, "blocks"));
  pc.add(checked_i32(l.row_words, op, "row words"));
  pc.add(checked_i32(l.zero_row_bytes, op, "zero point bytes")).add(l.zero_mode);
  pc.add(int32_t{has_g_idx});
  DispatchDesc d;
  d.shader = "quant_nbits_dequant_" + suffix;
  d.bindings = {{b, Access::Read},        {scales, Access::Read}, {zp_packed, Access::Read},
                {zp_float, Access::Read}, {gi, Access::Read},     {w, Access::Write}};
  constexpr int64_t kTile = 64;  // quant_nbits_dequant.comp's TN and TK
  d.groups = {static_cast<uint32_t>((l.n + kTile - 1) / kTile),
              static_cast<uint32_t>((l.k + kTile - 1) / kTile), 1};
  check(d.groups[0] <= 65535 && d.groups[1] <= 65535, ErrorKind::Unsupported,
        op + ": K = " + std::to_string(l.k) + ", N = " + std::to_string(l.n) +
            " exceed the dispatch limits");
  d.local = {256, 1, 1};
  d.spec = {static_cast<uint32_t>(l.bits)};
  d.push = pc.take();
  d.label = op + " (dequantize)";
  g.add_dispatch(std::move(d));
  return w;
}

}  // namespace

TensorRef matmul_nbits(ComputeGraph& g, TensorRef a, TensorRef b, TensorRef scales,
                       const NBitsParams& params, std::optional<TensorRef> zero_points,
                       std::optional<TensorRef> g_idx, std::optional<TensorRef> bias) {
  const std::string op = "matmul_nbits";
  const TensorInfo ai = g.info(a);
  const std::string suffix = shader_suffix(float_dtype(g, ai.dtype, op));
  require_dtype(g, scales, ai.dtype, op);
  if (bias) require_dtype(g, *bias, ai.dtype, op);
  require_8bit_storage(g, op);
  const int64_t k = params.k, n = params.n, bits = params.bits, block = params.block_size;
  check(bits == 2 || bits == 4 || bits == 8, ErrorKind::Unsupported,
        op + ": bits = " + std::to_string(bits) + " (supported: 2, 4, 8)");
  check(block >= 16 && (block & (block - 1)) == 0, ErrorKind::InvalidArgument,
        op + ": block_size must be a power of two >= 16, got " + std::to_string(block));
  check(k > 0 && n > 0, ErrorKind::InvalidArgument, op + ": K and N must be positive");
  check(!ai.shape.empty() && ai.shape.back() == k, ErrorKind::InvalidArgument,
        op + ": a " + shape_str(ai.shape) + " must end in K = " + std::to_string(k));
  const int64_t blocks = (k + block - 1) / block;
  const int64_t blob = block * bits / 8;
  const TensorInfo bi = g.info(b);
  check(bi.dtype == DType::UInt8 && numel(bi.shape) == checked_mul(n, blocks * blob, op),
        ErrorKind::InvalidArgument,
        op + ": b must be uint8 [N, n_blocks, blob] = [" + std::to_string(n) + ", " +
            std::to_string(blocks) + ", " + std::to_string(blob) + "], got " +
            dtype_name(bi.dtype) + " " + shape_str(bi.shape));
  check(numel(g.info(scales).shape) == n * blocks, ErrorKind::InvalidArgument,
        op + ": scales must have N * n_blocks = " + std::to_string(n * blocks) + " values, got " +
            shape_str(g.info(scales).shape));
  const int64_t zero_row_bytes = (blocks * bits + 7) / 8;
  int32_t zero_mode = 0;
  if (zero_points) {
    const TensorInfo zi = g.info(*zero_points);
    if (zi.dtype == DType::UInt8) {
      zero_mode = 1;
      check(numel(zi.shape) == n * zero_row_bytes, ErrorKind::InvalidArgument,
            op + ": packed zero points must have N * ceil(n_blocks * bits / 8) = " +
                std::to_string(n * zero_row_bytes) + " bytes, got " + shape_str(zi.shape));
    } else {
      zero_mode = 2;
      check(zi.dtype == ai.dtype && numel(zi.shape) == n * blocks, ErrorKind::InvalidArgument,
            op + ": zero points must be uint8 (packed) or " + dtype_name(ai.dtype) + " [N, " +
                "n_blocks] (unpacked), got " + dtype_name(zi.dtype) + " " + shape_str(zi.shape));
    }
  }
  if (g_idx)
    check(g.info(*g_idx).dtype == DType::Int32 && numel(g.info(*g_idx).shape) == k,
          ErrorKind::InvalidArgument, op + ": g_idx must be int32 [K]");
  if (bias)
    check(numel(g.info(*bias).shape) == n, ErrorKind::InvalidArgument,
          op + ": bias must have N = " + std::to_string(n) + " values");

  // Bindings the variant does not read still need a buffer: tiny constants.
  auto dummy = [&](DType dtype) { return g.add_constant(HostTensor(dtype, {4})); };
  const DType fdt = ai.dtype;
  TensorRef zp_packed = zero_mode == 1 ? *zero_points : dummy(DType::UInt8);
  TensorRef zp_float = zero_mode == 2 ? *zero_points : dummy(fdt);
  TensorRef gi = g_idx ? *g_idx : dummy(DType::Int32);
  TensorRef bs = bias ? *bias : dummy(fdt);

  const int64_t m = numel(ai.shape) / k;
  Shape out = ai.shape;
  out.back() = n;
  if (m == 0) return g.add_tensor(out, fdt);
  const NBitsLayout layout{n, k, bits, block, blocks, blocks * blob / 4, zero_row_bytes, zero_mode};
  if (dequantize_for_gemm(g, m)) {
    TensorRef w = dequantize_weights(g, b, scales, zp_packed, zp_float, gi, g_idx.has_value(),
                                     layout, fdt, suffix);
    MatmulEpilogue e;
    e.bias = bias;
    return matmul(g, a, w, e);
  }
  TensorRef y = g.add_tensor(out, fdt);
  if (m == 1 && !g_idx) {
    // nbits.gemv: 2 the wide-load GEMV (needs subgroup arithmetic), 1 the first one. 2 by
    // default: on the H200 (2026-12-02) 716 against 427 GB/s at K = N = 4096, 1024 against
    // 743 at N = 14336, faster at every shape measured.
    if (gemv_dot_fits(g, layout, params.accuracy_level))
      add_gemv_dot(g, a, b, scales, zp_packed, zp_float, bs, y, layout, bias.has_value(), suffix);
    else if (g.context().features().subgroup_arithmetic && nbits_knob(g, "nbits.gemv", 2) == 2)
      add_gemv_wide(g, a, b, scales, zp_packed, zp_float, bs, y, layout, bias.has_value(), suffix);
    else
      add_gemv(g, a, b, scales, zp_packed, zp_float, bs, y, layout, bias.has_value(), suffix);
    return y;
  }
  PushConstants pc;
  pc.add(checked_i32(m, op, "rows")).add(checked_i32(n, op, "N")).add(checked_i32(k, op, "K"));
  pc.add(static_cast<int32_t>(bits)).add(static_cast<int32_t>(block));
  pc.add(checked_i32(blocks, op, "blocks")).add(checked_i32(layout.row_words, op, "row words"));
  pc.add(checked_i32(zero_row_bytes, op, "zero point bytes")).add(zero_mode);
  pc.add(int32_t{g_idx.has_value()}).add(int32_t{bias.has_value()});
  DispatchDesc d;
  d.shader = "quant_nbits_tiled_" + suffix;
  d.bindings = {{a, Access::Read},         {b, Access::Read},        {scales, Access::Read},
                {zp_packed, Access::Read}, {zp_float, Access::Read}, {gi, Access::Read},
                {bs, Access::Read},        {y, Access::Write}};
  d.groups = {static_cast<uint32_t>((n + 63) / 64), static_cast<uint32_t>((m + 63) / 64), 1};
  check(d.groups[0] <= 65535 && d.groups[1] <= 65535, ErrorKind::Unsupported,
        op + ": M = " + std::to_string(m) + ", N = " + std::to_string(n) +
            " exceed the dispatch limits");
  d.local = {256, 1, 1};
  d.push = pc.take();
  d.label = op;
  g.add_dispatch(std::move(d));
  return y;
}

}  // namespace vkgraph::ops
