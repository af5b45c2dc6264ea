// matmul under other tile configurations, split-K and float16 operands, against the
// double-precision CPU reference of matmul_test_util.h.
#include "matmul_test_util.h"
#include "vkgraph/shaders/matmul_coopmat.h"

namespace vkgraph::testing {
namespace {

using namespace matmul_reference;

// The tiles of the cooperative-matrix variants matmul.cmake declares.
std::vector<ops::CoopmatTile> declared_coopmat_tiles() {
  std::vector<ops::CoopmatTile> tiles;
  for (const auto& v : shaders::matmul_coopmat::kVariants)
    if (v.split == shaders::matmul_coopmat::Split::None && !v.b_t)
      tiles.push_back({v.sg_m, v.sg_n, v.frag_m, v.frag_n, v.bk, v.stages, 1, v.depth});
  return tiles;
}

// --- other tile configurations -------------------------------------------------------------

// Every layout through the current configuration: the tiled kernel with A and B walked along
// either dim, and GEMV with B contiguous along K (linear) or along N (matmul).
class MatmulConfigs : public MatmulTest {
 protected:
  void check_all_layouts() {
    for (bool ta : {false, true})
      for (bool tb : {false, true}) {
        SCOPED_TRACE(::testing::Message() << "trans_a=" << ta << " trans_b=" << tb);
        check_gemm(37, 21, 45, ta, tb, Shape{45}, 1.f, 1.f);
        check_gemm(3, 21, 45, ta, tb, Shape{3, 1}, 1.f, 1.f);
      }
    check_linear({1, 77}, 29, true);
    check_linear({3, 50}, 9, false);
    check_matmul({2, 77}, {77, 29});
    check_matmul({2, 19, 23}, {23, 41});
  }
};

TEST_F(MatmulConfigs, SmallOddTiles) {
  ops::MatmulConfig c = ops::choose_matmul_config(*context());
  c.tile = {8, 4, 3, 2, 5};
  c.large.reset();
  c.gemv_rows = 2;
  c.gemv_contig = 8;
  c.gemv_other = 4;
  tuning_.matmul = c;
  check_all_layouts();
}

// The device's 8x8-per-thread vec4 tile on every shape, with several tiles, partial ones and a
// K that leaves a partial slice; then a small vec4 tile with blocked lanes and odd K steps.
TEST_F(MatmulConfigs, LargeVec4Tiles) {
  ops::MatmulConfig c = ops::choose_matmul_config(*context());
  ASSERT_TRUE(c.large.has_value());
  EXPECT_TRUE(c.large->vec4());
  c.large_min_tiles = 0;
  tuning_.matmul = c;
  check_all_layouts();
  check_gemm(150, 70, 260, false, false, Shape{260}, 1.f, 1.f);
  check_gemm(150, 70, 260, true, true, Shape{150, 1}, 0.5f, 2.f);
}

TEST_F(MatmulConfigs, SmallVec4TilesBlockedLanes) {
  ops::MatmulConfig c = ops::choose_matmul_config(*context());
  c.tile = {8, 4, 4, 8, 3};
  c.large.reset();
  tuning_.matmul = c;
  check_all_layouts();
  check_gemm(40, 31, 70, false, true, Shape{70}, 1.f, 1.f);
}

// Workgroups walking bands of 3 tile rows: row counts that leave a short last band, with a
// batch and under split-K (both in gl_WorkGroupID.z).
TEST_F(MatmulConfigs, BandedWorkgroupOrder) {
  ops::MatmulConfig c = ops::choose_matmul_config(*context());
  c.tile = {8, 4, 2, 2, 4};
  c.large.reset();
  c.group_m = 3;
  tuning_.matmul = c;
  check_all_layouts();
  check_gemm(60, 45, 20, false, true, Shape{20}, 1.f, 1.f);
  check_matmul({2, 37, 23}, {23, 41});
  ops::SplitKPolicy policy;
  policy.min_k = 16;
  policy.min_slice = 16;
  tuning_.split_k = policy;
  check_gemm(60, 45, 100, true, false, Shape{60, 1}, 0.5f, 2.f);
}

// The device's small tile, chosen for GEMMs with few default tiles, alone and under split-K.
TEST_F(MatmulConfigs, SmallTileForFewTiles) {
  ops::MatmulConfig c = ops::choose_matmul_config(*context());
  ASSERT_TRUE(c.small.has_value());
  c.large.reset();
  c.small_max_tiles = 1000;
  tuning_.matmul = c;
  check_all_layouts();
  check_gemm(70, 45, 100, false, true, Shape{100}, 1.f, 1.f);
  ops::SplitKPolicy policy;
  policy.min_k = 16;
  policy.min_slice = 16;
  tuning_.split_k = policy;
  check_gemm(70, 45, 100, true, false, Shape{70, 1}, 0.5f, 2.f);
}

TEST_F(MatmulConfigs, GemvSharedMemoryReduction) {
  ops::MatmulConfig c = ops::choose_matmul_config(*context());
  c.gemv_subgroup = false;
  tuning_.matmul = c;
  check_all_layouts();
}

TEST_F(MatmulConfigs, GemvSubgroupReduction) {
  ops::MatmulConfig c = ops::choose_matmul_config(*context());
  if (!context()->features().subgroup_arithmetic) GTEST_SKIP() << "no subgroup arithmetic";
  c.gemv_subgroup = true;
  tuning_.matmul = c;
  check_all_layouts();
}

TEST_F(MatmulConfigs, RejectsConfigBeyondDeviceLimits) {
  ops::MatmulConfig c;
  c.tile.threads_x = context()->limits().maxComputeWorkGroupInvocations;
  c.tile.threads_y = 2;
  tuning_.matmul = c;
  ComputeGraph g(context(), graph_options());
  auto a = g.add_input({4, 4}, DType::Float32, "a");
  try {
    ops::matmul(g, a, a);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Unsupported);
    EXPECT_NE(std::string(e.what()).find("matmul config"), std::string::npos) << e.what();
  }
}

// --- split-K -------------------------------------------------------------------------------

// The default policy on the shapes it is meant for (batch-1 ResNet-18 3x3 convs with 32x32
// tiles of 64 threads, transformer projections with 64x64 tiles of 256 threads) and on a large
// GEMM: slices of >= 64 until ~65536 threads run.
TEST(SplitKHeuristic, DefaultPolicy) {
  ops::SplitK conv4 = ops::choose_split_k(16 * 2, 64, 4608);
  EXPECT_EQ(conv4.splits, 32u);  // capped by max_splits
  EXPECT_EQ(conv4.k_chunk, 144);
  ops::SplitK conv3 = ops::choose_split_k(8 * 7, 64, 2304);
  EXPECT_EQ(conv3.splits, 18u);
  EXPECT_EQ(conv3.k_chunk, 128);
  ops::SplitK conv1 = ops::choose_split_k(2 * 98, 64, 576);
  EXPECT_EQ(conv1.splits, 5u);  // the last slice shorter
  EXPECT_EQ(conv1.k_chunk, 128);
  ops::SplitK attn = ops::choose_split_k(8 * 2, 256, 512);
  EXPECT_EQ(attn.splits, 8u);
  EXPECT_EQ(attn.k_chunk, 64);
  EXPECT_EQ(ops::choose_split_k(64 * 64, 256, 4096).splits, 1u);  // enough tiles already
  EXPECT_EQ(ops::choose_split_k(4, 256, 128).splits, 1u);         // K too shallow
}

// Slices aligned to the cooperative-matrix kernel's 32-deep K steps.
TEST(SplitKHeuristic, AlignsSlices) {
  ops::SplitK s = ops::choose_split_k(24, 128, 768, {}, 32);
  EXPECT_EQ(s.k_chunk % 32, 0);
  EXPECT_EQ(s.splits, 12u);
  EXPECT_EQ(s.k_chunk, 64);
  ops::SplitK odd = ops::choose_split_k(8, 128, 800, {}, 32);  // 12 slices of 67 wanted
  EXPECT_EQ(odd.k_chunk, 96);
  EXPECT_EQ(odd.splits, 9u);  // the last slice 32 deep
}

// The shape-based cooperative-matrix tile (pick_coopmat_tile) and its split-K
// (coopmat_split_k) on batch-1 transformer shapes, from the tiles matmul.cmake declares.
TEST(CoopmatPick, TransformerShapes) {
  const std::vector<ops::CoopmatTile> tiles = declared_coopmat_tiles();
  ops::MatmulConfig cfg;
  cfg.coopmat_pick = true;
  cfg.coopmat_split_k = true;
  cfg.coopmat_min_slice = 256;  // the policy at slices of 256; the default (512) below
  cfg.coopmat_deep_bk = 0;      // the choice at the pick's own slice depth; the default below
  auto pick = [&](int64_t m, int64_t n, int64_t k) {
    std::optional<ops::CoopmatTile> t = ops::pick_coopmat_tile(tiles, m, n, k, cfg);
    return t ? t->name() : std::string("none");
  };
  // M 128, N 768: no tile fills 264 workgroups; 32 x 32 tiles give the most (96), split
  // towards 1024 workgroups in slices of >= 256.
  EXPECT_EQ(pick(128, 768, 768), "2211_k32s2");
  ops::CoopmatTile t = *ops::pick_coopmat_tile(tiles, 128, 768, 3072, cfg);
  ops::SplitK s = ops::coopmat_split_k(t, 96, 3072, cfg);
  EXPECT_EQ(s.splits, 10u);
  EXPECT_EQ(s.k_chunk, 320);  // 308 rounded up to whole 32-deep slices; the last 192
  EXPECT_EQ(ops::coopmat_split_k(t, 96, 768, cfg).splits, 3u);
  EXPECT_EQ(ops::coopmat_split_k(t, 96, 256, cfg).splits, 1u);     // one slice's depth
  EXPECT_EQ(ops::coopmat_split_k(t, 1100, 3072, cfg).splits, 1u);  // the grid is full
  // The default slices of 512: K 768 stays whole, K 3072 splits 6 ways.
  const ops::MatmulConfig defaults;
  EXPECT_EQ(ops::coopmat_split_k(t, 96, 768, defaults).splits, 1u);
  EXPECT_EQ(ops::coopmat_split_k(t, 96, 3072, defaults).splits, 6u);
  EXPECT_EQ(ops::coopmat_split_k(t, 96, 3072, defaults).k_chunk, 512);
  // mm16.depth: the same choice among the tiles with that many slices in flight.
  ops::MatmulConfig deep = cfg;
  deep.coopmat_pick_depth = 2;
  EXPECT_EQ(ops::pick_coopmat_tile(tiles, 128, 768, 768, deep)->name(), "2211_k32s2d2");
  EXPECT_EQ(ops::pick_coopmat_tile(tiles, 4096, 4096, 4096, deep)->name(), "2244_k32s2d2");
  deep.coopmat_pick_depth = 3;
  EXPECT_EQ(ops::pick_coopmat_tile(tiles, 128, 768, 768, deep)->name(), "2211_k32s2d3");
  // mm16.deep_bk (64 by default): the chosen tile's 64-deep variant where K allows it; the
  // 128 x 128 tile has none.
  const ops::MatmulConfig deep_slices;
  EXPECT_EQ(ops::pick_coopmat_tile(tiles, 128, 768, 768, deep_slices)->name(), "2211_k64s2");
  EXPECT_EQ(ops::pick_coopmat_tile(tiles, 197, 2304, 768, deep_slices)->name(), "2211_k64s2");
  EXPECT_EQ(ops::pick_coopmat_tile(tiles, 128, 768, 800, deep_slices)->name(), "2211_k32s2");
  EXPECT_EQ(ops::pick_coopmat_tile(tiles, 4096, 4096, 4096, deep_slices)->name(), "2244_k32s2");
  // A full grid takes the largest tile that keeps it full.
  EXPECT_EQ(pick(4096, 4096, 4096), "2244_k32s2");
  EXPECT_EQ(pick(512, 3072, 768), "2222_k32s2");  // 8 x 48 = 384 workgroups
  cfg.coopmat_target_groups = 132;
  EXPECT_EQ(pick(128, 3072, 768), "2212_k32s2");  // 4 x 48 = 192: 2212 over 1222 (more subgroups)
  cfg.coopmat_pick_bk = 64;
  EXPECT_EQ(pick(128, 768, 768), "2211_k64s2");
  EXPECT_EQ(pick(128, 768, 800), "none");  // K off the 64-deep slices
  EXPECT_EQ(pick(128, 776, 768), "none");  // N off every tile
  // B stored [N, K]: N may end inside a tile (gpt2's LM head, N 50257).
  EXPECT_EQ(ops::pick_coopmat_tile(tiles, 128, 50257, 768, cfg, true)->name(), "2222_k64s2");
  cfg.coopmat_split_k = false;
  EXPECT_EQ(ops::coopmat_split_k(t, 96, 3072, cfg).splits, 1u);
}

// Split-K forced onto small shapes: K >= 16 is cut into slices of 16 (the last shorter).
class MatmulSplitK : public MatmulConfigs {
 protected:
  void SetUp() override {
    MatmulConfigs::SetUp();
    ops::SplitKPolicy policy;
    policy.min_k = 16;
    policy.min_slice = 8;
    tuning_.split_k = policy;
  }
};

TEST_F(MatmulSplitK, AllLayouts) {
  check_all_layouts();
}

TEST_F(MatmulSplitK, SmallOddTiles) {
  ops::MatmulConfig c = ops::choose_matmul_config(*context());
  c.tile = {8, 4, 3, 2, 5};
  c.large.reset();
  tuning_.matmul = c;
  check_gemm(37, 100, 45, true, false, Shape{37, 45}, 0.5f, 2.f);
}

TEST_F(MatmulSplitK, LargeVec4Tiles) {
  ops::MatmulConfig c = ops::choose_matmul_config(*context());
  c.large_min_tiles = 0;
  tuning_.matmul = c;
  check_gemm(130, 100, 140, false, true, Shape{130, 140}, 0.5f, 2.f);
}

TEST_F(MatmulSplitK, BatchesBiasAndActivation) {
  HostMat a = random({3, 20, 100}), b = random({3, 100, 30}), bias = random({20, 1});
  Reference want = reference_matmul(a, b);
  apply_bias(want, 1, &bias, 1);
  apply_activation(want, UnaryOp::GeluTanh, {});
  run_and_check(
      graph_options(), {a, b, bias},
      [&](ComputeGraph& g, const std::vector<TensorRef>& in) {
        return ops::matmul(g, in[0], in[1], {in[2], UnaryOp::GeluTanh});
      },
      want);
}

TEST_F(MatmulSplitK, ResidualInTheReducePass) {
  check_residual({37, 100}, {100, 45}, true, UnaryOp::Tanh);
  check_residual({3, 20, 100}, {100, 30}, false, std::nullopt);
}

TEST_F(MatmulSplitK, AddsPartialAndReducePasses) {
  ComputeGraph g(context(), graph_options());
  TensorRef a = g.add_input({37, 100}, DType::Float32, "a");
  TensorRef b = g.add_input({100, 45}, DType::Float32, "b");
  g.add_output(ops::matmul(g, a, b), "c");
  g.prepare();
  EXPECT_EQ(g.stats().nodes, 2u);
}

// --- float16 ---------------------------------------------------------------------------------

// fp16 operands, bias and result with fp32 accumulation: the portable tiled kernel (16-bit
// storage) on lavapipe, the cooperative-matrix kernel where the device has one and the shape
// fits. The reference multiplies the fp16-rounded inputs in double; the result is rounded once
// to fp16, so errors stay within a couple of fp16 ulps of the largest magnitude.
class MatmulFloat16 : public MatmulTest {
 protected:
  void SetUp() override {
    MatmulTest::SetUp();
    if (!context()->features().storage_buffer_16bit) GTEST_SKIP() << "no 16-bit storage";
  }

  static std::vector<uint16_t> to_half(const std::vector<float>& v) {
    std::vector<uint16_t> h(v.size());
    for (size_t i = 0; i < v.size(); ++i) h[i] = float_to_half(v[i]);
    return h;
  }

  // C[m, n] = act(sum_k A[m, k] B[k, n] + bias[n] [+ R[m, n]]); B stored [N, K] for linear.
  // `activation` defaults to Relu for linear, none for matmul. Returns the graph's node count.
  size_t check(int64_t m, int64_t k, int64_t n, bool linear, bool bias, bool residual = false,
               std::optional<UnaryOp> activation = std::nullopt) {
    if (!activation && linear) activation = UnaryOp::Relu;
    SCOPED_TRACE(::testing::Message()
                 << m << "x" << k << "x" << n << " linear=" << linear << " bias=" << bias
                 << " residual=" << residual
                 << " activation=" << (activation ? static_cast<int>(*activation) : -1));
    ComputeGraph g(context(), graph_options());
    auto ta = g.add_input({m, k}, DType::Float16, "a");
    auto tb = g.add_input(linear ? Shape{n, k} : Shape{k, n}, DType::Float16, "b");
    auto tc = g.add_input({n}, DType::Float16, "bias");
    auto tr = g.add_input({m, n}, DType::Float16, "residual");
    ops::MatmulEpilogue e;
    if (bias) e.bias = tc;
    if (residual) e.residual = tr;
    e.activation = activation;
    auto y = linear ? ops::linear(g, ta, tb, e) : ops::matmul(g, ta, tb, e);
    EXPECT_EQ(g.info(y).dtype, DType::Float16);
    g.add_output(y, "y");
    // New inputs every run: a later run that left C unwritten would show.
    for (int run = 0; run < runs_; ++run) {
      SCOPED_TRACE("run " + std::to_string(run));
      if (!check_run(g, m, k, n, linear, bias, residual, activation)) break;
    }
    return g.stats().nodes;
  }

  // One execution of check()'s graph on fresh random inputs; false after a mismatch.
  bool check_run(ComputeGraph& g, int64_t m, int64_t k, int64_t n, bool linear, bool bias,
                 bool residual, std::optional<UnaryOp> activation) {
    std::vector<uint16_t> a = to_half(random_floats(m * k)), b = to_half(random_floats(k * n)),
                          c = to_half(random_floats(n)), r = to_half(random_floats(m * n, -2, 2));
    g.copy_to_input(0, a.data(), a.size() * 2);
    g.copy_to_input(1, b.data(), b.size() * 2);
    g.copy_to_input(2, c.data(), c.size() * 2);
    g.copy_to_input(3, r.data(), r.size() * 2);
    g.execute();
    std::vector<uint16_t> got(m * n, 0xFFFF);
    g.copy_from_output(0, got.data(), got.size() * 2);
    return matches_product(got, a, b, c, r, m, k, n, linear, bias, residual, activation);
  }

  // Whether C `got` [m, n] is act(A B + bias [+ R]) of the fp16 operands (B stored [N, K] where
  // `linear`), computed in double; reports and stops at the first mismatch.
  static bool matches_product(const std::vector<uint16_t>& got, const std::vector<uint16_t>& a,
                              const std::vector<uint16_t>& b, const std::vector<uint16_t>& c,
                              const std::vector<uint16_t>& r, int64_t m, int64_t k, int64_t n,
                              bool linear, bool bias, bool residual,
                              std::optional<UnaryOp> activation) {
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double want =
            (bias ? half_to_float(c[j]) : 0.0) + (residual ? half_to_float(r[i * n + j]) : 0.0);
        for (int64_t q = 0; q < k; ++q)
          want += double(half_to_float(a[i * k + q])) *
                  half_to_float(b[linear ? j * k + q : q * n + j]);
        if (activation) want = activate(*activation, {}, want);
        float v = half_to_float(got[i * n + j]);
        EXPECT_NEAR(v, want, 2e-3 * std::sqrt(double(k)) + 1e-3 * std::abs(want))
            << "at " << i << "," << j;
        if (std::abs(v - want) > 2e-3 * std::sqrt(double(k)) + 1e-3 * std::abs(want))
          return false;  // one mismatch per product is enough to report
      }
    return true;
  }

  bool has_coopmat() {
    const vk::DeviceFeatures& f = context()->features();
    return f.coopmat_f16_16x16x16 && f.subgroup_size == 32;
  }

  // Every fp16 product the tensor cores take runs on tile `t`, B stored [N, K] too with `b_t`,
  // split into slices of one BK step where `split`, reduced in the same dispatch where `fused`.
  void force_coopmat(const ops::CoopmatTile& t, bool split, bool b_t, bool fused = false) {
    ops::MatmulConfig cfg = ops::choose_matmul_config(*context());
    cfg.coopmat = t;
    cfg.coopmat_pick = false;  // on by default, it would choose its own tile
    cfg.coopmat_small_below = 0;
    cfg.coopmat_max_k_per_tile = uint64_t{1} << 40;
    cfg.coopmat_b_t = b_t;
    cfg.coopmat_split_k = split;
    cfg.coopmat_min_slice = t.bk;
    cfg.coopmat_split_groups = uint64_t{1} << 40;
    cfg.coopmat_fused_split = fused;
    tuning_.matmul = cfg;
  }

  int runs_ = 1;  // executions of each check() graph
};

TEST_F(MatmulFloat16, MatchesReference) {
  check(37, 45, 21, false, false);
  check(64, 32, 128, false, false);
  check(3, 50, 9, true, true);
  check(70, 33, 80, true, true);
  check(128, 64, 256, false, false);  // whole 128x128x32 tiles: tensor cores where available
  check(37, 45, 21, false, true, true);
  check(70, 33, 80, true, true, true);
}

// Where the device has cooperative matrices: the 128 x 128 and the 64 x 64 tile, each storing
// fragments directly and through the bias epilogue; M ending inside a tile (ViT's 197 tokens,
// fewer rows than one tile), where rows past M load as zeros and are not stored.
TEST_F(MatmulFloat16, CoopmatTilesWithAndWithoutEpilogue) {
  for (uint64_t small_below : {uint64_t{0}, uint64_t{1} << 20}) {
    SCOPED_TRACE("coopmat_small_below " + std::to_string(small_below));
    ops::MatmulConfig cfg = ops::choose_matmul_config(*context());
    cfg.coopmat_small_below = small_below;
    tuning_.matmul = cfg;
    check(128, 64, 256, false, false);
    check(128, 64, 256, false, true);
    check(256, 96, 128, false, true);
    check(128, 64, 256, false, false, true);
    check(256, 96, 128, false, true, true);
    check(197, 64, 256, false, false);
    check(197, 96, 128, false, true);
    check(70, 64, 256, false, false, true);
    check(200, 32, 128, false, true, true);
  }
}

// Every declared cooperative-matrix variant (matmul.cmake), whole, split-K (forced: slices
// of one BK step) and split-K reduced in the same dispatch, with each epilogue, at M of five
// rows (a partial fragment; four or fewer take the GEMV, gemv_rows), one fragment, a tile
// edge, whole tiles and ViT's 197 tokens. The graph has one node unsplit or fused, two
// (partials, reduce) split. Two runs of each graph: the fused kernel's tile counters must be
// back at zero for the second.
TEST_F(MatmulFloat16, CoopmatEveryVariantWholeAndSplitK) {
  if (!has_coopmat()) GTEST_SKIP() << "no 16x16x16 fp16 cooperative matrices";
  runs_ = 2;
  for (const ops::CoopmatTile& t : declared_coopmat_tiles()) {
    for (int mode : {0, 1, 2}) {
      const bool split = mode > 0, fused = mode == 2;
      SCOPED_TRACE("variant " + t.name() + (fused ? " fused split-K" : split ? " split-K" : ""));
      force_coopmat(t, split, false, fused);
      const size_t nodes = split && !fused ? 2 : 1;
      const int64_t n = 2 * t.tile_n(), k = 5 * t.bk;  // split: five slices
      for (int64_t m : {5, 16, 70, 128, 197}) {
        EXPECT_EQ(check(m, k, n, false, false), nodes);
        EXPECT_EQ(check(m, k, n, false, true, true, UnaryOp::Gelu), nodes);
        EXPECT_EQ(check(m, k, n, false, true, false, UnaryOp::Silu), nodes);
      }
      EXPECT_EQ(check(197, k, n, false, true, false, UnaryOp::Relu), nodes);
      EXPECT_EQ(check(70, k, n, false, false, true, UnaryOp::GeluTanh), nodes);
    }
  }
}

// B stored [N, K] (linear's weight) on every declared tile with mm16.bt, whole and split-K: N
// ending inside the last tile (and C rows that are no multiple of 8 halves: element stores),
// M from five rows (four or fewer take the GEMV) to ViT's 197, and the LM head's odd N
// through the shape-based choice.
TEST_F(MatmulFloat16, CoopmatTransposedB) {
  if (!has_coopmat()) GTEST_SKIP() << "no 16x16x16 fp16 cooperative matrices";
  runs_ = 2;
  for (const ops::CoopmatTile& t : declared_coopmat_tiles()) {
    for (int mode : {0, 1, 2}) {
      const bool split = mode > 0, fused = mode == 2;
      SCOPED_TRACE("variant " + t.name() + (fused ? " fused split-K" : split ? " split-K" : ""));
      force_coopmat(t, split, true, fused);
      const size_t nodes = split && !fused ? 2 : 1;
      const int64_t k = 3 * t.bk;
      for (int64_t n : {int64_t{2} * t.tile_n(), int64_t{t.tile_n()} + 8, int64_t{77}})
        for (int64_t m : {5, 70, 197}) {
          EXPECT_EQ(check(m, k, n, true, false, false, UnaryOp::Relu), nodes);
          EXPECT_EQ(check(m, k, n, true, true, true, UnaryOp::Gelu), nodes);
        }
    }
  }
  ops::MatmulConfig cfg = ops::choose_matmul_config(*context());
  cfg.coopmat_pick = cfg.coopmat_split_k = cfg.coopmat_b_t = true;
  cfg.coopmat_min_slice = 256;  // K 768 splits (the default, 512, keeps it whole)
  tuning_.matmul = cfg;
  EXPECT_EQ(check(128, 768, 5031, true, false, false, UnaryOp::Relu), 2u);  // 316 tiles, 3 ways
  EXPECT_EQ(check(16, 768, 1001, true, true, true, UnaryOp::Silu), 2u);
  cfg.coopmat_fused_split = true;  // the same, reduced in one dispatch
  tuning_.matmul = cfg;
  EXPECT_EQ(check(128, 768, 5031, true, false, false, UnaryOp::Relu), 1u);
  EXPECT_EQ(check(16, 768, 1001, true, true, true, UnaryOp::Silu), 1u);
}

// A constant B [K, N] whose rows are not whole 16-byte words (N % 8 != 0, as the legacy export
// of gpt2's lm_head) is stored transposed at build, so the tensor cores' B_T variants take it
// where the device has them (mm16.transpose_b; =0 leaves it to the portable kernel). Both give
// the reference, with a bias and an activation in the epilogue.
TEST_F(MatmulFloat16, ConstantBWithUnalignedRowsIsStoredTransposed) {
  const int64_t m = 70, k = 96, n = 77;
  const std::vector<uint16_t> a = to_half(random_floats(m * k)), b = to_half(random_floats(k * n)),
                              c = to_half(random_floats(n));
  for (bool transpose : {true, false}) {
    SCOPED_TRACE(transpose ? "mm16.transpose_b=1" : "mm16.transpose_b=0");
    tuning_ = ops::Tuning::from_knobs(transpose ? "mm16.transpose_b=1" : "mm16.transpose_b=0");
    GraphOptions options = graph_options();
    options.profile = true;
    ComputeGraph g(context(), options);
    TensorRef ta = g.add_input({m, k}, DType::Float16, "a");
    TensorRef tb = g.add_constant(HostTensor::from(DType::Float16, {k, n}, b), "b");
    TensorRef tc = g.add_constant(HostTensor::from(DType::Float16, {n}, c), "bias");
    g.add_output(ops::matmul(g, ta, tb, {tc, UnaryOp::Relu, {}, std::nullopt}), "y");
    g.copy_to_input(0, a.data(), a.size() * 2);
    g.execute();
    std::vector<uint16_t> got(m * n, 0xFFFF);
    g.copy_from_output(0, got.data(), got.size() * 2);
    ASSERT_TRUE(matches_product(got, a, b, c, {}, m, k, n, false, true, false, UnaryOp::Relu));
    ASSERT_EQ(g.node_times().size(), 1u);
    const std::string label = g.node_times()[0].label;
    EXPECT_EQ(label.find("coopmat") != std::string::npos, transpose && has_coopmat()) << label;
    if (transpose && has_coopmat()) {
      EXPECT_NE(label.find(" bt"), std::string::npos) << label;
    }
  }
}

// Products the tensor cores take only through K_TAIL (K a multiple of 8, not of the slice) and
// B_SCALAR (B row-major with rows of no whole 16-byte words, or N off the tiles): a float16
// convolution's 1x1 layers as matmul (W [M, K] by the activations [K, pixels]: 49, 196, 784
// pixels; 40, 112, 240 channels), linear with K 40, split-K over a tail; mm16.unaligned=0 gives
// the portable kernel the same results. Outputs poisoned; the label names the loads used.
TEST_F(MatmulFloat16, CoopmatUnalignedBAndKTail) {
  struct Case {
    int64_t m, k, n;
    bool linear, residual;
    bool k_tail, b_scalar;  // expected on the tensor cores
  };
  // 784 is a multiple of 8 but of no tile's width (32, 64, 128): N ends inside a tile, which
  // the element loads serve too.
  const Case cases[] = {
      {1152, 192, 49, false, false, false, true}, {80, 480, 196, false, true, false, true},
      {240, 40, 784, false, false, true, true},   {40, 240, 784, false, true, true, true},
      {672, 112, 196, false, false, true, true},  {128, 40, 64, true, false, true, false},
      {64, 1000, 49, false, false, true, true}};
  for (bool unaligned : {true, false})
    for (const Case& c : cases) {
      SCOPED_TRACE(::testing::Message() << c.m << "x" << c.k << "x" << c.n << " linear " << c.linear
                                        << " mm16.unaligned=" << unaligned);
      tuning_ = ops::Tuning::from_knobs(unaligned ? "mm16.unaligned=1" : "mm16.unaligned=0");
      GraphOptions options = graph_options();
      options.profile = true;
      ComputeGraph g(context(), options);
      TensorRef ta = g.add_input({c.m, c.k}, DType::Float16, "a");
      TensorRef tb = g.add_input(c.linear ? Shape{c.n, c.k} : Shape{c.k, c.n}, DType::Float16, "b");
      TensorRef tc = g.add_input({c.n}, DType::Float16, "bias");
      TensorRef tr = g.add_input({c.m, c.n}, DType::Float16, "residual");
      ops::MatmulEpilogue e{tc, UnaryOp::Relu, {}, std::nullopt};
      if (c.residual) e.residual = tr;
      g.add_output(c.linear ? ops::linear(g, ta, tb, e) : ops::matmul(g, ta, tb, e), "y");
      const std::vector<uint16_t> a = to_half(random_floats(c.m * c.k)),
                                  b = to_half(random_floats(c.k * c.n)),
                                  bias = to_half(random_floats(c.n)),
                                  r = to_half(random_floats(c.m * c.n, -2, 2));
      g.copy_to_input(0, a.data(), a.size() * 2);
      g.copy_to_input(1, b.data(), b.size() * 2);
      g.copy_to_input(2, bias.data(), bias.size() * 2);
      g.copy_to_input(3, r.data(), r.size() * 2);
      g.execute();
      std::vector<uint16_t> got(c.m * c.n, 0xFFFF);
      g.copy_from_output(0, got.data(), got.size() * 2);
      ASSERT_TRUE(matches_product(got, a, b, bias, r, c.m, c.k, c.n, c.linear, true, c.residual,
                                  UnaryOp::Relu));
      if (!has_coopmat()) continue;
      const std::string label = g.node_times()[0].label;
      EXPECT_EQ(label.find("coopmat") != std::string::npos, unaligned) << label;
      if (!unaligned) continue;
      EXPECT_EQ(label.find(" ktail") != std::string::npos, c.k_tail) << label;
      EXPECT_EQ(label.find(" bscalar") != std::string::npos, c.b_scalar) << label;
    }
}

// The shape-based choice with split-K (mm16.pick=1 mm16.split=1) on batch-1 transformer
// products with their epilogues, for 32- and 64-deep slices, B row-major (matmul) and stored
// [N, K] (linear, mm16.bt). K off the slices (1000; 800 at bk 64) takes the last slice
// zero-filled (K_TAIL), N off the tiles (776) with B row-major element loads (B_SCALAR);
// linear takes N 776 as it is.
TEST_F(MatmulFloat16, CoopmatPickedTilesOnTransformerShapes) {
  if (!has_coopmat()) GTEST_SKIP() << "no 16x16x16 fp16 cooperative matrices";
  runs_ = 2;
  // 32- and 64-deep slices; 32-deep with 2 and 3 slices in flight, split-K fused, slices >= 128
  // (so K 768 splits too).
  struct Setting {
    uint32_t bk, depth;
    bool fused;
  };
  for (Setting set : {Setting{32, 1, false}, Setting{64, 1, false}, Setting{32, 2, true},
                      Setting{32, 3, true}, Setting{32, 1, true}}) {
    const uint32_t bk = set.bk;
    SCOPED_TRACE("pick_bk " + std::to_string(bk) + " depth " + std::to_string(set.depth) +
                 (set.fused ? " fused" : ""));
    ops::MatmulConfig cfg = ops::choose_matmul_config(*context());
    cfg.coopmat_pick = true;
    cfg.coopmat_pick_bk = bk;
    cfg.coopmat_pick_depth = set.depth;
    cfg.coopmat_fused_split = set.fused;
    if (set.fused) cfg.coopmat_min_slice = 128;
    cfg.coopmat_split_k = true;
    cfg.coopmat_b_t = true;  // linear's [N, K] weights too
    tuning_.matmul = cfg;
    check(128, 768, 768, true, true);
    check(128, 768, 3072, true, true, false, UnaryOp::Gelu);
    check(128, 3072, 768, false, true, true);
    check(197, 768, 2304, true, true);
    check(16, 1024, 2816, true, false, false, UnaryOp::Silu);
    check(128, 2816, 1024, false, false, true);
    check(1, 768, 768, false, true);
    check(70, 2304, 768, false, true, true, UnaryOp::GeluTanh);
    check(128, 800, 768, false, true, true);  // bk 32: two slices, the last shorter
    check(128, 768, 776, true, true);
    check(128, 768, 776, false, true);
    check(70, 1000, 768, false, true, true);
  }
}

TEST_F(MatmulFloat16, PortableKernelWhereCoopmatWouldFit) {
  ops::MatmulConfig cfg = ops::choose_matmul_config(*context());
  cfg.use_coopmat = false;
  tuning_.matmul = cfg;
  check(128, 64, 256, false, false);
}

TEST_F(MatmulFloat16, LargeVec4Tiles) {
  ops::MatmulConfig cfg = ops::choose_matmul_config(*context());
  cfg.large_min_tiles = 0;
  tuning_.matmul = cfg;
  check(130, 20, 140, false, true);
  check(128, 16, 128, true, false);
}

TEST_F(MatmulFloat16, RejectsMixedDtypes) {
  ComputeGraph g(context(), graph_options());
  auto a = g.add_input({4, 4}, DType::Float16, "a");
  auto b = g.add_input({4, 4}, DType::Float32, "b");
  try {
    ops::matmul(g, a, b);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("matmul"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace vkgraph::testing
