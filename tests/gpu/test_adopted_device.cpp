// A Context that adopts a device the test created itself (validation enabled in code) and
// leaves it alive; buffers of another queue family change owner around each execution.
#include "external_io_app.h"
#include "graph_testing.h"

namespace vkgraph::testing {
namespace {

using ops::BinaryOp;
using vk::SyncEvent;

// --- a device the app created ---

// An instance and device the test creates itself, with validation and synchronization
// validation enabled in code and its own messenger; vkgraph only borrows them.
class OwnDevice {
 public:
  // With `second_family`, also a queue of another compute family for the app, where the
  // device has one (app_family == family otherwise).
  explicit OwnDevice(bool validation, bool second_family = false) {
    create_instance(validation);
    uint32_t n = 1;
    VkResult r = vkEnumeratePhysicalDevices(instance, &n, &physical);
    if (r != VK_INCOMPLETE) vk::check_vk(r, "test vkEnumeratePhysicalDevices");
    if (n == 0) throw Error(ErrorKind::Unsupported, "test: no Vulkan device");
    create_device(second_family);
  }
  ~OwnDevice() { destroy(); }
  OwnDevice(const OwnDevice&) = delete;
  OwnDevice& operator=(const OwnDevice&) = delete;

  vk::ExternalDevice external() const { return {instance, physical, device, queue, family}; }

  // Fills a buffer on the app's queue and reads it back: the device and queue still work.
  uint32_t fill_and_read(uint32_t value) {
    AppBuffer b(physical, device, 256, VK_BUFFER_USAGE_TRANSFER_DST_BIT, kHostMemory);
    VkCommandPoolCreateInfo pci{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
    pci.queueFamilyIndex = family;
    VkCommandPool pool;
    vk::check_vk(vkCreateCommandPool(device, &pci, nullptr, &pool), "test pool");
    VkCommandBufferAllocateInfo ai{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
    ai.commandPool = pool;
    ai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
    ai.commandBufferCount = 1;
    VkCommandBuffer cb;
    vk::check_vk(vkAllocateCommandBuffers(device, &ai, &cb), "test cb");
    VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    vkBeginCommandBuffer(cb, &bi);
    vkCmdFillBuffer(cb, b.handle(), 0, 256, value);
    VkMemoryBarrier mb{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
    mb.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT;
    mb.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
    vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &mb,
                         0, nullptr, 0, nullptr);
    vkEndCommandBuffer(cb);
    VkFenceCreateInfo fci{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    VkFence fence;
    vk::check_vk(vkCreateFence(device, &fci, nullptr, &fence), "test fence");
    VkSubmitInfo si{VK_STRUCTURE_TYPE_SUBMIT_INFO};
    si.commandBufferCount = 1;
    si.pCommandBuffers = &cb;
    vk::check_vk(vkQueueSubmit(queue, 1, &si, fence), "test submit");
    vk::check_vk(vkWaitForFences(device, 1, &fence, VK_TRUE, UINT64_MAX), "test wait");
    uint32_t got;
    std::memcpy(&got, b.floats(), sizeof got);
    vkDestroyFence(device, fence, nullptr);
    vkDestroyCommandPool(device, pool, nullptr);
    return got;
  }

  // The app's teardown; the validation layer reports objects vkgraph left behind here.
  void destroy() {
    if (device) vkDestroyDevice(device, nullptr);
    device = VK_NULL_HANDLE;
    if (messenger) {
      auto destroy_messenger = reinterpret_cast<PFN_vkDestroyDebugUtilsMessengerEXT>(
          vkGetInstanceProcAddr(instance, "vkDestroyDebugUtilsMessengerEXT"));
      destroy_messenger(instance, messenger, nullptr);
      messenger = VK_NULL_HANDLE;
    }
    if (instance) vkDestroyInstance(instance, nullptr);
    instance = VK_NULL_HANDLE;
  }

  VkInstance instance = VK_NULL_HANDLE;
  VkDebugUtilsMessengerEXT messenger = VK_NULL_HANDLE;
  VkPhysicalDevice physical = VK_NULL_HANDLE;
  VkDevice device = VK_NULL_HANDLE;
  VkQueue queue = VK_NULL_HANDLE;
  uint32_t family = 0;
  VkQueue app_queue = VK_NULL_HANDLE;
  uint32_t app_family = 0;
  std::vector<std::string> messages;

 private:
  static VKAPI_ATTR VkBool32 VKAPI_CALL on_message(VkDebugUtilsMessageSeverityFlagBitsEXT,
                                                   VkDebugUtilsMessageTypeFlagsEXT,
                                                   const VkDebugUtilsMessengerCallbackDataEXT* data,
                                                   void* user) {
    static_cast<OwnDevice*>(user)->messages.emplace_back(data && data->pMessage ? data->pMessage
                                                                                : "(none)");
    return VK_FALSE;
  }

  void create_instance(bool validation) {
    vk::QueueSubmitValidationScope scope;  // this test creates its own instance
    VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
    app.pApplicationName = "vkgraph adopt test";
    app.apiVersion = VK_API_VERSION_1_1;  // the least vkgraph supports
    VkValidationFeatureEnableEXT enables[] = {
        VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT};
    VkValidationFeaturesEXT features{VK_STRUCTURE_TYPE_VALIDATION_FEATURES_EXT};
    features.enabledValidationFeatureCount = 1;
    features.pEnabledValidationFeatures = enables;
    VkDebugUtilsMessengerCreateInfoEXT mci{VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT};
    mci.messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT |
                          VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
    mci.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT |
                      VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                      VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT;
    mci.pfnUserCallback = &OwnDevice::on_message;
    mci.pUserData = this;
    features.pNext = &mci;  // also catches vkCreateInstance / vkDestroyInstance
    const char* layer = "VK_LAYER_KHRONOS_validation";
    const char* exts[] = {VK_EXT_DEBUG_UTILS_EXTENSION_NAME,
                          VK_EXT_VALIDATION_FEATURES_EXTENSION_NAME};
    VkInstanceCreateInfo ci{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
    ci.pApplicationInfo = &app;
    if (validation) {
      ci.pNext = &features;
      ci.enabledLayerCount = 1;
      ci.ppEnabledLayerNames = &layer;
      ci.enabledExtensionCount = 2;
      ci.ppEnabledExtensionNames = exts;
    }
    vk::check_vk(vkCreateInstance(&ci, nullptr, &instance), "test vkCreateInstance");
    if (validation) {
      auto create = reinterpret_cast<PFN_vkCreateDebugUtilsMessengerEXT>(
          vkGetInstanceProcAddr(instance, "vkCreateDebugUtilsMessengerEXT"));
      vk::check_vk(create(instance, &mci, nullptr, &messenger), "test messenger");
    }
  }

  // Everything the ExternalDevice comment asks for where the device offers it; on a 1.1
  // instance the promoted features need their extensions.
  void create_device(bool second_family) {
    uint32_t nq = 0;
    vkGetPhysicalDeviceQueueFamilyProperties(physical, &nq, nullptr);
    std::vector<VkQueueFamilyProperties> qfs(nq);
    vkGetPhysicalDeviceQueueFamilyProperties(physical, &nq, qfs.data());
    family = nq;
    for (uint32_t i = 0; i < nq && family == nq; ++i)
      if (qfs[i].queueFlags & VK_QUEUE_COMPUTE_BIT) family = i;
    if (family == nq) throw Error(ErrorKind::Unsupported, "test: no compute queue");
    app_family = family;
    for (uint32_t i = family + 1; i < nq && second_family && app_family == family; ++i)
      if (qfs[i].queueFlags & VK_QUEUE_COMPUTE_BIT) app_family = i;

    uint32_t ne = 0;
    vkEnumerateDeviceExtensionProperties(physical, nullptr, &ne, nullptr);
    std::vector<VkExtensionProperties> available(ne);
    vkEnumerateDeviceExtensionProperties(physical, nullptr, &ne, available.data());
    std::vector<const char*> exts;
    for (const char* want :
         {"VK_KHR_8bit_storage", "VK_KHR_shader_float16_int8", "VK_KHR_timeline_semaphore",
          "VK_KHR_external_memory", "VK_EXT_external_memory_host"})
      for (auto& e : available)
        if (std::strcmp(e.extensionName, want) == 0) exts.push_back(want);
    auto has = [&](const char* name) {
      return std::any_of(exts.begin(), exts.end(),
                         [&](const char* e) { return std::strcmp(e, name) == 0; });
    };

    VkPhysicalDeviceFeatures2 f2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
    VkPhysicalDevice16BitStorageFeatures s16{
        VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES};
    VkPhysicalDevice8BitStorageFeatures s8{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_8BIT_STORAGE_FEATURES};
    VkPhysicalDeviceShaderFloat16Int8Features f16{
        VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES};
    VkPhysicalDeviceTimelineSemaphoreFeatures tl{
        VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_TIMELINE_SEMAPHORE_FEATURES};
    f2.pNext = &s16;
    void** tail = &s16.pNext;
    if (has("VK_KHR_8bit_storage")) *tail = &s8, tail = &s8.pNext;
    if (has("VK_KHR_shader_float16_int8")) *tail = &f16, tail = &f16.pNext;
    if (has("VK_KHR_timeline_semaphore")) *tail = &tl, tail = &tl.pNext;
    vkGetPhysicalDeviceFeatures2(physical, &f2);
    // Enable exactly what is queried: the structs keep their chain, the values what exists.
    VkPhysicalDeviceFeatures2 enable{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
    enable.pNext = f2.pNext;
    enable.features.shaderInt64 = f2.features.shaderInt64;
    s16 = {VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES, s16.pNext,
           s16.storageBuffer16BitAccess};
    s8 = {VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_8BIT_STORAGE_FEATURES, s8.pNext,
          s8.storageBuffer8BitAccess};
    f16 = {VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES, f16.pNext,
           f16.shaderFloat16};

    float priority = 1.f;
    VkDeviceQueueCreateInfo qci[2] = {{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO},
                                      {VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO}};
    for (uint32_t i = 0; i < 2; ++i) {
      qci[i].queueFamilyIndex = i == 0 ? family : app_family;
      qci[i].queueCount = 1;
      qci[i].pQueuePriorities = &priority;
    }
    VkDeviceCreateInfo dci{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
    dci.pNext = &enable;
    dci.queueCreateInfoCount = app_family == family ? 1 : 2;
    dci.pQueueCreateInfos = qci;
    dci.enabledExtensionCount = static_cast<uint32_t>(exts.size());
    dci.ppEnabledExtensionNames = exts.data();
    vk::check_vk(vkCreateDevice(physical, &dci, nullptr, &device), "test vkCreateDevice");
    vkGetDeviceQueue(device, family, 0, &queue);
    vkGetDeviceQueue(device, app_family, 0, &app_queue);
  }
};

class AdoptedDevice : public ExternalIO {
 protected:
  void run_across_queue_families(SyncFaults faults, const std::string& what);
};

TEST_F(AdoptedDevice, RunsOnTheAppsDeviceAndLeavesItAlive) {
  const char* env = std::getenv("VKGRAPH_VALIDATION");
  const bool validation = !(env && std::string(env) == "0");
  OwnDevice own(validation);
  {
    auto ctx = vk::Context::adopt(own.external());
    EXPECT_FALSE(ctx->owns_device());
    // Cooperative matrix needs an extension the app would have had to enable and say so.
    EXPECT_FALSE(ctx->features().coopmat_f16_16x16x16);
    EXPECT_EQ(ctx->features().coopmat_s8_n, 0u);
    EXPECT_EQ(ctx->device(), own.device);
    EXPECT_EQ(ctx->queue(), own.queue);
    auto chain = make_chain(ctx, {}, Producer::Compute);
    for (int it = 0; it < 2; ++it) {
      chain->new_data(random_floats(kN));
      chain->run_in_queue_order();
      chain->check("adopted, iteration " + std::to_string(it));
    }
  }  // graph, app objects and Context gone; the device must not be
  {
    // `features` overrides what vkgraph assumes the app enabled.
    vk::ExternalDevice ext = own.external();
    vk::DeviceFeatures none;
    ext.features = none;
    auto ctx = vk::Context::adopt(ext);
    EXPECT_FALSE(ctx->features().shader_int64);
    EXPECT_FALSE(ctx->features().timeline_semaphores);
    EXPECT_FALSE(ctx->features().external_memory_host);
  }
  EXPECT_EQ(own.fill_and_read(0x3f800000u), 0x3f800000u);
  own.destroy();
  for (const std::string& m : own.messages) ADD_FAILURE() << "validation: " << m;
}

// Between executions P and Q belong to the app's queue family, not the graph's: the graph
// acquires them at entry and releases them at exit, the app does the opposite halves, and
// semaphores order the two queues. Needs a second compute queue family (NVIDIA has three;
// lavapipe one, where the test is skipped).
void AdoptedDevice::run_across_queue_families(SyncFaults faults, const std::string& what) {
  const char* env = std::getenv("VKGRAPH_VALIDATION");
  OwnDevice own(!(env && std::string(env) == "0"), /*second_family=*/true);
  if (own.app_family == own.family) GTEST_SKIP() << "the device has one compute queue family";
  {
    auto ctx = vk::Context::adopt(own.external());
    Chain chain(ctx, {}, Producer::Compute, random_floats(kN),
                AppQueue{own.app_queue, own.app_family});
    inject_sync_faults(chain.graph, faults);
    VkSemaphore produced = chain.app.semaphore(false), computed = chain.app.semaphore(false);
    for (int it = 0; it < 3; ++it) {
      chain.new_data(random_floats(kN));
      chain.app.submit(chain.producer, {{}, {{produced}}});
      chain.graph.submit({{{produced, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT}}, {{computed}}});
      chain.app.submit(chain.consumer, {{{computed, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT}}, {}},
                       chain.done);
      chain.app.wait(chain.done);
      chain.graph.wait();
      chain.check(what + ", iteration " + std::to_string(it));
    }
  }
  own.destroy();
  if (faults.omit_external_entry_barrier) {
    // The graph never acquires what the app released: the layer must say so.
    EXPECT_FALSE(own.messages.empty()) << what << ": no validation message";
  } else {
    for (const std::string& m : own.messages) ADD_FAILURE() << what << ": validation: " << m;
  }
}

TEST_F(AdoptedDevice, BuffersOfAnotherQueueFamilyChangeOwnerAroundEachExecution) {
  run_across_queue_families({}, "ownership transfer");
}

TEST_F(AdoptedDevice, MissingAcquireOfAnotherFamilysBufferIsReported) {
  run_across_queue_families({.omit_external_entry_barrier = true}, "entry barrier dropped");
}

TEST_F(AdoptedDevice, OwnershipTransferNeedsAForeignFamilyThatExists) {
  auto ctx = shared_context();
  ComputeGraph g(ctx);
  build_graph(g, random_floats(kN), IOMode::External, "x", "y");
  AppBuffer x(*ctx, kBytes, kAppUsage, kHostMemory);
  ExternalBuffer b = x.external();
  b.queue_family = ctx->queue_family_count();
  expect_error([&] { g.bind_external("x", b); }, ErrorKind::InvalidArgument,
               "queue family " + std::to_string(b.queue_family) + " does not exist");
  // The graph's own family is no transfer at all.
  b.queue_family = ctx->queue_family();
  g.bind_external("x", b);
  expect_error([&] { g.app_release("x", 0); }, ErrorKind::InvalidArgument,
               "not bound to a buffer of another queue family");
  expect_error([&] { g.app_acquire("nope", 0); }, ErrorKind::InvalidArgument,
               "no input or output named 'nope'");
}

}  // namespace
}  // namespace vkgraph::testing
