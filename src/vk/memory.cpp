#include "vkgraph/vk/memory.h"

#include <algorithm>

#include "vk/faults.h"
#include "vkgraph/error.h"
#include "vkgraph/vk/result.h"

namespace vkgraph::vk {
namespace {

constexpr VkDeviceSize kNoFit = ~VkDeviceSize(0);

VkDeviceSize align_up(VkDeviceSize v, VkDeviceSize a) {
  return (v + a - 1) / a * a;
}

std::string mib(uint64_t bytes) {
  return std::to_string(bytes / (1024.0 * 1024.0)).substr(0, 8) + " MiB";
}

}  // namespace

VkDeviceSize MemoryBlock::take(VkDeviceSize size, VkDeviceSize alignment) {
  for (auto it = free_ranges.begin(); it != free_ranges.end(); ++it) {
    VkDeviceSize start = align_up(it->first, alignment);
    VkDeviceSize end = it->first + it->second;
    if (start + size > end) continue;
    VkDeviceSize range_offset = it->first;
    free_ranges.erase(it);
    if (start > range_offset) free_ranges[range_offset] = start - range_offset;
    if (start + size < end) free_ranges[start + size] = end - (start + size);
    used += size;
    return start;
  }
  return kNoFit;
}

void MemoryBlock::give_back(VkDeviceSize offset, VkDeviceSize size) {
  used -= size;
  auto next = free_ranges.lower_bound(offset);
  if (next != free_ranges.end() && offset + size == next->first) {
    size += next->second;
    next = free_ranges.erase(next);
  }
  if (next != free_ranges.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second == offset) {
      prev->second += size;
      return;
    }
  }
  free_ranges[offset] = size;
}

MemoryAllocator::MemoryAllocator(VkPhysicalDevice physical_device, VkDevice device, Options options)
    : device_(device), options_(options) {
  vkGetPhysicalDeviceMemoryProperties(physical_device, &props_);
  VkPhysicalDeviceProperties p;
  vkGetPhysicalDeviceProperties(physical_device, &p);
  atom_ = std::max<VkDeviceSize>(1, p.limits.nonCoherentAtomSize);
  VkPhysicalDeviceMaintenance3Properties m3{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_3_PROPERTIES};
  VkPhysicalDeviceProperties2 p2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
  p2.pNext = &m3;
  vkGetPhysicalDeviceProperties2(physical_device, &p2);
  max_allocation_ = m3.maxMemoryAllocationSize;
}

MemoryAllocator::~MemoryAllocator() {
  for (auto& b : blocks_) {
    if (b->mapped) vkUnmapMemory(device_, b->memory);
    vkFreeMemory(device_, b->memory, nullptr);
  }
}

uint32_t MemoryAllocator::choose_type(uint32_t type_bits, MemoryUsage usage) const {
  if (usage == MemoryUsage::Stream) {
    constexpr VkMemoryPropertyFlags kMappedLocal =
        VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT | VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT;
    int best = -1;
    for (uint32_t i = 0; options_.stream_in_device_memory && i < props_.memoryTypeCount; ++i) {
      const VkMemoryType& t = props_.memoryTypes[i];
      if (!(type_bits & (1u << i)) || (t.propertyFlags & kMappedLocal) != kMappedLocal ||
          props_.memoryHeaps[t.heapIndex].size < kLargeHostVisibleHeap)
        continue;
      if (best < 0 || (t.propertyFlags & VK_MEMORY_PROPERTY_HOST_COHERENT_BIT)) best = int(i);
    }
    return best >= 0 ? uint32_t(best) : choose_type(type_bits, MemoryUsage::Upload);
  }
  VkMemoryPropertyFlags required = 0, preferred = 0, avoided = 0;
  switch (usage) {
    case MemoryUsage::Device:
      preferred = VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT;
      avoided = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT;  // keep BAR memory for staging
      break;
    case MemoryUsage::Upload:
    case MemoryUsage::Stream:  // handled above
      required = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT;
      preferred = VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
      break;
    case MemoryUsage::Readback:
      required = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT;
      preferred = VK_MEMORY_PROPERTY_HOST_CACHED_BIT;
      avoided = VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT;  // uncached BAR reads are slow
      break;
  }
  int best = -1, best_score = -1;
  for (uint32_t i = 0; i < props_.memoryTypeCount; ++i) {
    if (!(type_bits & (1u << i))) continue;
    VkMemoryPropertyFlags f = props_.memoryTypes[i].propertyFlags;
    if ((f & required) != required) continue;
    int score = ((f & preferred) == preferred ? 4 : 0) + ((f & avoided) ? 0 : 2) +
                ((f & VK_MEMORY_PROPERTY_HOST_COHERENT_BIT) ? 1 : 0);
    if (score > best_score) best = static_cast<int>(i), best_score = score;
  }
  if (best < 0)
    throw Error(ErrorKind::Unsupported, "no memory type fits the requested buffer usage");
  return static_cast<uint32_t>(best);
}

VkDeviceMemory MemoryAllocator::allocate_device_memory(VkDeviceSize size, uint32_t type,
                                                       const std::string& what) {
  if (options_.budget && stats_.block_bytes + size > options_.budget)
    throw Error(ErrorKind::OutOfMemory, what + ": needs " + mib(size) +
                                            " more device memory, but the budget of " +
                                            mib(options_.budget) + " has " +
                                            mib(options_.budget - stats_.block_bytes) + " left");
  VkMemoryAllocateInfo ai{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
  ai.allocationSize = size;
  ai.memoryTypeIndex = type;
  VkDeviceMemory memory = VK_NULL_HANDLE;
  VkResult r = faults_ && faults_->allocations.fires()
                   ? faults_->allocations.result.load()
                   : vkAllocateMemory(device_, &ai, nullptr, &memory);
  if (r != VK_SUCCESS) check_vk(r, ("vkAllocateMemory(" + mib(size) + ") for " + what).c_str());
  stats_.block_bytes += size;
  stats_.peak_block_bytes = std::max(stats_.peak_block_bytes, stats_.block_bytes);
  stats_.blocks++;
  return memory;
}

Allocation MemoryAllocator::allocate(const VkMemoryRequirements& req, MemoryUsage usage,
                                     const std::string& what) {
  uint32_t type = choose_type(req.memoryTypeBits, usage);
  if (usage != MemoryUsage::Stream) return allocate_of_type(req, type, what);
  uint32_t host = choose_type(req.memoryTypeBits, MemoryUsage::Upload);
  if (type == host) return allocate_of_type(req, type, what);
  try {
    return allocate_of_type(req, type, what);
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::OutOfMemory) throw;
    return allocate_of_type(req, host, what);  // the mapped device heap is full
  }
}

Allocation MemoryAllocator::allocate_of_type(const VkMemoryRequirements& req, uint32_t type,
                                             const std::string& what) {
  VkMemoryPropertyFlags flags = props_.memoryTypes[type].propertyFlags;
  bool host_visible = flags & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT;
  // Host-visible ranges are atom-aligned at both ends, so flushing or invalidating one
  // allocation never touches its neighbours' bytes.
  VkDeviceSize alignment = host_visible ? std::max(req.alignment, atom_) : req.alignment;
  VkDeviceSize size = host_visible ? align_up(req.size, atom_) : req.size;
  if (max_allocation_ && size > max_allocation_)
    throw Error(ErrorKind::OutOfMemory, what + ": " + mib(size) +
                                            " exceeds the device's maxMemoryAllocationSize of " +
                                            mib(max_allocation_));

  std::lock_guard<std::mutex> lock(mutex_);
  MemoryBlock* block = nullptr;
  VkDeviceSize offset = kNoFit;
  for (auto& b : blocks_) {
    if (b->type_index != type || b->dedicated) continue;
    offset = b->take(size, alignment);
    if (offset != kNoFit) {
      block = b.get();
      break;
    }
  }
  if (!block) {
    auto b = std::make_unique<MemoryBlock>();
    b->dedicated = size > options_.block_size / 2;
    b->size = b->dedicated ? size : options_.block_size;
    if (max_allocation_) b->size = std::min(b->size, max_allocation_);
    if (options_.budget) {
      // Under a budget, empty blocks kept for reuse (of any memory type) go before the new one
      // could fail, and a new shared block takes a quarter of what is left at most: a device
      // with several memory types (device-local, staging) needs a block of each.
      if (stats_.block_bytes + size > options_.budget) release_empty_blocks();
      if (!b->dedicated && stats_.block_bytes < options_.budget)
        b->size = std::max(size, std::min(b->size, (options_.budget - stats_.block_bytes) / 4));
    }
    b->type_index = type;
    b->memory = allocate_device_memory(b->size, type, what);
    if (host_visible) {
      VkResult r = vkMapMemory(device_, b->memory, 0, VK_WHOLE_SIZE, 0, &b->mapped);
      if (r != VK_SUCCESS) {
        vkFreeMemory(device_, b->memory, nullptr);
        stats_.block_bytes -= b->size;
        stats_.blocks--;
        check_vk(r, ("vkMapMemory for " + what).c_str());
      }
    }
    b->free_ranges[0] = b->size;
    offset = b->take(size, alignment);
    block = b.get();
    blocks_.push_back(std::move(b));
  }
  stats_.used_bytes += size;
  Allocation a;
  a.memory = block->memory;
  a.offset = offset;
  a.size = size;
  a.type_index = type;
  a.block = block;
  a.mapped = block->mapped ? static_cast<uint8_t*>(block->mapped) + offset : nullptr;
  a.coherent = (flags & VK_MEMORY_PROPERTY_HOST_COHERENT_BIT) && !options_.force_non_coherent;
  return a;
}

void MemoryAllocator::free(Allocation& a) {
  if (!a) return;
  std::lock_guard<std::mutex> lock(mutex_);
  MemoryBlock* block = a.block;
  block->give_back(a.offset, a.size);
  stats_.used_bytes -= a.size;
  // Dedicated blocks go back at once; shared blocks stay for reuse until the allocator dies,
  // except that an empty block is released when another empty one of its type exists.
  if (block->used == 0) {
    bool release = block->dedicated;
    for (auto& b : blocks_)
      if (!release && b.get() != block && b->type_index == block->type_index && b->used == 0)
        release = true;
    if (release) release_block(block);
  }
  a = Allocation{};
}

void MemoryAllocator::release_block(MemoryBlock* block) {
  if (block->mapped) vkUnmapMemory(device_, block->memory);
  vkFreeMemory(device_, block->memory, nullptr);
  stats_.block_bytes -= block->size;
  stats_.blocks--;
  blocks_.erase(
      std::find_if(blocks_.begin(), blocks_.end(), [&](auto& b) { return b.get() == block; }));
}

void MemoryAllocator::release_empty_blocks() {
  std::vector<MemoryBlock*> empty;
  for (auto& b : blocks_)
    if (b->used == 0) empty.push_back(b.get());
  for (MemoryBlock* b : empty) release_block(b);
}

MemoryStats MemoryAllocator::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

}  // namespace vkgraph::vk
