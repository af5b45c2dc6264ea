#include "graph/hazard_tracker.h"

namespace vkgraph {

void HazardTracker::access(VkBuffer buffer, const ResourceAccess& a, vk::PipelineBarrier& barrier) {
  State& s = states_[buffer];
  VkAccessFlags read_bits = a.access & ~(VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT |
                                         VK_ACCESS_HOST_WRITE_BIT | VK_ACCESS_MEMORY_WRITE_BIT);
  if (!a.writes()) {
    // Read after write: make the write visible to this stage, once per stage and access.
    bool visible =
        (s.visible_stages & a.stage) == a.stage && (s.visible_access & read_bits) == read_bits;
    if (s.write_stage && !visible) {
      barrier.add_buffer(buffer, s.write_stage, s.write_access, a.stage, read_bits);
      s.visible_stages |= a.stage;
      s.visible_access |= read_bits;
    }
    s.read_stages |= a.stage;
    return;
  }
  // Write (or read-write). After reads: the readers must finish first (write-after-read, an
  // execution dependency; the earlier write, if any, is folded in as a memory dependency so
  // write-after-write holds too). With no reads since: write-after-write.
  if (s.read_stages || s.write_stage)
    barrier.add_buffer(buffer, s.read_stages | s.write_stage, s.write_access, a.stage, a.access);
  s = State{};
  s.write_stage = a.stage;
  s.write_access = a.access & ~read_bits;
  // A read-write access sees its own write only through program order within the dispatch.
}

}  // namespace vkgraph
