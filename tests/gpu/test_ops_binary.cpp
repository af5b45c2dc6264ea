// The vec4 grid-stride path of same-shape binary ops: lengths that are not multiples of the
// workgroup or the unroll, and a capped workgroup count (the add.* tuning knobs) so every
// invocation walks several grid strides.
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

}  // namespace vkgraph::testing
