#include "matmul_config.h"

#include <algorithm>
#include <string>

#include "op_util.h"
#include "vkgraph/error.h"

namespace vkgraph::ops {
namespace {

bool power_of_two(uint32_t v) {
  return v != 0 && (v & (v - 1)) == 0;
}

uint32_t gemv_shared_bytes(const MatmulConfig& c) {
  return c.gemv_rows * c.gemv_threads() * 4;
}

void check_config(const MatmulConfig& c, const vk::Context& context) {
  const VkPhysicalDeviceLimits& lim = context.limits();
  auto require = [](bool ok, const std::string& what) {
    check(ok, ErrorKind::Unsupported, "matmul config: " + what);
  };
  require(c.gemv_rows && c.group_m && c.coopmat.group_m, "sizes must be positive");
  for (const GemmTile* t :
       {&c.tile, c.large ? &*c.large : nullptr, c.small ? &*c.small : nullptr}) {
    if (!t) continue;
    require(t->threads_x && t->threads_y && t->micro_m && t->micro_n && t->bk,
            "sizes must be positive");
    require(t->threads_x * t->threads_y <= lim.maxComputeWorkGroupInvocations &&
                t->threads_x <= lim.maxComputeWorkGroupSize[0] &&
                t->threads_y <= lim.maxComputeWorkGroupSize[1],
            "tiled workgroup exceeds the device's workgroup limits");
    require(t->shared_bytes() <= lim.maxComputeSharedMemorySize,
            "tile needs " + std::to_string(t->shared_bytes()) + " bytes of shared memory");
  }
  if (c.use_coopmat && context.features().coopmat_f16_16x16x16)
    for (const CoopmatTile* t : {&c.coopmat, c.coopmat_small ? &*c.coopmat_small : nullptr})
      require(!t || (t->threads() <= lim.maxComputeWorkGroupInvocations &&
                     t->shared_bytes(c.coopmat_b_t) <= lim.maxComputeSharedMemorySize &&
                     t->shared_bytes() <= lim.maxComputeSharedMemorySize && t->fits_epilogue()),
              "cooperative-matrix tile exceeds the device's workgroup or shared-memory limits, "
              "or its A slices hold less than one fp32 fragment per subgroup");
  require(power_of_two(c.gemv_contig) && power_of_two(c.gemv_other),
          "GEMV thread counts must be powers of two");
  require(c.gemv_threads() <= lim.maxComputeWorkGroupInvocations &&
              c.gemv_contig <= lim.maxComputeWorkGroupSize[0] &&
              c.gemv_other <= lim.maxComputeWorkGroupSize[1],
          "GEMV workgroup exceeds the device's workgroup limits");
  require(gemv_shared_bytes(c) <= lim.maxComputeSharedMemorySize,
          "GEMV needs " + std::to_string(gemv_shared_bytes(c)) + " bytes of shared memory");
  if (c.gemv_subgroup)
    require(context.features().subgroup_arithmetic && power_of_two(c.subgroup_size) &&
                c.gemv_threads() % c.subgroup_size == 0 &&
                c.gemv_threads() <= lim.maxComputeWorkGroupSize[0],
            "subgroup GEMV needs subgroup arithmetic and whole subgroups in a 1-D workgroup");
}

// The 8x8-per-thread tile, measured on the H200 (docs/bench/2026-11-29-h200-kernels.md): 512
// threads on a 128 x 256 tile stepping K by 16 through one shared buffer (25 KB) ran 4096^3 at
// 33.9 TFLOP/s, against 31.0 for 256 threads on 128 x 128 (bk 32) and 27.4 double-buffered,
// and 34.5 with plain lanes instead of 8 x 4 blocks (34.0);
// devices with less shared memory or fewer invocations get shallower slices or no large tile.
std::optional<GemmTile> choose_large_tile(const VkPhysicalDeviceLimits& lim, const Tuning& tuning) {
  auto tuned = [&](const char* key, uint32_t fallback) { return tuning.knob(key, fallback); };
  GemmTile t;
  t.threads_x = tuned("mm.tx", 32);
  t.threads_y = tuned("mm.ty", 16);
  t.micro_m = tuned("mm.tm", 8);
  t.micro_n = tuned("mm.tn", 8);
  t.stages = tuned("mm.stages", 1);
  t.blocked_lanes = tuned("mm.blocked", 0) != 0;
  if (t.micro_m == 0 || t.threads_x * t.threads_y > lim.maxComputeWorkGroupInvocations)
    return std::nullopt;
  for (t.bk = tuned("mm.bk", 16); t.bk > 8 && t.shared_bytes() > lim.maxComputeSharedMemorySize;)
    t.bk /= 2;
  if (t.shared_bytes() > lim.maxComputeSharedMemorySize) return std::nullopt;
  return t;
}

SplitKPolicy tuned_split_k_policy(const Tuning& tuning) {
  auto tuned = [&](const char* key, uint32_t fallback) { return tuning.knob(key, fallback); };
  SplitKPolicy p;
  p.target_threads = tuned("sk.threads", static_cast<uint32_t>(p.target_threads));
  p.min_k = tuned("sk.min_k", static_cast<uint32_t>(p.min_k));
  p.min_slice = std::max<int64_t>(1, tuned("sk.min_slice", static_cast<uint32_t>(p.min_slice)));
  p.max_splits = tuned("sk.max", p.max_splits);
  return p;
}

// 32 x 32 tiles of 64 threads, so that a GEMM with few default tiles still spreads over many
// workgroups (paired with split-K for its K walk).
std::optional<GemmTile> choose_small_tile(const VkPhysicalDeviceLimits& lim, const Tuning& tuning) {
  auto tuned = [&](const char* key, uint32_t fallback) { return tuning.knob(key, fallback); };
  GemmTile t;
  t.threads_x = tuned("mm.sx", 8);
  t.threads_y = tuned("mm.sy", 8);
  t.micro_m = tuned("mm.sm", 4);
  t.micro_n = tuned("mm.sn", 4);
  t.bk = tuned("mm.sbk", 16);
  if (t.micro_m == 0 || t.threads_x * t.threads_y > lim.maxComputeWorkGroupInvocations ||
      t.shared_bytes() > lim.maxComputeSharedMemorySize)
    return std::nullopt;
  return t;
}

}  // namespace

uint32_t GemmTile::shared_bytes() const {
  // Each k-row of a tile is padded by one shared word (a vec4 in the vec4 variant).
  uint32_t pad = vec4() ? 4 : 1;
  return stages * bk * (tile_m() + pad + tile_n() + pad) * 4;
}

MatmulConfig choose_matmul_config(const vk::Context& context, const Tuning& tuning) {
  auto tuned = [&](const char* key, uint32_t fallback) { return tuning.knob(key, fallback); };
  const VkPhysicalDeviceLimits& lim = context.limits();
  MatmulConfig c;
  // Vulkan guarantees only 128 invocations per workgroup; halve the tiles until they fit.
  while (c.tile.threads_x * c.tile.threads_y > lim.maxComputeWorkGroupInvocations)
    c.tile.threads_y /= 2;
  c.large = choose_large_tile(lim, tuning);
  c.use_coopmat = tuned("mm16.coopmat", 1) != 0;
  c.coopmat.sg_m = tuned("mm16.sgm", c.coopmat.sg_m);
  c.coopmat.sg_n = tuned("mm16.sgn", c.coopmat.sg_n);
  c.coopmat.frag_m = tuned("mm16.fm", c.coopmat.frag_m);
  c.coopmat.frag_n = tuned("mm16.fn", c.coopmat.frag_n);
  c.coopmat.bk = tuned("mm16.bk", c.coopmat.bk);
  c.coopmat.stages = tuned("mm16.stages", c.coopmat.stages);
  c.coopmat.group_m = tuned("mm16.group", c.coopmat.group_m);
  // 64 x 64 tiles (2 x 2 subgroups of 2 x 2 fragments) for products of few 128 x 128 tiles.
  c.coopmat_small_below = tuned("mm16.small_below", c.coopmat_small_below);
  c.coopmat_max_k_per_tile = tuned("mm16.max_k_per_tile", c.coopmat_max_k_per_tile);
  if (c.coopmat_small_below > 0) c.coopmat_small = CoopmatTile{2, 2, 2, 2, 32, 2, 1};
  c.coopmat_pick = tuned("mm16.pick", c.coopmat_pick) != 0;
  c.coopmat_pick_bk = tuned("mm16.pick_bk", c.coopmat_pick_bk);
  c.coopmat_pick_depth = tuned("mm16.depth", c.coopmat_pick_depth);
  c.coopmat.depth = tuned("mm16.depth", c.coopmat.depth);
  c.coopmat_deep_bk = tuned("mm16.deep_bk", c.coopmat_deep_bk);
  c.coopmat_fused_split = tuned("mm16.fsk", c.coopmat_fused_split) != 0;
  c.coopmat_target_groups = tuned("mm16.groups", static_cast<uint32_t>(c.coopmat_target_groups));
  c.coopmat_split_k = tuned("mm16.split", c.coopmat_split_k) != 0;
  c.coopmat_split_groups = tuned("mm16.sk_groups", static_cast<uint32_t>(c.coopmat_split_groups));
  c.coopmat_b_t = tuned("mm16.bt", c.coopmat_b_t) != 0;
  c.coopmat_min_slice =
      std::max<int64_t>(1, tuned("mm16.sk_slice", static_cast<uint32_t>(c.coopmat_min_slice)));
  c.group_m = tuned("mm.group", c.group_m);
  c.large_min_tiles = tuned("mm.large_min", 128);
  c.small = choose_small_tile(lim, tuning);
  c.small_max_tiles = tuned("mm.small_max", 0);
  // The subgroup GEMV lays its threads out in x alone.
  while (c.gemv_threads() >
         std::min(lim.maxComputeWorkGroupInvocations, lim.maxComputeWorkGroupSize[0]))
    c.gemv_other /= 2;
  const vk::DeviceFeatures& f = context.features();
  c.subgroup_size = f.subgroup_size;
  // Whole subgroups only: a partial one would skip the K elements of its missing lanes.
  c.gemv_subgroup = f.subgroup_arithmetic && power_of_two(f.subgroup_size) &&
                    c.gemv_threads() % f.subgroup_size == 0;
  return c;
}

MatmulConfig matmul_config(ComputeGraph& g) {
  const Tuning* tuning = g.options().tuning.get();
  MatmulConfig c = tuning && tuning->matmul
                       ? *tuning->matmul
                       : choose_matmul_config(g.context(), tuning ? *tuning : Tuning{});
  check_config(c, g.context());
  return c;
}

SplitKPolicy split_k_policy(ComputeGraph& g) {
  const Tuning* tuning = g.options().tuning.get();
  if (tuning && tuning->split_k) return *tuning->split_k;
  return tuned_split_k_policy(tuning ? *tuning : Tuning{});
}

std::optional<CoopmatTile> pick_coopmat_tile(const std::vector<CoopmatTile>& declared, int64_t m,
                                             int64_t n, int64_t k, const MatmulConfig& cfg,
                                             bool n_edge) {
  // The chosen tile's coopmat_deep_bk-deep variant where one is declared and K allows: half
  // the slices is half the barriers, shared-memory round trips and fragment loads of a K walk
  // (H200, fp16 GPU time with 64-deep slices: bert 1.449 -> 1.214 ms, gpt2 1.794 -> 1.527,
  // vit_b_16 1.831 -> 1.608, llama 1.472 -> 1.380; docs/bench/2026-12-06-session13.md). The
  // 128 x 128 tile of large products has none: its 64-deep slices would not fit 48 KiB.
  std::optional<CoopmatTile> best =
      pick_coopmat_tile_of_depth(declared, m, n, k, cfg, n_edge, cfg.coopmat_pick_depth);
  if (best && cfg.coopmat_deep_bk != 0 && k % cfg.coopmat_deep_bk == 0)
    for (const CoopmatTile& t : declared)
      if (t.sg_m == best->sg_m && t.sg_n == best->sg_n && t.frag_m == best->frag_m &&
          t.frag_n == best->frag_n && t.stages == best->stages && t.depth == best->depth &&
          t.bk == cfg.coopmat_deep_bk) {
        best->bk = t.bk;
        break;
      }
  return best;
}

std::optional<CoopmatTile> pick_coopmat_tile_of_depth(const std::vector<CoopmatTile>& declared,
                                                      int64_t m, int64_t n, int64_t k,
                                                      const MatmulConfig& cfg, bool n_edge,
                                                      uint32_t depth) {
  auto groups = [&](const CoopmatTile& t) {  // workgroups of t's grid over the product
    return static_cast<uint64_t>((m + t.tile_m() - 1) / t.tile_m()) *
           static_cast<uint64_t>((n + t.tile_n() - 1) / t.tile_n());
  };
  auto area = [](const CoopmatTile& t) { return uint64_t{t.tile_m()} * t.tile_n(); };
  std::optional<CoopmatTile> best;
  for (CoopmatTile t : declared) {
    if (t.bk != cfg.coopmat_pick_bk || t.depth != depth || (!n_edge && n % t.tile_n() != 0) ||
        k % t.bk != 0)
      continue;
    t.group_m = cfg.coopmat.group_m;
    if (!best) {
      best = t;
      continue;
    }
    const bool full = groups(t) >= cfg.coopmat_target_groups;
    const bool best_full = groups(*best) >= cfg.coopmat_target_groups;
    // A full grid prefers the larger tile (fewer loads per product); a short one the grid with
    // more workgroups; ties go to more subgroups, which keep more loads in flight.
    bool better;
    if (full != best_full)
      better = full;
    else if (full && area(t) != area(*best))
      better = area(t) > area(*best);
    else if (!full && groups(t) != groups(*best))
      better = groups(t) > groups(*best);
    else
      better = t.threads() > best->threads();
    if (better) best = t;
  }
  return best;
}

SplitK coopmat_split_k(const CoopmatTile& t, uint64_t groups, int64_t k, const MatmulConfig& cfg) {
  if (!cfg.coopmat_split_k || groups >= cfg.coopmat_split_groups) return {};
  SplitKPolicy p;
  p.target_threads = cfg.coopmat_split_groups * t.threads();
  p.min_k = 2 * cfg.coopmat_min_slice;
  p.min_slice = cfg.coopmat_min_slice;
  return choose_split_k(groups, t.threads(), k, p, t.bk);
}

SplitK choose_split_k(uint64_t tiles, uint32_t group_threads, int64_t k, const SplitKPolicy& policy,
                      int64_t k_align) {
  SplitK s;
  if (k < policy.min_k || tiles == 0) return s;
  uint64_t by_groups = policy.target_threads / (tiles * group_threads);
  uint64_t by_depth = static_cast<uint64_t>(k / policy.min_slice);
  uint64_t splits = std::min({by_groups, by_depth, uint64_t{policy.max_splits}});
  if (splits < 2) return s;
  // Slices a multiple of k_align deep keep every slice but the last on whole K tiles of the
  // kernels.
  int64_t chunk = (k + static_cast<int64_t>(splits) - 1) / static_cast<int64_t>(splits);
  s.k_chunk = (chunk + k_align - 1) / k_align * k_align;
  s.splits = static_cast<uint32_t>((k + s.k_chunk - 1) / s.k_chunk);
  if (s.splits < 2) return SplitK{};
  return s;
}

}  // namespace vkgraph::ops
