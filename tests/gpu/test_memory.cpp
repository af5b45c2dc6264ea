// Device memory: the sub-allocator's free list (MemoryBlock), MemoryAllocator's alignment,
// reuse, dedicated blocks, budget and statistics, and StagingBuffer's flush/invalidate ranges
// with host-visible memory forced non-coherent (DESIGN.md rule 3 and 4, Memory).
#include <algorithm>
#include <cstring>
#include <map>

#include "foundation_test.h"
#include "vkgraph/error.h"
#include "vkgraph/vk/buffer.h"
#include "vkgraph/vk/command.h"
#include "vkgraph/vk/memory.h"
#include "vkgraph/vk/sync_trace.h"

namespace vkgraph::testing {
namespace {

constexpr VkDeviceSize kNoFit = ~VkDeviceSize(0);
constexpr VkDeviceSize KiB = 1024;
using Ranges = std::map<VkDeviceSize, VkDeviceSize>;

vk::MemoryBlock empty_block(VkDeviceSize size) {
  vk::MemoryBlock b;
  b.size = size;
  b.free_ranges[0] = size;
  return b;
}

TEST(MemoryBlock, TakeAlignsAndSplitsFreeRanges) {
  vk::MemoryBlock b = empty_block(1024);
  EXPECT_EQ(b.take(100, 1), 0u);
  EXPECT_EQ(b.free_ranges, (Ranges{{100, 924}}));
  EXPECT_EQ(b.used, 100u);
  // Aligned up to 128; the 28 bytes skipped stay free.
  EXPECT_EQ(b.take(100, 64), 128u);
  EXPECT_EQ(b.free_ranges, (Ranges{{100, 28}, {228, 796}}));
  EXPECT_EQ(b.used, 200u);
  EXPECT_EQ(b.take(2000, 1), kNoFit);
  EXPECT_EQ(b.free_ranges, (Ranges{{100, 28}, {228, 796}}));
  EXPECT_EQ(b.used, 200u);
  // First fit: the alignment gap is used when something fits it exactly.
  EXPECT_EQ(b.take(28, 4), 100u);
  EXPECT_EQ(b.free_ranges, (Ranges{{228, 796}}));
  EXPECT_EQ(b.take(796, 4), 228u);
  EXPECT_TRUE(b.free_ranges.empty());
  EXPECT_EQ(b.used, 1024u);
  EXPECT_EQ(b.take(1, 1), kNoFit);
}

TEST(MemoryBlock, GiveBackCoalescesWithBothNeighbours) {
  vk::MemoryBlock b = empty_block(1024);
  ASSERT_EQ(b.take(100, 1), 0u);
  ASSERT_EQ(b.take(100, 1), 100u);
  ASSERT_EQ(b.take(100, 1), 200u);
  b.give_back(0, 100);  // no free neighbour
  EXPECT_EQ(b.free_ranges, (Ranges{{0, 100}, {300, 724}}));
  b.give_back(200, 100);  // merges with the range after it
  EXPECT_EQ(b.free_ranges, (Ranges{{0, 100}, {200, 824}}));
  b.give_back(100, 100);  // merges with both
  EXPECT_EQ(b.free_ranges, (Ranges{{0, 1024}}));
  EXPECT_EQ(b.used, 0u);
}

TEST(MemoryBlock, GiveBackCoalescesWithThePreviousRangeOnly) {
  vk::MemoryBlock b = empty_block(1024);
  ASSERT_EQ(b.take(100, 1), 0u);
  ASSERT_EQ(b.take(100, 1), 100u);
  ASSERT_EQ(b.take(100, 1), 200u);
  b.give_back(0, 100);
  b.give_back(100, 100);  // the range after it is still taken
  EXPECT_EQ(b.free_ranges, (Ranges{{0, 200}, {300, 724}}));
  // A freed hole is reused before the tail.
  EXPECT_EQ(b.take(150, 8), 0u);
  EXPECT_EQ(b.free_ranges, (Ranges{{150, 50}, {300, 724}}));
}

class MemoryAllocatorTest : public GpuTest {
 protected:
  std::unique_ptr<vk::MemoryAllocator> make(VkDeviceSize block_size, uint64_t budget = 0,
                                            bool force_non_coherent = false) {
    vk::MemoryAllocator::Options o;
    o.block_size = block_size;
    o.budget = budget;
    o.force_non_coherent = force_non_coherent;
    return std::make_unique<vk::MemoryAllocator>(ctx_->physical_device(), ctx_->device(), o);
  }
  static VkMemoryRequirements req(const vk::MemoryAllocator& a, VkDeviceSize size,
                                  VkDeviceSize alignment) {
    uint32_t types = a.properties().memoryTypeCount;
    return {size, alignment, types >= 32 ? ~0u : (1u << types) - 1};
  }
  static VkMemoryPropertyFlags flags(const vk::MemoryAllocator& a, const vk::Allocation& x) {
    return a.properties().memoryTypes[x.type_index].propertyFlags;
  }
  std::shared_ptr<vk::Context> ctx_ = context();
};

TEST_F(MemoryAllocatorTest, SubAllocationsAreAlignedAndDisjoint) {
  auto alloc = make(1 << 20);
  std::vector<vk::Allocation> all;
  for (VkDeviceSize size : {100, 300, 50, 1000, 7})
    all.push_back(alloc->allocate(req(*alloc, size, 256), vk::MemoryUsage::Device, "tensor"));
  for (auto& a : all) {
    EXPECT_EQ(a.offset % 256, 0u);
    EXPECT_EQ(a.memory, all[0].memory);  // one block serves them all
    EXPECT_EQ(a.block, all[0].block);
  }
  auto sorted = all;
  std::sort(sorted.begin(), sorted.end(), [](auto& x, auto& y) { return x.offset < y.offset; });
  for (size_t i = 0; i + 1 < sorted.size(); ++i)
    EXPECT_LE(sorted[i].offset + sorted[i].size, sorted[i + 1].offset);
  uint64_t used = 0;
  for (auto& a : all) used += a.size;
  vk::MemoryStats s = alloc->stats();
  EXPECT_EQ(s.used_bytes, used);
  EXPECT_EQ(s.blocks, 1u);
  EXPECT_EQ(s.block_bytes, 1u << 20);
  for (auto& a : all) alloc->free(a);
  EXPECT_EQ(alloc->stats().used_bytes, 0u);
}

TEST_F(MemoryAllocatorTest, HostVisibleAllocationsAreAtomAligned) {
  for (bool force : {false, true}) {
    SCOPED_TRACE(force ? "forced non-coherent" : "default");
    auto alloc = make(1 << 20, 0, force);
    const VkDeviceSize atom = alloc->non_coherent_atom();
    std::vector<vk::Allocation> all;
    for (auto usage : {vk::MemoryUsage::Upload, vk::MemoryUsage::Stream, vk::MemoryUsage::Readback})
      for (VkDeviceSize size : {1, 100, 65, 4})
        all.push_back(alloc->allocate(req(*alloc, size, 4), usage, "staging"));
    for (auto& a : all) {
      VkMemoryPropertyFlags f = flags(*alloc, a);
      ASSERT_TRUE(f & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT);
      // Both ends on atom boundaries: flushing one allocation never touches a neighbour.
      EXPECT_EQ(a.offset % atom, 0u);
      EXPECT_EQ(a.size % atom, 0u);
      EXPECT_EQ(a.mapped, static_cast<uint8_t*>(a.block->mapped) + a.offset);
      EXPECT_EQ(a.coherent, (f & VK_MEMORY_PROPERTY_HOST_COHERENT_BIT) && !force);
    }
    for (auto& a : all) alloc->free(a);
  }
}

// Graph inputs' staging goes to device-local mapped memory when the host can map a large heap
// of it (resizable BAR, unified memory), never into a small BAR window; otherwise, or when the
// option is off, it is ordinary upload memory.
TEST_F(MemoryAllocatorTest, StreamPrefersALargeMappedDeviceHeap) {
  constexpr VkMemoryPropertyFlags kMappedLocal =
      VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT | VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT;
  auto alloc = make(1 << 20);
  const VkPhysicalDeviceMemoryProperties& p = alloc->properties();
  bool large_mapped_local = false;
  for (uint32_t i = 0; i < p.memoryTypeCount; ++i)
    large_mapped_local |= (p.memoryTypes[i].propertyFlags & kMappedLocal) == kMappedLocal &&
                          p.memoryHeaps[p.memoryTypes[i].heapIndex].size >=
                              vk::MemoryAllocator::kLargeHostVisibleHeap;
  uint32_t all = req(*alloc, 1, 1).memoryTypeBits;
  uint32_t stream = alloc->choose_type(all, vk::MemoryUsage::Stream);
  const VkMemoryType& t = p.memoryTypes[stream];
  if (large_mapped_local) {
    EXPECT_EQ(t.propertyFlags & kMappedLocal, kMappedLocal);
    EXPECT_GE(p.memoryHeaps[t.heapIndex].size, vk::MemoryAllocator::kLargeHostVisibleHeap);
  } else {
    EXPECT_EQ(stream, alloc->choose_type(all, vk::MemoryUsage::Upload));
  }
  vk::MemoryAllocator::Options off;
  off.stream_in_device_memory = false;
  vk::MemoryAllocator host(ctx_->physical_device(), ctx_->device(), off);
  EXPECT_EQ(host.choose_type(all, vk::MemoryUsage::Stream),
            host.choose_type(all, vk::MemoryUsage::Upload));
  // A Stream allocation is mapped and usable like any staging.
  vk::Allocation a = alloc->allocate(req(*alloc, 100, 4), vk::MemoryUsage::Stream, "input");
  ASSERT_NE(a.mapped, nullptr);
  std::memset(a.mapped, 0x5a, 100);
  alloc->free(a);
}

TEST_F(MemoryAllocatorTest, FreedRangesAreReusedAndCoalesced) {
  auto alloc = make(64 * KiB);
  auto r = req(*alloc, 1000, 256);
  vk::Allocation a = alloc->allocate(r, vk::MemoryUsage::Device, "a");
  vk::Allocation b = alloc->allocate(r, vk::MemoryUsage::Device, "b");
  vk::Allocation c = alloc->allocate(r, vk::MemoryUsage::Device, "c");
  const VkDeviceSize b_offset = b.offset;
  const VkDeviceMemory memory = a.memory;
  vk::MemoryBlock* block = a.block;
  alloc->free(b);
  EXPECT_FALSE(b);  // free() resets the handle
  vk::Allocation d = alloc->allocate(req(*alloc, 900, 256), vk::MemoryUsage::Device, "d");
  EXPECT_EQ(d.memory, memory);
  EXPECT_EQ(d.offset, b_offset);  // B's hole, not the tail

  alloc->free(a);
  alloc->free(c);
  alloc->free(d);
  vk::MemoryStats s = alloc->stats();
  EXPECT_EQ(s.used_bytes, 0u);
  EXPECT_EQ(s.blocks, 1u);  // kept for reuse
  EXPECT_EQ(block->used, 0u);
  EXPECT_EQ(block->free_ranges, (Ranges{{0, block->size}}));
  // Larger than any piece freed above: fits at 0 only because the pieces coalesced.
  vk::Allocation e = alloc->allocate(req(*alloc, 3 * 1024, 256), vk::MemoryUsage::Device, "e");
  EXPECT_EQ(e.memory, memory);
  EXPECT_EQ(e.offset, 0u);
  EXPECT_EQ(alloc->stats().blocks, 1u);
  alloc->free(e);
}

TEST_F(MemoryAllocatorTest, OfTwoEmptyBlocksOneIsReleased) {
  auto alloc = make(64 * KiB);
  auto r = req(*alloc, 30 * KiB, 256);  // under half a block: shared, two per block at most
  vk::Allocation a = alloc->allocate(r, vk::MemoryUsage::Device, "a");
  vk::Allocation b = alloc->allocate(r, vk::MemoryUsage::Device, "b");
  vk::Allocation c = alloc->allocate(r, vk::MemoryUsage::Device, "c");
  EXPECT_NE(a.memory, c.memory);
  EXPECT_EQ(alloc->stats().blocks, 2u);
  alloc->free(c);
  EXPECT_EQ(alloc->stats().blocks, 2u);  // the only empty block stays
  alloc->free(a);
  alloc->free(b);
  EXPECT_EQ(alloc->stats().blocks, 1u);
  EXPECT_EQ(alloc->stats().block_bytes, 64 * KiB);
}

TEST_F(MemoryAllocatorTest, LargeAllocationsGetDedicatedBlocks) {
  auto alloc = make(64 * KiB);
  vk::Allocation big = alloc->allocate(req(*alloc, 40 * KiB, 256), vk::MemoryUsage::Device, "big");
  ASSERT_TRUE(big.block->dedicated);
  EXPECT_EQ(big.offset, 0u);
  EXPECT_EQ(big.block->size, big.size);
  EXPECT_GE(big.size, 40 * KiB);
  vk::Allocation small = alloc->allocate(req(*alloc, 1000, 256), vk::MemoryUsage::Device, "small");
  EXPECT_NE(small.memory, big.memory);  // nothing shares a dedicated block
  EXPECT_FALSE(small.block->dedicated);
  vk::MemoryStats s = alloc->stats();
  EXPECT_EQ(s.blocks, 2u);
  EXPECT_EQ(s.block_bytes, big.size + 64 * KiB);
  const VkDeviceSize big_size = big.size;
  alloc->free(big);  // a dedicated block goes back at once
  s = alloc->stats();
  EXPECT_EQ(s.blocks, 1u);
  EXPECT_EQ(s.block_bytes, 64 * KiB);
  EXPECT_EQ(s.peak_block_bytes, big_size + 64 * KiB);
  alloc->free(small);
}

TEST_F(MemoryAllocatorTest, BudgetExceededIsOutOfMemoryNamingTheObject) {
  auto alloc = make(64 * KiB, 128 * KiB);
  vk::Allocation a = alloc->allocate(req(*alloc, 100 * KiB, 256), vk::MemoryUsage::Device, "a");
  try {
    alloc->allocate(req(*alloc, 40 * KiB, 256), vk::MemoryUsage::Device, "tensor 'second'");
    ADD_FAILURE() << "allocation over the budget succeeded";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::OutOfMemory) << e.what();
    EXPECT_NE(std::string(e.what()).find("tensor 'second'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("budget"), std::string::npos) << e.what();
  }
  vk::MemoryStats s = alloc->stats();
  EXPECT_EQ(s.blocks, 1u);  // the failure left nothing behind
  EXPECT_EQ(s.block_bytes, a.size);
  // What is left of the budget is still usable: the new block takes what it needs, not the
  // whole rest (a device with several memory types needs a block of each).
  vk::Allocation b = alloc->allocate(req(*alloc, 20 * KiB, 256), vk::MemoryUsage::Device, "b");
  EXPECT_EQ(alloc->stats().block_bytes, a.size + 20 * KiB);
  alloc->free(a);
  alloc->free(b);
}

// Empty blocks kept for reuse are given back when the budget would otherwise refuse a block,
// whatever their memory type.
TEST_F(MemoryAllocatorTest, EmptyBlocksGoBeforeTheBudgetRefuses) {
  auto alloc = make(64 * KiB, 128 * KiB);
  vk::Allocation a = alloc->allocate(req(*alloc, 100 * KiB, 256), vk::MemoryUsage::Upload, "a");
  vk::Allocation small = alloc->allocate(req(*alloc, 8 * KiB, 256), vk::MemoryUsage::Upload, "s");
  alloc->free(a);      // dedicated: released at once
  alloc->free(small);  // the only empty shared block of its type: kept
  EXPECT_EQ(alloc->stats().blocks, 1u);
  vk::Allocation b = alloc->allocate(req(*alloc, 124 * KiB, 256), vk::MemoryUsage::Device, "b");
  EXPECT_EQ(alloc->stats().blocks, 1u);
  EXPECT_EQ(alloc->stats().block_bytes, b.size);
  alloc->free(b);
}

TEST_F(MemoryAllocatorTest, OverMaxAllocationSizeIsOutOfMemory) {
  auto alloc = make(64 * KiB);
  try {
    alloc->allocate(req(*alloc, 1ull << 60, 256), vk::MemoryUsage::Device, "tensor 'huge'");
    ADD_FAILURE() << "an exabyte allocation succeeded";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::OutOfMemory) << e.what();
    EXPECT_NE(std::string(e.what()).find("maxMemoryAllocationSize"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("tensor 'huge'"), std::string::npos) << e.what();
  }
  EXPECT_EQ(alloc->stats().blocks, 0u);
}

TEST_F(MemoryAllocatorTest, StatsTrackThePeak) {
  auto alloc = make(64 * KiB);
  vk::Allocation a = alloc->allocate(req(*alloc, 40 * KiB, 256), vk::MemoryUsage::Device, "a");
  vk::Allocation b = alloc->allocate(req(*alloc, 50 * KiB, 256), vk::MemoryUsage::Device, "b");
  const uint64_t peak = a.size + b.size;
  EXPECT_EQ(alloc->stats().peak_block_bytes, peak);
  EXPECT_EQ(alloc->stats().used_bytes, peak);
  alloc->free(a);
  alloc->free(b);
  vk::MemoryStats s = alloc->stats();
  EXPECT_EQ(s.block_bytes, 0u);
  EXPECT_EQ(s.blocks, 0u);
  EXPECT_EQ(s.peak_block_bytes, peak);  // a high-water mark does not come down
  vk::Allocation c = alloc->allocate(req(*alloc, 1000, 256), vk::MemoryUsage::Device, "c");
  EXPECT_EQ(alloc->stats().block_bytes, 64 * KiB);
  EXPECT_EQ(alloc->stats().peak_block_bytes, peak);
  // Too big for the free part of c's block, so it gets a dedicated block of its own.
  vk::Allocation d = alloc->allocate(req(*alloc, 70 * KiB, 256), vk::MemoryUsage::Device, "d");
  EXPECT_EQ(alloc->stats().peak_block_bytes, 64 * KiB + d.size);
  alloc->free(c);
  alloc->free(d);
}

// Staging with host-visible memory forced non-coherent, so the flush and invalidate paths run
// on lavapipe, whose memory is coherent.
class StagingNonCoherent : public OwnContextTest {
 protected:
  void SetUp() override {
    OwnContextTest::SetUp();
    vk::ContextOptions o;
    o.force_non_coherent = true;
    o.sync_trace = true;
    ctx_ = own_context(o);
    atom_ = ctx_->allocator().non_coherent_atom();
  }
  // The host event and its flush/invalidate over the smallest atom-aligned cover of
  // [offset, offset + bytes) that stays inside the allocation.
  void expect_range(const vk::SyncEvent& e, const vk::StagingBuffer& s, VkDeviceSize offset,
                    VkDeviceSize bytes) {
    EXPECT_EQ(e.resource, s.id());
    EXPECT_FALSE(e.coherent);
    EXPECT_EQ(e.offset % atom_, 0u);
    const VkDeviceSize end =
        std::min((offset + bytes + atom_ - 1) / atom_ * atom_, s.allocation().size);
    EXPECT_EQ(e.offset, offset / atom_ * atom_);
    EXPECT_EQ(e.offset + e.size, end);
    EXPECT_TRUE(e.size % atom_ == 0 || e.offset + e.size == s.allocation().size);
  }
  std::shared_ptr<vk::Context> ctx_;
  VkDeviceSize atom_ = 1;
};

struct Range {
  VkDeviceSize offset, bytes;
};
const Range kRanges[] = {{70, 10}, {0, 1000}, {999, 1}, {64, 64}, {1, 126}};

TEST_F(StagingNonCoherent, CopyInWritesThenFlushesAnAtomAlignedCover) {
  vk::StagingBuffer s(*ctx_, 1000, vk::StagingBuffer::Direction::ToDevice, "stage-in");
  ASSERT_FALSE(s.coherent());
  std::vector<uint8_t> data(1000);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>(i * 7 + 1);
  for (const Range& r : kRanges) {
    SCOPED_TRACE("offset " + std::to_string(r.offset) + " bytes " + std::to_string(r.bytes));
    ctx_->trace()->clear();
    s.copy_in(data.data() + r.offset, r.bytes, r.offset);
    auto t = ctx_->trace()->timeline();
    ASSERT_EQ(t.size(), 2u);
    EXPECT_EQ(t[0].type, vk::SyncEvent::Type::HostWrite);
    EXPECT_EQ(t[0].resource, s.id());
    EXPECT_EQ(t[0].offset, r.offset);
    EXPECT_EQ(t[0].size, r.bytes);
    EXPECT_FALSE(t[0].coherent);
    EXPECT_EQ(t[1].type, vk::SyncEvent::Type::Flush);
    expect_range(t[1], s, r.offset, r.bytes);
    EXPECT_EQ(
        std::memcmp(static_cast<uint8_t*>(s.mapped()) + r.offset, data.data() + r.offset, r.bytes),
        0);
  }
}

TEST_F(StagingNonCoherent, CopyOutInvalidatesThenReads) {
  std::vector<uint8_t> data(1000);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>(i * 13 + 5);
  vk::StagingBuffer up(*ctx_, 1000, vk::StagingBuffer::Direction::ToDevice, "stage-up");
  vk::StagingBuffer s(*ctx_, 1000, vk::StagingBuffer::Direction::FromDevice, "stage-out");
  ASSERT_FALSE(s.coherent());
  up.copy_in(data.data(), data.size());
  vk::OneShot shot(*ctx_);
  shot.cmd().copy_buffer(up, s, 0, 0, 1000);
  shot.submit_and_wait();
  for (const Range& r : kRanges) {
    SCOPED_TRACE("offset " + std::to_string(r.offset) + " bytes " + std::to_string(r.bytes));
    ctx_->trace()->clear();
    std::vector<uint8_t> out(r.bytes, 0);
    s.copy_out(out.data(), r.bytes, r.offset);
    auto t = ctx_->trace()->timeline();
    ASSERT_EQ(t.size(), 2u);
    EXPECT_EQ(t[0].type, vk::SyncEvent::Type::Invalidate);
    expect_range(t[0], s, r.offset, r.bytes);
    EXPECT_EQ(t[1].type, vk::SyncEvent::Type::HostRead);
    EXPECT_EQ(t[1].resource, s.id());
    EXPECT_EQ(t[1].offset, r.offset);
    EXPECT_EQ(t[1].size, r.bytes);
    EXPECT_EQ(std::memcmp(out.data(), data.data() + r.offset, r.bytes), 0);
  }
}

TEST_F(StagingNonCoherent, OutOfRangeCopiesAreInvalidArgument) {
  vk::StagingBuffer in(*ctx_, 1000, vk::StagingBuffer::Direction::ToDevice, "stage-in");
  vk::StagingBuffer out(*ctx_, 1000, vk::StagingBuffer::Direction::FromDevice, "stage-out");
  std::vector<uint8_t> data(2000);
  ctx_->trace()->clear();
  struct Bad {
    VkDeviceSize offset, bytes;
  };
  for (const Bad& b : {Bad{0, 1001}, Bad{999, 2}, Bad{1001, 0}, Bad{1, ~VkDeviceSize(0)}}) {
    SCOPED_TRACE("offset " + std::to_string(b.offset) + " bytes " + std::to_string(b.bytes));
    for (bool copy_in : {true, false}) {
      try {
        if (copy_in)
          in.copy_in(data.data(), b.bytes, b.offset);
        else
          out.copy_out(data.data(), b.bytes, b.offset);
        ADD_FAILURE() << "out-of-range copy accepted";
      } catch (const Error& e) {
        std::string msg = e.what();
        EXPECT_EQ(e.kind(), ErrorKind::InvalidArgument) << msg;
        EXPECT_NE(msg.find(copy_in ? "'stage-in'" : "'stage-out'"), std::string::npos) << msg;
        EXPECT_NE(
            msg.find(std::to_string(b.bytes) + " bytes at offset " + std::to_string(b.offset)),
            std::string::npos)
            << msg;
        EXPECT_NE(msg.find("(1000 bytes)"), std::string::npos) << msg;
      }
    }
  }
  // Rejected before touching memory: nothing was written, read, flushed or invalidated.
  EXPECT_TRUE(ctx_->trace()->timeline().empty());
}

}  // namespace
}  // namespace vkgraph::testing
