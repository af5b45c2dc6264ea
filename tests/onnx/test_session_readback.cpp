// Session::run's outputs arrive intact through the fast readback: a large output (split over
// the copy threads, in a fresh uninitialised tensor) and a small one, run after run.
#include <onnx/onnx_pb.h>

#include <cstring>

#include "gpu_test.h"
#include "model_builder.h"
#include "vk/parallel_copy.h"
#include "vkgraph/session.h"

namespace vkgraph::testing {
namespace {

constexpr int kFloat = onnx::TensorProto::FLOAT;

class SessionReadback : public GpuTest {};

TEST_F(SessionReadback, LargeAndSmallOutputsMatchTheReference) {
  // 3 x cols floats, just over the parallel-copy threshold and not a multiple of a page.
  const int64_t cols = static_cast<int64_t>(vk::kParallelCopyThreshold / 12) + 7;
  ModelBuilder m(14);
  m.input("x", kFloat, {3, cols});
  m.input("w", kFloat, {5});
  m.output("xt", kFloat);
  m.output("nw", kFloat);
  m.node("Transpose", {"x"}, {"xt"});
  m.node("Neg", {"w"}, {"nw"});
  Session s = m.session();
  for (int run = 0; run < 2; ++run) {
    SCOPED_TRACE("run " + std::to_string(run));
    HostTensor x = HostTensor::from(DType::Float32, {3, cols}, random_floats(3 * cols, -9, 9));
    HostTensor w = HostTensor::from(DType::Float32, {5}, random_floats(5));
    std::vector<HostTensor> out = s.run({{"x", x}, {"w", w}});
    ASSERT_EQ(out.size(), 2u);
    ASSERT_EQ(out[0].shape, (Shape{cols, 3}));
    ASSERT_EQ(out[1].shape, Shape{5});
    const float* xs = x.data<float>();
    const float* got = out[0].data<float>();
    size_t wrong = 0;
    for (int64_t c = 0; c < cols; ++c)
      for (int64_t r = 0; r < 3; ++r) wrong += got[c * 3 + r] != xs[r * cols + c];
    EXPECT_EQ(wrong, 0u);
    for (int i = 0; i < 5; ++i) EXPECT_EQ(out[1].data<float>()[i], -w.data<float>()[i]);
  }
}

}  // namespace
}  // namespace vkgraph::testing
