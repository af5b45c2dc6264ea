#pragma once
// Device memory: memory-type choice per use, and a sub-allocator that carves buffers out of
// large VkDeviceMemory blocks (first fit, coalescing free list). Respects
// maxMemoryAllocationSize and an optional budget, so running out is an Error of kind
// OutOfMemory, never a crash.
#include <vulkan/vulkan.h>

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace vkgraph::vk {

enum class MemoryUsage {
  Device,    // tensors: DEVICE_LOCAL
  Upload,    // host writes, device reads: HOST_VISIBLE, prefer COHERENT
  Stream,    // host writes and device reads every run: device-local where the host can map a
             // large heap of it (Options::stream_in_device_memory), else as Upload
  Readback,  // device writes, host reads: HOST_VISIBLE, prefer CACHED
};

struct MemoryBlock;
struct InjectedFaults;  // src/vk/faults.h (tests only)

struct Allocation {
  VkDeviceMemory memory = VK_NULL_HANDLE;
  VkDeviceSize offset = 0;
  VkDeviceSize size = 0;
  uint32_t type_index = 0;
  void* mapped = nullptr;  // host pointer to `offset`, for host-visible memory
  bool coherent = true;    // false when the type lacks HOST_COHERENT or coherence is forced off
  MemoryBlock* block = nullptr;
  explicit operator bool() const { return memory != VK_NULL_HANDLE; }
};

struct MemoryStats {
  uint64_t block_bytes = 0;       // VkDeviceMemory currently allocated
  uint64_t peak_block_bytes = 0;  // high-water mark of the above
  uint64_t used_bytes = 0;        // sub-allocated bytes in use
  uint32_t blocks = 0;
};

class MemoryAllocator {
 public:
  struct Options {
    VkDeviceSize block_size = 64ull << 20;
    uint64_t budget = 0;  // max block bytes; 0 = limited by the device only
    bool force_non_coherent = false;
    // Stream buffers (graph inputs' staging) in DEVICE_LOCAL | HOST_VISIBLE memory whose heap
    // is at least kLargeHostVisibleHeap (resizable BAR, unified memory): the run's first copy
    // then reads local memory and the host's writes cross the bus instead (H100: ResNet-50's
    // input copy 65 -> ~10 us). A small BAR window (256 MiB) is left to the driver. When that
    // memory runs out the allocation falls back to host memory. Env VKGRAPH_STREAM_MEMORY=host
    // turns it off (an A/B).
    bool stream_in_device_memory = true;
  };
  MemoryAllocator(VkPhysicalDevice physical_device, VkDevice device, Options options);
  ~MemoryAllocator();
  MemoryAllocator(const MemoryAllocator&) = delete;
  MemoryAllocator& operator=(const MemoryAllocator&) = delete;

  // `what` names the object in error messages.
  Allocation allocate(const VkMemoryRequirements& req, MemoryUsage usage, const std::string& what);
  void free(Allocation& allocation);

  // Memory type index for a usage among the types allowed by `type_bits`; throws if none.
  uint32_t choose_type(uint32_t type_bits, MemoryUsage usage) const;
  static constexpr VkDeviceSize kLargeHostVisibleHeap = 1ull << 30;
  MemoryStats stats() const;
  VkDeviceSize non_coherent_atom() const { return atom_; }
  const VkPhysicalDeviceMemoryProperties& properties() const { return props_; }

 private:
  friend class Context;  // sets faults_
  VkDeviceMemory allocate_device_memory(VkDeviceSize size, uint32_t type, const std::string& what);
  Allocation allocate_of_type(const VkMemoryRequirements& req, uint32_t type,
                              const std::string& what);
  void release_block(MemoryBlock* block);  // the caller holds mutex_
  void release_empty_blocks();             // likewise

  VkDevice device_;
  Options options_;
  VkPhysicalDeviceMemoryProperties props_{};
  VkDeviceSize atom_ = 1;
  VkDeviceSize max_allocation_ = 0;
  mutable std::mutex mutex_;
  std::vector<std::unique_ptr<MemoryBlock>> blocks_;
  MemoryStats stats_;
  InjectedFaults* faults_ = nullptr;  // the Context's (src/vk/faults.h); tests only
};

// One VkDeviceMemory and its free ranges (offset -> size), kept coalesced.
struct MemoryBlock {
  VkDeviceMemory memory = VK_NULL_HANDLE;
  VkDeviceSize size = 0;
  uint32_t type_index = 0;
  bool dedicated = false;  // one allocation only; freed with it
  void* mapped = nullptr;
  std::map<VkDeviceSize, VkDeviceSize> free_ranges;
  VkDeviceSize used = 0;

  // Returns the offset of a fitting range, or ~0 when none fits.
  VkDeviceSize take(VkDeviceSize size, VkDeviceSize alignment);
  void give_back(VkDeviceSize offset, VkDeviceSize size);
};

}  // namespace vkgraph::vk
