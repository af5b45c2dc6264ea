#include "gpu_test.h"
#include "graph_testing.h"
#include "vkgraph/ops.h"

namespace vkgraph::testing {

class Smoke : public GpuTest {};

TEST_F(Smoke, AddBroadcast) {
  ComputeGraph g(context());
  auto a = g.add_input({2, 3}, DType::Float32, "a");
  auto b = g.add_input({3}, DType::Float32, "b");
  auto c = ops::binary(g, ops::BinaryOp::Add, a, b);
  g.add_output(c, "c");
  auto va = random_floats(6), vb = random_floats(3);
  g.copy_to_input(0, va.data(), 24);
  g.copy_to_input(1, vb.data(), 12);
  g.execute();
  std::vector<float> out(6);
  g.copy_from_output(0, out.data(), 24);
  for (int i = 0; i < 6; ++i) EXPECT_FLOAT_EQ(out[i], va[i] + vb[i % 3]);
}

}  // namespace vkgraph::testing

namespace vkgraph::testing {
TEST(SmokeNegative, DroppedBarrierIsReported) {
  auto ctx = make_context({});
  if (!ctx->validation_enabled()) GTEST_SKIP() << "needs the validation layer";
  ComputeGraph g(ctx);
  inject_sync_faults(g, {.drop_barrier_before_node = 1});
  auto a = g.add_input({64}, DType::Float32, "a");
  auto b = ops::binary(g, ops::BinaryOp::Add, a, a);
  auto c = ops::binary(g, ops::BinaryOp::Mul, b, b);
  g.add_output(c, "c");
  std::vector<float> v(64, 1.f);
  g.copy_to_input(0, v.data(), 256);
  g.execute();
  auto m = ctx->validation_messages();
  ASSERT_FALSE(m.empty());
  EXPECT_NE(m[0].find("SYNC-HAZARD"), std::string::npos) << m[0];
  ctx->clear_validation_messages();
}
}  // namespace vkgraph::testing
