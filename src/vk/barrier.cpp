#include "vkgraph/vk/barrier.h"

namespace vkgraph::vk {

void PipelineBarrier::add_buffer(VkBuffer buffer, VkPipelineStageFlags src,
                                 VkAccessFlags src_access, VkPipelineStageFlags dst,
                                 VkAccessFlags dst_access) {
  src_stage |= src;
  dst_stage |= dst;
  for (auto& b : buffers) {
    if (b.buffer == buffer && b.srcQueueFamilyIndex == VK_QUEUE_FAMILY_IGNORED) {
      b.srcAccessMask |= src_access;
      b.dstAccessMask |= dst_access;
      return;
    }
  }
  add_ownership_transfer(buffer, 0, VK_WHOLE_SIZE, VK_QUEUE_FAMILY_IGNORED,
                         VK_QUEUE_FAMILY_IGNORED, 0, src_access, 0, dst_access);
}

// Also the plain whole-buffer barrier of add_buffer, with both families IGNORED.
void PipelineBarrier::add_ownership_transfer(VkBuffer buffer, VkDeviceSize offset,
                                             VkDeviceSize size, uint32_t src_family,
                                             uint32_t dst_family, VkPipelineStageFlags src,
                                             VkAccessFlags src_access, VkPipelineStageFlags dst,
                                             VkAccessFlags dst_access) {
  src_stage |= src;
  dst_stage |= dst;
  VkBufferMemoryBarrier b{VK_STRUCTURE_TYPE_BUFFER_MEMORY_BARRIER};
  b.srcAccessMask = src_access;
  b.dstAccessMask = dst_access;
  b.srcQueueFamilyIndex = src_family;
  b.dstQueueFamilyIndex = dst_family;
  b.buffer = buffer;
  b.offset = offset;
  b.size = size;
  buffers.push_back(b);
}

void PipelineBarrier::add_global(VkPipelineStageFlags src, VkAccessFlags src_access,
                                 VkPipelineStageFlags dst, VkAccessFlags dst_access) {
  src_stage |= src;
  dst_stage |= dst;
  global_src_access |= src_access;
  global_dst_access |= dst_access;
}

void PipelineBarrier::merge(const PipelineBarrier& other) {
  if (other.empty()) return;
  src_stage |= other.src_stage;
  dst_stage |= other.dst_stage;
  global_src_access |= other.global_src_access;
  global_dst_access |= other.global_dst_access;
  for (auto& b : other.buffers) {
    if (b.srcQueueFamilyIndex == VK_QUEUE_FAMILY_IGNORED)
      add_buffer(b.buffer, 0, b.srcAccessMask, 0, b.dstAccessMask);
    else
      buffers.push_back(b);  // ownership transfers are never widened
  }
  images.insert(images.end(), other.images.begin(), other.images.end());
}

PipelineBarrier device_to_host_barrier() {
  PipelineBarrier b;
  b.add_global(VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, VK_ACCESS_MEMORY_WRITE_BIT,
               VK_PIPELINE_STAGE_HOST_BIT, VK_ACCESS_HOST_READ_BIT);
  return b;
}

}  // namespace vkgraph::vk
