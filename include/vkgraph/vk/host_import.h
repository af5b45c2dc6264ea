#pragma once
// Host memory imported as a VkBuffer (VK_EXT_external_memory_host): the GPU reads and writes
// the app's pointer directly. Needs a pointer and size aligned to
// minImportedHostPointerAlignment; the memory must outlive this object.
#include <vulkan/vulkan.h>

#include <string>

namespace vkgraph::vk {

class Context;

class HostImport {
 public:
  // Throws Unsupported when the device lacks the extension or the pointer/size are not
  // suitably aligned (callers fall back to a copy then; see ComputeGraph::bind_host_pointer).
  HostImport(Context& context, void* pointer, VkDeviceSize size, std::string name);
  ~HostImport();
  HostImport(const HostImport&) = delete;
  HostImport& operator=(const HostImport&) = delete;

  static bool possible(const Context& context, const void* pointer, VkDeviceSize size);

  VkBuffer buffer() const { return buffer_; }
  VkDeviceSize size() const { return size_; }
  bool coherent() const { return coherent_; }
  // For non-coherent memory types: host writes -> device, device writes -> host.
  void flush();
  void invalidate();

 private:
  Context& context_;
  VkBuffer buffer_ = VK_NULL_HANDLE;
  VkDeviceMemory memory_ = VK_NULL_HANDLE;
  VkDeviceSize size_;
  bool coherent_ = true;
  std::string name_;
};

}  // namespace vkgraph::vk
