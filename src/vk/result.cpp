#include "vkgraph/vk/result.h"

#include <string>

#include "vkgraph/error.h"

namespace vkgraph::vk {

const char* vk_result_name(VkResult result) {
  switch (result) {
#define VKG_CASE(x) \
  case x:           \
    return #x;
    VKG_CASE(VK_SUCCESS)
    VKG_CASE(VK_NOT_READY)
    VKG_CASE(VK_TIMEOUT)
    VKG_CASE(VK_INCOMPLETE)
    VKG_CASE(VK_ERROR_OUT_OF_HOST_MEMORY)
    VKG_CASE(VK_ERROR_OUT_OF_DEVICE_MEMORY)
    VKG_CASE(VK_ERROR_INITIALIZATION_FAILED)
    VKG_CASE(VK_ERROR_DEVICE_LOST)
    VKG_CASE(VK_ERROR_MEMORY_MAP_FAILED)
    VKG_CASE(VK_ERROR_LAYER_NOT_PRESENT)
    VKG_CASE(VK_ERROR_EXTENSION_NOT_PRESENT)
    VKG_CASE(VK_ERROR_FEATURE_NOT_PRESENT)
    VKG_CASE(VK_ERROR_INCOMPATIBLE_DRIVER)
    VKG_CASE(VK_ERROR_TOO_MANY_OBJECTS)
    VKG_CASE(VK_ERROR_FORMAT_NOT_SUPPORTED)
    VKG_CASE(VK_ERROR_FRAGMENTED_POOL)
    VKG_CASE(VK_ERROR_OUT_OF_POOL_MEMORY)
    VKG_CASE(VK_ERROR_INVALID_EXTERNAL_HANDLE)
#undef VKG_CASE
    default:
      return "VkResult(unknown)";
  }
}

void check_vk(VkResult result, const char* what) {
  if (result == VK_SUCCESS) return;
  std::string msg = std::string(what) + " failed: " + vk_result_name(result);
  switch (result) {
    case VK_ERROR_OUT_OF_HOST_MEMORY:
    case VK_ERROR_OUT_OF_DEVICE_MEMORY:
    case VK_ERROR_OUT_OF_POOL_MEMORY:
      throw Error(ErrorKind::OutOfMemory, msg);
    case VK_ERROR_DEVICE_LOST:
      throw Error(ErrorKind::DeviceLost, msg);
    case VK_ERROR_LAYER_NOT_PRESENT:
    case VK_ERROR_EXTENSION_NOT_PRESENT:
    case VK_ERROR_FEATURE_NOT_PRESENT:
    case VK_ERROR_INCOMPATIBLE_DRIVER:
      throw Error(ErrorKind::Unsupported, msg);
    default:
      throw Error(ErrorKind::Vulkan, msg);
  }
}

}  // namespace vkgraph::vk
