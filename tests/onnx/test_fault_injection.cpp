// Fault injection (tests/gpu/graph_testing.h, src/vk/faults.h): a failed device memory
// allocation, Vulkan object creation or queue submission at every point of a load and a run
// ends in OutOfMemory with nothing leaked, and the Session still works; a lost device ends in
// DeviceLost, and the Session refuses cleanly afterwards.
#include <algorithm>
#include <cmath>
#include <cstdlib>
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

// A Context whose end the test sees: validated as the fixture's are, but destroyed inside the
// test, so that what the layer says at vkDestroyDevice (every object never destroyed) is read.
std::shared_ptr<vk::Context> own_context() {
  const char* v = std::getenv("VKGRAPH_VALIDATION");
  vk::ContextOptions o;
  o.validation = !(v && std::string(v) == "0");
  o.pipeline_cache = "off";
  return vk::Context::create(o);
}

// Destroys `ctx` (the last reference) and fails on every validation message it ends with.
void expect_clean_end(std::shared_ptr<vk::Context> ctx) {
  ASSERT_EQ(ctx.use_count(), 1) << "something still holds the Context";
  auto last_words = messages_at_destruction(*ctx);
  ctx.reset();
  for (const std::string& m : *last_words) ADD_FAILURE() << "validation: " << m;
}

// The check above can fail: a buffer never destroyed is reported at the device's destruction.
TEST_F(FaultInjection, LeakedObjectIsReportedAtDestruction) {
  auto ctx = own_context();
  if (!ctx->validation_enabled()) GTEST_SKIP() << "validation is off";
  VkBufferCreateInfo ci{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  ci.size = 256;
  ci.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT;
  VkBuffer leaked = VK_NULL_HANDLE;
  ASSERT_EQ(vkCreateBuffer(ctx->device(), &ci, nullptr, &leaked), VK_SUCCESS);
  auto last_words = messages_at_destruction(*ctx);
  ctx.reset();
  ASSERT_FALSE(last_words->empty());
  EXPECT_NE(last_words->front().find("VkBuffer"), std::string::npos) << last_words->front();
}

// One load and first run, each node in a command buffer of its own, so that failures fall
// between the submissions of one recording too.
class FaultWalk : public FaultInjection {
 protected:
  SessionOptions walk_options(std::shared_ptr<vk::Context> ctx) const {
    SessionOptions o = options(std::move(ctx));
    o.input_shapes = {{"x", x_.shape}};
    o.graph.nodes_per_command_buffer = 1;
    return o;
  }
  // Calls of the counted kind that a clean load and first run make on a fresh Context.
  uint64_t calls_of_clean_run(uint64_t (*attempted)(vk::Context&)) {
    auto ctx = own_context();
    const uint64_t before = attempted(*ctx);
    {
      Session s(bytes_.data(), bytes_.size(), walk_options(ctx));
      expect_result(x_, s.run({{"x", x_}})[0]);
    }
    const uint64_t calls = attempted(*ctx) - before;
    RecordProperty("calls", std::to_string(calls));
    expect_clean_end(std::move(ctx));
    return calls;
  }
  // Load and run on a fresh Context with the fault `arm` sets: it must fail with OutOfMemory
  // naming one of `calls` and `result`; then the Session (or, where the load failed, a new one)
  // runs correctly, nothing stays allocated, and the Context ends with no object left behind.
  template <class Arm, class Disarm>
  void expect_recovery(Arm arm, Disarm disarm, const std::vector<std::string>& calls,
                       VkResult result) {
    auto ctx = own_context();
    const uint64_t used_before = ctx->allocator().stats().used_bytes;
    {
      std::unique_ptr<Session> s;
      arm(*ctx);
      try {
        s = std::make_unique<Session>(bytes_.data(), bytes_.size(), walk_options(ctx));
        s->run({{"x", x_}});
        ADD_FAILURE() << "the fault did not fail the load or the run";
      } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::OutOfMemory) << e.what();
        const std::string what = e.what();
        EXPECT_TRUE(std::any_of(calls.begin(), calls.end(), [&](const std::string& c) {
          return what.find(c) != std::string::npos;
        })) << what;
        EXPECT_NE(std::string(e.what()).find(vk::vk_result_name(result)), std::string::npos)
            << e.what();
      }
      disarm(*ctx);
      if (!s) s = std::make_unique<Session>(bytes_.data(), bytes_.size(), walk_options(ctx));
      expect_result(x_, s->run({{"x", x_}})[0]);
      expect_result(x_, s->run({{"x", x_}})[0]);
    }
    EXPECT_EQ(ctx->allocator().stats().used_bytes, used_before);
    expect_clean_end(std::move(ctx));
  }
  HostTensor x_ = random_input(2, 6);
};

class CreationFaults : public FaultWalk, public ::testing::WithParamInterface<VkResult> {};

// Walks N over every Vulkan object a load and its first run create (buffers, shader modules,
// layouts, pipelines, pools, descriptor sets, command buffers, fences, query pools), on a
// fresh Context each time, since a Context creates each pipeline once.
TEST_P(CreationFaults, AtEveryCreationOfLoadAndRun) {
  const VkResult result = GetParam();
  const uint64_t points = calls_of_clean_run(creations_attempted);
  EXPECT_GE(points, 15u) << "fewer creations than a load makes: is something not counted?";
  for (uint64_t n = 1; n <= points; ++n) {
    SCOPED_TRACE("creation " + std::to_string(n) + " of " + std::to_string(points) + " fails");
    expect_recovery([&](vk::Context& c) { fail_creation(c, n, result); },
                    [](vk::Context& c) { fail_creation(c, 0); }, {"vkCreate", "vkAllocate"},
                    result);
  }
}

INSTANTIATE_TEST_SUITE_P(OutOfMemory, CreationFaults,
                         ::testing::Values(VK_ERROR_OUT_OF_DEVICE_MEMORY,
                                           VK_ERROR_OUT_OF_HOST_MEMORY),
                         [](const auto& info) {
                           return info.param == VK_ERROR_OUT_OF_HOST_MEMORY ? "Host" : "Device";
                         });

// A submission refused for lack of memory, at every submission of a load and first run (the
// constant upload, then each chunk): OutOfMemory, the chunks submitted before it finish, and
// the Context is not lost.
TEST_F(FaultWalk, SubmissionOutOfMemoryAtEverySubmission) {
  const uint64_t points = calls_of_clean_run(submissions_attempted);
  EXPECT_GE(points, 3u) << "an upload and two chunks";
  for (uint64_t n = 1; n <= points; ++n) {
    SCOPED_TRACE("submission " + std::to_string(n) + " of " + std::to_string(points) + " fails");
    expect_recovery([&](vk::Context& c) { fail_submission(c, n, VK_ERROR_OUT_OF_DEVICE_MEMORY); },
                    [](vk::Context& c) { fail_submission(c, 0, VK_SUCCESS); }, {"vkQueueSubmit"},
                    VK_ERROR_OUT_OF_DEVICE_MEMORY);
  }
}

// A device allocation failing at every point, on fresh Contexts whose end is checked for
// objects left behind (the walk above on the shared Context checks the allocator only).
TEST_F(FaultWalk, AllocationFailureLeavesNoObjectBehind) {
  x_ = random_input(9, 7);  // each tensor in an allocation of its own, as above
  const uint64_t points = calls_of_clean_run(allocations_attempted);
  EXPECT_GE(points, 4u) << "input, output and their staging";
  for (uint64_t n = 1; n <= points; ++n) {
    SCOPED_TRACE("allocation " + std::to_string(n) + " of " + std::to_string(points) + " fails");
    expect_recovery([&](vk::Context& c) { fail_allocation(c, n); },
                    [](vk::Context& c) { fail_allocation(c, 0); }, {"vkAllocateMemory"},
                    VK_ERROR_OUT_OF_DEVICE_MEMORY);
  }
}

}  // namespace
}  // namespace vkgraph::testing
