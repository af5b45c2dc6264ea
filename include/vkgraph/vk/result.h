#pragma once
// VkResult to vkgraph::Error, for every file that calls Vulkan. Kept apart from context.h so
// that the allocator (memory.h, which context.h includes) can use it without an include loop.
#include <vulkan/vulkan.h>

namespace vkgraph::vk {

// Throws vkgraph::Error when `result` is not VK_SUCCESS; `what` names the failing call/object.
// Out-of-memory results are ErrorKind::OutOfMemory, device loss DeviceLost, missing layers,
// extensions and features Unsupported, anything else Vulkan.
void check_vk(VkResult result, const char* what);
const char* vk_result_name(VkResult result);

}  // namespace vkgraph::vk
