// HazardTracker and PipelineBarrier as tables (DESIGN.md rules 1 and 2): each access sequence
// must derive exactly the barrier its hazard needs, no more and no less. Pure bookkeeping, so
// most of these need no GPU; the last test records real barriers to check the global masks.
#include <tuple>
#include <vector>

#include "foundation_test.h"
#include "graph/hazard_tracker.h"
#include "vkgraph/vk/barrier.h"
#include "vkgraph/vk/buffer.h"
#include "vkgraph/vk/command.h"
#include "vkgraph/vk/sync_trace.h"

namespace vkgraph::testing {
namespace {

constexpr VkPipelineStageFlags kCompute = VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT;
constexpr VkPipelineStageFlags kTransfer = VK_PIPELINE_STAGE_TRANSFER_BIT;
constexpr VkAccessFlags kSR = VK_ACCESS_SHADER_READ_BIT;
constexpr VkAccessFlags kSW = VK_ACCESS_SHADER_WRITE_BIT;
constexpr VkAccessFlags kTR = VK_ACCESS_TRANSFER_READ_BIT;
constexpr VkAccessFlags kTW = VK_ACCESS_TRANSFER_WRITE_BIT;

constexpr ResourceAccess kRead{kCompute, kSR};
constexpr ResourceAccess kWrite{kCompute, kSW};
constexpr ResourceAccess kReadWrite{kCompute, kSR | kSW};
constexpr ResourceAccess kCopyRead{kTransfer, kTR};
constexpr ResourceAccess kCopyWrite{kTransfer, kTW};

// The tracker never dereferences handles, so small integers stand in for buffers.
VkBuffer handle(uintptr_t id) {
  return reinterpret_cast<VkBuffer>(id);
}
const VkBuffer A = handle(0xa), B = handle(0xb), C = handle(0xc);

struct BufferBarrier {
  VkBuffer buffer;
  VkAccessFlags src_access, dst_access;
};

struct Expected {
  VkPipelineStageFlags src_stage = 0, dst_stage = 0;
  std::vector<BufferBarrier> buffers;  // in order of first appearance
};

const Expected kNone{};

void expect_barrier(const vk::PipelineBarrier& got, const Expected& want) {
  EXPECT_EQ(got.src_stage, want.src_stage);
  EXPECT_EQ(got.dst_stage, want.dst_stage);
  EXPECT_EQ(got.empty(), want.src_stage == 0 && want.dst_stage == 0);
  // The tracker orders graph-owned buffers only; global masks are for untracked memory.
  EXPECT_EQ(got.global_src_access, 0u);
  EXPECT_EQ(got.global_dst_access, 0u);
  EXPECT_TRUE(got.images.empty());
  ASSERT_EQ(got.buffers.size(), want.buffers.size());
  for (size_t i = 0; i < want.buffers.size(); ++i) {
    SCOPED_TRACE("buffer barrier " + std::to_string(i));
    const VkBufferMemoryBarrier& b = got.buffers[i];
    EXPECT_EQ(b.sType, VK_STRUCTURE_TYPE_BUFFER_MEMORY_BARRIER);
    EXPECT_EQ(b.buffer, want.buffers[i].buffer);
    EXPECT_EQ(b.srcAccessMask, want.buffers[i].src_access);
    EXPECT_EQ(b.dstAccessMask, want.buffers[i].dst_access);
    EXPECT_EQ(b.srcQueueFamilyIndex, VK_QUEUE_FAMILY_IGNORED);
    EXPECT_EQ(b.dstQueueFamilyIndex, VK_QUEUE_FAMILY_IGNORED);
    EXPECT_EQ(b.offset, 0u);
    EXPECT_EQ(b.size, VK_WHOLE_SIZE);
  }
}

struct TrackedAccess {
  VkBuffer buffer;
  ResourceAccess access;
  Expected barrier;  // what this access alone must add
};

struct Case {
  const char* name;
  std::vector<TrackedAccess> sequence;
};

// Runs `sequence` through a tracker, one fresh barrier per access.
void run_case(const Case& c, HazardTracker& tracker) {
  SCOPED_TRACE(c.name);
  for (size_t i = 0; i < c.sequence.size(); ++i) {
    SCOPED_TRACE("access " + std::to_string(i));
    vk::PipelineBarrier barrier;
    tracker.access(c.sequence[i].buffer, c.sequence[i].access, barrier);
    expect_barrier(barrier, c.sequence[i].barrier);
  }
}

TEST(HazardTracker, Table) {
  const std::vector<Case> cases = {
      {"read after read needs nothing", {{A, kRead, kNone}, {A, kRead, kNone}}},
      {"read after write: the write made visible to the reader",
       {{A, kWrite, kNone}, {A, kRead, {kCompute, kCompute, {{A, kSW, kSR}}}}}},
      {"write after read: an execution dependency, buffer listed, no source access",
       {{A, kRead, kNone}, {A, kWrite, {kCompute, kCompute, {{A, 0, kSW}}}}}},
      {"write after write",
       {{A, kWrite, kNone}, {A, kWrite, {kCompute, kCompute, {{A, kSW, kSW}}}}}},
      {"read-write after write sees the write; a later read sees the read-write's write",
       {{A, kWrite, kNone},
        {A, kReadWrite, {kCompute, kCompute, {{A, kSW, kSR | kSW}}}},
        {A, kRead, {kCompute, kCompute, {{A, kSW, kSR}}}}}},
      {"read-write of a fresh buffer, then again",
       {{A, kReadWrite, kNone}, {A, kReadWrite, {kCompute, kCompute, {{A, kSW, kSR | kSW}}}}}},
      {"second reader of the same write in the same stage needs no new barrier",
       {{A, kWrite, kNone},
        {A, kRead, {kCompute, kCompute, {{A, kSW, kSR}}}},
        {A, kRead, kNone},
        {A, kRead, kNone}}},
      {"a reader in another stage needs its own barrier, once",
       {{A, kWrite, kNone},
        {A, kRead, {kCompute, kCompute, {{A, kSW, kSR}}}},
        {A, kCopyRead, {kCompute, kTransfer, {{A, kSW, kTR}}}},
        {A, kCopyRead, kNone}}},
      {"transfer write (input copy) to compute read",
       {{A, kCopyWrite, kNone}, {A, kRead, {kTransfer, kCompute, {{A, kTW, kSR}}}}}},
      {"compute write to transfer read (output copy)",
       {{A, kWrite, kNone}, {A, kCopyRead, {kCompute, kTransfer, {{A, kSW, kTR}}}}}},
      {"write after a visible read waits for the reader and orders after the write",
       {{A, kWrite, kNone},
        {A, kRead, {kCompute, kCompute, {{A, kSW, kSR}}}},
        {A, kWrite, {kCompute, kCompute, {{A, kSW, kSW}}}}}},
      {"write after readers in two stages waits for both",
       {{A, kCopyWrite, kNone},
        {A, kRead, {kTransfer, kCompute, {{A, kTW, kSR}}}},
        {A, kCopyRead, {kTransfer, kTransfer, {{A, kTW, kTR}}}},
        {A, kWrite, {kCompute | kTransfer, kCompute, {{A, kTW, kSW}}}}}},
      {"buffers are tracked independently",
       {{A, kWrite, kNone},
        {B, kRead, kNone},
        {B, kWrite, {kCompute, kCompute, {{B, 0, kSW}}}},
        {A, kRead, {kCompute, kCompute, {{A, kSW, kSR}}}}}},
  };
  for (const Case& c : cases) {
    HazardTracker tracker;
    run_case(c, tracker);
  }
}

TEST(HazardTracker, StateAfterWriteAndRead) {
  HazardTracker tracker;
  vk::PipelineBarrier ignored;
  tracker.access(A, kCopyWrite, ignored);
  tracker.access(A, kRead, ignored);
  const HazardTracker::State& s = tracker.states().at(A);
  EXPECT_EQ(s.write_stage, kTransfer);
  EXPECT_EQ(s.write_access, kTW);
  EXPECT_EQ(s.read_stages, kCompute);
  EXPECT_EQ(s.visible_stages, kCompute);
  EXPECT_EQ(s.visible_access, kSR);
  // A read-write keeps only its write as the thing later accesses must wait for.
  tracker.access(A, kReadWrite, ignored);
  const HazardTracker::State& rw = tracker.states().at(A);
  EXPECT_EQ(rw.write_stage, kCompute);
  EXPECT_EQ(rw.write_access, kSW);
  EXPECT_EQ(rw.read_stages, 0u);
  EXPECT_EQ(rw.visible_stages, 0u);
}

// What ComputeGraph::record_step does: every binding of one dispatch into its own barrier,
// all merged into one vkCmdPipelineBarrier.
TEST(HazardTracker, BindingsOfOneDispatchMergeIntoOneBarrier) {
  HazardTracker tracker;
  vk::PipelineBarrier ignored;
  tracker.access(A, kWrite, ignored);      // A: written by a dispatch
  tracker.access(B, kCopyWrite, ignored);  // B: written by an input copy
  tracker.access(C, kCopyRead, ignored);   // C: read by a copy

  vk::PipelineBarrier merged;
  for (auto& [buffer, access] :
       std::vector<std::pair<VkBuffer, ResourceAccess>>{{A, kRead}, {B, kRead}, {C, kWrite}}) {
    vk::PipelineBarrier one;
    tracker.access(buffer, access, one);
    EXPECT_FALSE(one.empty());
    merged.merge(one);
  }
  expect_barrier(merged,
                 {kCompute | kTransfer, kCompute, {{A, kSW, kSR}, {B, kTW, kSR}, {C, 0, kSW}}});
}

TEST(HazardTracker, SameBufferBoundTwiceInOneDispatchIsOneEntry) {
  HazardTracker tracker;
  vk::PipelineBarrier ignored;
  tracker.access(A, kWrite, ignored);
  vk::PipelineBarrier merged;
  for (const ResourceAccess& access : {kRead, kWrite}) {
    vk::PipelineBarrier one;
    tracker.access(A, access, one);
    merged.merge(one);
  }
  expect_barrier(merged, {kCompute, kCompute, {{A, kSW, kSR | kSW}}});
}

// Replay wraps around: a tracker seeded with the state one full pass leaves behind orders each
// resource's first access against its last access of the previous run. The steps are those of
// a one-node graph: input copy, dispatch, output copy.
TEST(HazardTracker, SetStatesSeedsTheWrapAround) {
  const VkBuffer staging_in = handle(1), x = handle(2), y = handle(3), staging_out = handle(4);
  using Step = std::vector<std::pair<VkBuffer, ResourceAccess>>;
  const std::vector<Step> steps = {
      {{staging_in, kCopyRead}, {x, kCopyWrite}},
      {{x, kRead}, {y, kWrite}},
      {{y, kCopyRead}, {staging_out, kCopyWrite}},
  };
  auto record = [&](HazardTracker& tracker) {
    std::vector<vk::PipelineBarrier> out;
    for (const Step& step : steps) {
      vk::PipelineBarrier merged;
      for (auto& [buffer, access] : step) {
        vk::PipelineBarrier one;
        tracker.access(buffer, access, one);
        merged.merge(one);
      }
      out.push_back(merged);
    }
    return out;
  };

  HazardTracker fresh;
  auto first_pass = record(fresh);
  expect_barrier(first_pass[0], kNone);  // nothing earlier in this recording

  HazardTracker seeded;
  seeded.set_states(fresh.states());
  auto replay = record(seeded);
  {
    SCOPED_TRACE("input copy: x was read by the dispatch of the previous run");
    expect_barrier(replay[0], {kCompute | kTransfer, kTransfer, {{x, kTW, kTW}}});
  }
  {
    SCOPED_TRACE("dispatch: y was read by the previous run's output copy");
    expect_barrier(replay[1], {kCompute | kTransfer, kCompute, {{x, kTW, kSR}, {y, kSW, kSW}}});
  }
  {
    SCOPED_TRACE("output copy: staging_out was written by the previous run's output copy");
    expect_barrier(replay[2],
                   {kCompute | kTransfer, kTransfer, {{y, kSW, kTR}, {staging_out, kTW, kTW}}});
  }
  // Steady state: every replay starts from the state the previous one left.
  const auto& a = fresh.states();
  const auto& b = seeded.states();
  ASSERT_EQ(a.size(), b.size());
  for (auto& [buffer, s] : a) {
    const HazardTracker::State& t = b.at(buffer);
    EXPECT_EQ(
        std::tie(s.write_stage, s.write_access, s.read_stages, s.visible_stages, s.visible_access),
        std::tie(t.write_stage, t.write_access, t.read_stages, t.visible_stages, t.visible_access));
  }
}

TEST(PipelineBarrier, GlobalMasks) {
  vk::PipelineBarrier b;
  EXPECT_TRUE(b.empty());
  EXPECT_FALSE(b.has_global());
  b.add_buffer(A, kCompute, kSW, kCompute, kSR);
  EXPECT_FALSE(b.empty());
  EXPECT_FALSE(b.has_global());

  vk::PipelineBarrier src_only;
  src_only.add_global(kCompute, kSW, kCompute, 0);
  EXPECT_TRUE(src_only.has_global());
  vk::PipelineBarrier dst_only;
  dst_only.add_global(kCompute, 0, kCompute, kSR);
  EXPECT_TRUE(dst_only.has_global());
  // Stages alone (an execution dependency) are no memory barrier.
  vk::PipelineBarrier exec_only;
  exec_only.add_global(kCompute, 0, kTransfer, 0);
  EXPECT_FALSE(exec_only.empty());
  EXPECT_FALSE(exec_only.has_global());
}

TEST(PipelineBarrier, DeviceToHostBarrierMasksAreExact) {
  vk::PipelineBarrier b = vk::device_to_host_barrier();
  EXPECT_EQ(b.src_stage, static_cast<VkPipelineStageFlags>(VK_PIPELINE_STAGE_ALL_COMMANDS_BIT));
  EXPECT_EQ(b.dst_stage, static_cast<VkPipelineStageFlags>(VK_PIPELINE_STAGE_HOST_BIT));
  EXPECT_EQ(b.global_src_access, static_cast<VkAccessFlags>(VK_ACCESS_MEMORY_WRITE_BIT));
  EXPECT_EQ(b.global_dst_access, static_cast<VkAccessFlags>(VK_ACCESS_HOST_READ_BIT));
  EXPECT_TRUE(b.has_global());
  EXPECT_TRUE(b.buffers.empty());
  EXPECT_TRUE(b.images.empty());
}

TEST(PipelineBarrier, MergeWidensStagesAndKeepsGlobalMasks) {
  vk::PipelineBarrier a;
  a.add_buffer(A, kCompute, kSW, kCompute, kSR);
  a.merge(vk::PipelineBarrier{});  // merging nothing changes nothing
  expect_barrier(a, {kCompute, kCompute, {{A, kSW, kSR}}});

  vk::PipelineBarrier b;
  b.add_buffer(A, kTransfer, kTW, kTransfer, kTR);
  b.add_buffer(B, kTransfer, kTW, kCompute, kSR);
  b.add_global(VK_PIPELINE_STAGE_HOST_BIT, VK_ACCESS_HOST_WRITE_BIT, kCompute, kSR);
  a.merge(b);
  EXPECT_EQ(a.src_stage, kCompute | kTransfer | VK_PIPELINE_STAGE_HOST_BIT);
  EXPECT_EQ(a.dst_stage, kCompute | kTransfer);
  EXPECT_EQ(a.global_src_access, static_cast<VkAccessFlags>(VK_ACCESS_HOST_WRITE_BIT));
  EXPECT_EQ(a.global_dst_access, kSR);
  ASSERT_EQ(a.buffers.size(), 2u);
  EXPECT_EQ(a.buffers[0].buffer, A);
  EXPECT_EQ(a.buffers[0].srcAccessMask, kSW | kTW);
  EXPECT_EQ(a.buffers[0].dstAccessMask, kSR | kTR);
  EXPECT_EQ(a.buffers[1].buffer, B);
}

class BarrierRecording : public OwnContextTest {};

// The trace mirrors what record_barrier() hands to vkCmdPipelineBarrier: a buffer-only barrier
// carries no global access masks (no VkMemoryBarrier), the device->host one carries exactly its
// own. Recorded and submitted for real, so the validation layer checks the calls too.
TEST_F(BarrierRecording, GlobalMasksReachTheCommandBufferOnlyWhenSet) {
  vk::ContextOptions options;
  options.sync_trace = true;
  auto ctx = own_context(options);
  vk::Buffer buffer(*ctx, 256, vk::MemoryUsage::Device, VK_BUFFER_USAGE_STORAGE_BUFFER_BIT,
                    "barrier target");
  vk::CommandPool pool(*ctx);
  vk::CommandBuffer& cb = pool.allocate();
  cb.begin();
  vk::PipelineBarrier buffer_only;
  buffer_only.add_buffer(buffer.handle(), kCompute, kSW, kCompute, kSR);
  cb.record_barrier(buffer_only);
  cb.record_barrier(vk::PipelineBarrier{});  // empty: records nothing
  cb.record_barrier(vk::device_to_host_barrier());
  cb.end();
  vk::Fence fence(*ctx);
  ctx->submit({cb.handle()}, {cb.id()}, fence.handle());
  cb.mark_submitted();
  fence.wait();
  cb.mark_completed();

  auto events = ctx->trace()->recorded(cb.id());
  ASSERT_EQ(events.size(), 2u);
  const vk::SyncEvent& first = events[0];
  EXPECT_EQ(first.type, vk::SyncEvent::Type::Barrier);
  EXPECT_EQ(first.src_access, 0u);
  EXPECT_EQ(first.dst_access, 0u);
  ASSERT_EQ(first.buffers.size(), 1u);
  EXPECT_EQ(first.buffers[0], buffer.id());
  EXPECT_EQ(first.buffer_src_access[0], kSW);
  EXPECT_EQ(first.buffer_dst_access[0], kSR);

  const vk::SyncEvent& last = events[1];
  EXPECT_EQ(last.type, vk::SyncEvent::Type::Barrier);
  EXPECT_EQ(last.src_stage, static_cast<VkPipelineStageFlags>(VK_PIPELINE_STAGE_ALL_COMMANDS_BIT));
  EXPECT_EQ(last.dst_stage, static_cast<VkPipelineStageFlags>(VK_PIPELINE_STAGE_HOST_BIT));
  EXPECT_EQ(last.src_access, static_cast<VkAccessFlags>(VK_ACCESS_MEMORY_WRITE_BIT));
  EXPECT_EQ(last.dst_access, static_cast<VkAccessFlags>(VK_ACCESS_HOST_READ_BIT));
  EXPECT_TRUE(last.buffers.empty());
}

}  // namespace
}  // namespace vkgraph::testing
