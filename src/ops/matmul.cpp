// matmul, linear and gemm: shape rules, then one GEMM problem described by strides, simplified
// (batch dims folded into M, N == 1 turned into M == 1) and sent to the tiled or the GEMV kernel.
#include <algorithm>
#include <limits>
#include <string>
#include <utility>

#include "core/shape_rules.h"
#include "matmul_config.h"
#include "op_util.h"
#include "vkgraph/ops.h"
#include "vkgraph/shaders/matmul_coopmat.h"
#include "vkgraph/shaders/matmul_gemv.h"
#include "vkgraph/shaders/matmul_splitk_reduce.h"
#include "vkgraph/shaders/matmul_tiled.h"

namespace vkgraph::ops {
namespace {

constexpr size_t kMaxBatchRank = 4;  // MAX_BATCH in matmul_common.glsl
// Operands of rank <= kMaxRank leave at most this many batch dims.
static_assert(kMaxBatchRank == kMaxRank - 2);

// What runs after the dot products: alpha * acc + beta * bias + residual, then the activation.
struct Epilogue {
  std::optional<TensorRef> bias;
  std::optional<TensorRef> residual;  // of the result's shape
  const char* bias_name = "bias";     // in errors; ONNX Gemm calls it C
  float alpha = 1.f, beta = 1.f;
  EpilogueActivation activation = EpilogueActivation::None;
  UnaryParams params;
};

Epilogue make_epilogue(const std::string& op, std::optional<TensorRef> bias,
                       std::optional<UnaryOp> activation, UnaryParams params,
                       std::optional<TensorRef> residual = std::nullopt) {
  Epilogue e;
  e.bias = bias;
  e.residual = residual;
  e.params = params;
  if (activation) {
    auto code = epilogue_activation(*activation);
    check(code.has_value(), ErrorKind::Unsupported,
          op + ": activation UnaryOp #" + std::to_string(static_cast<int>(*activation)) +
              " cannot be fused (see ops::matmul_can_fuse)");
    e.activation = *code;
  }
  return e;
}

// A matrix operand as the kernel reads it: logical shape [..., rows, cols] (or [K] for a 1-D
// matmul operand) and element strides per dim, so a transposed view costs nothing.
struct Operand {
  TensorRef tensor;
  Shape shape;
  std::vector<int64_t> strides;
};

Operand as_stored(ComputeGraph& g, TensorRef t) {
  Shape shape = g.info(t).shape;
  return {t, shape, shapes::contiguous_strides(shape)};
}

// The view `v` of its stored tensor: dims and strides permuted.
Operand permuted(ComputeGraph& g, const PermutedView& v, const std::string& op) {
  Operand stored = as_stored(g, v.tensor);
  if (v.perm.empty()) return stored;
  Operand o{v.tensor, {}, {}};
  for (int64_t d : resolve_perm(stored.shape, v.perm, op)) {
    o.shape.push_back(stored.shape[d]);
    o.strides.push_back(stored.strides[d]);
  }
  return o;
}

// Swaps the last two dims of a 2-D operand's view.
Operand transposed(Operand o) {
  std::swap(o.shape[0], o.shape[1]);
  std::swap(o.strides[0], o.strides[1]);
  return o;
}

// One batched GEMM in element strides. The rows of C are indexed by (batch..., m): `rows` holds
// those dims outermost first, ending with M, and each stride vector matches it. B's stride
// along M is 0; C is contiguous.
struct GemmProblem {
  int64_t n = 1, k = 1;
  Shape rows;
  std::vector<int64_t> a_rows, b_rows, bias_rows;
  int64_t a_sk = 0, b_sk = 0, b_sn = 0, bias_sn = 0;
  TensorRef a, b;
  int64_t m() const { return rows.back(); }
};

// Strides of `o`'s batch dims (all but the last two) broadcast against `batch`: right-aligned,
// 0 where the operand has size 1.
std::vector<int64_t> batch_strides(const Operand& o, const Shape& batch) {
  std::vector<int64_t> s(batch.size(), 0);
  size_t own = o.shape.size() - 2;
  for (size_t i = 0; i < own; ++i) {
    size_t at = batch.size() - own + i;
    s[at] = o.shape[i] == 1 ? 0 : o.strides[i];
  }
  return s;
}

// Merges adjacent row dims wherever every operand steps through them as one dim (C always
// does), and drops size-1 dims. A [B, S, K] input against a 2-D weight becomes one GEMM with
// M = B * S, which lets small-S batches use the GEMV kernel and fills the tiles.
void coalesce_rows(GemmProblem& p) {
  GemmProblem out = p;
  out.rows.clear();
  out.a_rows.clear();
  out.b_rows.clear();
  out.bias_rows.clear();
  for (size_t i = 0; i < p.rows.size(); ++i) {
    bool last = i + 1 == p.rows.size();
    if (p.rows[i] == 1 && !last) continue;
    if (!out.rows.empty()) {
      int64_t inner = p.rows[i];
      // M == 1 (the last dim; other size-1 dims were dropped above) never steps, whatever its
      // strides, so the dim outside it becomes M where B does not step along it (B's stride
      // along M is 0). The [S, 1, K] transpose of [1, S, K] that nn.MultiheadAttention's
      // in-projection reads is then one GEMM of M = S, not S GEMVs each reading all of B.
      if (inner == 1 && out.b_rows.back() == 0) continue;
      bool mergeable = out.a_rows.back() == p.a_rows[i] * inner &&
                       out.b_rows.back() == p.b_rows[i] * inner &&
                       out.bias_rows.back() == p.bias_rows[i] * inner;
      if (mergeable) {
        out.rows.back() *= inner;
        out.a_rows.back() = p.a_rows[i];
        out.b_rows.back() = p.b_rows[i];
        out.bias_rows.back() = p.bias_rows[i];
        continue;
      }
    }
    out.rows.push_back(p.rows[i]);
    out.a_rows.push_back(p.a_rows[i]);
    out.b_rows.push_back(p.b_rows[i]);
    out.bias_rows.push_back(p.bias_rows[i]);
  }
  p = std::move(out);
}

// C = A B with N == 1 is C^T = B^T A^T with M == 1: same output bytes, and the GEMV kernel
// serves it instead of a tiled GEMM that would leave BN - 1 columns of every tile idle.
void transpose_if_single_column(GemmProblem& p) {
  if (p.n != 1 || p.m() == 1) return;
  int64_t m = p.m();
  std::swap(p.a, p.b);
  int64_t a_sm = p.a_rows.back();
  p.a_rows.back() = 0;  // row 0 only
  p.a_sk = std::exchange(p.b_sk, p.a_sk);
  p.b_sn = a_sm;
  for (size_t i = 0; i + 1 < p.rows.size(); ++i) std::swap(p.a_rows[i], p.b_rows[i]);
  p.bias_sn = std::exchange(p.bias_rows.back(), p.bias_sn);
  p.rows.back() = 1;
  p.n = m;
}

// Unidirectional broadcast: `shape` stretches to `target` without changing it.
bool broadcasts_to(const Shape& shape, const Shape& target) {
  if (shape.size() > target.size()) return false;
  for (size_t i = 0; i < shape.size(); ++i) {
    int64_t d = shape[shape.size() - 1 - i], t = target[target.size() - 1 - i];
    if (d != 1 && d != t) return false;
  }
  return true;
}

int32_t narrow(int64_t v) {
  return static_cast<int32_t>(v);
}

// Push constants of matmul_common.glsl.
std::vector<uint8_t> push_constants(const GemmProblem& p, const Epilogue& e, int64_t k_chunk) {
  size_t batch_rank = p.rows.size() - 1;
  std::vector<int32_t> batch(kMaxBatchRank, 1), a_sb(kMaxBatchRank, 0), b_sb(kMaxBatchRank, 0),
      bias_sb(kMaxBatchRank, 0);
  for (size_t i = 0; i < batch_rank; ++i) {
    batch[i] = narrow(p.rows[i]);
    a_sb[i] = narrow(p.a_rows[i]);
    b_sb[i] = narrow(p.b_rows[i]);
    bias_sb[i] = narrow(p.bias_rows[i]);
  }
  PushConstants pc;
  pc.add(narrow(p.m())).add(narrow(p.n)).add(narrow(p.k));
  pc.add(narrow(p.a_rows.back())).add(narrow(p.a_sk)).add(narrow(p.b_sk)).add(narrow(p.b_sn));
  pc.add(narrow(p.bias_rows.back())).add(narrow(p.bias_sn));
  // EPILOGUE_* bits of matmul_common.glsl.
  const int32_t inputs = (e.bias ? 1 : 0) | (e.residual ? 2 : 0);
  pc.add(inputs).add(static_cast<int32_t>(e.activation));
  pc.add(e.alpha).add(e.beta).add(e.params.alpha).add(e.params.beta).add(narrow(k_chunk));
  pc.add_array(batch, kMaxBatchRank).add_array(a_sb, kMaxBatchRank);
  pc.add_array(b_sb, kMaxBatchRank).add_array(bias_sb, kMaxBatchRank);
  return pc.take();
}

// Workgroups along one dim: the tiles of `tile` that cover `extent` (checked against the
// device limit by check_groups).
uint32_t tiles_covering(int64_t extent, uint32_t tile) {
  return static_cast<uint32_t>(shapes::ceil_div(static_cast<uint64_t>(extent), tile));
}

void check_groups(ComputeGraph& g, const std::array<uint32_t, 3>& groups, const std::string& op) {
  const uint32_t* limit = g.context().limits().maxComputeWorkGroupCount;
  for (int i = 0; i < 3; ++i)
    check(groups[i] <= limit[i], ErrorKind::Unsupported,
          op + ": needs " + std::to_string(groups[i]) + " workgroups in dimension " +
              std::to_string(i) + ", above the device's " + std::to_string(limit[i]));
}

// Whether matmul_coopmat.comp can read A of `p`: fp16 16x16x16 fragments and subgroups of 32
// on the device, no batch, A row-major with rows of whole 16-byte words (its loads).
bool coopmat_reads_a(ComputeGraph& g, const GemmProblem& p) {
  const vk::DeviceFeatures& f = g.context().features();
  return f.coopmat_f16_16x16x16 && f.subgroup_size == 32 && p.rows.size() == 1 && p.a_sk == 1 &&
         p.a_rows.back() % 8 == 0;
}

// How matmul_coopmat.comp reads B for `p` with its 16-byte loads: row-major [K, N] (false) or,
// with MatmulConfig::coopmat_b_t, stored [N, K] (true, its B_T variants); nullopt when it
// cannot. The product then needs whole tiles of K, and of N with B row-major (coopmat_fits).
std::optional<bool> coopmat_b_layout(ComputeGraph& g, const MatmulConfig& cfg,
                                     const GemmProblem& p) {
  if (!coopmat_reads_a(g, p)) return std::nullopt;
  if (p.b_sn == 1 && p.b_sk % 8 == 0) return false;
  if (cfg.coopmat_b_t && p.b_sk == 1 && p.b_sn % 8 == 0) return true;
  return std::nullopt;
}

// How matmul_coopmat.comp reads B for `p` where only its K_TAIL and B_SCALAR loads take it
// (knob mm16.unaligned, default 1): K a multiple of 8 but of no slice depth (a convolution's
// 40 or 240 input channels), or B row-major with rows not of whole 16-byte words (a
// convolution's 49 or 196 pixels: its activations as B) or N ending inside a tile. As
// coopmat_b_layout, plus row-major B of any row length; nullopt when it cannot.
std::optional<bool> coopmat_unaligned_b_layout(ComputeGraph& g, const MatmulConfig& cfg,
                                               const GemmProblem& p) {
  if (p.k % 8 != 0 || tuned(g, "mm16.unaligned", 1) == 0) return std::nullopt;
  if (std::optional<bool> b_t = coopmat_b_layout(g, cfg, p)) return b_t;
  if (coopmat_reads_a(g, p) && p.b_sn == 1) return false;
  return std::nullopt;
}

// Whole tiles of K, and of N unless B is stored [N, K] (whose loads check N).
bool coopmat_fits(ComputeGraph& g, const MatmulConfig& cfg, const GemmProblem& p,
                  const CoopmatTile& t) {
  std::optional<bool> b_t = coopmat_b_layout(g, cfg, p);
  return b_t && (*b_t || p.n % t.tile_n() == 0) && p.k % t.bk == 0;
}

// The tiles of the declared cooperative-matrix variants (matmul.cmake) that `context`'s
// limits allow with B's layout `b_t`, for the shape-based choice.
std::vector<CoopmatTile> declared_coopmat_tiles(const vk::Context& context, bool b_t) {
  const VkPhysicalDeviceLimits& lim = context.limits();
  std::vector<CoopmatTile> tiles;
  for (const auto& v : shaders::matmul_coopmat::kVariants) {
    CoopmatTile t{v.sg_m, v.sg_n, v.frag_m, v.frag_n, v.bk, v.stages, 1, v.depth};
    if (v.split != shaders::matmul_coopmat::Split::None || v.b_t != b_t ||
        v.dtype != DType::Float16 || t.threads() > lim.maxComputeWorkGroupInvocations ||
        t.shared_bytes(b_t) > lim.maxComputeSharedMemorySize || !t.fits_epilogue())
      continue;
    tiles.push_back(t);
  }
  return tiles;
}

// The cooperative-matrix tile for `p` and how it reads B (stored [N, K]: `b_t`): with
// MatmulConfig::coopmat_pick, the shape-based choice among the declared variants; else the
// default, or the small one when the default would give too few workgroups. nullopt when none
// fits, or when a deep K over few tiles would leave each of a handful of workgroups a long
// serial walk that neither splits (coopmat_split_k) nor the tiled kernel's split-K takes over
// (H200, M 128, N 512, K 2048: 0.033 ms on 16 tensor-core tiles, 0.021 ms split-K fp32).
struct CoopmatChoice {
  CoopmatTile tile;
  bool b_t = false;
};
std::optional<CoopmatChoice> coopmat_tile(ComputeGraph& g, const MatmulConfig& cfg,
                                          const GemmProblem& p) {
  if (!cfg.use_coopmat) return std::nullopt;
  auto tiles = [&](const CoopmatTile& t) {
    return uint64_t{tiles_covering(p.n, t.tile_n())} * tiles_covering(p.m(), t.tile_m());
  };
  std::optional<CoopmatTile> t;
  std::optional<bool> b_t = coopmat_b_layout(g, cfg, p);
  if (cfg.coopmat_pick) {
    if (b_t)
      t = pick_coopmat_tile(declared_coopmat_tiles(g.context(), *b_t), p.m(), p.n, p.k, cfg, *b_t);
    // Else the K_TAIL / B_SCALAR loads: the choice as for K rounded up to whole slices, N
    // ending anywhere.
    if (!t && (b_t = coopmat_unaligned_b_layout(g, cfg, p))) {
      const int64_t bk = cfg.coopmat_pick_bk, k = (p.k + bk - 1) / bk * bk;
      t = pick_coopmat_tile(declared_coopmat_tiles(g.context(), *b_t), p.m(), p.n, k, cfg, true);
    }
  } else if (cfg.coopmat_small && tiles(cfg.coopmat) < cfg.coopmat_small_below &&
             coopmat_fits(g, cfg, p, *cfg.coopmat_small)) {
    t = cfg.coopmat_small;
  } else if (coopmat_fits(g, cfg, p, cfg.coopmat)) {
    t = cfg.coopmat;
  }
  if (!t ||
      (!cfg.coopmat_split_k && static_cast<uint64_t>(p.k) > cfg.coopmat_max_k_per_tile * tiles(*t)))
    return std::nullopt;
  return CoopmatChoice{*t, *b_t};
}

// Adds the dispatch `d` (its bindings, spec constants and push constants set; C bound to `out`)
// of a GEMM split `split` ways, writing fp32 partials to a scratch graph tensor (so the planner
// and the hazard tracker see them), and the reduce pass summing them into `out` with the
// epilogue `e`. `partial_access` is how the partial pass touches the scratch.
void add_split_k_dispatches(ComputeGraph& g, DispatchDesc d, const SplitK& split,
                            const GemmProblem& p, const Epilogue& e, TensorRef out, DType dtype,
                            Access partial_access, const std::string& op) {
  const int64_t batch = d.groups[2];
  TensorRef partials = g.add_tensor({split.splits * batch, p.m(), p.n}, DType::Float32);
  d.bindings[3] = {partials, partial_access};
  d.groups[2] *= split.splits;
  check_groups(g, d.groups, op);
  DispatchDesc reduce;
  reduce.shader = declared(shaders::matmul_splitk_reduce::find(dtype), op);
  reduce.bindings = {{partials, Access::Read},
                     {partials, Access::Read},
                     {e.bias.value_or(partials), Access::Read},
                     {out, Access::Write},
                     {e.residual.value_or(partials), Access::Read}};
  reduce.push = d.push;
  reduce.groups = groups_for(static_cast<uint64_t>(batch * p.m() * p.n));
  reduce.local = {kLocal, 1, 1};
  reduce.label = op + " (split-K reduce)";
  g.add_dispatch(std::move(d));
  g.add_dispatch(std::move(reduce));
}

// A constant B stored [K, N] whose rows are not whole 16-byte words (N % 8 != 0: gpt2's
// lm_head as the legacy exporter writes it, N = 50257) keeps the tensor cores from it: their
// row-major loads are 16-byte vectors. Stored transposed once, [N, K], it takes their B_T
// variants (knob mm16.transpose_b, default 1). H100 (docs/bench/2026-12-07-session21.md, call
// B): that lm_head took 0.520 ms on the fp32-arithmetic tiles, the dynamo export's (wte read
// transposed) 0.144 ms on tensor cores. Returns p with B replaced, or nullopt.
std::optional<GemmProblem> with_transposed_constant_b(ComputeGraph& g, const MatmulConfig& cfg,
                                                      const GemmProblem& p) {
  const HostTensor* b = g.constant_value(p.b);
  if (!b || b->dtype != DType::Float16 || b->shape.size() != 2 || b->shape[0] != p.k ||
      b->shape[1] != p.n || p.b_sk != p.n || p.b_sn != 1 ||
      std::any_of(p.b_rows.begin(), p.b_rows.end(), [](int64_t s) { return s != 0; }) ||
      tuned(g, "mm16.transpose_b", 1) == 0)
    return std::nullopt;
  GemmProblem q = p;
  q.b_sk = 1;
  q.b_sn = p.k;
  if (coopmat_b_layout(g, cfg, p) || coopmat_b_layout(g, cfg, q) != true) return std::nullopt;
  HostTensor t(DType::Float16, {p.n, p.k});
  const uint16_t* from = b->data<uint16_t>();
  uint16_t* to = t.data<uint16_t>();
  // In 64 x 64 blocks, so that reads and writes both stay within a few cache lines (gpt2's
  // lm_head is 38.6 M halves).
  constexpr int64_t kBlock = 64;
  for (int64_t k0 = 0; k0 < p.k; k0 += kBlock)
    for (int64_t n0 = 0; n0 < p.n; n0 += kBlock)
      for (int64_t kk = k0; kk < std::min(p.k, k0 + kBlock); ++kk)
        for (int64_t nn = n0; nn < std::min(p.n, n0 + kBlock); ++nn)
          to[nn * p.k + kk] = from[kk * p.n + nn];
  q.b = g.add_constant(std::move(t), g.info(p.b).name + " (transposed)");
  return q;
}

// Picks the kernel and its specialization for `problem` and adds the dispatch(es) writing
// `out`. fp16 products take the cooperative-matrix kernel where it fits (B a constant stored
// transposed where only that makes it fit), else the same kernels as fp32 in their fp16
// variants (fp32 arithmetic, fp32 split-K partials).
void add_gemm_dispatch(ComputeGraph& g, const GemmProblem& problem, const Epilogue& e,
                       TensorRef out, const std::string& op) {
  MatmulConfig cfg = matmul_config(g);
  const bool fp16 = g.info(out).dtype == DType::Float16;
  const GemmProblem p = fp16 && problem.m() > cfg.gemv_rows
                            ? with_transposed_constant_b(g, cfg, problem).value_or(problem)
                            : problem;
  const DType dtype = fp16 ? DType::Float16 : DType::Float32;
  int64_t batch = numel(Shape(p.rows.begin(), p.rows.end() - 1));
  check(batch <= std::numeric_limits<uint32_t>::max(), ErrorKind::Unsupported,
        op + ": batch of " + std::to_string(batch) + " is too large");
  DispatchDesc d;
  d.bindings = {{p.a, Access::Read},
                {p.b, Access::Read},
                {e.bias.value_or(p.a), Access::Read},
                {out, Access::Write},
                {e.residual.value_or(p.a), Access::Read}};
  d.label = op;
  // A few rows (a classifier's batch-1 head) take the GEMV, as in fp32: a tensor-core tile
  // would compute 16 rows or more for them (H200: mobilenet_v3's 1 x 1280 x 960 head 16.4 us on
  // tensor cores, 10.0 us as an fp32 GEMV).
  std::optional<CoopmatChoice> coopmat =
      fp16 && p.m() > cfg.gemv_rows ? coopmat_tile(g, cfg, p) : std::nullopt;
  if (coopmat) {
    const CoopmatTile& t = coopmat->tile;
    const bool b_t = coopmat->b_t;
    const bool epilogue =
        e.bias || e.residual || e.activation != EpilogueActivation::None || e.alpha != 1.f;
    d.groups = {tiles_covering(p.n, t.tile_n()), tiles_covering(p.m(), t.tile_m()), 1};
    const SplitK split = coopmat_split_k(t, uint64_t{d.groups[0]} * d.groups[1], p.k, cfg);
    const bool splits = split.splits > 1;
    const bool fused = splits && cfg.coopmat_fused_split;
    using shaders::matmul_coopmat::Split;
    const Split mode = !splits ? Split::None : fused ? Split::Fused : Split::Partials;
    // matmul_coopmat.comp's K_TAIL and B_SCALAR (coopmat_unaligned_b_layout).
    const bool k_tail = p.k % t.bk != 0;
    const bool b_scalar = !b_t && (p.b_sk % 8 != 0 || p.n % t.tile_n() != 0);
    const std::string variant =
        t.name() + (b_t ? " bt" : "") + (k_tail ? " ktail" : "") + (b_scalar ? " bscalar" : "");
    std::optional<vk::ShaderId> shader = shaders::matmul_coopmat::find(
        t.sg_m, t.sg_n, t.frag_m, t.frag_n, t.bk, t.stages, t.depth, mode, b_t, DType::Float16);
    check(shader.has_value(), ErrorKind::Unsupported,
          op + ": no cooperative-matrix variant " + variant +
              (fused    ? " fused split-K"
               : splits ? " split-K"
                        : "") +
              " (matmul.cmake lists them)");
    d.shader = *shader;
    // The 1.3.239 validation layer counts coopMatStoreNV's target as read too (seen on the
    // H200 as a SYNC-HAZARD after a transfer write); ordering it as read-write costs nothing.
    d.bindings[3].access = Access::ReadWrite;
    d.local = {t.threads(), 1, 1};
    // The split partial pass stores raw sums; the reduce pass applies the epilogue.
    d.spec = {t.group_m, epilogue && (!splits || fused) ? 1u : 0u, k_tail ? 1u : 0u,
              b_scalar ? 1u : 0u};
    d.push = push_constants(p, e, split.k_chunk);
    // The variant in the label, so profiles (and tests) show which kernel ran.
    d.label = op + " (coopmat " + variant +
              (splits ? " split " + std::to_string(split.splits) + (fused ? " fused" : "")
                      : std::string()) +
              ")";
    if (splits && !fused) {
      add_split_k_dispatches(g, std::move(d), split, p, e, out, dtype, Access::ReadWrite, op);
      return;
    }
    if (fused) {
      // Partials padded to whole tiles (the kernel stores whole fragments) and one arrival
      // counter per tile, zero between runs (the last arrival resets it).
      const int64_t rows = int64_t{d.groups[1]} * t.tile_m(),
                    cols = int64_t{d.groups[0]} * t.tile_n();
      TensorRef partials = g.add_tensor({split.splits, rows, cols}, DType::Float32);
      TensorRef counters =
          g.add_state(HostTensor(DType::Int32, {int64_t{d.groups[0]} * d.groups[1]}));
      d.bindings.push_back({partials, Access::ReadWrite});
      d.bindings.push_back({counters, Access::ReadWrite});
      d.groups[2] = split.splits;
    }
    check_groups(g, d.groups, op);
    g.add_dispatch(std::move(d));
    return;
  }
  if (p.m() <= cfg.gemv_rows) {
    bool k_fast = p.b_sk == 1 && (p.b_sn != 1 || p.n == 1);
    auto four = [](int64_t v) { return v % 4 == 0; };
    bool vec4_b =
        k_fast && four(p.k) && four(p.b_sn) && std::all_of(p.b_rows.begin(), p.b_rows.end(), four);
    uint32_t cols;
    if (cfg.gemv_subgroup && k_fast) {
      cols = cfg.gemv_threads() / cfg.subgroup_size;
      d.shader = declared(shaders::matmul_gemv::find(true, dtype), op);
      d.local = {cfg.gemv_threads(), 1, 1};
    } else {
      cols = k_fast ? cfg.gemv_other : cfg.gemv_contig;
      d.shader = declared(shaders::matmul_gemv::find(false, dtype), op);
      d.local = {cfg.gemv_contig, cfg.gemv_other, 1};
    }
    // Spec constants 3..6: ROWS, K_FAST, COLS (the subgroup variant's), VEC4_B.
    d.spec = {cfg.gemv_rows, k_fast ? 1u : 0u, cols, vec4_b ? 1u : 0u};
    d.groups = {tiles_covering(p.n, cols), tiles_covering(p.m(), cfg.gemv_rows),
                static_cast<uint32_t>(batch)};
    d.push = push_constants(p, e, 0);
    check_groups(g, d.groups, op);
    g.add_dispatch(std::move(d));
    return;
  }
  bool a_k_fast = p.a_sk == 1;
  bool b_k_fast = p.b_sk == 1 && p.b_sn != 1;
  auto tiles_of = [&](const GemmTile& tile) {
    return uint64_t{tiles_covering(p.n, tile.tile_n())} * tiles_covering(p.m(), tile.tile_m()) *
           batch;
  };
  GemmTile t = cfg.tile;
  if (cfg.large && tiles_of(*cfg.large) >= cfg.large_min_tiles)
    t = *cfg.large;
  else if (cfg.small && tiles_of(cfg.tile) < cfg.small_max_tiles)
    t = *cfg.small;
  bool blocked_lanes = t.blocked_lanes && t.threads_x % 8 == 0 && t.threads_y % 4 == 0;
  d.local = {t.threads_x, t.threads_y, 1};
  d.spec = {t.micro_m,          t.micro_n,          t.bk,
            a_k_fast ? 1u : 0u, b_k_fast ? 1u : 0u, blocked_lanes ? 1u : 0u,
            t.stages,           cfg.group_m};
  d.groups = {tiles_covering(p.n, t.tile_n()), tiles_covering(p.m(), t.tile_m()),
              static_cast<uint32_t>(batch)};
  SplitK split = choose_split_k(uint64_t{d.groups[0]} * d.groups[1] * d.groups[2],
                                t.threads_x * t.threads_y, p.k, split_k_policy(g));
  d.push = push_constants(p, e, split.k_chunk);
  if (split.splits == 1) {
    d.shader = declared(shaders::matmul_tiled::find(t.vec4(), false, dtype), op);
    check_groups(g, d.groups, op);
    g.add_dispatch(std::move(d));
    return;
  }
  d.shader = declared(shaders::matmul_tiled::find(t.vec4(), true, dtype), op);
  add_split_k_dispatches(g, std::move(d), split, p, e, out, dtype, Access::Write, op);
}

// `s`: the bias's strides against the numpy result, which lacks the dims a 1-D operand was
// promoted with; those have size 1 in the problem, so stride 0.
void set_bias_strides(GemmProblem& p, const std::vector<int32_t>& s, bool a_vector, bool b_vector) {
  size_t batch_rank = p.rows.size() - 1;
  std::copy(s.begin(), s.begin() + batch_rank, p.bias_rows.begin());
  auto it = s.begin() + batch_rank;
  p.bias_rows.back() = a_vector ? 0 : *it++;
  p.bias_sn = b_vector ? 0 : *it;
}

// numpy.matmul of two operand views plus the epilogue. 1-D operands are promoted to matrices
// here and the added dims left out of the result.
TensorRef matmul_views(ComputeGraph& g, Operand a, Operand b, const Epilogue& e,
                       const std::string& op) {
  // fp16 operands give an fp16 result (fp32 accumulation); both operands share one dtype.
  const DType dtype = g.info(a.tensor).dtype;
  check(dtype == DType::Float32 || dtype == DType::Float16, ErrorKind::Unsupported,
        op + ": input A is " + dtype_name(dtype) + "; float32 and float16 are supported");
  check(dtype != DType::Float16 || g.context().features().storage_buffer_16bit,
        ErrorKind::Unsupported, op + ": float16 needs 16-bit storage buffers on this device");
  for (const Operand* o : {&a, &b}) {
    const char* which = o == &a ? "A" : "B";
    require_dtype(g, o->tensor, dtype, op);
    check(!o->shape.empty(), ErrorKind::InvalidArgument,
          op + ": input " + which + " is a scalar (rank 0); it needs at least one dim");
    check(o->shape.size() <= static_cast<size_t>(kMaxRank), ErrorKind::Unsupported,
          op + ": input " + which + " has rank " + std::to_string(o->shape.size()) + ", above " +
              std::to_string(kMaxRank));
  }
  bool a_vector = a.shape.size() == 1, b_vector = b.shape.size() == 1;
  if (a_vector) {
    a.shape.insert(a.shape.begin(), 1);
    a.strides.insert(a.strides.begin(), 0);
  }
  if (b_vector) {
    b.shape.push_back(1);
    b.strides.push_back(0);
  }
  int64_t m = a.shape.end()[-2], k = a.shape.back(), n = b.shape.back();
  int64_t kb = b.shape.end()[-2];
  check(k == kb, ErrorKind::InvalidArgument,
        op + ": inner dims differ: A " + shape_str(g.info(a.tensor).shape) +
            " has K=" + std::to_string(k) + ", B " + shape_str(g.info(b.tensor).shape) +
            " has K=" + std::to_string(kb));
  Shape batch = broadcast_shapes(Shape(a.shape.begin(), a.shape.end() - 2),
                                 Shape(b.shape.begin(), b.shape.end() - 2), op.c_str());
  Shape result = batch;
  if (!a_vector) result.push_back(m);
  if (!b_vector) result.push_back(n);

  GemmProblem p;
  p.a = a.tensor;
  p.b = b.tensor;
  p.n = n;
  p.k = k;
  p.rows = batch;
  p.rows.push_back(m);
  p.a_rows = batch_strides(a, batch);
  p.a_rows.push_back(a.strides.end()[-2]);
  p.b_rows = batch_strides(b, batch);
  p.b_rows.push_back(0);
  p.a_sk = a.strides.back();
  p.b_sk = b.strides.end()[-2];
  p.b_sn = b.strides.back();
  p.bias_rows.assign(p.rows.size(), 0);
  if (e.bias) {
    require_dtype(g, *e.bias, dtype, op);
    Shape bias_shape = g.info(*e.bias).shape;
    check(broadcasts_to(bias_shape, result), ErrorKind::InvalidArgument,
          op + ": " + e.bias_name + " " + shape_str(bias_shape) +
              " does not broadcast to the result " + shape_str(result));
    set_bias_strides(p, broadcast_strides(bias_shape, result), a_vector, b_vector);
  }
  if (e.residual) {
    require_dtype(g, *e.residual, dtype, op);
    check(g.info(*e.residual).shape == result, ErrorKind::InvalidArgument,
          op + ": residual " + shape_str(g.info(*e.residual).shape) + " is not of the result's " +
              "shape " + shape_str(result));
  }
  TensorRef out = g.add_tensor(result, dtype);
  coalesce_rows(p);
  transpose_if_single_column(p);
  add_gemm_dispatch(g, p, e, out, op);
  return out;
}

}  // namespace

bool matmul_can_fuse(UnaryOp activation) {
  return epilogue_activation(activation).has_value();
}

TensorRef matmul(ComputeGraph& g, TensorRef a, TensorRef b, const MatmulEpilogue& epilogue) {
  Epilogue e = make_epilogue("matmul", epilogue.bias, epilogue.activation,
                             epilogue.activation_params, epilogue.residual);
  return matmul_views(g, as_stored(g, a), as_stored(g, b), e, "matmul");
}

TensorRef matmul_permuted(ComputeGraph& g, const PermutedView& a, const PermutedView& b,
                          const MatmulEpilogue& epilogue, float alpha) {
  Epilogue e = make_epilogue("matmul", epilogue.bias, epilogue.activation,
                             epilogue.activation_params, epilogue.residual);
  e.alpha = alpha;
  e.beta = alpha;
  return matmul_views(g, permuted(g, a, "matmul"), permuted(g, b, "matmul"), e, "matmul");
}

TensorRef linear(ComputeGraph& g, TensorRef x, TensorRef weight, const MatmulEpilogue& epilogue) {
  Epilogue e = make_epilogue("linear", epilogue.bias, epilogue.activation,
                             epilogue.activation_params, epilogue.residual);
  Operand w = as_stored(g, weight);
  check(w.shape.size() == 2, ErrorKind::InvalidArgument,
        "linear: weight " + shape_str(w.shape) + " must be 2-D [N, K]");
  return matmul_views(g, as_stored(g, x), transposed(w), e, "linear");
}

TensorRef gemm(ComputeGraph& g, TensorRef a, TensorRef b, const GemmOptions& options) {
  Epilogue e = make_epilogue("gemm", options.c, options.activation, options.activation_params,
                             options.residual);
  e.bias_name = "C";
  e.alpha = options.alpha;
  e.beta = options.beta;
  const bool trans_a = options.trans_a, trans_b = options.trans_b;
  Operand va = as_stored(g, a), vb = as_stored(g, b);
  for (const Operand* o : {&va, &vb})
    check(o->shape.size() == 2, ErrorKind::InvalidArgument,
          std::string("gemm: input ") + (o == &va ? "A " : "B ") + shape_str(o->shape) +
              " must be 2-D");
  return matmul_views(g, trans_a ? transposed(va) : va, trans_b ? transposed(vb) : vb, e, "gemm");
}

}  // namespace vkgraph::ops
