#pragma once
// Kernel tuning: the choices the ops make per device (tile shapes, split-K, workgroup sizes),
// with defaults chosen in code from what the device reports. A graph takes its tuning from
// GraphOptions::tuning; nothing below the CLI reads the environment (the CLI turns
// VKGRAPH_TUNE into Tuning::knobs once, at startup).
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace vkgraph::ops {

// One tile shape of the tiled GEMM: a workgroup of threads_x * threads_y threads computes a
// tile of C of (threads_y * micro_m) rows by (threads_x * micro_n) columns, stepping K by `bk`;
// each thread keeps micro_m x micro_n accumulators in registers.
struct GemmTile {
  uint32_t threads_x = 16, threads_y = 16;
  uint32_t micro_m = 4, micro_n = 4;
  uint32_t bk = 16;
  uint32_t stages = 2;  // shared-memory buffers (STAGES in matmul_tiled.comp)
  // Lanes as 8 x 4 blocks (BLOCKED_LANES in matmul_tiled.comp) where the workgroup allows it.
  bool blocked_lanes = true;

  uint32_t tile_m() const { return threads_y * micro_m; }
  uint32_t tile_n() const { return threads_x * micro_n; }
  // Micro-tiles in whole vec4s take the kernel variant with 16-byte shared-memory reads.
  bool vec4() const { return micro_m % 4 == 0 && micro_n % 4 == 0; }
  // Shared memory of the tiles, padding included (see matmul_tiled.comp).
  uint32_t shared_bytes() const;
};

// The fp16 cooperative-matrix GEMM (matmul_coopmat.comp): sg_m x sg_n subgroups of 32, each
// holding frag_m x frag_n 16x16 fp32 accumulators, so a workgroup computes a
// (16 sg_m frag_m) x (16 sg_n frag_n) tile, stepping K by bk through `stages` shared buffers
// with `depth` slices in flight (prefetched into registers) while one is multiplied.
// One shader variant per shape (matmul.cmake lists the compiled ones).
struct CoopmatTile {
  uint32_t sg_m = 2, sg_n = 2, frag_m = 4, frag_n = 4;
  uint32_t bk = 32, stages = 2;
  uint32_t group_m = 1;  // tile rows per band of the workgroup order (GROUP_M)
  uint32_t depth = 1;

  uint32_t tile_m() const { return 16 * sg_m * frag_m; }
  uint32_t tile_n() const { return 16 * sg_n * frag_n; }
  uint32_t threads() const { return 32 * sg_m * sg_n; }
  // `stages` slices of 16-byte words, each row padded by one word (B's rows are of K when it
  // is stored [N, K], `b_t`). The epilogue reuses the A slices for one fp32 16x16 fragment per
  // subgroup (fits_epilogue()).
  uint32_t shared_bytes(bool b_t = false) const {
    const uint32_t b = b_t ? tile_n() * (bk / 8 + 1) : bk * (tile_n() / 8 + 1);
    return stages * (tile_m() * (bk / 8 + 1) + b) * 16;
  }
  bool fits_epilogue() const { return stages * tile_m() * (bk / 8 + 1) >= sg_m * sg_n * 64; }
  std::string name() const {  // the variant's suffix, e.g. "2244_k32s2" or "2211_k32s2d3"
    return std::to_string(sg_m) + std::to_string(sg_n) + std::to_string(frag_m) +
           std::to_string(frag_n) + "_k" + std::to_string(bk) + "s" + std::to_string(stages) +
           (depth > 1 ? "d" + std::to_string(depth) : std::string());
  }
};

struct MatmulConfig {
  // fp16 products take the cooperative-matrix kernel where the device has it and they fit.
  bool use_coopmat = true;
  CoopmatTile coopmat;
  // A smaller tile for products with fewer than coopmat_small_below tiles of `coopmat`, so
  // that they still spread over the compute units.
  std::optional<CoopmatTile> coopmat_small;
  uint64_t coopmat_small_below = 128;
  // Products with K above this many times their tile count take the tiled kernel, which
  // splits K across workgroups.
  uint64_t coopmat_max_k_per_tile = 64;
  // Shape-based choice (coopmat_tile_for in src/ops/matmul_config.h): among the declared
  // cooperative-matrix variants with slices coopmat_pick_bk deep, the largest tile whose grid
  // reaches coopmat_target_groups workgroups, else the one with the most; it replaces
  // coopmat / coopmat_small / coopmat_max_k_per_tile when set.
  // On by default since the H200 run of 2026-12-02 (docs/bench/2026-12-02-session6.md, run 2):
  // 128x768x768 0.0161 -> 0.0133 ms, 128x768x3072 0.0407 -> 0.0238 ms with split-K, 4096^3
  // unchanged at 181 TFLOP/s.
  bool coopmat_pick = true;
  uint32_t coopmat_pick_bk = 32;
  uint32_t coopmat_pick_depth = 1;  // slices in flight of the tiles the choice considers
  // The chosen tile then takes its variant with slices coopmat_deep_bk deep where one is
  // declared and K is a multiple of it (pick_coopmat_tile); 0: coopmat_pick_bk-deep always.
  uint32_t coopmat_deep_bk = 64;
  uint64_t coopmat_target_groups = 264;  // two workgroups per SM on a 132-SM H200
  // Split-K on the cooperative-matrix kernel where its grid has fewer than coopmat_split_groups
  // workgroups: slices of at least coopmat_min_slice until it has about that many, fp32
  // partials, the epilogue in the reduce pass. Small grids are bound by each workgroup's serial
  // K walk (a global load's latency per slice), and ~16 workgroups of 128 threads stay
  // resident per SM, so the split target is well above the tile choice's.
  // Slices of 512 or more: K = 768 (BERT's projections) stays whole, where splitting it three
  // ways cost more than it gained (128x3072x768 0.0164 -> 0.0259 ms); K = 3072 splits.
  bool coopmat_split_k = true;
  uint64_t coopmat_split_groups = 1024;
  int64_t coopmat_min_slice = 512;
  // Split-K reduced inside the GEMM's own dispatch (each tile's last workgroup, found with an
  // atomic counter, sums the slices and runs the epilogue) instead of by a second pass. Off
  // until an H200 run measures it; with it, splitting K = 768 may pay (mm16.sk_slice).
  bool coopmat_fused_split = false;
  // B stored [N, K] (a Linear weight read as its transpose, K contiguous) on the
  // cooperative-matrix kernel too, N then free to end inside a tile (gpt2's LM head, N 50257);
  // else such products take the tiled kernel. On since the H200 run of 2026-12-02: the LM
  // head 0.586 -> 0.152 ms, gpt2 fp16 3.72 -> 3.07 ms, bert, vit_b_16, resnet50 no slower.
  bool coopmat_b_t = true;
  GemmTile tile;
  // Larger register blocking (8x8 per thread, 128 x 256 tiles by default) for GEMMs with at
  // least large_min_tiles tiles of it: they keep every compute unit busy, where fewer, larger
  // tiles would leave some idle.
  std::optional<GemmTile> large;
  uint64_t large_min_tiles = 128;
  // Tile rows per band of the tiled kernel's workgroup order (GROUP_M in matmul_tiled.comp).
  uint32_t group_m = 1;
  // Smaller tiles for GEMMs with fewer than small_max_tiles tiles of `tile`: more workgroups
  // where the default tile would leave most compute units idle.
  std::optional<GemmTile> small;
  uint64_t small_max_tiles = 0;
  // GEMV, used when M <= gemv_rows: a workgroup computes all gemv_rows rows for a strip of
  // columns, so B is read once. gemv_contig threads walk B's contiguous dimension, gemv_other
  // the other one; whichever of them walks K must be a power of two (tree reduction).
  uint32_t gemv_rows = 4;
  uint32_t gemv_contig = 32, gemv_other = 8;
  // When B is contiguous along K, reduce over K with subgroupAdd (one subgroup per column)
  // instead of shared memory; subgroup_size is the size the host plans columns with.
  bool gemv_subgroup = false;
  uint32_t subgroup_size = 0;

  uint32_t gemv_threads() const { return gemv_contig * gemv_other; }
};

// Split-K for the GEMM kernels (tiled matmul, implicit-GEMM conv): when the output has too few
// tiles to occupy the GPU and K is deep, K is cut into slices that run as separate workgroups,
// each writing a partial tile, and a second pass sums them and applies the epilogue.
struct SplitKPolicy {
  // Threads to aim for. Vulkan reports no compute-unit count, so this is fixed: 65536 is ~16
  // warps per SM on the largest current GPUs (132 SMs on an H200), enough to hide the K loop's
  // load latency, and costs little on small ones, where the extra partial traffic stays far
  // below the K loop's.
  // min_k and min_slice were swept on the H200 (docs/bench/2026-11-29-h200-conv.md): slices of
  // 64 from K = 256 up cut ResNet-18 from 1.22 to 0.81 ms against slices of 256 from K = 1024;
  // 32 or 128, or twice or half the threads, were no better.
  uint64_t target_threads = 65536;
  int64_t min_k = 256;     // below this the serial K walk is short enough
  int64_t min_slice = 64;  // each slice's depth, so the partial writes stay amortized
  uint32_t max_splits = 32;
};

// Everything a graph's ops tune. Unset fields take the device's defaults (src/ops/
// matmul_config.h), which `knobs` adjust.
struct Tuning {
  // Replaces the default matmul configuration (tests run other tile shapes and both GEMV
  // reductions with it); throws Unsupported at build time when it does not fit the device.
  std::optional<MatmulConfig> matmul;
  // Replaces the default split-K policy of the matmul and conv GEMMs (tests force splitting of
  // small shapes with it).
  std::optional<SplitKPolicy> split_k;
  // Named knobs for tuning sweeps on real devices (vkgraph bench-op) without a rebuild per
  // configuration, each documented where it is read: add.*, conv.large_min, mm.*, mm16.*, sk.*
  // (matmul_config.h lists the mm and sk keys).
  std::map<std::string, uint32_t> knobs;

  // Knob `key`, or `fallback` when it is not set.
  uint32_t knob(const std::string& key, uint32_t fallback) const;
  // Knobs from "key=value,key=value" (VKGRAPH_TUNE's format); items without '=' are ignored.
  static Tuning from_knobs(std::string_view spec);
};

}  // namespace vkgraph::ops
