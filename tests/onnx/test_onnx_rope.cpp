// The rotary-embedding pattern of the fusion pass (src/onnx/fuse_rope.h): Llama's
// apply_rotary_pos_emb (q * cos + rotate_half(q) * sin) as both PyTorch exporters write it, after
// the heads' Transpose of a projection, becomes one FusedRope node reading the projection in
// place. Each model runs with fusion on and off (which must agree), with the node counts that
// say the pattern fired or did not, in fp32 and fp16 mode; VKGRAPH_TUNE's fuse.rope=0 keeps the
// unfused nodes.
#include <onnx/onnx_pb.h>

#include <functional>
#include <limits>

#include "float_test_util.h"
#include "model_builder.h"
#include "shape_test_util.h"
#include "vkgraph/ops/tuning.h"

namespace vkgraph::testing {
namespace {

constexpr int kFloat = onnx::TensorProto::FLOAT;
constexpr int64_t kS = 7, kH = 2, kD = 8;

struct Form {
  bool slices_first = false;  // rotate_half's Slices before x * cos (else after it)
  bool swapped = false;       // Mul(cos, x), Mul(sin, rot), Add(rs, xc)
  bool computed = false;      // cos and sin model inputs (else constants)
  bool end_max = true;        // the upper half's end INT64_MAX (else d)
  bool wrong_order = false;   // Concat(x1, -x2): not a rope, must not fire
  bool interleaved = false;   // x[..., ::2]: not the rotate-half halves, must not fire
  bool output_rot = false;    // the rotated half also a model output: must not fire
};

// h [1, S, H*D] @ w -> Reshape [1, S, H, D] -> Transpose [1, H, S, D] = x, y = rope(x).
ModelBuilder rope_model(const Form& f, const std::function<std::vector<float>(size_t)>& rnd) {
  ModelBuilder m(17);
  m.input("h", kFloat, {1, kS, kH * kD});
  if (f.computed) {
    m.input("cos", kFloat, {1, 1, kS, kD});
    m.input("sin", kFloat, {1, 1, kS, kD});
  } else {
    m.initializer("cos", Shape{1, 1, kS, kD}, rnd(kS * kD));
    m.initializer("sin", Shape{1, 1, kS, kD}, rnd(kS * kD));
  }
  m.output("y", kFloat);
  if (f.output_rot) m.output("rot", kFloat);
  m.initializer("w", Shape{kH * kD, kH * kD}, rnd(kH * kD * kH * kD));
  m.initializer("heads", std::vector<int64_t>{1, kS, kH, kD});
  m.initializer("zero", std::vector<int64_t>{0});
  m.initializer("half", std::vector<int64_t>{kD / 2});
  m.initializer("end", std::vector<int64_t>{f.end_max ? std::numeric_limits<int64_t>::max() : kD});
  m.initializer("last", std::vector<int64_t>{-1});
  m.initializer("two", std::vector<int64_t>{2});
  m.node("MatMul", {"h", "w"}, {"p"});
  m.node("Reshape", {"p", "heads"}, {"r"});
  set_ints(m.node("Transpose", {"r"}, {"x"}), "perm", {0, 2, 1, 3});
  auto mul_cos = [&] {
    m.node("Mul",
           f.swapped ? std::initializer_list<std::string>{"cos", "x"}
                     : std::initializer_list<std::string>{"x", "cos"},
           {"xc"});
  };
  if (!f.slices_first) mul_cos();
  if (f.interleaved) {
    m.node("Slice", {"x", "zero", "end", "last", "two"}, {"x1"});
    m.initializer("one", std::vector<int64_t>{1});
    m.node("Slice", {"x", "one", "end", "last", "two"}, {"x2"});
  } else {
    m.node("Slice", {"x", "zero", "half", "last"}, {"x1"});
    m.node("Slice", {"x", "half", "end", "last"}, {"x2"});
  }
  m.node("Neg", {"x2"}, {"nx2"});
  set_int(m.node("Concat",
                 f.wrong_order ? std::initializer_list<std::string>{"x1", "nx2"}
                               : std::initializer_list<std::string>{"nx2", "x1"},
                 {"rot"}),
          "axis", -1);
  if (f.slices_first) mul_cos();
  m.node("Mul",
         f.swapped ? std::initializer_list<std::string>{"sin", "rot"}
                   : std::initializer_list<std::string>{"rot", "sin"},
         {"rs"});
  m.node("Add",
         f.swapped ? std::initializer_list<std::string>{"rs", "xc"}
                   : std::initializer_list<std::string>{"xc", "rs"},
         {"y"});
  return m;
}

class OnnxRope : public GpuTest {
 protected:
  std::map<std::string, HostTensor> feeds(const Form& f) {
    std::map<std::string, HostTensor> in{{"h", random_float_tensor(rng, {1, kS, kH * kD}, -2, 2)}};
    if (f.computed) {
      in["cos"] = random_float_tensor(rng, {1, 1, kS, kD}, -1, 1);
      in["sin"] = random_float_tensor(rng, {1, 1, kS, kD}, -1, 1);
    }
    return in;
  }
  bool half_ok() { return context()->features().storage_buffer_16bit; }
  ModelBuilder model(const Form& f) {
    return rope_model(f, [this](size_t n) { return random_floats(n); });
  }
};

// Unfused: MatMul, the heads' Transpose, Mul, 2 Slices, Neg, Concat (a copy per input), Mul,
// Add. Fused: MatMul and the rope, which reads the MatMul's output through the Transpose's view.
TEST_F(OnnxRope, ExportedFormsAreOneDispatch) {
  for (bool fp16 : {false, true}) {
    if (fp16 && !half_ok()) continue;
    for (int variant = 0; variant < 4; ++variant) {
      Form f;
      f.slices_first = variant & 1;
      f.swapped = variant & 2;
      f.computed = variant == 3;
      f.end_max = variant != 1;
      SCOPED_TRACE("variant " + std::to_string(variant) + (fp16 ? " fp16" : ""));
      Runs r = run_both(model(f), feeds(f), fp16);
      // fp16 unfused rounds x * cos and rot * sin to float16 before their sum; fused does not.
      expect_near(r.fused[0], r.plain[0], fp16 ? 1e-2f : 1e-6f);
      const size_t casts = input_casts(fp16, f.computed ? 3 : 1);
      EXPECT_EQ(r.fused_nodes, 2 + casts);
      EXPECT_EQ(r.plain_nodes, 10 + casts);
    }
  }
}

TEST_F(OnnxRope, PatternMustNotFire) {
  for (int variant = 0; variant < 3; ++variant) {
    Form f;
    f.wrong_order = variant == 0;
    f.interleaved = variant == 1;
    f.output_rot = variant == 2;
    SCOPED_TRACE("variant " + std::to_string(variant));
    Runs r = run_both(model(f), feeds(f), false);
    ASSERT_EQ(r.fused.size(), r.plain.size());
    for (size_t i = 0; i < r.fused.size(); ++i) expect_near(r.fused[i], r.plain[i], 1e-6f);
    EXPECT_GT(r.fused_nodes, 2u);
  }
}

// fuse.rope=0: the nodes as before the pattern, same results.
TEST_F(OnnxRope, KnobKeepsTheUnfusedNodes) {
  Form f;
  ModelBuilder m = model(f);
  SessionOptions on, off;
  off.graph.tuning = std::make_shared<ops::Tuning>(ops::Tuning::from_knobs("fuse.rope=0"));
  Session fused = m.session(on), knobbed = m.session(off);
  const auto in = feeds(f);
  expect_near(fused.run(in)[0], knobbed.run(in)[0], 1e-6f);
  EXPECT_EQ(fused.graph()->stats().nodes, 2u);
  EXPECT_EQ(knobbed.graph()->stats().nodes, 9u);  // rotate_half's Slices read by its Concat
}

}  // namespace
}  // namespace vkgraph::testing
