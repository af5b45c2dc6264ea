#pragma once
// A pipeline barrier as a value: stage masks, optional global access masks (recorded as one
// VkMemoryBarrier only when set), buffer and image barriers. Built by the hazard tracker,
// merged per dispatch, recorded by CommandBuffer::record_barrier().
#include <vulkan/vulkan.h>

#include <vector>

namespace vkgraph::vk {

struct PipelineBarrier {
  VkPipelineStageFlags src_stage = 0;
  VkPipelineStageFlags dst_stage = 0;
  // Global memory barrier; both zero means "no VkMemoryBarrier".
  VkAccessFlags global_src_access = 0;
  VkAccessFlags global_dst_access = 0;
  std::vector<VkBufferMemoryBarrier> buffers;
  std::vector<VkImageMemoryBarrier> images;

  bool empty() const { return src_stage == 0 && dst_stage == 0; }
  bool has_global() const { return global_src_access != 0 || global_dst_access != 0; }

  // Adds a whole-buffer memory barrier and widens the stage masks.
  void add_buffer(VkBuffer buffer, VkPipelineStageFlags src, VkAccessFlags src_access,
                  VkPipelineStageFlags dst, VkAccessFlags dst_access);
  // Adds one half of a queue family ownership transfer of [offset, offset+size) of `buffer`
  // (a release on the source family's queue, or the matching acquire on the destination's). It
  // is kept as its own VkBufferMemoryBarrier: the two halves must match field for field.
  void add_ownership_transfer(VkBuffer buffer, VkDeviceSize offset, VkDeviceSize size,
                              uint32_t src_family, uint32_t dst_family, VkPipelineStageFlags src,
                              VkAccessFlags src_access, VkPipelineStageFlags dst,
                              VkAccessFlags dst_access);
  // Adds (or widens) the global memory barrier and the stage masks.
  void add_global(VkPipelineStageFlags src, VkAccessFlags src_access, VkPipelineStageFlags dst,
                  VkAccessFlags dst_access);
  // Folds another barrier into this one (used to merge all of one dispatch's barriers).
  void merge(const PipelineBarrier& other);
};

// The barrier every recorded execution ends with: all device writes -> host reads.
PipelineBarrier device_to_host_barrier();

}  // namespace vkgraph::vk
