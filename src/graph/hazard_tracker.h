#pragma once
// Per-resource hazard tracking (DESIGN.md rule 1). Each resource remembers its last write and
// which stages have read it since; an access returns exactly the barrier its hazard needs:
// read-after-write, write-after-read, write-after-write; nothing for read-after-read.
// Pure bookkeeping, no Vulkan calls, so it is unit-tested with tables.
#include <vulkan/vulkan.h>

#include <map>

#include "vkgraph/vk/barrier.h"

namespace vkgraph {

struct ResourceAccess {
  VkPipelineStageFlags stage;
  VkAccessFlags access;  // e.g. SHADER_READ, SHADER_WRITE, or both for read-write
  bool writes() const {
    return access & (VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT |
                     VK_ACCESS_HOST_WRITE_BIT | VK_ACCESS_MEMORY_WRITE_BIT);
  }
};

class HazardTracker {
 public:
  struct State {
    VkPipelineStageFlags write_stage = 0;  // 0: never written in the tracked span
    VkAccessFlags write_access = 0;
    VkPipelineStageFlags read_stages = 0;     // stages that read since the last write
    VkPipelineStageFlags visible_stages = 0;  // stages the last write was made visible to
    VkAccessFlags visible_access = 0;
  };

  // Adds to `barrier` what `access` of `buffer` needs, and updates the state.
  void access(VkBuffer buffer, const ResourceAccess& access, vk::PipelineBarrier& barrier);
  // Starts from the state a previous replay of the same recording leaves behind.
  void set_states(std::map<VkBuffer, State> states) { states_ = std::move(states); }
  const std::map<VkBuffer, State>& states() const { return states_; }

 private:
  std::map<VkBuffer, State> states_;
};

}  // namespace vkgraph
