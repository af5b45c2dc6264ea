#pragma once
// Tile configuration of the matmul kernels. Everything tunable per device lives in
// MatmulConfig (vkgraph/ops/tuning.h), chosen in one place (choose_matmul_config) from what
// the device reports, and reaches the shaders as specialization constants.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "vkgraph/graph/compute_graph.h"
#include "vkgraph/ops/tuning.h"
#include "vkgraph/vk/context.h"

namespace vkgraph::ops {

// The default for `context`'s device: the largest tiles its limits allow, subgroup reduction
// where the device has subgroup arithmetic. Tuning knobs mm.tx, mm.ty, mm.tm, mm.tn,
// mm.bk (the large tile; mm.tm=0 drops it), mm.large_min, mm.sx, mm.sy, mm.sm, mm.sn, mm.sbk,
// mm.small_max (the small tile and when it is used) and mm16.sgm, mm16.sgn, mm16.fm,
// mm16.fn, mm16.bk, mm16.stages, mm16.group (the cooperative-matrix tile and its workgroup
// order; mm16.coopmat=0 turns it off), mm16.small_below (0: never the small tile),
// mm16.max_k_per_tile, mm16.pick, mm16.pick_bk, mm16.groups (the shape-based tile choice),
// mm16.depth (slices in flight, of the default tile and of the choice's), mm16.deep_bk
// (the chosen tile's deeper slices where it has them), mm16.split,
// mm16.sk_groups, mm16.sk_slice, mm16.fsk (its split-K, reduced in the same dispatch with
// mm16.fsk), mm16.bt (B stored [N, K] on the
// tensor cores), mm.stages, mm.blocked (the large
// tile's), mm.group in `tuning` adjust it for tuning sweeps.
MatmulConfig choose_matmul_config(const vk::Context& context, const Tuning& tuning = {});

// `g`'s Tuning::matmul if set, else the default; throws Unsupported when it does not fit the
// device.
MatmulConfig matmul_config(ComputeGraph& g);

// `g`'s Tuning::split_k if set, else the default with the sk.threads, sk.min_k, sk.min_slice
// and sk.max knobs applied.
SplitKPolicy split_k_policy(ComputeGraph& g);

// How a GEMM of `tiles` output tiles of `group_threads` threads each and depth `k` is split:
// `splits` slices of `k_chunk` (the last one possibly shorter, none empty); splits == 1 runs
// unsplit.
struct SplitK {
  uint32_t splits = 1;
  int64_t k_chunk = 0;
};
// Slices are a multiple of `k_align` deep (16: the tiled kernels' K steps; the
// cooperative-matrix kernel passes its slice depth).
SplitK choose_split_k(uint64_t tiles, uint32_t group_threads, int64_t k,
                      const SplitKPolicy& policy = {}, int64_t k_align = 16);

// The shape-based cooperative-matrix tile (MatmulConfig::coopmat_pick) for an m x n x k
// product among the `declared` variants' tiles (whose limits the device meets): nullopt when
// none takes whole tiles of K and, unless `n_edge` (B stored [N, K]), of N. Tuning knobs
// mm16.pick, mm16.pick_bk, mm16.deep_bk, mm16.groups.
std::optional<CoopmatTile> pick_coopmat_tile(const std::vector<CoopmatTile>& declared, int64_t m,
                                             int64_t n, int64_t k, const MatmulConfig& cfg,
                                             bool n_edge = false);

// pick_coopmat_tile's choice among the variants with `depth` slices in flight alone.
std::optional<CoopmatTile> pick_coopmat_tile_of_depth(const std::vector<CoopmatTile>& declared,
                                                      int64_t m, int64_t n, int64_t k,
                                                      const MatmulConfig& cfg, bool n_edge,
                                                      uint32_t depth);

// Split-K of `t`'s grid of `groups` workgroups over depth `k` (MatmulConfig::coopmat_split_k):
// slices of at least coopmat_min_slice, whole multiples of t.bk, until the grid reaches
// coopmat_split_groups. Tuning knobs mm16.split, mm16.sk_groups, mm16.sk_slice.
SplitK coopmat_split_k(const CoopmatTile& t, uint64_t groups, int64_t k, const MatmulConfig& cfg);

}  // namespace vkgraph::ops
