// SyncTrace::audit on synthetic timelines: the contract's good sequence passes, and each way of
// breaking DESIGN.md rules 3-5 (no device->host barrier, a barrier that misses HOST, no fence
// wait, no invalidate, no flush) is reported. Then the same audit over real OneShot readbacks.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <sstream>

#include "foundation_test.h"
#include "vkgraph/vk/buffer.h"
#include "vkgraph/vk/command.h"
#include "vkgraph/vk/sync_trace.h"

namespace vkgraph::testing {
namespace {

using vk::SyncEvent;
using Type = SyncEvent::Type;

constexpr uint64_t kCb = 0xc0, kCb2 = 0xc1, kFence = 0xf0, kOtherFence = 0xf1;
constexpr uint64_t kOut = 0xb0, kIn = 0xb1, kOther = 0xb2;

// A copy into host-visible `resource`, as CommandBuffer::copy_buffer notes it.
SyncEvent device_write(uint64_t resource) {
  SyncEvent e{Type::DeviceWrite};
  e.resource = resource;
  e.size = 256;
  e.src_stage = VK_PIPELINE_STAGE_TRANSFER_BIT;
  e.src_access = VK_ACCESS_TRANSFER_WRITE_BIT;
  return e;
}

SyncEvent global_barrier(VkPipelineStageFlags src_stage, VkAccessFlags src_access,
                         VkPipelineStageFlags dst_stage, VkAccessFlags dst_access) {
  SyncEvent e{Type::Barrier};
  e.src_stage = src_stage;
  e.dst_stage = dst_stage;
  e.src_access = src_access;
  e.dst_access = dst_access;
  return e;
}

// A per-buffer barrier from the transfer write to the host read of `buffer`.
SyncEvent buffer_barrier_to_host(uint64_t buffer) {
  SyncEvent e{Type::Barrier};
  e.src_stage = VK_PIPELINE_STAGE_TRANSFER_BIT;
  e.dst_stage = VK_PIPELINE_STAGE_HOST_BIT;
  e.buffers = {buffer};
  e.buffer_src_access = {VK_ACCESS_TRANSFER_WRITE_BIT};
  e.buffer_dst_access = {VK_ACCESS_HOST_READ_BIT};
  return e;
}

SyncEvent final_barrier() {
  return global_barrier(VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, VK_ACCESS_MEMORY_WRITE_BIT,
                        VK_PIPELINE_STAGE_HOST_BIT, VK_ACCESS_HOST_READ_BIT);
}

SyncEvent submit(std::vector<uint64_t> cbs, uint64_t fence) {
  SyncEvent e{Type::Submit};
  e.command_buffers = std::move(cbs);
  e.fence = fence;
  return e;
}

SyncEvent fence_wait(uint64_t fence) {
  SyncEvent e{Type::FenceWait};
  e.fence = fence;
  return e;
}

SyncEvent host(Type type, uint64_t resource, uint64_t offset, uint64_t size, bool coherent) {
  SyncEvent e{type};
  e.resource = resource;
  e.offset = offset;
  e.size = size;
  e.coherent = coherent;
  return e;
}

// One recording of `events` in command buffer `cb`.
void record(vk::SyncTrace& t, uint64_t cb, const std::vector<SyncEvent>& events) {
  t.begin_recording(cb);
  for (const SyncEvent& e : events) t.record(cb, e);
}

// The contract for one execution: host writes input staging and flushes it; the recording
// copies results to readback staging and ends with the device->host barrier; the host waits on
// the fence, invalidates and reads.
void good_execution(vk::SyncTrace& t, bool coherent) {
  t.host(host(Type::HostWrite, kIn, 0, 100, coherent));
  if (!coherent) t.host(host(Type::Flush, kIn, 0, 128, false));
  t.host(submit({kCb}, kFence));
  t.host(fence_wait(kFence));
  if (!coherent) t.host(host(Type::Invalidate, kOut, 0, 128, false));
  t.host(host(Type::HostRead, kOut, 0, 100, coherent));
}

// Exactly one violation, and it says `needle` and names the resource.
void expect_one_violation(const vk::SyncTrace& t, const std::string& needle, uint64_t resource) {
  auto problems = t.audit();
  ASSERT_EQ(problems.size(), 1u) << (problems.empty() ? "no violation" : problems[0]);
  EXPECT_NE(problems[0].find(needle), std::string::npos) << problems[0];
  std::ostringstream hex;
  hex << "0x" << std::hex << resource;
  EXPECT_NE(problems[0].find(hex.str()), std::string::npos) << problems[0];
}

const char* kNoBarrier = "not followed by a barrier to HOST/HOST_READ";

TEST(SyncTraceAudit, GoodSequencePasses) {
  for (bool coherent : {true, false}) {
    SCOPED_TRACE(coherent ? "coherent" : "non-coherent");
    vk::SyncTrace t;
    record(t, kCb, {device_write(kOut), final_barrier()});
    good_execution(t, coherent);
    good_execution(t, coherent);  // replay: the recording is expanded on every submit
    EXPECT_TRUE(t.audit().empty()) << t.audit()[0];
  }
}

TEST(SyncTraceAudit, BufferBarrierToHostReadPasses) {
  vk::SyncTrace t;
  record(t, kCb, {device_write(kOut), buffer_barrier_to_host(kOut)});
  good_execution(t, false);
  EXPECT_TRUE(t.audit().empty()) << t.audit()[0];
}

TEST(SyncTraceAudit, EarlierChunkWithoutFenceIsCoveredByTheFinalBarrier) {
  // DESIGN.md rule 5: the write is in a chunk submitted without a fence; the last chunk's
  // ALL_COMMANDS barrier and fence cover it.
  vk::SyncTrace t;
  record(t, kCb, {device_write(kOut)});
  record(t, kCb2, {final_barrier()});
  t.host(submit({kCb}, 0));
  t.host(submit({kCb2}, kFence));
  t.host(fence_wait(kFence));
  t.host(host(Type::Invalidate, kOut, 0, 128, false));
  t.host(host(Type::HostRead, kOut, 0, 100, false));
  EXPECT_TRUE(t.audit().empty()) << t.audit()[0];
}

TEST(SyncTraceAudit, MissingBarrier) {
  vk::SyncTrace t;
  record(t, kCb, {device_write(kOut)});
  good_execution(t, true);
  expect_one_violation(t, kNoBarrier, kOut);
}

TEST(SyncTraceAudit, BarrierWithoutHostDestination) {
  struct Bad {
    const char* why;
    SyncEvent barrier;
  };
  const std::vector<Bad> bad = {
      {"device-only destination",
       global_barrier(VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, VK_ACCESS_MEMORY_WRITE_BIT,
                      VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_READ_BIT)},
      {"HOST stage without HOST_READ",
       global_barrier(VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, VK_ACCESS_MEMORY_WRITE_BIT,
                      VK_PIPELINE_STAGE_HOST_BIT, VK_ACCESS_SHADER_READ_BIT)},
      {"source stage misses the transfer write",
       global_barrier(VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_MEMORY_WRITE_BIT,
                      VK_PIPELINE_STAGE_HOST_BIT, VK_ACCESS_HOST_READ_BIT)},
      {"source access misses the transfer write",
       global_barrier(VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, VK_ACCESS_SHADER_WRITE_BIT,
                      VK_PIPELINE_STAGE_HOST_BIT, VK_ACCESS_HOST_READ_BIT)},
  };
  for (const Bad& b : bad) {
    SCOPED_TRACE(b.why);
    vk::SyncTrace t;
    record(t, kCb, {device_write(kOut), b.barrier});
    good_execution(t, false);
    expect_one_violation(t, kNoBarrier, kOut);
  }
}

TEST(SyncTraceAudit, BufferBarrierForAnotherBuffer) {
  vk::SyncTrace t;
  record(t, kCb, {device_write(kOut), buffer_barrier_to_host(kOther)});
  good_execution(t, true);
  expect_one_violation(t, kNoBarrier, kOut);
}

TEST(SyncTraceAudit, BarrierBeforeTheWrite) {
  vk::SyncTrace t;
  record(t, kCb, {final_barrier(), device_write(kOut)});
  good_execution(t, true);
  expect_one_violation(t, kNoBarrier, kOut);
}

TEST(SyncTraceAudit, ReRecordingReplacesTheOldRecording) {
  vk::SyncTrace t;
  record(t, kCb, {device_write(kOut), final_barrier()});
  record(t, kCb, {device_write(kOut)});
  good_execution(t, true);
  expect_one_violation(t, kNoBarrier, kOut);
}

TEST(SyncTraceAudit, MissingFenceWait) {
  vk::SyncTrace t;
  record(t, kCb, {device_write(kOut), final_barrier()});
  t.host(submit({kCb}, kFence));
  t.host(host(Type::HostRead, kOut, 0, 100, true));
  expect_one_violation(t, "no fence wait", kOut);
}

TEST(SyncTraceAudit, FenceOfAnEarlierRunDoesNotCoverTheNextRun) {
  vk::SyncTrace t;
  record(t, kCb, {device_write(kOut), final_barrier()});
  good_execution(t, true);
  t.host(submit({kCb}, kFence));  // second run, never waited for
  t.host(host(Type::HostRead, kOut, 0, 100, true));
  expect_one_violation(t, "no fence wait", kOut);
}

TEST(SyncTraceAudit, WaitOnAFenceNeverSubmitted) {
  vk::SyncTrace t;
  record(t, kCb, {device_write(kOut), final_barrier()});
  t.host(submit({kCb}, kFence));
  t.host(fence_wait(kOtherFence));
  t.host(host(Type::HostRead, kOut, 0, 100, true));
  auto problems = t.audit();
  ASSERT_EQ(problems.size(), 2u);
  EXPECT_NE(problems[0].find("never submitted"), std::string::npos) << problems[0];
  EXPECT_NE(problems[1].find("no fence wait"), std::string::npos) << problems[1];
}

TEST(SyncTraceAudit, MissingInvalidateForNonCoherentRead) {
  vk::SyncTrace t;
  record(t, kCb, {device_write(kOut), final_barrier()});
  t.host(submit({kCb}, kFence));
  t.host(fence_wait(kFence));
  t.host(host(Type::HostRead, kOut, 0, 100, false));
  expect_one_violation(t, "not invalidated", kOut);
}

TEST(SyncTraceAudit, InvalidateMustCoverTheReadAndFollowTheFence) {
  {
    SCOPED_TRACE("invalidated range too short");
    vk::SyncTrace t;
    record(t, kCb, {device_write(kOut), final_barrier()});
    t.host(submit({kCb}, kFence));
    t.host(fence_wait(kFence));
    t.host(host(Type::Invalidate, kOut, 0, 64, false));
    t.host(host(Type::HostRead, kOut, 0, 100, false));
    expect_one_violation(t, "not invalidated", kOut);
  }
  {
    SCOPED_TRACE("invalidated before the fence wait");
    vk::SyncTrace t;
    record(t, kCb, {device_write(kOut), final_barrier()});
    t.host(submit({kCb}, kFence));
    t.host(host(Type::Invalidate, kOut, 0, 128, false));
    t.host(fence_wait(kFence));
    t.host(host(Type::HostRead, kOut, 0, 100, false));
    expect_one_violation(t, "not invalidated", kOut);
  }
  {
    SCOPED_TRACE("another buffer invalidated");
    vk::SyncTrace t;
    record(t, kCb, {device_write(kOut), device_write(kOther), final_barrier()});
    t.host(submit({kCb}, kFence));
    t.host(fence_wait(kFence));
    t.host(host(Type::Invalidate, kOther, 0, 128, false));
    t.host(host(Type::HostRead, kOut, 0, 100, false));
    expect_one_violation(t, "not invalidated", kOut);
  }
}

TEST(SyncTraceAudit, UnflushedHostWriteBeforeSubmit) {
  {
    SCOPED_TRACE("no flush");
    vk::SyncTrace t;
    record(t, kCb, {device_write(kOut), final_barrier()});
    t.host(host(Type::HostWrite, kIn, 0, 100, false));
    t.host(submit({kCb}, kFence));
    expect_one_violation(t, "not flushed", kIn);
  }
  {
    SCOPED_TRACE("flush too short");
    vk::SyncTrace t;
    t.host(host(Type::HostWrite, kIn, 32, 100, false));
    t.host(host(Type::Flush, kIn, 0, 128, false));
    t.host(submit({kCb}, kFence));
    expect_one_violation(t, "not flushed", kIn);
  }
  {
    SCOPED_TRACE("flush after the submit");
    vk::SyncTrace t;
    t.host(host(Type::HostWrite, kIn, 0, 100, false));
    t.host(submit({kCb}, kFence));
    t.host(host(Type::Flush, kIn, 0, 128, false));
    expect_one_violation(t, "not flushed", kIn);
  }
  {
    SCOPED_TRACE("coherent writes need no flush");
    vk::SyncTrace t;
    t.host(host(Type::HostWrite, kIn, 0, 100, true));
    t.host(submit({kCb}, kFence));
    EXPECT_TRUE(t.audit().empty());
  }
}

TEST(SyncTraceAudit, ClearForgetsTheTimeline) {
  vk::SyncTrace t;
  record(t, kCb, {device_write(kOut)});
  good_execution(t, true);
  EXPECT_EQ(t.audit().size(), 1u);
  t.clear();
  EXPECT_TRUE(t.timeline().empty());
  EXPECT_TRUE(t.audit().empty());
  EXPECT_EQ(t.recorded(kCb).size(), 1u);  // recordings outlive the timeline: they are replayed
}

class OneShotReadback : public OwnContextTest,
                        public ::testing::WithParamInterface<bool /*force_non_coherent*/> {};

// A test utility's readback (OneShot) obeys the same contract as execute(): the trace of an
// upload -> copy -> readback round trip audits clean, and the data arrives.
TEST_P(OneShotReadback, AuditsCleanAndRoundTrips) {
  vk::ContextOptions options;
  options.sync_trace = true;
  options.force_non_coherent = GetParam();
  auto ctx = own_context(options);
  const size_t n = 300;
  std::vector<float> in = random_floats(n), out(n, std::nanf(""));
  vk::StagingBuffer up(*ctx, n * 4, vk::StagingBuffer::Direction::ToDevice, "upload");
  vk::StagingBuffer down(*ctx, n * 4, vk::StagingBuffer::Direction::FromDevice, "readback");
  up.copy_in(in.data(), n * 4);
  vk::OneShot shot(*ctx);
  shot.cmd().copy_buffer(up, down, 0, 0, n * 4);
  shot.submit_and_wait();
  down.copy_out(out.data(), n * 4);
  EXPECT_EQ(std::memcmp(in.data(), out.data(), n * 4), 0);

  auto problems = ctx->trace()->audit();
  EXPECT_TRUE(problems.empty()) << problems[0];
  auto timeline = ctx->trace()->timeline();
  auto count = [&](Type type) {
    return std::count_if(timeline.begin(), timeline.end(),
                         [&](const SyncEvent& e) { return e.type == type; });
  };
  if (GetParam()) {
    EXPECT_FALSE(up.coherent());
    EXPECT_FALSE(down.coherent());
  }
  EXPECT_EQ(count(Type::Flush), up.coherent() ? 0 : 1);
  EXPECT_EQ(count(Type::Invalidate), down.coherent() ? 0 : 1);
  EXPECT_EQ(count(Type::HostRead), 1);
}

TEST_P(OneShotReadback, AuditCatchesAReadWithoutTheFence) {
  vk::ContextOptions options;
  options.sync_trace = true;
  options.force_non_coherent = GetParam();
  auto ctx = own_context(options);
  vk::StagingBuffer up(*ctx, 256, vk::StagingBuffer::Direction::ToDevice, "upload");
  vk::StagingBuffer down(*ctx, 256, vk::StagingBuffer::Direction::FromDevice, "readback");
  std::vector<uint8_t> bytes(256, 7);
  up.copy_in(bytes.data(), bytes.size());
  // What OneShot does, minus the fence wait before the read.
  vk::CommandPool pool(*ctx);
  vk::CommandBuffer& cb = pool.allocate();
  cb.begin();
  cb.copy_buffer(up, down, 0, 0, 256);
  cb.record_barrier(vk::device_to_host_barrier());
  cb.end();
  vk::Fence fence(*ctx);
  ctx->submit({cb.handle()}, {cb.id()}, fence.handle());
  cb.mark_submitted();
  down.copy_out(bytes.data(), bytes.size());  // too early on purpose
  fence.wait();
  cb.mark_completed();
  auto problems = ctx->trace()->audit();
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_NE(problems[0].find("no fence wait"), std::string::npos) << problems[0];
}

INSTANTIATE_TEST_SUITE_P(Memory, OneShotReadback, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return info.param ? "ForcedNonCoherent" : "Default";
                         });

}  // namespace
}  // namespace vkgraph::testing
