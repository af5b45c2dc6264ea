#include "vkgraph/vk/buffer.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "vk/faults.h"
#include "vk/parallel_copy.h"
#include "vkgraph/error.h"
#include "vkgraph/types.h"
#include "vkgraph/vk/context.h"
#include "vkgraph/vk/result.h"
#include "vkgraph/vk/sync_trace.h"

namespace vkgraph::vk {

Buffer::Buffer(Context& context, VkDeviceSize size, MemoryUsage usage, VkBufferUsageFlags flags,
               std::string name)
    : context_(&context), size_(size), name_(std::move(name)) {
  check(size > 0, ErrorKind::InvalidArgument, "buffer '" + name_ + "' has size 0");
  VkBufferCreateInfo ci{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  ci.size = size;
  ci.usage = flags;
  ci.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  create_object(context, "vkCreateBuffer for '" + name_ + "'",
                [&] { return vkCreateBuffer(context.device(), &ci, nullptr, &buffer_); });
  try {
    VkMemoryRequirements req;
    vkGetBufferMemoryRequirements(context.device(), buffer_, &req);
    allocation_ = context.allocator().allocate(req, usage, "buffer '" + name_ + "'");
    check_vk(vkBindBufferMemory(context.device(), buffer_, allocation_.memory, allocation_.offset),
             "vkBindBufferMemory");
  } catch (...) {
    release();
    throw;
  }
}

Buffer::~Buffer() {
  release();
}

void Buffer::release() {
  if (!context_) return;
  if (buffer_) vkDestroyBuffer(context_->device(), buffer_, nullptr);
  context_->allocator().free(allocation_);
  buffer_ = VK_NULL_HANDLE;
}

Buffer::Buffer(Buffer&& o) noexcept {
  *this = std::move(o);
}

Buffer& Buffer::operator=(Buffer&& o) noexcept {
  if (this != &o) {
    release();
    context_ = std::exchange(o.context_, nullptr);
    buffer_ = std::exchange(o.buffer_, VK_NULL_HANDLE);
    size_ = std::exchange(o.size_, 0);
    allocation_ = std::exchange(o.allocation_, Allocation{});
    name_ = std::move(o.name_);
  }
  return *this;
}

StagingBuffer::StagingBuffer(Context& context, VkDeviceSize size, Direction direction,
                             std::string name)
    : Buffer(context, size,
             direction == Direction::ToDevice           ? MemoryUsage::Upload
             : direction == Direction::ToDeviceEveryRun ? MemoryUsage::Stream
                                                        : MemoryUsage::Readback,
             VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT |
                 VK_BUFFER_USAGE_STORAGE_BUFFER_BIT,
             std::move(name)) {
  check(allocation_.mapped != nullptr, ErrorKind::Vulkan,
        "staging buffer '" + name_ + "' is not host-visible");
}

void StagingBuffer::check_range(VkDeviceSize offset, VkDeviceSize bytes, const char* op) const {
  if (offset > size_ || bytes > size_ - offset)
    throw Error(ErrorKind::InvalidArgument, std::string(op) + " of " + std::to_string(bytes) +
                                                " bytes at offset " + std::to_string(offset) +
                                                " overruns '" + name_ + "' (" +
                                                std::to_string(size_) + " bytes)");
}

VkMappedMemoryRange StagingBuffer::aligned_range(VkDeviceSize offset, VkDeviceSize bytes) const {
  // The allocation itself is atom-aligned at both ends (MemoryAllocator), so widening the
  // range to atoms stays inside it.
  VkDeviceSize atom = context_->allocator().non_coherent_atom();
  VkDeviceSize begin = allocation_.offset + offset;
  VkDeviceSize end = begin + bytes;
  begin = begin / atom * atom;
  end = std::min((end + atom - 1) / atom * atom, allocation_.offset + allocation_.size);
  VkMappedMemoryRange r{VK_STRUCTURE_TYPE_MAPPED_MEMORY_RANGE};
  r.memory = allocation_.memory;
  r.offset = begin;
  r.size = end - begin;
  return r;
}

namespace {
void trace_host(Context* ctx, SyncEvent::Type type, const Buffer& b, VkDeviceSize offset,
                VkDeviceSize size, bool coherent) {
  if (SyncTrace* t = ctx->trace()) {
    SyncEvent e{type};
    e.resource = b.id();
    e.offset = offset;
    e.size = size;
    e.coherent = coherent;
    t->host(std::move(e));
  }
}
}  // namespace

void StagingBuffer::flush(VkDeviceSize offset, VkDeviceSize bytes) {
  check_range(offset, bytes, "flush");
  if (allocation_.coherent || bytes == 0) return;
  VkMappedMemoryRange r = aligned_range(offset, bytes);
  check_vk(vkFlushMappedMemoryRanges(context_->device(), 1, &r), "vkFlushMappedMemoryRanges");
  trace_host(context_, SyncEvent::Type::Flush, *this, r.offset - allocation_.offset, r.size, false);
}

void StagingBuffer::invalidate(VkDeviceSize offset, VkDeviceSize bytes) {
  check_range(offset, bytes, "invalidate");
  if (allocation_.coherent || bytes == 0) return;
  VkMappedMemoryRange r = aligned_range(offset, bytes);
  check_vk(vkInvalidateMappedMemoryRanges(context_->device(), 1, &r),
           "vkInvalidateMappedMemoryRanges");
  trace_host(context_, SyncEvent::Type::Invalidate, *this, r.offset - allocation_.offset, r.size,
             false);
}

void StagingBuffer::copy_in(const void* data, VkDeviceSize bytes, VkDeviceSize offset) {
  check_range(offset, bytes, "copy into staging");
  parallel_copy(static_cast<uint8_t*>(allocation_.mapped) + offset, data, bytes);
  trace_host(context_, SyncEvent::Type::HostWrite, *this, offset, bytes, allocation_.coherent);
  flush(offset, bytes);
}

void StagingBuffer::copy_out(void* data, VkDeviceSize bytes, VkDeviceSize offset) {
  check_range(offset, bytes, "copy out of staging");
  invalidate(offset, bytes);
  trace_host(context_, SyncEvent::Type::HostRead, *this, offset, bytes, allocation_.coherent);
  // Straight from the mapping into the caller's memory: no intermediate copy.
  parallel_copy(data, static_cast<const uint8_t*>(allocation_.mapped) + offset, bytes);
}

void StagingBuffer::copy_out_widened(float* data, size_t count, VkDeviceSize offset) {
  const VkDeviceSize bytes = count * sizeof(uint16_t);
  check_range(offset, bytes, "copy out of staging");
  invalidate(offset, bytes);
  trace_host(context_, SyncEvent::Type::HostRead, *this, offset, bytes, allocation_.coherent);
  const auto* halves =
      reinterpret_cast<const uint16_t*>(static_cast<const uint8_t*>(allocation_.mapped) + offset);
  // Pieces as parallel_copy's (1 MiB of output and up, page-aligned).
  parallel_for(count, kParallelCopyThreshold / 4 / sizeof(float), 1024,
               [&](size_t begin, size_t end) {
                 halves_to_floats(halves + begin, data + begin, end - begin);
               });
}

}  // namespace vkgraph::vk
