// `vkgraph info`: what Vulkan reports about the devices and the one vkgraph chooses.
#include <cstdio>
#include <string>

#include "cli.h"
#include "vkgraph/vk/pipeline.h"

namespace vkgraph::cli {
namespace {

std::string flags_str(VkMemoryPropertyFlags f) {
  std::string s;
  auto add = [&](VkMemoryPropertyFlags bit, const char* n) {
    if (f & bit) s += (s.empty() ? "" : "|") + std::string(n);
  };
  add(VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, "DEVICE_LOCAL");
  add(VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT, "HOST_VISIBLE");
  add(VK_MEMORY_PROPERTY_HOST_COHERENT_BIT, "HOST_COHERENT");
  add(VK_MEMORY_PROPERTY_HOST_CACHED_BIT, "HOST_CACHED");
  add(VK_MEMORY_PROPERTY_LAZILY_ALLOCATED_BIT, "LAZILY_ALLOCATED");
  return s.empty() ? "0" : s;
}

const char* type_name(VkPhysicalDeviceType t) {
  switch (t) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU:
      return "discrete GPU";
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU:
      return "integrated GPU";
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU:
      return "virtual GPU";
    case VK_PHYSICAL_DEVICE_TYPE_CPU:
      return "CPU";
    default:
      return "other";
  }
}

std::string version_str(uint32_t v) {
  return std::to_string(VK_API_VERSION_MAJOR(v)) + "." + std::to_string(VK_API_VERSION_MINOR(v)) +
         "." + std::to_string(VK_API_VERSION_PATCH(v));
}

// The driver's own name and version string where it reports them (Vulkan 1.2), e.g.
// "NVIDIA 580.159.04" or "llvmpipe Mesa 22.3.6 (LLVM 15.0.6)".
std::string driver_str(VkPhysicalDevice device, const VkPhysicalDeviceProperties& p) {
  if (p.apiVersion < VK_API_VERSION_1_2) return "unknown";
  VkPhysicalDeviceDriverProperties driver{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES};
  VkPhysicalDeviceProperties2 p2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
  p2.pNext = &driver;
  vkGetPhysicalDeviceProperties2(device, &p2);
  return std::string(driver.driverName) + " " + driver.driverInfo;
}

}  // namespace

int run_info(const Common& common) {
  auto devices = vk::Context::list_devices();
  std::printf("Vulkan devices:\n");
  for (auto& d : devices)
    std::printf("  [%u] %s (%s, Vulkan %s)\n", d.index, d.name.c_str(), type_name(d.type),
                version_str(d.api_version).c_str());
  auto ctx = vk::Context::create(common.context);
  const auto& p = ctx->properties();
  const auto& f = ctx->features();
  const auto& l = ctx->limits();
  std::printf("chosen: [%u] %s, queue family %u%s\n", ctx->device_index(), p.deviceName,
              ctx->queue_family(), ctx->validation_enabled() ? ", validation on" : "");
  std::printf("driver: %s (driverVersion 0x%08x, vendor 0x%04x, device 0x%04x)\n",
              driver_str(ctx->physical_device(), p).c_str(), p.driverVersion, p.vendorID,
              p.deviceID);
  print_pipeline_cache(*ctx);
  const auto& mem = ctx->allocator().properties();
  std::printf("memory heaps:\n");
  for (uint32_t i = 0; i < mem.memoryHeapCount; ++i)
    std::printf(
        "  heap %u: %.1f GiB%s\n", i, mem.memoryHeaps[i].size / double(1ull << 30),
        (mem.memoryHeaps[i].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT) ? " device-local" : "");
  std::printf("memory types:\n");
  for (uint32_t i = 0; i < mem.memoryTypeCount; ++i)
    std::printf("  type %u (heap %u): %s\n", i, mem.memoryTypes[i].heapIndex,
                flags_str(mem.memoryTypes[i].propertyFlags).c_str());
  auto yes = [](bool b) { return b ? "yes" : "no"; };
  std::printf("features:\n");
  std::printf("  16-bit storage %s, fp16 arithmetic %s, int64 %s\n", yes(f.storage_buffer_16bit),
              yes(f.shader_float16), yes(f.shader_int64));
  std::printf("  subgroup size %u, subgroup arithmetic %s\n", f.subgroup_size,
              yes(f.subgroup_arithmetic));
  std::printf(
      "  cooperative matrix: NV %s, KHR %s; fp16 16x16x16 NV kernel %s; int8 16x%ux32 NV "
      "kernel %s\n",
      yes(f.cooperative_matrix_nv), yes(f.cooperative_matrix_khr), yes(f.coopmat_f16_16x16x16),
      f.coopmat_s8_n, yes(f.coopmat_s8_n != 0));
  std::printf("  integer dot product %s (4x8-bit packed accelerated %s)\n",
              yes(f.integer_dot_product), yes(f.integer_dot_4x8_accelerated));
  std::printf("  external host memory %s (alignment %llu)\n", yes(f.external_memory_host),
              static_cast<unsigned long long>(f.min_imported_host_pointer_alignment));
  std::printf("  timestamps %s (period %.2f ns), timeline semaphores %s\n", yes(f.timestamps),
              f.timestamp_period_ns, yes(f.timeline_semaphores));
  std::printf("limits:\n");
  std::printf("  maxStorageBufferRange %u, nonCoherentAtomSize %llu\n", l.maxStorageBufferRange,
              static_cast<unsigned long long>(l.nonCoherentAtomSize));
  std::printf("  maxComputeSharedMemorySize %u, maxComputeWorkGroupInvocations %u\n",
              l.maxComputeSharedMemorySize, l.maxComputeWorkGroupInvocations);
  std::printf("  maxComputeWorkGroupCount %u x %u x %u, maxPushConstantsSize %u\n",
              l.maxComputeWorkGroupCount[0], l.maxComputeWorkGroupCount[1],
              l.maxComputeWorkGroupCount[2], l.maxPushConstantsSize);
  std::printf("embedded shaders: %zu\n", vk::shader_names().size());
  return 0;
}

}  // namespace vkgraph::cli
