// CommandBuffer's state machine (Initial -> Recording -> Executable -> Pending -> Executable):
// every call in the wrong state is an InvalidState error that names the call and both states,
// and leaves the state as it was. A buffer is recorded once and submitted many times.
#include <functional>

#include "gpu_test.h"
#include "vkgraph/error.h"
#include "vkgraph/vk/command.h"

namespace vkgraph::testing {
namespace {

using State = vk::CommandBuffer::State;

class CommandBufferState : public GpuTest {
 protected:
  // Runs `call`, which must fail with InvalidState naming `op`, `needs` and `is`, and must not
  // change the buffer's state.
  void expect_misuse(vk::CommandBuffer& cb, const char* op, const char* needs, const char* is,
                     const std::function<void()>& call) {
    SCOPED_TRACE(op);
    State before = cb.state();
    try {
      call();
      ADD_FAILURE() << op << " accepted in state " << is;
    } catch (const Error& e) {
      std::string msg = e.what();
      EXPECT_EQ(e.kind(), ErrorKind::InvalidState) << msg;
      EXPECT_NE(msg.find(std::string(op) + " needs state " + needs + ", but it is " + is),
                std::string::npos)
          << msg;
      EXPECT_NE(msg.find(std::to_string(cb.id())), std::string::npos) << msg;
    }
    EXPECT_EQ(cb.state(), before);
  }
  std::shared_ptr<vk::Context> ctx_ = context();
};

TEST_F(CommandBufferState, MisuseIsInvalidState) {
  vk::CommandPool pool(*ctx_);
  vk::CommandBuffer& cb = pool.allocate();
  ASSERT_EQ(cb.state(), State::Initial);

  expect_misuse(cb, "dispatch", "recording", "initial", [&] { cb.dispatch(1, 1, 1); });
  expect_misuse(cb, "end", "recording", "initial", [&] { cb.end(); });
  expect_misuse(cb, "record_barrier", "recording", "initial",
                [&] { cb.record_barrier(vk::device_to_host_barrier()); });
  expect_misuse(cb, "submit", "executable", "initial", [&] { cb.mark_submitted(); });

  cb.begin();
  ASSERT_EQ(cb.state(), State::Recording);
  expect_misuse(cb, "begin", "initial", "recording", [&] { cb.begin(); });
  expect_misuse(cb, "submit", "executable", "recording", [&] { cb.mark_submitted(); });
  expect_misuse(cb, "complete", "pending", "recording", [&] { cb.mark_completed(); });

  cb.record_barrier(vk::device_to_host_barrier());
  cb.end();
  ASSERT_EQ(cb.state(), State::Executable);
  expect_misuse(cb, "end", "recording", "executable", [&] { cb.end(); });
  expect_misuse(cb, "begin", "initial", "executable", [&] { cb.begin(); });
  expect_misuse(cb, "dispatch", "recording", "executable", [&] { cb.dispatch(1, 1, 1); });
  expect_misuse(cb, "complete", "pending", "executable", [&] { cb.mark_completed(); });

  vk::Fence fence(*ctx_);
  for (int run = 0; run < 3; ++run) {  // recorded once, submitted many times
    SCOPED_TRACE("run " + std::to_string(run));
    ctx_->submit({cb.handle()}, {cb.id()}, fence.handle());
    cb.mark_submitted();
    ASSERT_EQ(cb.state(), State::Pending);
    expect_misuse(cb, "submit", "executable", "pending", [&] { cb.mark_submitted(); });
    expect_misuse(cb, "begin", "initial", "pending", [&] { cb.begin(); });
    expect_misuse(cb, "end", "recording", "pending", [&] { cb.end(); });
    fence.wait();
    fence.reset();
    cb.mark_completed();
    ASSERT_EQ(cb.state(), State::Executable);
  }
}

TEST_F(CommandBufferState, PoolHandsOutIndependentBuffers) {
  vk::CommandPool pool(*ctx_);
  vk::CommandBuffer& a = pool.allocate();
  vk::CommandBuffer& b = pool.allocate();
  EXPECT_EQ(pool.size(), 2u);
  EXPECT_NE(a.id(), b.id());
  EXPECT_EQ(&pool[0], &a);
  EXPECT_EQ(&pool[1], &b);
  a.begin();
  EXPECT_EQ(a.state(), State::Recording);
  EXPECT_EQ(b.state(), State::Initial);
  a.end();
}

TEST_F(CommandBufferState, FenceSignalsOnlyAfterSubmission) {
  vk::CommandPool pool(*ctx_);
  vk::CommandBuffer& cb = pool.allocate();
  cb.begin();
  cb.end();
  vk::Fence fence(*ctx_);
  EXPECT_FALSE(fence.signaled());
  ctx_->submit({cb.handle()}, {cb.id()}, fence.handle());
  cb.mark_submitted();
  fence.wait();
  EXPECT_TRUE(fence.signaled());
  fence.reset();
  EXPECT_FALSE(fence.signaled());
  cb.mark_completed();
}

}  // namespace
}  // namespace vkgraph::testing
