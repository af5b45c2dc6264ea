#pragma once
// Command pool, reusable command buffers with a state machine that rejects misuse, fences.
// A CommandBuffer is recorded once and may be submitted many times (never twice at once).
#include <vulkan/vulkan.h>

#include <array>
#include <cstdint>
#include <memory>
#include <vector>

#include "vkgraph/vk/barrier.h"

namespace vkgraph::vk {

class Context;
class Buffer;

class Fence {
 public:
  explicit Fence(Context& context);
  ~Fence();
  Fence(const Fence&) = delete;
  Fence& operator=(const Fence&) = delete;
  VkFence handle() const { return fence_; }
  uint64_t id() const { return reinterpret_cast<uint64_t>(fence_); }
  // Waits (throws DeviceLost / Vulkan errors), records FenceWait in the trace. With polling on
  // (Context::spin_wait_us > 0), first sleeps until spin_wait_us before `expected_ns` (the time
  // the caller expects the work to take, counted from now) and polls until spin_wait_us past
  // it: only a wait that outlasts that blocks in vkWaitForFences, whose wake-up costs tens of
  // microseconds to 0.2 ms on a discrete GPU.
  void wait(uint64_t timeout_ns = UINT64_MAX, uint64_t expected_ns = 0);
  bool signaled() const;
  void reset();

 private:
  Context& context_;
  VkFence fence_ = VK_NULL_HANDLE;
};

class CommandBuffer {
 public:
  enum class State { Initial, Recording, Executable, Pending };
  CommandBuffer(Context& context, VkCommandBuffer handle, uint64_t id);

  VkCommandBuffer handle() const { return handle_; }
  uint64_t id() const { return id_; }
  State state() const { return state_; }

  void begin();
  void end();
  void record_barrier(const PipelineBarrier& barrier);
  void bind_pipeline(VkPipeline pipeline);
  void bind_descriptor_set(VkPipelineLayout layout, VkDescriptorSet set);
  void push_constants(VkPipelineLayout layout, const void* data, uint32_t size);
  void dispatch(uint32_t x, uint32_t y, uint32_t z);
  void copy_buffer(const Buffer& src, const Buffer& dst, VkDeviceSize src_offset,
                   VkDeviceSize dst_offset, VkDeviceSize size);
  // Same for buffers vkgraph does not own; `dst_host_visible` makes the trace note the write.
  void copy_buffer(VkBuffer src, VkBuffer dst, VkDeviceSize src_offset, VkDeviceSize dst_offset,
                   VkDeviceSize size, bool dst_host_visible);
  void reset_queries(VkQueryPool pool, uint32_t first, uint32_t count);
  void write_timestamp(VkPipelineStageFlagBits stage, VkQueryPool pool, uint32_t index);
  // Tells the trace that a command in this buffer writes host-visible `buffer`.
  void note_device_write(VkBuffer buffer, VkDeviceSize size, VkPipelineStageFlags stage,
                         VkAccessFlags access);

  // Submission bookkeeping (Executable -> Pending -> Executable).
  void mark_submitted();
  void mark_completed();

 private:
  void require(State state, const char* op) const;
  Context& context_;
  VkCommandBuffer handle_;
  uint64_t id_;
  State state_ = State::Initial;
};

// Owns a VkCommandPool and the command buffers allocated from it. Not thread-safe: one
// graph, one thread (Vulkan requires external synchronization of pools).
class CommandPool {
 public:
  explicit CommandPool(Context& context);
  ~CommandPool();
  CommandPool(const CommandPool&) = delete;
  CommandPool& operator=(const CommandPool&) = delete;
  CommandBuffer& allocate();
  size_t size() const { return buffers_.size(); }
  CommandBuffer& operator[](size_t i) { return *buffers_[i]; }

 private:
  Context& context_;
  VkCommandPool pool_ = VK_NULL_HANDLE;
  std::vector<std::unique_ptr<CommandBuffer>> buffers_;
};

// Records, submits and waits for a one-off command buffer (prepack uploads, test utilities).
// It ends with the device->host barrier, so host reads after submit_and_wait() obey the
// same contract as ComputeGraph::execute().
class OneShot {
 public:
  explicit OneShot(Context& context);
  CommandBuffer& cmd() { return *cmd_; }
  void submit_and_wait();

 private:
  Context& context_;
  CommandPool pool_;
  CommandBuffer* cmd_;
};

}  // namespace vkgraph::vk
