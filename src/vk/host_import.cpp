#include "vkgraph/vk/host_import.h"

#include <cstdint>

#include "vk/faults.h"
#include "vkgraph/error.h"
#include "vkgraph/vk/context.h"
#include "vkgraph/vk/result.h"
#include "vkgraph/vk/sync_trace.h"

namespace vkgraph::vk {

bool HostImport::possible(const Context& context, const void* pointer, VkDeviceSize size) {
  const DeviceFeatures& f = context.features();
  VkDeviceSize align = f.min_imported_host_pointer_alignment;
  return f.external_memory_host && align && size &&
         reinterpret_cast<uintptr_t>(pointer) % align == 0 && size % align == 0;
}

HostImport::HostImport(Context& context, void* pointer, VkDeviceSize size, std::string name)
    : context_(context), size_(size), name_(std::move(name)) {
  if (!possible(context, pointer, size))
    throw Error(ErrorKind::Unsupported,
                "host import of '" + name_ +
                    "': needs VK_EXT_external_memory_host and pointer and "
                    "size aligned to " +
                    std::to_string(context.features().min_imported_host_pointer_alignment));
  VkDevice device = context.device();
  auto get_props = reinterpret_cast<PFN_vkGetMemoryHostPointerPropertiesEXT>(
      vkGetDeviceProcAddr(device, "vkGetMemoryHostPointerPropertiesEXT"));
  check(get_props != nullptr, ErrorKind::Unsupported,
        "vkGetMemoryHostPointerPropertiesEXT missing");
  VkMemoryHostPointerPropertiesEXT props{VK_STRUCTURE_TYPE_MEMORY_HOST_POINTER_PROPERTIES_EXT};
  check_vk(
      get_props(device, VK_EXTERNAL_MEMORY_HANDLE_TYPE_HOST_ALLOCATION_BIT_EXT, pointer, &props),
      "vkGetMemoryHostPointerPropertiesEXT");

  VkExternalMemoryBufferCreateInfo ext{VK_STRUCTURE_TYPE_EXTERNAL_MEMORY_BUFFER_CREATE_INFO};
  ext.handleTypes = VK_EXTERNAL_MEMORY_HANDLE_TYPE_HOST_ALLOCATION_BIT_EXT;
  VkBufferCreateInfo bci{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  bci.pNext = &ext;
  bci.size = size;
  bci.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
              VK_BUFFER_USAGE_TRANSFER_DST_BIT;
  create_object(context, "vkCreateBuffer (host import)",
                [&] { return vkCreateBuffer(device, &bci, nullptr, &buffer_); });
  VkMemoryRequirements req;
  vkGetBufferMemoryRequirements(device, buffer_, &req);
  uint32_t bits = req.memoryTypeBits & props.memoryTypeBits;
  if (!bits) {
    vkDestroyBuffer(device, buffer_, nullptr);
    throw Error(ErrorKind::Unsupported, "host import of '" + name_ + "': no memory type fits");
  }
  uint32_t type = context.allocator().choose_type(bits, MemoryUsage::Readback);
  coherent_ = (context.allocator().properties().memoryTypes[type].propertyFlags &
               VK_MEMORY_PROPERTY_HOST_COHERENT_BIT) &&
              !context.force_non_coherent();
  VkImportMemoryHostPointerInfoEXT import{VK_STRUCTURE_TYPE_IMPORT_MEMORY_HOST_POINTER_INFO_EXT};
  import.handleType = VK_EXTERNAL_MEMORY_HANDLE_TYPE_HOST_ALLOCATION_BIT_EXT;
  import.pHostPointer = pointer;
  VkMemoryAllocateInfo ai{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
  ai.pNext = &import;
  ai.allocationSize = size;
  ai.memoryTypeIndex = type;
  VkResult r = vkAllocateMemory(device, &ai, nullptr, &memory_);
  if (r == VK_SUCCESS) r = vkBindBufferMemory(device, buffer_, memory_, 0);
  // Flush and invalidate need the memory mapped; the mapping aliases the app's pointer.
  void* mapped = nullptr;
  if (r == VK_SUCCESS && !coherent_) r = vkMapMemory(device, memory_, 0, VK_WHOLE_SIZE, 0, &mapped);
  if (r != VK_SUCCESS) {
    if (memory_) vkFreeMemory(device, memory_, nullptr);
    vkDestroyBuffer(device, buffer_, nullptr);
    check_vk(r, ("importing host memory for '" + name_ + "'").c_str());
  }
}

HostImport::~HostImport() {
  if (!coherent_) vkUnmapMemory(context_.device(), memory_);
  vkDestroyBuffer(context_.device(), buffer_, nullptr);
  vkFreeMemory(context_.device(), memory_, nullptr);
}

namespace {
void trace(Context& ctx, SyncEvent::Type type, VkBuffer buffer, VkDeviceSize size) {
  if (SyncTrace* t = ctx.trace()) {
    SyncEvent e{type};
    e.resource = reinterpret_cast<uint64_t>(buffer);
    e.size = size;
    e.coherent = false;
    t->host(std::move(e));
  }
}
}  // namespace

void HostImport::flush() {
  if (coherent_) return;
  VkMappedMemoryRange r{VK_STRUCTURE_TYPE_MAPPED_MEMORY_RANGE, nullptr, memory_, 0, VK_WHOLE_SIZE};
  check_vk(vkFlushMappedMemoryRanges(context_.device(), 1, &r), "vkFlushMappedMemoryRanges");
  trace(context_, SyncEvent::Type::Flush, buffer_, size_);
}

void HostImport::invalidate() {
  if (coherent_) return;
  VkMappedMemoryRange r{VK_STRUCTURE_TYPE_MAPPED_MEMORY_RANGE, nullptr, memory_, 0, VK_WHOLE_SIZE};
  check_vk(vkInvalidateMappedMemoryRanges(context_.device(), 1, &r),
           "vkInvalidateMappedMemoryRanges");
  trace(context_, SyncEvent::Type::Invalidate, buffer_, size_);
}

}  // namespace vkgraph::vk
