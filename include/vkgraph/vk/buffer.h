#pragma once
// A VkBuffer bound to a sub-allocation, and StagingBuffer: a host-visible buffer whose copies
// flush (in) or invalidate (out) non-coherent memory, over ranges aligned to
// nonCoherentAtomSize.
#include <vulkan/vulkan.h>

#include <string>

#include "vkgraph/vk/memory.h"

namespace vkgraph::vk {

class Context;

class Buffer {
 public:
  Buffer() = default;
  Buffer(Context& context, VkDeviceSize size, MemoryUsage usage, VkBufferUsageFlags flags,
         std::string name);
  ~Buffer();
  Buffer(Buffer&& other) noexcept;
  Buffer& operator=(Buffer&& other) noexcept;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  VkBuffer handle() const { return buffer_; }
  uint64_t id() const { return reinterpret_cast<uint64_t>(buffer_); }
  VkDeviceSize size() const { return size_; }
  const std::string& name() const { return name_; }
  const Allocation& allocation() const { return allocation_; }
  bool host_visible() const { return allocation_.mapped != nullptr; }
  explicit operator bool() const { return buffer_ != VK_NULL_HANDLE; }

 protected:
  void release();
  Context* context_ = nullptr;
  VkBuffer buffer_ = VK_NULL_HANDLE;
  VkDeviceSize size_ = 0;
  Allocation allocation_;
  std::string name_;
};

class StagingBuffer : public Buffer {
 public:
  // ToDevice: filled once (constants); ToDeviceEveryRun: rewritten and read every run (graph
  // inputs), so it lives in device-local mapped memory where there is plenty (MemoryUsage).
  enum class Direction { ToDevice, ToDeviceEveryRun, FromDevice };
  StagingBuffer() = default;
  StagingBuffer(Context& context, VkDeviceSize size, Direction direction, std::string name);

  // Host -> staging. Flushes non-coherent memory; queue submission then makes the writes
  // visible to the device, so no barrier is needed on this side (DESIGN.md rule 3).
  void copy_in(const void* data, VkDeviceSize bytes, VkDeviceSize offset = 0);
  // Staging -> host. The caller must have waited on a fence that follows a
  // device->host barrier; this invalidates non-coherent memory, then reads.
  void copy_out(void* data, VkDeviceSize bytes, VkDeviceSize offset = 0);
  // copy_out of `count` float16 values, widened to float32 as they are copied (half the bytes
  // cross the bus and leave the staging memory; halves_to_floats, split over host threads).
  void copy_out_widened(float* data, size_t count, VkDeviceSize offset = 0);
  // Raw mapped access for code that fills the buffer in place; pair with flush()/invalidate().
  void* mapped() { return allocation_.mapped; }
  void flush(VkDeviceSize offset, VkDeviceSize bytes);
  void invalidate(VkDeviceSize offset, VkDeviceSize bytes);
  bool coherent() const { return allocation_.coherent; }

 private:
  VkMappedMemoryRange aligned_range(VkDeviceSize offset, VkDeviceSize bytes) const;
  void check_range(VkDeviceSize offset, VkDeviceSize bytes, const char* op) const;
};

}  // namespace vkgraph::vk
