// ops::attention (src/ops/attention.comp) against a float64 reference on random data: query
// lengths across and within tiles, head dims 64 and 128 (and a generic 40), additive masks that
// broadcast, causal masking, grouped-query and multi-query heads, K stored either way, Q read
// through a transposed view, float32 and float16 storage. Outputs are poisoned by a first run
// on NaN inputs, so every element must be written again.
#include <array>
#include <cmath>
#include <limits>

#include "float_test_util.h"
#include "shape_test_util.h"
#include "vkgraph/ops/attention.h"
#include "vkgraph/ops/tuning.h"

namespace vkgraph::testing {
namespace {

struct Case {
  int64_t b = 1, h = 2, hkv = 2, s = 7, skv = 7, d = 64;
  bool mask = false;  // additive [B, 1, S, Skv] (broadcast over heads)
  bool causal = false;
  bool k_transposed = false;  // K stored [B, Hkv, D, Skv]
  bool q_view = false;        // Q stored [B, S, H, D], read as [B, H, S, D]
  // Q, K and V packed in one tensor as nn.MultiheadAttention's in-projection makes them,
  // [S, B, 3, H, D], each read through an offset and strides (needs H == Hkv)
  bool packed = false;
  bool fp16 = false;
  std::vector<int64_t> out_perm;  // the result stored with [B, H, S, D] permuted
  std::string knobs;              // VKGRAPH_TUNE's format, e.g. "attention.br=32" to force a tiling
  std::string name() const {
    return "b" + std::to_string(b) + " h" + std::to_string(h) + "/" + std::to_string(hkv) + " s" +
           std::to_string(s) + " skv" + std::to_string(skv) + " d" + std::to_string(d) +
           (mask ? " mask" : "") + (causal ? " causal" : "") + (k_transposed ? " kT" : "") +
           (q_view ? " qview" : "") + (packed ? " packed" : "") + (fp16 ? " fp16" : "") +
           (out_perm.empty() ? "" : " out_perm") + (knobs.empty() ? "" : " " + knobs);
  }
};

// out[b][h][i][:] = softmax_j(scale q.k_j + mask) v_j, in float64; k and v as [B, Hkv, Skv, D].
std::vector<double> reference(const Case& c, const std::vector<float>& q,
                              const std::vector<float>& k, const std::vector<float>& v,
                              const std::vector<float>& mask, float scale) {
  std::vector<double> out(c.b * c.h * c.s * c.d);
  const int64_t group = c.h / c.hkv;
  std::vector<double> p(c.skv);
  for (int64_t b = 0; b < c.b; ++b)
    for (int64_t h = 0; h < c.h; ++h)
      for (int64_t i = 0; i < c.s; ++i) {
        const int64_t kh = h / group;
        auto qat = [&](int64_t d) {
          return c.q_view ? q[((b * c.s + i) * c.h + h) * c.d + d]
                          : q[((b * c.h + h) * c.s + i) * c.d + d];
        };
        double m = -INFINITY;
        for (int64_t j = 0; j < c.skv; ++j) {
          double dot = 0;
          for (int64_t d = 0; d < c.d; ++d)
            dot += qat(d) * double(k[((b * c.hkv + kh) * c.skv + j) * c.d + d]);
          p[j] = dot * scale + (c.mask ? mask[(b * c.s + i) * c.skv + j] : 0.0);
          if (c.causal && j > i) p[j] = -INFINITY;
          m = std::max(m, p[j]);
        }
        double sum = 0;
        for (int64_t j = 0; j < c.skv; ++j) sum += p[j] = std::exp(p[j] - m);
        for (int64_t d = 0; d < c.d; ++d) {
          double acc = 0;
          for (int64_t j = 0; j < c.skv; ++j)
            acc += p[j] * v[((b * c.hkv + kh) * c.skv + j) * c.d + d];
          out[((b * c.h + h) * c.s + i) * c.d + d] = acc / sum;
        }
      }
  return out;
}

class AttentionTest : public GpuTest {
 protected:
  void check(const Case& c) {
    SCOPED_TRACE(c.name());
    if (c.fp16 && !context()->features().storage_buffer_16bit) GTEST_SKIP() << "no 16-bit storage";
    const float scale = 1.f / std::sqrt(float(c.d));
    std::vector<float> q = stored(random_floats(c.b * c.h * c.s * c.d, -2, 2), c.fp16);
    std::vector<float> k = stored(random_floats(c.b * c.hkv * c.skv * c.d, -2, 2), c.fp16);
    std::vector<float> v = stored(random_floats(c.b * c.hkv * c.skv * c.d), c.fp16);
    std::vector<float> mask = stored(random_floats(c.b * c.s * c.skv, -3, 0), c.fp16);
    // K as stored: [B, Hkv, Skv, D] or transposed [B, Hkv, D, Skv].
    std::vector<float> k_stored = k;
    if (c.k_transposed)
      for (int64_t bh = 0; bh < c.b * c.hkv; ++bh)
        for (int64_t j = 0; j < c.skv; ++j)
          for (int64_t d = 0; d < c.d; ++d)
            k_stored[(bh * c.d + d) * c.skv + j] = k[(bh * c.skv + j) * c.d + d];
    Shape qs = c.q_view ? Shape{c.b, c.s, c.h, c.d} : Shape{c.b, c.h, c.s, c.d};
    Shape ks = c.k_transposed ? Shape{c.b, c.hkv, c.d, c.skv} : Shape{c.b, c.hkv, c.skv, c.d};
    std::vector<HostTensor> inputs = {tensor_of(q, qs, c.fp16), tensor_of(k_stored, ks, c.fp16),
                                      tensor_of(v, {c.b, c.hkv, c.skv, c.d}, c.fp16),
                                      tensor_of(mask, {c.b, 1, c.s, c.skv}, c.fp16)};
    const int64_t e = c.h * c.d;  // one of the packed projections' width
    if (c.packed) {
      ASSERT_TRUE(c.h == c.hkv && c.s == c.skv);
      std::vector<float> qkv(c.s * c.b * 3 * e);
      for (int64_t i = 0; i < c.s; ++i)
        for (int64_t b = 0; b < c.b; ++b)
          for (int64_t h = 0; h < c.h; ++h)
            for (int64_t d = 0; d < c.d; ++d) {
              const int64_t from = ((b * c.h + h) * c.s + i) * c.d + d;
              const int64_t to = (i * c.b + b) * 3 * e + h * c.d + d;
              qkv[to] = q[from];
              qkv[to + e] = k[from];
              qkv[to + 2 * e] = v[from];
            }
      inputs = {tensor_of(qkv, {c.s, c.b, 3 * e}, c.fp16), inputs[3]};
    }

    GraphOptions options;
    options.tuning = std::make_shared<ops::Tuning>(ops::Tuning::from_knobs(c.knobs));
    ComputeGraph g(context(), options);
    std::vector<TensorRef> in;
    for (size_t i = 0; i < inputs.size(); ++i)
      in.push_back(g.add_input(inputs[i].shape, inputs[i].dtype, "in" + std::to_string(i)));
    ops::AttentionParams params;
    params.scale = scale;
    params.causal = c.causal;
    params.out_perm = c.out_perm;
    TensorRef y;
    if (c.packed) {
      // Element (b, h, i, d) of Q is packed[i, b, 0, h, d]; K's and V's are E and 2E further.
      const int64_t row = c.b * 3 * e;  // one query row: all batches' Q, K and V
      const std::vector<int64_t> bhsd{3 * e, c.d, row, 1}, bhds{3 * e, c.d, 1, row};
      y = ops::attention_strided(g, ops::StridedView{in[0], {c.b, c.h, c.s, c.d}, bhsd, 0},
                                 ops::StridedView{in[0], {c.b, c.h, c.d, c.s}, bhds, e},
                                 ops::StridedView{in[0], {c.b, c.h, c.s, c.d}, bhsd, 2 * e},
                                 c.mask ? std::optional<TensorRef>(in[1]) : std::nullopt, params);
    } else {
      y = ops::attention(
          g, {in[0], c.q_view ? std::vector<int64_t>{0, 2, 1, 3} : std::vector<int64_t>{}},
          {in[1], c.k_transposed ? std::vector<int64_t>{} : std::vector<int64_t>{0, 1, 3, 2}},
          {in[2], {}}, c.mask ? std::optional<TensorRef>(in[3]) : std::nullopt, params);
    }
    g.add_output(y, "y");
    // First run on NaN inputs: the output holds NaN unless the second run rewrites it all.
    HostTensor got = run_poisoned(g, inputs, c.fp16);
    const Shape bhsd{c.b, c.h, c.s, c.d};
    const std::vector<int64_t> perm =
        c.out_perm.empty() ? std::vector<int64_t>{0, 1, 2, 3} : c.out_perm;
    Shape out_shape;
    for (int64_t d : perm) out_shape.push_back(bhsd[d]);
    ASSERT_EQ(shape_str(got.shape), shape_str(out_shape));
    // Where element (b, h, i, d) of the reference is in the output.
    std::array<int64_t, 4> stride{};
    for (int64_t i = 3, st = 1; i >= 0; st *= out_shape[i], --i) stride[perm[i]] = st;
    auto at = [&](size_t e) {
      int64_t rem = static_cast<int64_t>(e), offset = 0;
      for (int64_t dim = 3; dim >= 0; --dim) {
        offset += rem % bhsd[dim] * stride[dim];
        rem /= bhsd[dim];
      }
      return static_cast<size_t>(offset);
    };
    std::vector<double> want = reference(c, q, k, v, mask, scale);
    // float32: accumulation order only; float16: the output's rounding (2^-11) dominates.
    const double tol = c.fp16 ? 2e-3 : 2e-5;
    int failures = 0;
    for (size_t i = 0; i < want.size() && failures < 5; ++i) {
      double a = c.fp16 ? half_to_float(got.data<uint16_t>()[at(i)]) : got.data<float>()[at(i)];
      if (!(std::abs(a - want[i]) <= tol * (1 + std::abs(want[i])))) {
        ADD_FAILURE() << "element " << i << ": got " << a << ", want " << want[i];
        ++failures;
      }
    }
  }
};

TEST_F(AttentionTest, LengthsHeadDimsAndMasks) {
  for (bool fp16 : {false, true})
    for (int64_t d : {64, 128})
      for (int64_t s : {1, 7, 64, 130})
        for (int variant = 0; variant < 3; ++variant) {
          Case c;
          c.s = c.skv = s;
          c.d = d;
          c.fp16 = fp16;
          c.mask = variant == 1;
          c.causal = variant == 2;
          check(c);
        }
}

TEST_F(AttentionTest, GroupedQueryAndLayouts) {
  for (bool fp16 : {false, true}) {
    Case gqa;  // 4 query heads on 2 KV heads, batch 2, K stored transposed, Q a view
    gqa.b = 2, gqa.h = 4, gqa.hkv = 2, gqa.s = 33, gqa.skv = 45, gqa.d = 64;
    gqa.k_transposed = gqa.q_view = gqa.mask = true;
    gqa.fp16 = fp16;
    check(gqa);
    Case mqa = gqa;  // one KV head for all, causal with more keys than queries
    mqa.hkv = 1, mqa.k_transposed = false, mqa.causal = true, mqa.d = 128;
    check(mqa);
    Case generic;  // a head dim that is neither 64 nor 128, and the largest
    generic.d = 40, generic.s = 19, generic.skv = 70, generic.fp16 = fp16;
    check(generic);
    generic.d = 256, generic.mask = true;
    check(generic);
    Case merged = gqa;  // the heads merged back, [B, S, H, D], and an odd permutation
    merged.out_perm = {0, 2, 1, 3};
    check(merged);
    merged.out_perm = {3, 1, 0, 2};
    merged.d = 40;
    check(merged);
  }
}

// The portable kernel picks 8, 16 or 32 query rows per workgroup by the grid it would make;
// each tiling, forced, on rows that end inside a block, with a mask, causal, GQA and a Q view,
// and Kᵀ stored both ways (keys contiguous: staged along the key rows).
TEST_F(AttentionTest, EveryTiling) {
  for (bool fp16 : {false, true})
    for (int64_t d : {40, 64, 128, 256})
      for (int br : {8, 16, 32})
        for (bool k_transposed : {false, true}) {
          if ((br == 32 && d > 64) || (br == 16 && d > 128)) continue;
          Case c;
          c.b = 2, c.h = 4, c.hkv = 2, c.s = 37, c.skv = 70, c.d = d;
          c.mask = c.q_view = true;
          c.causal = d == 64;
          c.k_transposed = k_transposed;
          c.fp16 = fp16;
          c.knobs = "attention.br=" + std::to_string(br) + ",attention.coopmat=0";
          check(c);
        }
}

// Q, K and V as offset views of one packed [S, B, 3E] projection (nn.MultiheadAttention's
// in-projection, which the fusion pass reads in place), batch 2, with a mask, causal, merged
// heads, every tiling.
TEST_F(AttentionTest, PackedQkvOffsetViews) {
  for (bool fp16 : {false, true})
    for (int64_t d : {40, 64})
      for (int br : {8, 16, 32}) {
        Case c;
        c.b = 2, c.h = c.hkv = 3, c.s = c.skv = 37, c.d = d;
        c.packed = true;
        c.mask = br == 8;
        c.causal = br == 16;
        if (br == 32) c.out_perm = {2, 0, 1, 3};
        c.fp16 = fp16;
        c.knobs = "attention.br=" + std::to_string(br) + ",attention.coopmat=0";
        check(c);
      }
}

// A view that reads past its tensor, or with a negative stride, is refused.
TEST_F(AttentionTest, StridedViewOutsideItsTensorIsAnError) {
  ComputeGraph g(context());
  TensorRef qkv = g.add_input({8, 1, 3 * 64}, DType::Float32, "qkv");
  const std::vector<int64_t> st{192, 64, 192, 1}, kt{192, 64, 1, 192};
  const ops::StridedView q{qkv, {1, 1, 8, 64}, st, 0}, k{qkv, {1, 1, 64, 8}, kt, 64};
  ops::StridedView v{qkv, {1, 1, 8, 64}, st, 129};  // one element past the end
  EXPECT_THROW(ops::attention_strided(g, q, k, v, std::nullopt, {}), Error);
  v.offset = 128;
  v.strides = {192, 64, -192, 1};
  EXPECT_THROW(ops::attention_strided(g, q, k, v, std::nullopt, {}), Error);
  v.strides = st;
  EXPECT_NO_THROW(ops::attention_strided(g, q, k, v, std::nullopt, {}));
}

// A tiling whose tiles do not fit 32 KiB of shared memory is refused, not compiled.
TEST_F(AttentionTest, OversizedTilingIsAnError) {
  GraphOptions options;
  options.tuning = std::make_shared<ops::Tuning>(ops::Tuning::from_knobs("attention.br=32"));
  ComputeGraph g(context(), options);
  TensorRef q = g.add_input({1, 2, 8, 128}, DType::Float32, "q");
  EXPECT_THROW(ops::attention(g, {q, {}}, {q, {0, 1, 3, 2}}, {q, {}}, std::nullopt, {}), Error);
}

// attention_coopmat.comp (float16, head dims 64 and 128, where the device has cooperative
// matrices: the H200, not lavapipe), with 1, 2 and 4 query-row subgroups per workgroup, and
// 2, 3 and (head dim 64) 4 subgroups splitting the keys (the causal cases leave some of them
// no key tile). Its
// probabilities are rounded to float16 before P V, within the float16 tolerance. Every case
// names attention.coopmat (the portable kernel where it is 0).
TEST_F(AttentionTest, CooperativeMatrixVariant) {
  const auto& f = context()->features();
  if (!f.coopmat_f16_16x16x16 || f.subgroup_size != 32)
    GTEST_SKIP() << "no 16x16x16 float16 cooperative matrices with subgroups of 32";
  const std::pair<int, int> groupings[] = {{1, 1}, {2, 1}, {4, 1}, {1, 2}, {1, 3}, {1, 4}};
  for (int64_t d : {64, 128})
    for (int64_t s : {1, 16, 33, 130}) {
      for (const auto& [subgroups, key_split] : groupings) {
        if (key_split == 4 && d == 128) continue;  // needs more than 48 KiB
        Case c;
        c.b = 2, c.h = 4, c.hkv = 2, c.s = s, c.skv = s + 17, c.d = d, c.fp16 = true;
        c.mask = c.q_view = true;
        c.knobs = "attention.coopmat=1,attention.subgroups=" + std::to_string(subgroups) +
                  ",attention.key_split=" + std::to_string(key_split);
        check(c);
        c.mask = false, c.causal = true;
        check(c);
        // Kᵀ stored with its keys contiguous, a whole number of 16-byte words per row.
        c.causal = false, c.k_transposed = true, c.skv = (s + 7) / 8 * 8 + 8;
        check(c);
      }
      Case c;
      c.b = 2, c.h = 4, c.hkv = 2, c.s = s, c.skv = s + 17, c.d = d, c.fp16 = true;
      c.mask = c.q_view = true;
      c.knobs = "attention.coopmat=1";
      check(c);
      c.mask = false, c.causal = true, c.k_transposed = true, c.hkv = 1;
      check(c);
      c.out_perm = {0, 2, 1, 3};
      check(c);
      Case packed;  // Q, K, V offset views of one packed projection
      packed.b = 2, packed.h = packed.hkv = 2, packed.s = packed.skv = s, packed.d = d;
      packed.fp16 = packed.packed = packed.mask = true;
      packed.knobs = "attention.coopmat=1";
      check(packed);
    }
}

// A row whose scores are all -inf: unfused Softmax gives exp(-inf - -inf) = NaN for it; so
// does the fused kernel. Other rows are unaffected.
TEST_F(AttentionTest, FullyMaskedRowIsNaNAsUnfused) {
  ComputeGraph g(context());
  const int64_t s = 5, d = 64;
  HostTensor q = random_tensor(rng, DType::Float32, {1, 1, s, d});
  HostTensor k = random_tensor(rng, DType::Float32, {1, 1, s, d});
  HostTensor v = random_tensor(rng, DType::Float32, {1, 1, s, d});
  HostTensor mask(DType::Float32, {s, s});
  for (int64_t j = 0; j < s; ++j) mask.data<float>()[2 * s + j] = -INFINITY;
  auto qi = g.add_input(q.shape, DType::Float32, "q"),
       ki = g.add_input(k.shape, DType::Float32, "k");
  auto vi = g.add_input(v.shape, DType::Float32, "v");
  TensorRef fused = ops::attention(g, {qi, {}}, {ki, {0, 1, 3, 2}}, {vi, {}}, g.add_constant(mask),
                                   {
                                       0.125f,
                                       false,
                                   });
  TensorRef scores = ops::matmul_permuted(g, {qi, {}}, {ki, {0, 1, 3, 2}}, {}, 0.125f);
  TensorRef probs =
      ops::softmax(g, ops::binary(g, ops::BinaryOp::Add, scores, g.add_constant(mask)));
  TensorRef unfused = ops::matmul(g, probs, vi);
  g.add_output(fused, "fused");
  g.add_output(unfused, "unfused");
  g.copy_to_input(0, q.bytes.data(), q.nbytes());
  g.copy_to_input(1, k.bytes.data(), k.nbytes());
  g.copy_to_input(2, v.bytes.data(), v.nbytes());
  g.execute();
  HostTensor a = g.read_output(0), b = g.read_output(1);
  for (int64_t i = 0; i < s * d; ++i) {
    bool masked_row = i / d == 2;
    EXPECT_EQ(std::isnan(a.data<float>()[i]), masked_row) << i;
    EXPECT_EQ(std::isnan(b.data<float>()[i]), masked_row) << i;
  }
  expect_near(a, b, 1e-5f);
}

// Rows that softmax makes NaN, in the tile after the first: all scores -inf, a NaN score, a
// +inf score. Unfused they are NaN; with zero_nan_rows, zeros (torch's _safe_softmax). Every
// kernel: portable float32 and float16, and the tensor-core one where the device has it.
TEST_F(AttentionTest, RowsSoftmaxMakesNaNAreNaNOrZeros) {
  const int64_t s = 9, skv = 70, d = 64;
  const std::vector<float> q = stored(random_floats(s * d, -2, 2), true);
  const std::vector<float> k = stored(random_floats(skv * d, -2, 2), true);
  const std::vector<float> v = stored(random_floats(skv * d), true);
  std::vector<float> mask = stored(random_floats(s * skv, -3, 0), true);
  for (int64_t j = 0; j < skv; ++j) mask[2 * skv + j] = -INFINITY;
  mask[4 * skv + 50] = NAN;
  mask[5 * skv + 40] = INFINITY;
  const auto undefined_row = [](int64_t i) { return i == 2 || i == 4 || i == 5; };
  Case c;
  c.b = c.h = c.hkv = 1, c.s = s, c.skv = skv, c.d = d, c.mask = true;
  const std::vector<double> want = reference(c, q, k, v, mask, 0.125f);
  std::vector<std::pair<bool, std::string>> kernels = {{false, "attention.coopmat=0"},
                                                       {true, "attention.coopmat=0"}};
  const auto& f = context()->features();
  if (f.coopmat_f16_16x16x16 && f.subgroup_size == 32)
    kernels.push_back({true, "attention.coopmat=1"});
  for (const auto& [fp16, knobs] : kernels)
    for (bool zeros : {false, true}) {
      SCOPED_TRACE(std::string(fp16 ? "fp16 " : "fp32 ") + knobs + (zeros ? " zeros" : " NaN"));
      if (fp16 && !f.storage_buffer_16bit) continue;
      GraphOptions options;
      options.tuning = std::make_shared<ops::Tuning>(ops::Tuning::from_knobs(knobs));
      ComputeGraph g(context(), options);
      const std::vector<HostTensor> inputs = {
          tensor_of(q, {1, 1, s, d}, fp16), tensor_of(k, {1, 1, skv, d}, fp16),
          tensor_of(v, {1, 1, skv, d}, fp16), tensor_of(mask, {1, 1, s, skv}, fp16)};
      std::vector<TensorRef> in;
      for (size_t i = 0; i < inputs.size(); ++i)
        in.push_back(g.add_input(inputs[i].shape, inputs[i].dtype, "in" + std::to_string(i)));
      ops::AttentionParams params;
      params.scale = 0.125f;
      params.zero_nan_rows = zeros;
      g.add_output(
          ops::attention(g, {in[0], {}}, {in[1], {0, 1, 3, 2}}, {in[2], {}}, in[3], params), "y");
      const HostTensor got = run_poisoned(g, inputs, fp16);
      int failures = 0;
      for (int64_t e = 0; e < s * d && failures < 5; ++e) {
        const double a = fp16 ? half_to_float(got.data<uint16_t>()[e]) : got.data<float>()[e];
        const bool ok = !undefined_row(e / d)
                            ? std::abs(a - want[e]) <= 2e-3 * (1 + std::abs(want[e]))
                        : zeros ? a == 0.0
                                : std::isnan(a);
        if (!ok) {
          ADD_FAILURE() << "row " << e / d << " element " << e % d << ": got " << a;
          ++failures;
        }
      }
    }
}

TEST_F(AttentionTest, ShapesThatDisagreeAreErrors) {
  ComputeGraph g(context());
  auto q = g.add_input({1, 4, 8, 64}, DType::Float32, "q");
  auto k3 = g.add_input({1, 3, 8, 64}, DType::Float32, "k3");  // 3 KV heads do not divide 4
  auto big = g.add_input({1, 1, 8, 300}, DType::Float32, "big");
  EXPECT_THROW(ops::attention(g, {q, {}}, {k3, {0, 1, 3, 2}}, {k3, {}}, std::nullopt, {}), Error);
  EXPECT_THROW(ops::attention(g, {big, {}}, {big, {0, 1, 3, 2}}, {big, {}}, std::nullopt, {}),
               Error);
  auto mask = g.add_input({2, 1, 8, 8}, DType::Float32, "mask");  // batch 2 against 1
  EXPECT_THROW(ops::attention(g, {q, {}}, {q, {0, 1, 3, 2}}, {q, {}}, mask, {}), Error);
}

}  // namespace
}  // namespace vkgraph::testing
