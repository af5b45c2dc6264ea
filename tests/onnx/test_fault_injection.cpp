// Fault injection (tests/gpu/graph_testing.h, src/vk/faults.h): a failed device memory
// allocation at every point of a load and a run ends in OutOfMemory with nothing leaked, and
// the Session still works; a lost device ends in DeviceLost, and the Session refuses cleanly
// afterwards.
#include <cmath>
#include <random>

#include "graph_testing.h"
#include "model_builder.h"

namespace vkgraph::testing {
namespace {

// Rows of 2^20 floats: every tensor (input, output, their staging) is over half a 64 MiB
// block at 9 rows, so each gets an allocation of its own and none can hide in a kept block.
constexpr int64_t kCols = int64_t{1} << 20;

// y = Relu(x * 2) over [rows, kCols]: a constant to upload, two dispatches.
std::string model_bytes() {
  ModelBuilder m(13);
  m.input("x", onnx::TensorProto::FLOAT, {-1, kCols});
  m.output("y", onnx::TensorProto::FLOAT);
  m.initializer("two", Shape{}, std::vector<float>{2.f});
  m.node("Mul", {"x", "two"}, {"x2"});
  m.node("Relu", {"x2"}, {"y"});
  return m.bytes();
}

HostTensor random_input(int64_t rows, uint32_t seed) {
  HostTensor x(DType::Float32, {rows, kCols});
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = u(rng);
  return x;
}

// Checks y = max(2x, 0) everywhere (exact in float32).
void expect_result(const HostTensor& x, const HostTensor& y) {
  ASSERT_EQ(y.shape, x.shape);
  int64_t wrong = 0;
  for (int64_t i = 0; i < x.numel(); ++i) {
    const float want = std::max(2.f * x.data<float>()[i], 0.f);
    wrong += y.data<float>()[i] != want;
  }
  EXPECT_EQ(wrong, 0);
}

class FaultInjection : public GpuTest {
 protected:
  SessionOptions options(std::shared_ptr<vk::Context> ctx) const {
    SessionOptions o;
    o.context = std::move(ctx);
    return o;
  }
  const std::string bytes_ = model_bytes();
};

// Walks N over every allocation of a load (built at load: static shapes) and its first run.
TEST_F(FaultInjection, OutOfMemoryAtEveryAllocationOfLoadAndRun) {
  auto ctx = make_context({});
  const HostTensor x = random_input(9, 1);
  SessionOptions o = options(ctx);
  o.input_shapes = {{"x", {9, kCols}}};
  const uint64_t used_before = ctx->allocator().stats().used_bytes;
  uint64_t blocks_after_reference = 0;
  {
    Session reference(bytes_.data(), bytes_.size(), o);
    expect_result(x, reference.run({{"x", x}})[0]);
  }
  blocks_after_reference = ctx->allocator().stats().block_bytes;
  EXPECT_EQ(ctx->allocator().stats().used_bytes, used_before);
  int failures = 0;
  bool succeeded = false;
  for (uint64_t n = 1; n <= 64 && !succeeded; ++n) {
    SCOPED_TRACE("allocation " + std::to_string(n) + " fails");
    const uint64_t attempted_before = allocations_attempted(*ctx);
    fail_allocation(*ctx, n);
    try {
      Session s(bytes_.data(), bytes_.size(), o);
      HostTensor y = s.run({{"x", x}})[0];
      succeeded = true;
      EXPECT_LT(allocations_attempted(*ctx) - attempted_before, n) << "the fault did not fire";
      expect_result(x, y);
    } catch (const Error& e) {
      ++failures;
      EXPECT_EQ(e.kind(), ErrorKind::OutOfMemory) << e.what();
      EXPECT_NE(std::string(e.what()).find("vkAllocateMemory"), std::string::npos) << e.what();
    }
    fail_allocation(*ctx, 0);
    // Nothing of the failed load stays allocated, and no block was left behind.
    EXPECT_EQ(ctx->allocator().stats().used_bytes, used_before);
    EXPECT_LE(ctx->allocator().stats().block_bytes, blocks_after_reference);
  }
  EXPECT_TRUE(succeeded);
  // The walk met every allocation point: as many as an uninjected load makes in this state.
  const uint64_t before = allocations_attempted(*ctx);
  {
    Session s(bytes_.data(), bytes_.size(), o);
    expect_result(x, s.run({{"x", x}})[0]);
  }
  EXPECT_GE(failures, 1);
  EXPECT_EQ(static_cast<uint64_t>(failures), allocations_attempted(*ctx) - before);
}

// A run that rebuilds for a new shape and fails leaves the Session usable: the next run
// builds again, and the old shape runs too.
TEST_F(FaultInjection, SessionRecoversFromAFailedRebuild) {
  auto ctx = make_context({});
  const uint64_t used_before = ctx->allocator().stats().used_bytes;
  {
    Session s(bytes_.data(), bytes_.size(), options(ctx));
    const HostTensor x9 = random_input(9, 2), x10 = random_input(10, 3);
    expect_result(x9, s.run({{"x", x9}})[0]);
    fail_allocation(*ctx, 1);
    expect_error([&] { s.run({{"x", x10}}); }, ErrorKind::OutOfMemory, "vkAllocateMemory");
    fail_allocation(*ctx, 0);
    expect_result(x10, s.run({{"x", x10}})[0]);
    expect_result(x9, s.run({{"x", x9}})[0]);
  }
  EXPECT_EQ(ctx->allocator().stats().used_bytes, used_before);
}

// A lost device: the run that meets it fails with DeviceLost, and so does everything after
// on that Context; another Context works.
TEST_F(FaultInjection, DeviceLossIsDeviceLostAndStays) {
  auto ctx = make_context({});
  const HostTensor x = random_input(2, 4);
  {
    Session s(bytes_.data(), bytes_.size(), options(ctx));
    expect_result(x, s.run({{"x", x}})[0]);
    lose_device_at_submit(*ctx, 1);
    expect_error([&] { s.run({{"x", x}}); }, ErrorKind::DeviceLost, "VK_ERROR_DEVICE_LOST");
    expect_error([&] { s.run({{"x", x}}); }, ErrorKind::DeviceLost, "lost by an earlier");
    SessionOptions o = options(ctx);
    o.input_shapes = {{"x", {2, kCols}}};
    expect_error(
        [&] {
          Session(bytes_.data(), bytes_.size(), o).run({{"x", x}});
        },
        ErrorKind::DeviceLost, "lost by an earlier");
  }
  Session fresh(bytes_.data(), bytes_.size(), options(make_context({})));
  expect_result(x, fresh.run({{"x", x}})[0]);
}

// A loss in the middle of building (the constant upload at prepare) is DeviceLost too.
TEST_F(FaultInjection, DeviceLossWhileLoading) {
  auto ctx = make_context({});
  lose_device_at_submit(*ctx, 1);
  SessionOptions o = options(ctx);
  o.input_shapes = {{"x", {2, kCols}}};
  expect_error(
      [&] {
        Session(bytes_.data(), bytes_.size(), o).run({{"x", random_input(2, 5)}});
      },
      ErrorKind::DeviceLost, "VK_ERROR_DEVICE_LOST");
}

}  // namespace
}  // namespace vkgraph::testing
