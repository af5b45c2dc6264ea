// The vec4 grid-stride path of same-shape binary ops: lengths that are not multiples of the
// workgroup or the unroll, and a capped workgroup count (the add.* tuning knobs) so every
// invocation walks several grid strides. Float16 tensors computed in float16 (shaderFloat16)
// and in float32: bit for bit the same, and the float16 rounding of the exact result.
#include <cmath>

#include "gpu_test.h"
#include "vkgraph/ops.h"
#include "vkgraph/ops/tuning.h"

namespace vkgraph::testing {

class BinaryVec4 : public GpuTest {
 protected:
  // Knobs in VKGRAPH_TUNE's format, as the CLI passes them on.
  std::string knobs_;

  void check_add_and_mul(int64_t n) {
    SCOPED_TRACE(::testing::Message() << "n=" << n);
    GraphOptions options;
    options.tuning = std::make_shared<ops::Tuning>(ops::Tuning::from_knobs(knobs_));
    ComputeGraph g(context(), options);
    auto a = g.add_input({n}, DType::Float32, "a");
    auto b = g.add_input({n}, DType::Float32, "b");
    g.add_output(ops::binary(g, ops::BinaryOp::Add, a, b), "sum");
    g.add_output(ops::binary(g, ops::BinaryOp::Mul, a, b), "product");
    auto va = random_floats(n), vb = random_floats(n);
    g.copy_to_input(0, va.data(), n * 4);
    g.copy_to_input(1, vb.data(), n * 4);
    g.execute();
    std::vector<float> sum(n), product(n);
    g.copy_from_output(0, sum.data(), n * 4);
    g.copy_from_output(1, product.data(), n * 4);
    for (int64_t i = 0; i < n; ++i) {
      ASSERT_EQ(sum[i], va[i] + vb[i]) << "at " << i;
      ASSERT_EQ(product[i], va[i] * vb[i]) << "at " << i;
    }
  }
};

TEST_F(BinaryVec4, DefaultDispatch) {
  for (int64_t n : {4, 4 * 333, 4 * 4097}) check_add_and_mul(n);
}

TEST_F(BinaryVec4, SeveralGridStrides) {
  knobs_ = "add.local=64,add.unroll=3,add.groups=5";
  for (int64_t n : {4, 4 * 963, 4 * 5000}) check_add_and_mul(n);
}

TEST_F(BinaryVec4, NoUnroll) {
  knobs_ = "add.local=32,add.unroll=1,add.groups=2";
  check_add_and_mul(4 * 301);
}

class BinaryFloat16 : public GpuTest {
 protected:
  // op(a, b) for float16 a [rows, cols] and b [cols] (broadcast) or [rows, cols] (vec4), with
  // the "fp16.math" knob at `half_math`; the result's raw bits.
  std::vector<uint16_t> run(ops::BinaryOp op, const std::vector<uint16_t>& a,
                            const std::vector<uint16_t>& b, Shape sa, Shape sb, bool half_math) {
    GraphOptions options;
    options.tuning = std::make_shared<ops::Tuning>(
        ops::Tuning::from_knobs(half_math ? "fp16.math=1" : "fp16.math=0"));
    ComputeGraph g(context(), options);
    auto ta = g.add_input(sa, DType::Float16, "a");
    auto tb = g.add_input(sb, DType::Float16, "b");
    g.add_output(ops::binary(g, op, ta, tb), "c");
    g.copy_to_input(0, a.data(), a.size() * 2);
    g.copy_to_input(1, b.data(), b.size() * 2);
    g.execute();
    std::vector<uint16_t> c(a.size(), 0x7e00);
    g.copy_from_output(0, c.data(), c.size() * 2);
    return c;
  }
};

TEST_F(BinaryFloat16, HalfArithmeticMatchesFloat32Rounded) {
  if (!context()->features().storage_buffer_16bit) GTEST_SKIP() << "no 16-bit storage";
  const int64_t rows = 7, cols = 36;
  // Magnitudes far apart (sums that lose the smaller operand), near overflow, NaN and inf.
  std::vector<float> fa = random_floats(rows * cols, -4, 4), fb = random_floats(rows * cols);
  for (size_t i = 0; i < fa.size(); i += 5) fa[i] *= 4096.f;
  for (size_t i = 3; i < fb.size(); i += 7) fb[i] *= 1e-3f;
  fa[1] = NAN, fb[2] = NAN, fa[4] = INFINITY, fb[4] = -INFINITY, fa[6] = 60000.f, fb[6] = 9000.f;
  std::vector<uint16_t> a(fa.size()), b(fb.size());
  for (size_t i = 0; i < fa.size(); ++i) a[i] = float_to_half(fa[i]), b[i] = float_to_half(fb[i]);
  using ops::BinaryOp;
  for (BinaryOp op : {BinaryOp::Add, BinaryOp::Sub, BinaryOp::Mul, BinaryOp::Max, BinaryOp::Min})
    for (bool broadcast : {false, true}) {
      SCOPED_TRACE(::testing::Message() << "op " << int(op) << (broadcast ? " broadcast" : ""));
      Shape sb = broadcast ? Shape{cols} : Shape{rows, cols};
      std::vector<uint16_t> bb(b.begin(), b.begin() + numel(sb));
      std::vector<uint16_t> half = run(op, a, bb, {rows, cols}, sb, true);
      std::vector<uint16_t> single = run(op, a, bb, {rows, cols}, sb, false);
      for (int64_t i = 0; i < rows * cols; ++i) {
        double x = half_to_float(a[i]), y = half_to_float(bb[broadcast ? i % cols : i]);
        double want = op == BinaryOp::Add   ? x + y
                      : op == BinaryOp::Sub ? x - y
                      : op == BinaryOp::Mul ? x * y
                      : std::isnan(x) || std::isnan(y)
                          ? NAN
                          : (op == BinaryOp::Max ? std::max(x, y) : std::min(x, y));
        float got = half_to_float(half[i]);
        // NaN payloads are unspecified (IEEE 754, ONNX): compare NaN as a class, other values
        // bit for bit.
        if (std::isnan(want)) {
          ASSERT_TRUE(std::isnan(got)) << "at " << i;
          ASSERT_TRUE(std::isnan(half_to_float(single[i]))) << "at " << i;
          continue;
        }
        ASSERT_EQ(half[i], single[i])
            << "at " << i << ": " << got << " vs " << half_to_float(single[i]);
        ASSERT_EQ(half[i], float_to_half(static_cast<float>(want)))
            << "at " << i << ": got " << got << ", want " << want;
      }
    }
}

}  // namespace vkgraph::testing
