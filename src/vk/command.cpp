#include "vkgraph/vk/command.h"

#include <algorithm>
#include <chrono>
#include <thread>

#include "vk/faults.h"
#include "vkgraph/error.h"
#include "vkgraph/vk/buffer.h"
#include "vkgraph/vk/context.h"
#include "vkgraph/vk/result.h"
#include "vkgraph/vk/sync_trace.h"

namespace vkgraph::vk {

Fence::Fence(Context& context) : context_(context) {
  VkFenceCreateInfo ci{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
  create_object(context, "vkCreateFence",
                [&] { return vkCreateFence(context.device(), &ci, nullptr, &fence_); });
}

Fence::~Fence() {
  vkDestroyFence(context_.device(), fence_, nullptr);
}

void Fence::wait(uint64_t timeout_ns, uint64_t expected_ns) {
  // With polling on (GPUs): sleep through the expected time less one poll period, then poll
  // until the fence signals or the poll period past the expected end runs out. Blocking in
  // vkWaitForFences instead costs its wake-up: 20-30 us on an H100 for a short graph, and
  // 0.1-0.25 ms of host time over GPU time on the H200 models longer than the old 1.2 ms bound
  // of polling (0.05 ms with this wait; docs/bench/2026-12-06-session12.md), while a thread
  // that sleeps costs no core. The blocking wait then returns at once, and is what the
  // validation layer and the trace see either way.
  using Clock = std::chrono::steady_clock;
  const uint64_t poll_ns = context_.spin_wait_us() * 1000ull;
  if (poll_ns && timeout_ns) {
    const auto start = Clock::now();
    // Sleep requests overshoot by the kernel's timer slack (tens of us): well inside poll_ns.
    if (expected_ns > poll_ns && !signaled())
      std::this_thread::sleep_for(
          std::chrono::nanoseconds(std::min(expected_ns - poll_ns, timeout_ns)));
    const auto until =
        start + std::chrono::nanoseconds(std::min(expected_ns + poll_ns, timeout_ns));
    while (!signaled() && Clock::now() < until) {
    }
  }
  VkResult r = vkWaitForFences(context_.device(), 1, &fence_, VK_TRUE, timeout_ns);
  if (r == VK_TIMEOUT) throw Error(ErrorKind::Vulkan, "fence wait timed out");
  check_vk(r, "vkWaitForFences");
  if (SyncTrace* t = context_.trace()) {
    SyncEvent e{SyncEvent::Type::FenceWait};
    e.fence = id();
    t->host(std::move(e));
  }
}

bool Fence::signaled() const {
  return vkGetFenceStatus(context_.device(), fence_) == VK_SUCCESS;
}

void Fence::reset() {
  check_vk(vkResetFences(context_.device(), 1, &fence_), "vkResetFences");
}

namespace {
const char* state_name(CommandBuffer::State s) {
  switch (s) {
    case CommandBuffer::State::Initial:
      return "initial";
    case CommandBuffer::State::Recording:
      return "recording";
    case CommandBuffer::State::Executable:
      return "executable";
    case CommandBuffer::State::Pending:
      return "pending";
  }
  return "?";
}
}  // namespace

CommandBuffer::CommandBuffer(Context& context, VkCommandBuffer handle, uint64_t id)
    : context_(context), handle_(handle), id_(id) {}

void CommandBuffer::require(State state, const char* op) const {
  if (state_ != state)
    throw Error(ErrorKind::InvalidState, std::string("command buffer ") + std::to_string(id_) +
                                             ": " + op + " needs state " + state_name(state) +
                                             ", but it is " + state_name(state_));
}

void CommandBuffer::begin() {
  require(State::Initial, "begin");
  VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  check_vk(vkBeginCommandBuffer(handle_, &bi), "vkBeginCommandBuffer");
  if (SyncTrace* t = context_.trace()) t->begin_recording(id_);
  state_ = State::Recording;
}

void CommandBuffer::end() {
  require(State::Recording, "end");
  check_vk(vkEndCommandBuffer(handle_), "vkEndCommandBuffer");
  state_ = State::Executable;
}

void CommandBuffer::record_barrier(const PipelineBarrier& b) {
  require(State::Recording, "record_barrier");
  if (b.empty()) return;
  VkMemoryBarrier global{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  global.srcAccessMask = b.global_src_access;
  global.dstAccessMask = b.global_dst_access;
  vkCmdPipelineBarrier(handle_, b.src_stage, b.dst_stage, 0, b.has_global() ? 1 : 0, &global,
                       static_cast<uint32_t>(b.buffers.size()), b.buffers.data(),
                       static_cast<uint32_t>(b.images.size()), b.images.data());
  if (SyncTrace* t = context_.trace()) {
    SyncEvent e{SyncEvent::Type::Barrier};
    e.src_stage = b.src_stage;
    e.dst_stage = b.dst_stage;
    e.src_access = b.global_src_access;
    e.dst_access = b.global_dst_access;
    for (auto& bb : b.buffers) {
      e.buffers.push_back(reinterpret_cast<uint64_t>(bb.buffer));
      e.buffer_src_access.push_back(bb.srcAccessMask);
      e.buffer_dst_access.push_back(bb.dstAccessMask);
    }
    t->record(id_, std::move(e));
  }
}

void CommandBuffer::bind_pipeline(VkPipeline pipeline) {
  require(State::Recording, "bind_pipeline");
  vkCmdBindPipeline(handle_, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline);
}

void CommandBuffer::bind_descriptor_set(VkPipelineLayout layout, VkDescriptorSet set) {
  require(State::Recording, "bind_descriptor_set");
  vkCmdBindDescriptorSets(handle_, VK_PIPELINE_BIND_POINT_COMPUTE, layout, 0, 1, &set, 0, nullptr);
}

void CommandBuffer::push_constants(VkPipelineLayout layout, const void* data, uint32_t size) {
  require(State::Recording, "push_constants");
  if (size) vkCmdPushConstants(handle_, layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, size, data);
}

void CommandBuffer::dispatch(uint32_t x, uint32_t y, uint32_t z) {
  require(State::Recording, "dispatch");
  vkCmdDispatch(handle_, x, y, z);
}

void CommandBuffer::copy_buffer(const Buffer& src, const Buffer& dst, VkDeviceSize src_offset,
                                VkDeviceSize dst_offset, VkDeviceSize size) {
  copy_buffer(src.handle(), dst.handle(), src_offset, dst_offset, size, dst.host_visible());
}

void CommandBuffer::copy_buffer(VkBuffer src, VkBuffer dst, VkDeviceSize src_offset,
                                VkDeviceSize dst_offset, VkDeviceSize size, bool dst_host_visible) {
  require(State::Recording, "copy_buffer");
  VkBufferCopy region{src_offset, dst_offset, size};
  vkCmdCopyBuffer(handle_, src, dst, 1, &region);
  if (dst_host_visible)
    note_device_write(dst, size, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT);
}

void CommandBuffer::reset_queries(VkQueryPool pool, uint32_t first, uint32_t count) {
  require(State::Recording, "reset_queries");
  vkCmdResetQueryPool(handle_, pool, first, count);
}

void CommandBuffer::write_timestamp(VkPipelineStageFlagBits stage, VkQueryPool pool,
                                    uint32_t index) {
  require(State::Recording, "write_timestamp");
  vkCmdWriteTimestamp(handle_, stage, pool, index);
}

void CommandBuffer::note_device_write(VkBuffer buffer, VkDeviceSize size,
                                      VkPipelineStageFlags stage, VkAccessFlags access) {
  if (SyncTrace* t = context_.trace()) {
    SyncEvent e{SyncEvent::Type::DeviceWrite};
    e.resource = reinterpret_cast<uint64_t>(buffer);
    e.size = size;
    e.src_stage = stage;
    e.src_access = access;
    t->record(id_, std::move(e));
  }
}

void CommandBuffer::mark_submitted() {
  require(State::Executable, "submit");
  state_ = State::Pending;
}

void CommandBuffer::mark_completed() {
  require(State::Pending, "complete");
  state_ = State::Executable;
}

CommandPool::CommandPool(Context& context) : context_(context) {
  VkCommandPoolCreateInfo ci{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
  ci.queueFamilyIndex = context.queue_family();
  create_object(context, "vkCreateCommandPool",
                [&] { return vkCreateCommandPool(context.device(), &ci, nullptr, &pool_); });
}

CommandPool::~CommandPool() {
  vkDestroyCommandPool(context_.device(), pool_, nullptr);
}

CommandBuffer& CommandPool::allocate() {
  VkCommandBufferAllocateInfo ai{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
  ai.commandPool = pool_;
  ai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  ai.commandBufferCount = 1;
  VkCommandBuffer cb;
  create_object(context_, "vkAllocateCommandBuffers",
                [&] { return vkAllocateCommandBuffers(context_.device(), &ai, &cb); });
  buffers_.push_back(std::make_unique<CommandBuffer>(context_, cb, reinterpret_cast<uint64_t>(cb)));
  return *buffers_.back();
}

OneShot::OneShot(Context& context) : context_(context), pool_(context), cmd_(&pool_.allocate()) {
  cmd_->begin();
}

void OneShot::submit_and_wait() {
  // One-off work (prepack uploads, tests) is followed by arbitrary later work and host reads,
  // so its barrier makes every write available to both.
  PipelineBarrier all = device_to_host_barrier();
  all.add_global(0, 0, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT,
                 VK_ACCESS_MEMORY_READ_BIT | VK_ACCESS_MEMORY_WRITE_BIT);
  cmd_->record_barrier(all);
  cmd_->end();
  Fence fence(context_);
  context_.submit({cmd_->handle()}, {cmd_->id()}, fence.handle());
  cmd_->mark_submitted();
  fence.wait();
  cmd_->mark_completed();
}

}  // namespace vkgraph::vk
