#include "vkgraph/vk/context.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstring>

#include "vk/faults.h"
#include "vk/pipeline_disk_cache.h"
#include "vkgraph/error.h"
#include "vkgraph/vk/pipeline.h"
#include "vkgraph/vk/result.h"
#include "vkgraph/vk/sync_trace.h"

namespace vkgraph::vk {

namespace {

// The feature structures vkgraph queries and enables, linked into one pNext chain: the same
// chain serves vkGetPhysicalDeviceFeatures2 (what the device has) and vkCreateDevice (what is
// enabled), so the two never list different structures. The memory-model and
// cooperative-matrix structures are linked only when asked for, since a device without their
// extensions must not see them. Not copyable: the chain points into itself.
struct FeatureChain {
  VkPhysicalDeviceFeatures2 base{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  VkPhysicalDevice16BitStorageFeatures storage16{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES};
  VkPhysicalDevice8BitStorageFeatures storage8{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_8BIT_STORAGE_FEATURES};
  VkPhysicalDeviceShaderFloat16Int8Features float16{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES};
  VkPhysicalDeviceTimelineSemaphoreFeatures timeline{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_TIMELINE_SEMAPHORE_FEATURES};
  VkPhysicalDeviceVulkanMemoryModelFeatures memory_model{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_MEMORY_MODEL_FEATURES};
  VkPhysicalDeviceCooperativeMatrixFeaturesNV coopmat{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV};
  VkPhysicalDeviceShaderIntegerDotProductFeatures dot{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_INTEGER_DOT_PRODUCT_FEATURES};

  FeatureChain(bool with_memory_model, bool with_coopmat, bool with_dot) {
    base.pNext = &storage16;
    storage16.pNext = &storage8;
    storage8.pNext = &float16;
    float16.pNext = &timeline;
    void** tail = &timeline.pNext;
    if (with_memory_model) {
      *tail = &memory_model;
      tail = &memory_model.pNext;
    }
    if (with_coopmat) {
      *tail = &coopmat;
      tail = &coopmat.pNext;
    }
    if (with_dot) *tail = &dot;
  }
  FeatureChain(const FeatureChain&) = delete;
  FeatureChain& operator=(const FeatureChain&) = delete;
};

// The subgroup-scope cooperative-matrix shapes the device lists (none without the extension).
std::vector<VkCooperativeMatrixPropertiesNV> coopmat_shapes(VkInstance instance,
                                                            VkPhysicalDevice device) {
  auto get = reinterpret_cast<PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesNV>(
      vkGetInstanceProcAddr(instance, "vkGetPhysicalDeviceCooperativeMatrixPropertiesNV"));
  if (!get) return {};
  uint32_t count = 0;
  if (get(device, &count, nullptr) != VK_SUCCESS) return {};
  std::vector<VkCooperativeMatrixPropertiesNV> shapes(
      count, {VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_NV});
  if (get(device, &count, shapes.data()) != VK_SUCCESS) return {};
  shapes.resize(count);
  return shapes;
}

// Whether `shapes` has M x N x K with A and B of type `ab`, C and D of type `cd`, subgroup scope.
bool has_coopmat_shape(const std::vector<VkCooperativeMatrixPropertiesNV>& shapes, uint32_t m,
                       uint32_t n, uint32_t k, VkComponentTypeNV ab, VkComponentTypeNV cd) {
  return std::any_of(shapes.begin(), shapes.end(), [&](const VkCooperativeMatrixPropertiesNV& s) {
    return s.MSize == m && s.NSize == n && s.KSize == k && s.AType == ab && s.BType == ab &&
           s.CType == cd && s.DType == cd && s.scope == VK_SCOPE_SUBGROUP_NV;
  });
}

bool env_flag(const char* name) {
  const char* v = std::getenv(name);
  return v && *v && std::strcmp(v, "0") != 0;
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

bool has_layer(const char* name) {
  uint32_t n = 0;
  vkEnumerateInstanceLayerProperties(&n, nullptr);
  std::vector<VkLayerProperties> layers(n);
  vkEnumerateInstanceLayerProperties(&n, layers.data());
  for (auto& l : layers)
    if (std::strcmp(l.layerName, name) == 0) return true;
  return false;
}

std::vector<std::string> device_extensions(VkPhysicalDevice pd) {
  uint32_t n = 0;
  vkEnumerateDeviceExtensionProperties(pd, nullptr, &n, nullptr);
  std::vector<VkExtensionProperties> exts(n);
  vkEnumerateDeviceExtensionProperties(pd, nullptr, &n, exts.data());
  std::vector<std::string> names;
  for (auto& e : exts) names.emplace_back(e.extensionName);
  return names;
}

int type_rank(VkPhysicalDeviceType t) {
  switch (t) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU:
      return 4;
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU:
      return 3;
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU:
      return 2;
    case VK_PHYSICAL_DEVICE_TYPE_CPU:
      return 1;
    default:
      return 0;
  }
}

VkInstance create_bare_instance() {
  VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
  app.pApplicationName = "vkgraph";
  app.apiVersion = VK_API_VERSION_1_1;
  VkInstanceCreateInfo ci{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
  ci.pApplicationInfo = &app;
  VkInstance instance = VK_NULL_HANDLE;
  check_vk(vkCreateInstance(&ci, nullptr, &instance), "vkCreateInstance");
  return instance;
}

std::vector<VkPhysicalDevice> physical_devices(VkInstance instance) {
  uint32_t n = 0;
  check_vk(vkEnumeratePhysicalDevices(instance, &n, nullptr), "vkEnumeratePhysicalDevices");
  std::vector<VkPhysicalDevice> devices(n);
  check_vk(vkEnumeratePhysicalDevices(instance, &n, devices.data()), "vkEnumeratePhysicalDevices");
  return devices;
}

}  // namespace

namespace {
constexpr const char* kLayerEnables = "VK_LAYER_ENABLES";
constexpr const char* kQueueSubmitChecks =
    "VALIDATION_CHECK_ENABLE_SYNCHRONIZATION_VALIDATION_QUEUE_SUBMIT";
}  // namespace

QueueSubmitValidationScope::QueueSubmitValidationScope() {
  const char* old = std::getenv(kLayerEnables);
  had_ = old != nullptr;
  saved_ = old ? old : "";
  if (saved_.find(kQueueSubmitChecks) != std::string::npos) return;
  // The layer splits the list at ':'; a ',' would fuse our entry with the app's last one.
  std::string value = saved_.empty() ? kQueueSubmitChecks : saved_ + ":" + kQueueSubmitChecks;
  setenv(kLayerEnables, value.c_str(), 1);
  set_ = true;
}

QueueSubmitValidationScope::~QueueSubmitValidationScope() {
  if (set_) had_ ? setenv(kLayerEnables, saved_.c_str(), 1) : unsetenv(kLayerEnables);
}

struct DebugCallback {
  static VKAPI_ATTR VkBool32 VKAPI_CALL on_message(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                                   VkDebugUtilsMessageTypeFlagsEXT,
                                                   const VkDebugUtilsMessengerCallbackDataEXT* data,
                                                   void* user) {
    if (severity < VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT) return VK_FALSE;
    // The loader reports through the same messenger ("Loader Message"): notices about the
    // layers in VK_INSTANCE_LAYERS, a layer asked for twice, and so on. They say nothing about
    // how vkgraph uses Vulkan, so they are not validation errors.
    if (data && data->pMessageIdName && std::strcmp(data->pMessageIdName, "Loader Message") == 0)
      return VK_FALSE;
    std::string msg = data && data->pMessage ? data->pMessage : "(no message)";
    static_cast<Context*>(user)->add_validation_message(std::move(msg));
    return VK_FALSE;
  }
};

std::vector<PhysicalDeviceInfo> Context::list_devices() {
  VkInstance instance = create_bare_instance();
  std::vector<PhysicalDeviceInfo> out;
  auto devices = physical_devices(instance);
  for (uint32_t i = 0; i < devices.size(); ++i) {
    VkPhysicalDeviceProperties p;
    vkGetPhysicalDeviceProperties(devices[i], &p);
    out.push_back({i, p.deviceName, p.deviceType, p.apiVersion, p.driverVersion});
  }
  vkDestroyInstance(instance, nullptr);
  return out;
}

std::shared_ptr<Context> Context::create(const ContextOptions& options) {
  std::shared_ptr<Context> ctx(new Context());
  ctx->init(options);
  return ctx;
}

void Context::init(const ContextOptions& options) {
  validation_ = options.validation.value_or(env_flag("VKGRAPH_VALIDATION"));
  force_non_coherent_ = options.force_non_coherent.value_or(env_flag("VKGRAPH_FORCE_NONCOHERENT"));
  if (options.sync_trace) trace_ = std::make_unique<SyncTrace>();

  // Instance, with validation + synchronization validation when asked.
  const char* layer = "VK_LAYER_KHRONOS_validation";
  if (validation_ && !has_layer(layer))
    throw Error(ErrorKind::Unsupported,
                "validation requested but VK_LAYER_KHRONOS_validation is not installed "
                "(Debian: apt install vulkan-validationlayers)");
  VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
  app.pApplicationName = "vkgraph";
  uint32_t loader_version = VK_API_VERSION_1_0;
  vkEnumerateInstanceVersion(&loader_version);
  app.apiVersion = std::min<uint32_t>(loader_version, VK_API_VERSION_1_3);
  if (app.apiVersion < VK_API_VERSION_1_1)
    throw Error(ErrorKind::Unsupported, "Vulkan 1.1 loader required");
  std::vector<const char*> layers, exts;
  VkValidationFeatureEnableEXT enables[] = {
      VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT};
  VkValidationFeaturesEXT vfeatures{VK_STRUCTURE_TYPE_VALIDATION_FEATURES_EXT};
  vfeatures.enabledValidationFeatureCount = 1;
  vfeatures.pEnabledValidationFeatures = enables;
  VkDebugUtilsMessengerCreateInfoEXT mci{VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT};
  mci.messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT |
                        VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
  mci.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                    VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT |
                    VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT;
  mci.pfnUserCallback = &DebugCallback::on_message;
  mci.pUserData = this;
  VkInstanceCreateInfo ci{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
  ci.pApplicationInfo = &app;
  if (validation_) {
    layers.push_back(layer);
    exts.push_back(VK_EXT_DEBUG_UTILS_EXTENSION_NAME);
    exts.push_back(VK_EXT_VALIDATION_FEATURES_EXTENSION_NAME);
    vfeatures.pNext = &mci;  // also catches messages from vkCreate/DestroyInstance
    ci.pNext = &vfeatures;
  }
  ci.enabledLayerCount = static_cast<uint32_t>(layers.size());
  ci.ppEnabledLayerNames = layers.data();
  ci.enabledExtensionCount = static_cast<uint32_t>(exts.size());
  ci.ppEnabledExtensionNames = exts.data();
  {
    std::optional<QueueSubmitValidationScope> submit_checks;
    if (validation_) submit_checks.emplace();
    check_vk(vkCreateInstance(&ci, nullptr, &instance_), "vkCreateInstance");
  }
  if (validation_) {
    auto create = reinterpret_cast<PFN_vkCreateDebugUtilsMessengerEXT>(
        vkGetInstanceProcAddr(instance_, "vkCreateDebugUtilsMessengerEXT"));
    check(create != nullptr, ErrorKind::Unsupported, "vkCreateDebugUtilsMessengerEXT missing");
    check_vk(create(instance_, &mci, nullptr, &messenger_), "vkCreateDebugUtilsMessengerEXT");
  }

  // Physical device: explicit choice, else the best type.
  auto devices = physical_devices(instance_);
  if (devices.empty()) throw Error(ErrorKind::Unsupported, "no Vulkan device found");
  std::string choice =
      options.device.value_or(std::getenv("VKGRAPH_DEVICE") ? std::getenv("VKGRAPH_DEVICE") : "");
  int chosen = -1;
  if (!choice.empty()) {
    bool numeric =
        std::all_of(choice.begin(), choice.end(), [](unsigned char c) { return std::isdigit(c); });
    for (uint32_t i = 0; i < devices.size() && chosen < 0; ++i) {
      VkPhysicalDeviceProperties p;
      vkGetPhysicalDeviceProperties(devices[i], &p);
      // strtoull saturates instead of throwing, so an index too large matches no device.
      if (numeric ? std::strtoull(choice.c_str(), nullptr, 10) == i
                  : lower(p.deviceName).find(lower(choice)) != std::string::npos)
        chosen = static_cast<int>(i);
    }
    if (chosen < 0)
      throw Error(ErrorKind::InvalidArgument,
                  "device '" + choice + "' not found: " + std::to_string(devices.size()) +
                      " Vulkan device(s) available (see `vkgraph info`)");
  } else {
    int best = -1;
    for (uint32_t i = 0; i < devices.size(); ++i) {
      VkPhysicalDeviceProperties p;
      vkGetPhysicalDeviceProperties(devices[i], &p);
      if (type_rank(p.deviceType) > best) best = type_rank(p.deviceType), chosen = i;
    }
  }
  device_index_ = static_cast<uint32_t>(chosen);
  physical_device_ = devices[chosen];
  query_device(std::nullopt);
  create_device();
  finish(options);
}

void Context::query_device(std::optional<uint32_t> requested_family) {
  vkGetPhysicalDeviceProperties(physical_device_, &properties_);
  if (properties_.apiVersion < VK_API_VERSION_1_1)
    throw Error(ErrorKind::Unsupported,
                std::string("device ") + properties_.deviceName + " supports only Vulkan 1.0");
  // A compute queue; prefer a compute-only family.
  uint32_t nq = 0;
  vkGetPhysicalDeviceQueueFamilyProperties(physical_device_, &nq, nullptr);
  std::vector<VkQueueFamilyProperties> qfs(nq);
  vkGetPhysicalDeviceQueueFamilyProperties(physical_device_, &nq, qfs.data());
  int family = requested_family ? static_cast<int>(*requested_family) : -1;
  if (family >= static_cast<int>(nq) ||
      (family >= 0 && !(qfs[family].queueFlags & VK_QUEUE_COMPUTE_BIT)))
    throw Error(ErrorKind::InvalidArgument,
                "queue family " + std::to_string(family) + " has no compute support");
  for (uint32_t i = 0; i < nq && !requested_family; ++i) {
    if (!(qfs[i].queueFlags & VK_QUEUE_COMPUTE_BIT)) continue;
    if (family < 0 || !(qfs[i].queueFlags & VK_QUEUE_GRAPHICS_BIT)) {
      if (family < 0 || (qfs[family].queueFlags & VK_QUEUE_GRAPHICS_BIT)) family = i;
    }
  }
  if (family < 0)
    throw Error(ErrorKind::Unsupported,
                std::string("device ") + properties_.deviceName + " has no compute queue");
  queue_family_ = static_cast<uint32_t>(family);
  queue_family_count_ = nq;
  features_.timestamps =
      qfs[family].timestampValidBits > 0 && properties_.limits.timestampComputeAndGraphics;
  features_.timestamp_period_ns = properties_.limits.timestampPeriod;

  // Features: query what exists, enable what we use.
  auto ext_names = device_extensions(physical_device_);
  auto has_ext = [&](const char* n) {
    return std::find(ext_names.begin(), ext_names.end(), n) != ext_names.end();
  };
  bool api12 = properties_.apiVersion >= VK_API_VERSION_1_2;
  FeatureChain have(api12 || has_ext("VK_KHR_vulkan_memory_model"),
                    has_ext("VK_NV_cooperative_matrix"),
                    has_ext("VK_KHR_shader_integer_dot_product"));
  vkGetPhysicalDeviceFeatures2(physical_device_, &have.base);
  features_.storage_buffer_16bit = have.storage16.storageBuffer16BitAccess;
  features_.storage_buffer_8bit =
      (api12 || has_ext("VK_KHR_8bit_storage")) && have.storage8.storageBuffer8BitAccess;
  features_.shader_float16 =
      (api12 || has_ext("VK_KHR_shader_float16_int8")) && have.float16.shaderFloat16;
  features_.shader_int64 = have.base.features.shaderInt64;
  features_.timeline_semaphores =
      (api12 || has_ext("VK_KHR_timeline_semaphore")) && have.timeline.timelineSemaphore;
  features_.cooperative_matrix_nv = has_ext("VK_NV_cooperative_matrix");
  features_.vulkan_memory_model = have.memory_model.vulkanMemoryModel;
  // glslang's GL_NV_cooperative_matrix code declares the Vulkan memory model; the fp16 kernel
  // also needs fp16 arithmetic, 16-bit storage and the 16x16x16 fp16 -> fp32 subgroup shape,
  // the int8 one (quant_packed.comp COOPMAT) int8 arithmetic and a 16 x N x 32 s8 -> s32 shape.
  const bool coopmat_base = have.coopmat.cooperativeMatrix && features_.vulkan_memory_model;
  const auto shapes = coopmat_base ? coopmat_shapes(instance_, physical_device_)
                                   : std::vector<VkCooperativeMatrixPropertiesNV>{};
  features_.coopmat_f16_16x16x16 =
      coopmat_base && features_.shader_float16 && features_.storage_buffer_16bit &&
      has_coopmat_shape(shapes, 16, 16, 16, VK_COMPONENT_TYPE_FLOAT16_NV,
                        VK_COMPONENT_TYPE_FLOAT32_NV);
  const bool int8 = (api12 || has_ext("VK_KHR_shader_float16_int8")) && have.float16.shaderInt8 &&
                    features_.storage_buffer_8bit;
  for (uint32_t n : {16u, 8u})
    if (int8 && features_.coopmat_s8_n == 0 &&
        has_coopmat_shape(shapes, 16, n, 32, VK_COMPONENT_TYPE_SINT8_NV,
                          VK_COMPONENT_TYPE_SINT32_NV))
      features_.coopmat_s8_n = n;
  features_.cooperative_matrix_khr = has_ext("VK_KHR_cooperative_matrix");
  features_.external_memory_host = has_ext(VK_EXT_EXTERNAL_MEMORY_HOST_EXTENSION_NAME);
  features_.integer_dot_product =
      has_ext("VK_KHR_shader_integer_dot_product") && have.dot.shaderIntegerDotProduct;

  VkPhysicalDeviceProperties2 p2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
  VkPhysicalDeviceShaderIntegerDotProductProperties dotp{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_INTEGER_DOT_PRODUCT_PROPERTIES};
  VkPhysicalDeviceSubgroupProperties sub{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES};
  VkPhysicalDeviceExternalMemoryHostPropertiesEXT hostp{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_EXTERNAL_MEMORY_HOST_PROPERTIES_EXT};
  p2.pNext = &sub;
  void** tail = &sub.pNext;
  if (features_.external_memory_host) {
    *tail = &hostp;
    tail = &hostp.pNext;
  }
  if (features_.integer_dot_product) *tail = &dotp;
  vkGetPhysicalDeviceProperties2(physical_device_, &p2);
  features_.integer_dot_4x8_accelerated =
      features_.integer_dot_product && dotp.integerDotProduct4x8BitPackedSignedAccelerated;
  features_.subgroup_size = sub.subgroupSize;
  features_.subgroup_arithmetic = (sub.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) &&
                                  (sub.supportedOperations & VK_SUBGROUP_FEATURE_ARITHMETIC_BIT);
  features_.subgroup_shuffle = (sub.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) &&
                               (sub.supportedOperations & VK_SUBGROUP_FEATURE_SHUFFLE_BIT);
  features_.min_imported_host_pointer_alignment = hostp.minImportedHostPointerAlignment;
}

void Context::create_device() {
  bool api12 = properties_.apiVersion >= VK_API_VERSION_1_2;
  // Logical device.
  float priority = 1.0f;
  VkDeviceQueueCreateInfo qci{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
  qci.queueFamilyIndex = queue_family_;
  qci.queueCount = 1;
  qci.pQueuePriorities = &priority;
  // The memory model and cooperative matrix are enabled only for the tensor-core kernel.
  const bool coopmat = features_.coopmat_f16_16x16x16 || features_.coopmat_s8_n != 0;
  FeatureChain enable(coopmat, coopmat, features_.integer_dot_product);
  enable.base.features.shaderInt64 = features_.shader_int64;
  enable.storage16.storageBuffer16BitAccess = features_.storage_buffer_16bit;
  enable.storage8.storageBuffer8BitAccess = features_.storage_buffer_8bit;
  enable.float16.shaderFloat16 = features_.shader_float16;
  enable.float16.shaderInt8 = features_.coopmat_s8_n != 0;
  enable.timeline.timelineSemaphore = features_.timeline_semaphores;
  enable.memory_model.vulkanMemoryModel = VK_TRUE;
  enable.coopmat.cooperativeMatrix = VK_TRUE;
  enable.dot.shaderIntegerDotProduct = VK_TRUE;
  std::vector<const char*> dev_exts;
  if (features_.integer_dot_product) dev_exts.push_back("VK_KHR_shader_integer_dot_product");
  if (features_.external_memory_host) {
    dev_exts.push_back(VK_KHR_EXTERNAL_MEMORY_EXTENSION_NAME);
    dev_exts.push_back(VK_EXT_EXTERNAL_MEMORY_HOST_EXTENSION_NAME);
  }
  if (!api12) {
    if (features_.shader_float16 || features_.coopmat_s8_n != 0)
      dev_exts.push_back("VK_KHR_shader_float16_int8");
    if (features_.storage_buffer_8bit) dev_exts.push_back("VK_KHR_8bit_storage");
    if (features_.timeline_semaphores) dev_exts.push_back("VK_KHR_timeline_semaphore");
  }
  if (coopmat) {
    dev_exts.push_back("VK_NV_cooperative_matrix");
    if (!api12) dev_exts.push_back("VK_KHR_vulkan_memory_model");
  }
  VkDeviceCreateInfo dci{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
  dci.pNext = &enable.base;
  dci.queueCreateInfoCount = 1;
  dci.pQueueCreateInfos = &qci;
  dci.enabledExtensionCount = static_cast<uint32_t>(dev_exts.size());
  dci.ppEnabledExtensionNames = dev_exts.data();
  check_vk(vkCreateDevice(physical_device_, &dci, nullptr, &device_), "vkCreateDevice");
  vkGetDeviceQueue(device_, queue_family_, 0, &queue_);
}

void Context::finish(const ContextOptions& options) {
  spin_wait_us_ = options.spin_wait_us.value_or(
      properties_.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU ? 0u : 200u);
  MemoryAllocator::Options mo;
  mo.budget = options.memory_budget;
  if (const char* m = std::getenv("VKGRAPH_STREAM_MEMORY"))
    mo.stream_in_device_memory = std::strcmp(m, "host") != 0;
  mo.force_non_coherent = force_non_coherent_;
  allocator_ = std::make_unique<MemoryAllocator>(physical_device_, device_, mo);
  faults_ = std::make_unique<InjectedFaults>();
  allocator_->faults_ = faults_.get();
  pipelines_ = std::make_unique<PipelineCache>(*this, pipeline_cache_dir(options.pipeline_cache));
}

std::shared_ptr<Context> Context::adopt(const ExternalDevice& external,
                                        const ContextOptions& options) {
  check(external.instance && external.physical_device && external.device && external.queue,
        ErrorKind::InvalidArgument,
        "adopt: instance, physical device, device and queue are required");
  std::shared_ptr<Context> ctx(new Context());
  ctx->owns_device_ = false;
  ctx->instance_ = external.instance;
  ctx->physical_device_ = external.physical_device;
  ctx->device_ = external.device;
  ctx->queue_ = external.queue;
  ctx->force_non_coherent_ =
      options.force_non_coherent.value_or(env_flag("VKGRAPH_FORCE_NONCOHERENT"));
  if (options.sync_trace) ctx->trace_ = std::make_unique<SyncTrace>();
  ctx->query_device(external.queue_family);
  if (external.features) {
    ctx->features_ = *external.features;
  } else {
    DeviceFeatures& f = ctx->features_;
    f.cooperative_matrix_nv = f.cooperative_matrix_khr = f.coopmat_f16_16x16x16 = false;
    f.coopmat_s8_n = 0;
    f.vulkan_memory_model = false;
    f.integer_dot_product = f.integer_dot_4x8_accelerated = false;
  }
  ctx->finish(options);
  return ctx;
}

Context::~Context() {
  // Graphs hold the Context alive and wait for their own work, so only an owned device
  // needs a full drain here; an adopted device's other work is the app's business.
  if (device_ && owns_device_) vkDeviceWaitIdle(device_);
  pipelines_.reset();
  allocator_.reset();
  if (!owns_device_) return;
  if (device_) vkDestroyDevice(device_, nullptr);
  if (messenger_) {
    auto destroy = reinterpret_cast<PFN_vkDestroyDebugUtilsMessengerEXT>(
        vkGetInstanceProcAddr(instance_, "vkDestroyDebugUtilsMessengerEXT"));
    if (destroy) destroy(instance_, messenger_, nullptr);
  }
  if (instance_) vkDestroyInstance(instance_, nullptr);
  // faults_ is created late in init(): a Context whose init() failed (no such device) has none.
  if (faults_ && faults_->messages_at_destruction)
    *faults_->messages_at_destruction = validation_messages();
}

void Context::submit(const std::vector<VkCommandBuffer>& command_buffers,
                     const std::vector<uint64_t>& ids, VkFence fence, const SubmitSync& sync) {
  std::vector<VkSemaphore> waits, signals;
  std::vector<VkPipelineStageFlags> stages;
  std::vector<uint64_t> wait_values, signal_values;
  bool timeline = false;
  for (auto& w : sync.waits) {
    waits.push_back(w.semaphore);
    stages.push_back(w.stage);
    wait_values.push_back(w.value);
    timeline |= w.value != 0;
  }
  for (auto& s : sync.signals) {
    signals.push_back(s.semaphore);
    signal_values.push_back(s.value);
    timeline |= s.value != 0;
  }
  VkTimelineSemaphoreSubmitInfo tsi{VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO};
  tsi.waitSemaphoreValueCount = static_cast<uint32_t>(wait_values.size());
  tsi.pWaitSemaphoreValues = wait_values.data();
  tsi.signalSemaphoreValueCount = static_cast<uint32_t>(signal_values.size());
  tsi.pSignalSemaphoreValues = signal_values.data();
  VkSubmitInfo si{VK_STRUCTURE_TYPE_SUBMIT_INFO};
  if (timeline) {
    check(features_.timeline_semaphores, ErrorKind::Unsupported,
          "timeline semaphore values given, but the device lacks timeline semaphores");
    si.pNext = &tsi;
  }
  si.commandBufferCount = static_cast<uint32_t>(command_buffers.size());
  si.pCommandBuffers = command_buffers.data();
  si.waitSemaphoreCount = static_cast<uint32_t>(waits.size());
  si.pWaitSemaphores = waits.data();
  si.pWaitDstStageMask = stages.data();
  si.signalSemaphoreCount = static_cast<uint32_t>(signals.size());
  si.pSignalSemaphores = signals.data();
  std::lock_guard<std::mutex> lock(queue_mutex_);
  if (trace_) {
    SyncEvent e{SyncEvent::Type::Submit};
    e.command_buffers = ids;
    e.fence = reinterpret_cast<uint64_t>(fence);
    trace_->host(std::move(e));
  }
  check_not_lost();
  VkResult r = VK_SUCCESS;
  if (faults_->submissions.fires()) {
    // Simulated: this submission is not made. Before a device loss what earlier ones started
    // finishes, so that tearing down afterwards is as safe as after a real loss (where nothing
    // runs any more).
    r = faults_->submissions.result.load();
    if (r == VK_ERROR_DEVICE_LOST) vkQueueWaitIdle(queue_);
  } else {
    r = vkQueueSubmit(queue_, 1, &si, fence);
  }
  if (r == VK_ERROR_DEVICE_LOST) lost_ = true;
  check_vk(r, "vkQueueSubmit");
}

void Context::wait_idle() {
  std::lock_guard<std::mutex> lock(queue_mutex_);
  check_vk(vkQueueWaitIdle(queue_), "vkQueueWaitIdle");
}

void Context::check_not_lost() const {
  if (lost_)
    throw Error(ErrorKind::DeviceLost,
                "vkQueueSubmit: the device was lost by an earlier submission; nothing more runs "
                "on this Context (create a new one)");
}

void Context::add_validation_message(std::string message) {
  std::lock_guard<std::mutex> lock(messages_mutex_);
  messages_.push_back(std::move(message));
}

std::vector<std::string> Context::validation_messages() const {
  std::lock_guard<std::mutex> lock(messages_mutex_);
  return messages_;
}

void Context::clear_validation_messages() {
  std::lock_guard<std::mutex> lock(messages_mutex_);
  messages_.clear();
}

}  // namespace vkgraph::vk
