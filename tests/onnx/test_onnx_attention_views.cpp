// nn.MultiheadAttention's Q/K/V split read in place (src/onnx/fuse_view.h): Q, K and V come out
// of one packed in-projection [S, B, 3E] through Reshape/Unsqueeze/Transpose/Squeeze/Gather (the
// torch 2.11 exporters) or three Slices (torch 1.13), then the per-head Reshape/Transpose; the
// fused model runs the projection and one attention reading offset views of it. Checked against
// a float64 reference and against the model run unfused, in float32 and float16 mode, outputs
// poisoned by a first run on NaN input. And the out-projection's residual Add, joined to its Gemm.
#include <onnx/onnx_pb.h>

#include <cmath>

#include "model_builder.h"
#include "shape_test_util.h"

namespace vkgraph::testing {
namespace {

constexpr int kFloat = onnx::TensorProto::FLOAT;
constexpr int64_t kS = 19, kH = 3, kD = 16, kE = kH * kD;

// SplitOp: one Split node of the last dim (GPT-2's q, k, v of c_attn, both exporters).
enum class Split { Gather, Slice, SliceOfTransposedView, SplitOp };

// x [S, B, E] -> x W + b -> Q, K, V split -> attention -> [B, H, S, D] (the Gather form, with
// the dynamo exporter's SDPA scales) or [B·H, S, D] (the Slice forms: torch 1.13's rank-3 bmm,
// q / √d). SliceOfTransposedView slices [B, S, 3E] read from x transposed: a Slice of a view.
ModelBuilder mha(Split split, int64_t batch, const std::vector<float>& w,
                 const std::vector<float>& bias) {
  ModelBuilder m(17);
  const bool transposed_input = split == Split::SliceOfTransposedView;
  if (transposed_input)
    m.input("x", kFloat, {batch, kS, kE});
  else
    m.input("x", kFloat, {kS, batch, kE});
  m.output("y", kFloat);
  m.initializer("w", Shape{kE, 3 * kE}, w);
  m.initializer("bias", Shape{3 * kE}, bias);
  m.initializer("heads", std::vector<int64_t>{kS, batch * kH, kD});
  m.initializer("heads_4d", std::vector<int64_t>{batch, kH, kS, kD});
  m.initializer("kt_4d", std::vector<int64_t>{batch, kH, kD, kS});
  std::string x = "x";
  if (transposed_input) {
    set_ints(m.node("Transpose", {"x"}, {"x_sbe"}), "perm", {1, 0, 2});
    x = "x_sbe";
  }
  m.node("MatMul", {x, "w"}, {"proj"});
  m.node("Add", {"proj", "bias"}, {"packed"});
  if (split == Split::Gather) {
    m.initializer("sb3e", std::vector<int64_t>{kS, batch, 3, kE});
    m.initializer("axis0", std::vector<int64_t>{0});
    m.initializer("axis3", std::vector<int64_t>{3});
    m.node("Reshape", {"packed", "sb3e"}, {"sb3e_view"});
    m.node("Unsqueeze", {"sb3e_view", "axis0"}, {"unsq"});
    set_ints(m.node("Transpose", {"unsq"}, {"t5"}), "perm", {3, 1, 2, 0, 4});
    m.node("Squeeze", {"t5", "axis3"}, {"split"});
    for (int i = 0; i < 3; ++i) {
      const std::string at = "at" + std::to_string(i);
      m.initializer(at, std::vector<int64_t>{i}, /*scalar=*/true);
      set_int(m.node("Gather", {"split", at}, {std::string("qkv").substr(i, 1) + "_sbe"}), "axis",
              0);
    }
  } else if (split == Split::SplitOp) {
    m.initializer("sizes", std::vector<int64_t>{kE, kE, kE});
    set_int(m.node("Split", {"packed", "sizes"}, {"q_sbe", "k_sbe", "v_sbe"}), "axis", -1);
  } else {
    m.initializer("last", std::vector<int64_t>{-1});
    for (int i = 0; i < 3; ++i) {
      const std::string n = std::to_string(i);
      m.initializer("start" + n, std::vector<int64_t>{i * kE});
      m.initializer("end" + n, std::vector<int64_t>{(i + 1) * kE});
      m.node("Slice", {"packed", "start" + n, "end" + n, "last"},
             {std::string("qkv").substr(i, 1) + "_sbe"});
    }
  }
  for (const char* t : {"q", "k", "v"}) {
    const std::string s = t;
    m.node("Reshape", {s + "_sbe", "heads"}, {s + "_heads"});
    set_ints(m.node("Transpose", {s + "_heads"}, {s + "_bh"}), "perm", {1, 0, 2});
  }
  if (split == Split::Gather) {
    m.initializer("root_scale", Shape{}, std::vector<float>{1.f / std::sqrt(std::sqrt(float(kD)))});
    m.node("Reshape", {"q_bh", "heads_4d"}, {"q4"});
    m.node("Reshape", {"v_bh", "heads_4d"}, {"v4"});
    set_ints(m.node("Transpose", {"k_bh"}, {"kt_bh"}), "perm", {0, 2, 1});
    m.node("Reshape", {"kt_bh", "kt_4d"}, {"kt4"});
    m.node("Mul", {"q4", "root_scale"}, {"qs"});
    m.node("Mul", {"kt4", "root_scale"}, {"kts"});
    m.node("MatMul", {"qs", "kts"}, {"scores"});
    set_int(m.node("Softmax", {"scores"}, {"probs"}), "axis", -1);
    m.node("MatMul", {"probs", "v4"}, {"y"});
  } else {
    m.initializer("root_d", Shape{}, std::vector<float>{std::sqrt(float(kD))});
    m.node("Div", {"q_bh", "root_d"}, {"qs"});
    set_ints(m.node("Transpose", {"k_bh"}, {"kt_bh"}), "perm", {0, 2, 1});
    m.node("MatMul", {"qs", "kt_bh"}, {"scores"});
    set_int(m.node("Softmax", {"scores"}, {"probs"}), "axis", -1);
    m.node("MatMul", {"probs", "v_bh"}, {"y"});
  }
  return m;
}

// The attention of the packed projection in float64: [B, H, S, D] (as [B·H, S, D] alike).
// `x` is [S, B, E].
std::vector<double> reference(int64_t batch, const std::vector<float>& x,
                              const std::vector<float>& w, const std::vector<float>& bias) {
  std::vector<double> packed(kS * batch * 3 * kE);
  for (int64_t r = 0; r < kS * batch; ++r)
    for (int64_t c = 0; c < 3 * kE; ++c) {
      double acc = bias[c];
      for (int64_t e = 0; e < kE; ++e) acc += double(x[r * kE + e]) * w[e * 3 * kE + c];
      packed[r * 3 * kE + c] = acc;
    }
  auto at = [&](int which, int64_t b, int64_t h, int64_t i, int64_t d) {
    return packed[(i * batch + b) * 3 * kE + which * kE + h * kD + d];
  };
  std::vector<double> out(batch * kH * kS * kD), p(kS);
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t h = 0; h < kH; ++h)
      for (int64_t i = 0; i < kS; ++i) {
        double m = -INFINITY, sum = 0;
        for (int64_t j = 0; j < kS; ++j) {
          double dot = 0;
          for (int64_t d = 0; d < kD; ++d) dot += at(0, b, h, i, d) * at(1, b, h, j, d);
          m = std::max(m, p[j] = dot / std::sqrt(double(kD)));
        }
        for (int64_t j = 0; j < kS; ++j) sum += p[j] = std::exp(p[j] - m);
        for (int64_t d = 0; d < kD; ++d) {
          double acc = 0;
          for (int64_t j = 0; j < kS; ++j) acc += p[j] * at(2, b, h, j, d);
          out[((b * kH + h) * kS + i) * kD + d] = acc / sum;
        }
      }
  return out;
}

class OnnxAttentionViews : public GpuTest {};

// Batch 1 (torchvision's ViT at batch 1, the exports of tests/models): no copy at all. Batch 2:
// the per-head Reshape [S, B, E] -> [S, B·H, d] merges the batch (stride 3E) with the heads
// (stride d), which no stride expresses, so Q, K and V are each copied out once there (torch
// copies them too: its `.contiguous()`), and the attention reads the rest as views.
TEST_F(OnnxAttentionViews, PackedQkvSplitIsReadInPlace) {
  for (int64_t batch : {1, 2})
    for (Split split : {Split::Gather, Split::Slice, Split::SliceOfTransposedView, Split::SplitOp})
      for (bool fp16 : {false, true}) {
        if (fp16 && !context()->features().storage_buffer_16bit) continue;
        SCOPED_TRACE(std::string(split == Split::Gather    ? "gather"
                                 : split == Split::Slice   ? "slice"
                                 : split == Split::SplitOp ? "split"
                                                           : "slice of a view") +
                     " batch " + std::to_string(batch) + (fp16 ? " fp16" : ""));
        const std::vector<float> w = random_floats(kE * 3 * kE, -0.3f, 0.3f);
        const std::vector<float> bias = random_floats(3 * kE, -0.5f, 0.5f);
        const std::vector<float> x = random_floats(kS * batch * kE, -2, 2);
        const std::vector<double> want = reference(batch, x, w, bias);
        const bool transposed_input = split == Split::SliceOfTransposedView;
        HostTensor feed(DType::Float32,
                        transposed_input ? Shape{batch, kS, kE} : Shape{kS, batch, kE});
        for (int64_t i = 0; i < kS; ++i)
          for (int64_t b = 0; b < batch; ++b)
            for (int64_t e = 0; e < kE; ++e)
              feed.data<float>()[transposed_input ? (b * kS + i) * kE + e
                                                  : (i * batch + b) * kE + e] =
                  x[(i * batch + b) * kE + e];
        HostTensor poison(DType::Float32, feed.shape);
        std::fill_n(poison.data<float>(), poison.numel(), NAN);
        SessionOptions on, off;
        on.fp16 = off.fp16 = fp16;
        off.fuse = false;
        const ModelBuilder m = mha(split, batch, w, bias);
        Session fused = m.session(on), plain = m.session(off);
        fused.run({{"x", poison}});
        const HostTensor a = fused.run({{"x", feed}})[0], b = plain.run({{"x", feed}})[0];
        ASSERT_EQ(a.numel(), static_cast<int64_t>(want.size()));
        // float16: the projection's and the attention's inputs and output rounded.
        const double tol = fp16 ? 1e-2 : 2e-5;
        int failures = 0;
        for (size_t i = 0; i < want.size() && failures < 5; ++i)
          if (!(std::abs(a.data<float>()[i] - want[i]) <= tol * (1 + std::abs(want[i])))) {
            ADD_FAILURE() << "element " << i << ": got " << a.data<float>()[i] << ", want "
                          << want[i];
            ++failures;
          }
        expect_near(a, b, fp16 ? 1e-2f : 1e-5f);
        // Fused: the projection (MatMul + bias) and the attention, reading Q, K, V in place (and
        // x transposed, for the view that is sliced); at batch 2 the three copies above. The
        // cast of x in float16 mode. Unfused, the split's copies (Transpose + 3 Gathers,
        // 3 Slices or a Split's 3), the per-head Transposes, kᵀ's, the scales, 2 MatMuls and the
        // Softmax (and x's Transpose, a copy unless the batch is 1).
        const size_t casts = input_casts(fp16, 1);
        EXPECT_EQ(fused.graph()->stats().nodes, (batch == 1 ? 2u : 5u) + casts);
        const size_t plain_nodes = split == Split::Gather ? 15
                                   : split == Split::Slice || split == Split::SplitOp
                                       ? 13
                                       : (batch == 1 ? 13 : 14);
        EXPECT_EQ(plain.graph()->stats().nodes, plain_nodes + casts);
      }
}

// nn.MultiheadAttention's out-projection: Gemm on [S·B, E], viewed back as [S, B, E] (and, in
// ViT, transposed over the batch of 1), then the skip connection: one FusedGemm with the
// residual in its epilogue. A Transpose that moves dims of more than one element reorders the
// elements: then the Add stays a node.
TEST_F(OnnxAttentionViews, OutProjectionResidualJoinsTheGemm) {
  for (bool reorders : {false, true})
    for (bool fp16 : {false, true}) {
      if (fp16 && !context()->features().storage_buffer_16bit) continue;
      SCOPED_TRACE(std::string(reorders ? "reordering Transpose" : "batch-1 Transpose") +
                   (fp16 ? " fp16" : ""));
      const int64_t batch = reorders ? 2 : 1;
      ModelBuilder m(17);
      m.input("ctx", kFloat, {kS * batch, kE});
      m.input("skip", kFloat, {batch, kS, kE});
      m.output("y", kFloat);
      m.initializer("w", Shape{kE, kE}, random_floats(kE * kE, -0.3f, 0.3f));
      m.initializer("c", Shape{kE}, random_floats(kE, -0.5f, 0.5f));
      m.initializer("sbe", std::vector<int64_t>{kS, batch, kE});
      set_int(m.node("Gemm", {"ctx", "w", "c"}, {"proj"}), "transB", 1);
      m.node("Reshape", {"proj", "sbe"}, {"proj3"});
      set_ints(m.node("Transpose", {"proj3"}, {"bse"}), "perm", {1, 0, 2});
      m.node("Add", {"bse", "skip"}, {"y"});
      HostTensor ctx(DType::Float32, {kS * batch, kE}), skip(DType::Float32, {batch, kS, kE});
      const std::vector<float> a = random_floats(ctx.numel(), -2, 2),
                               r = random_floats(skip.numel(), -2, 2);
      std::copy(a.begin(), a.end(), ctx.data<float>());
      std::copy(r.begin(), r.end(), skip.data<float>());
      Runs runs = run_both(m, {{"ctx", ctx}, {"skip", skip}}, fp16);
      expect_near(runs.fused[0], runs.plain[0], fp16 ? 1e-2f : 1e-5f);
      // Fused: the Gemm with the residual (the Reshape a view, the batch-1 Transpose in order);
      // else Gemm, the Transpose's copy, Add. Unfused: Gemm, Add (and the copy). Float16 mode:
      // the casts of ctx and skip.
      const size_t casts = input_casts(fp16, 2);
      EXPECT_EQ(runs.fused_nodes, (reorders ? 3u : 1u) + casts);
      EXPECT_EQ(runs.plain_nodes, (reorders ? 3u : 2u) + casts);
    }
}

}  // namespace
}  // namespace vkgraph::testing
