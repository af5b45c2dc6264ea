#pragma once
// An optional record of synchronization events, and an audit of the host-visibility rules
// (DESIGN.md rules 3-6). The Khronos validation layer does not track host access, so this is
// what proves that every host read of device-written memory was preceded by a device->host
// barrier, a fence wait and (for non-coherent memory) an invalidate.
//
// Commands are recorded once and replayed, so events inside a command buffer are stored per
// command buffer at record time; a Submit event names the command buffers it replays, and the
// audit expands them in queue order.
#include <vulkan/vulkan.h>

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace vkgraph::vk {

struct SyncEvent {
  enum class Type {
    Barrier,      // recorded: src/dst stage and global access; buffers listed
    DeviceWrite,  // recorded: a command writes `resource` (only host-visible memory is traced)
    Submit,       // host: command buffers in queue order, fence (0 = none)
    FenceWait,    // host: waited on `fence`
    Flush,        // host: vkFlushMappedMemoryRanges over [offset, offset+size) of `resource`
    Invalidate,   // host: vkInvalidateMappedMemoryRanges
    HostWrite,    // host: wrote mapped memory
    HostRead,     // host: read mapped memory
  };
  Type type;
  uint64_t resource = 0;  // VkBuffer handle as an integer
  uint64_t offset = 0, size = 0;
  bool coherent = true;  // for host events: was the memory treated as coherent
  VkPipelineStageFlags src_stage = 0, dst_stage = 0;
  VkAccessFlags src_access = 0, dst_access = 0;  // Barrier: global masks; DeviceWrite: its access
  std::vector<uint64_t> buffers;                 // Barrier: per-buffer barriers (dst access)
  std::vector<VkAccessFlags> buffer_src_access, buffer_dst_access;
  std::vector<uint64_t> command_buffers;  // Submit
  uint64_t fence = 0;                     // Submit, FenceWait
};

class SyncTrace {
 public:
  // Events inside command buffer `cb` (recorded once, replayed on each submit).
  void begin_recording(uint64_t cb);
  void record(uint64_t cb, SyncEvent event);
  // Host-side events, in the order they happen.
  void host(SyncEvent event);

  std::vector<SyncEvent> timeline() const;
  std::vector<SyncEvent> recorded(uint64_t cb) const;
  void clear();

  // Checks the host-visibility contract over the whole timeline. Returns one line per
  // violation; empty means the contract held.
  std::vector<std::string> audit() const;

 private:
  mutable std::mutex mutex_;
  std::vector<SyncEvent> timeline_;
  std::map<uint64_t, std::vector<SyncEvent>> recordings_;
};

}  // namespace vkgraph::vk
