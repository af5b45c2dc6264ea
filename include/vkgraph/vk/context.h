#pragma once
// The Vulkan instance, the chosen physical device, the logical device with one compute queue,
// what the device can do, and the objects shared by every graph on it: memory allocator,
// pipeline cache, sync trace. Thread-safe: several graphs on several threads may share one
// Context; queue submission is serialized by an internal mutex.
#include <vulkan/vulkan.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "vkgraph/vk/memory.h"

namespace vkgraph::vk {

class PipelineCache;
class SyncTrace;

struct ContextOptions {
  // Khronos validation with synchronization validation. Default: env VKGRAPH_VALIDATION=1.
  std::optional<bool> validation;
  // Device by index ("1") or case-insensitive name substring ("llvmpipe").
  // Default: env VKGRAPH_DEVICE, else the best: discrete > integrated > virtual > CPU.
  std::optional<std::string> device;
  // Treat all host-visible memory as non-coherent, so flush/invalidate paths run on devices
  // whose memory is coherent. Default: env VKGRAPH_FORCE_NONCOHERENT=1.
  std::optional<bool> force_non_coherent;
  // Folder of the on-disk pipeline cache, or "off". Default: env VKGRAPH_PIPELINE_CACHE (a
  // folder or "off"), else $XDG_CACHE_HOME/vkgraph, else ~/.cache/vkgraph. One file per
  // device and driver; saved when it grew, at Context destruction or pipelines().save().
  std::optional<std::string> pipeline_cache;
  // The poll period of a fence wait: a graph's wait sleeps (std::this_thread) until this long
  // before its previous execution's time, then polls the fence until this long after it, and
  // only then blocks in vkWaitForFences, whose wake-up costs tens of microseconds to 0.2 ms on
  // a discrete GPU, a large share of an inference. Default: 200 us on GPUs, 0 on CPU devices
  // (lavapipe: no sleep or poll, the blocking wait at once), where polling takes a core from the
  // work.
  std::optional<uint32_t> spin_wait_us;
  uint64_t memory_budget = 0;  // bytes of device memory vkgraph may hold; 0 = no limit
  bool sync_trace = false;     // record synchronization events (see SyncTrace)
};

struct DeviceFeatures {
  bool storage_buffer_16bit = false;
  bool storage_buffer_8bit = false;  // Bool tensors: one byte per element
  bool shader_float16 = false;
  bool shader_int64 = false;
  bool subgroup_arithmetic = false;
  bool subgroup_shuffle = false;  // GL_KHR_shader_subgroup_shuffle in compute shaders
  uint32_t subgroup_size = 0;
  bool cooperative_matrix_nv = false;
  bool cooperative_matrix_khr = false;
  bool vulkan_memory_model = false;
  // VK_NV_cooperative_matrix enabled with a 16x16x16 fp16 x fp16 + fp32 subgroup shape (and
  // the Vulkan memory model, fp16 arithmetic and 16-bit storage its shaders need).
  bool coopmat_f16_16x16x16 = false;
  // The same extension with int8 x int8 -> int32 subgroup shapes 16 x N x 32 (shaderInt8 enabled):
  // N = 16 or 8, whichever the device lists (16 preferred), or 0 without one.
  uint32_t coopmat_s8_n = 0;
  // VK_KHR_shader_integer_dot_product enabled (packed 4x8-bit dot products in shaders), and
  // whether the device reports the signed 4x8 packed form as accelerated (a native instruction).
  bool integer_dot_product = false;
  bool integer_dot_4x8_accelerated = false;
  bool external_memory_host = false;
  VkDeviceSize min_imported_host_pointer_alignment = 0;
  bool timestamps = false;
  float timestamp_period_ns = 0;
  bool timeline_semaphores = false;
};

// Vulkan objects an app already has. vkgraph uses them without owning or destroying them.
// The device must have been created with the features vkgraph uses where the physical device
// offers them (shaderInt64, storageBuffer8BitAccess/16BitAccess, timelineSemaphore, and the
// VK_EXT_external_memory_host extension for host imports); `features` overrides what vkgraph
// assumes was enabled. Cooperative matrix is assumed off unless `features` says it is on:
// it needs an extension and the Vulkan memory model that apps rarely enable.
// Queue sharing rule: vkgraph locks its own mutex around vkQueueSubmit; an app that also
// submits to this queue must hold Context::queue_mutex() while it does.
struct ExternalDevice {
  VkInstance instance = VK_NULL_HANDLE;
  VkPhysicalDevice physical_device = VK_NULL_HANDLE;
  VkDevice device = VK_NULL_HANDLE;
  VkQueue queue = VK_NULL_HANDLE;
  uint32_t queue_family = 0;
  std::optional<DeviceFeatures> features;
};

// Semaphores for one submission. `value` is used for timeline semaphores (0 = binary).
struct SemaphoreWait {
  VkSemaphore semaphore;
  VkPipelineStageFlags stage = VK_PIPELINE_STAGE_ALL_COMMANDS_BIT;
  uint64_t value = 0;
};
struct SemaphoreSignal {
  VkSemaphore semaphore;
  uint64_t value = 0;
};
struct SubmitSync {
  std::vector<SemaphoreWait> waits;
  std::vector<SemaphoreSignal> signals;
};

// While alive, asks the Khronos validation layer for synchronization checks between separate
// queue submissions (chunks of one graph, successive executions, an app's own work). Layer
// 1.3.239 reads this only from VK_LAYER_ENABLES at vkCreateInstance, so hold one around that
// call. Context does this itself; apps that create their own instance can use it too.
class QueueSubmitValidationScope {
 public:
  QueueSubmitValidationScope();
  ~QueueSubmitValidationScope();
  QueueSubmitValidationScope(const QueueSubmitValidationScope&) = delete;
  QueueSubmitValidationScope& operator=(const QueueSubmitValidationScope&) = delete;

 private:
  bool set_ = false, had_ = false;
  std::string saved_;
};

struct PhysicalDeviceInfo {
  uint32_t index;
  std::string name;
  VkPhysicalDeviceType type;
  uint32_t api_version;
  uint32_t driver_version;
};

class Context {
 public:
  static std::shared_ptr<Context> create(const ContextOptions& options = {});
  // Runs on the app's device and queue (options.validation and options.device are ignored:
  // the app made those choices).
  static std::shared_ptr<Context> adopt(const ExternalDevice& external,
                                        const ContextOptions& options = {});
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  static std::vector<PhysicalDeviceInfo> list_devices();

  VkInstance instance() const { return instance_; }
  VkPhysicalDevice physical_device() const { return physical_device_; }
  VkDevice device() const { return device_; }
  VkQueue queue() const { return queue_; }
  uint32_t queue_family() const { return queue_family_; }
  uint32_t queue_family_count() const { return queue_family_count_; }  // of the physical device
  const VkPhysicalDeviceProperties& properties() const { return properties_; }
  const VkPhysicalDeviceLimits& limits() const { return properties_.limits; }
  const DeviceFeatures& features() const { return features_; }
  uint32_t device_index() const { return device_index_; }
  bool validation_enabled() const { return validation_; }
  bool force_non_coherent() const { return force_non_coherent_; }
  uint32_t spin_wait_us() const { return spin_wait_us_; }

  MemoryAllocator& allocator() { return *allocator_; }
  PipelineCache& pipelines() { return *pipelines_; }
  SyncTrace* trace() { return trace_.get(); }  // null unless options.sync_trace

  // vkQueueSubmit under the queue mutex; records a Submit event in the trace.
  void submit(const std::vector<VkCommandBuffer>& command_buffers, const std::vector<uint64_t>& ids,
              VkFence fence, const SubmitSync& sync = {});
  // DeviceLost once a submission has reported VK_ERROR_DEVICE_LOST: nothing runs on this
  // Context any more (a lost VkDevice stays lost). Graphs check it before they touch their
  // command buffers.
  void check_not_lost() const;
  // Returns when the queue has finished all work submitted to it (vkQueueWaitIdle, under the
  // queue mutex): what a graph does when a submission fails after earlier ones were made.
  void wait_idle();
  // Held by vkgraph around every submission; an app sharing the queue holds it too.
  std::mutex& queue_mutex() { return queue_mutex_; }
  bool owns_device() const { return owns_device_; }

  // Messages from the validation layer (errors and warnings) since creation or the last clear.
  std::vector<std::string> validation_messages() const;
  void clear_validation_messages();

 private:
  Context() = default;
  void init(const ContextOptions& options);
  void query_device(std::optional<uint32_t> requested_family);
  void create_device();
  void finish(const ContextOptions& options);
  void add_validation_message(std::string message);
  friend struct DebugCallback;
  friend struct ContextInternals;  // src/vk/faults.h: fault injection (tests only)

  VkInstance instance_ = VK_NULL_HANDLE;
  VkDebugUtilsMessengerEXT messenger_ = VK_NULL_HANDLE;
  VkPhysicalDevice physical_device_ = VK_NULL_HANDLE;
  VkDevice device_ = VK_NULL_HANDLE;
  VkQueue queue_ = VK_NULL_HANDLE;
  uint32_t queue_family_ = 0;
  uint32_t queue_family_count_ = 0;
  uint32_t spin_wait_us_ = 0;
  uint32_t device_index_ = 0;
  VkPhysicalDeviceProperties properties_{};
  DeviceFeatures features_;
  bool validation_ = false;
  bool force_non_coherent_ = false;
  bool owns_device_ = true;
  std::unique_ptr<MemoryAllocator> allocator_;
  std::unique_ptr<PipelineCache> pipelines_;
  std::unique_ptr<SyncTrace> trace_;
  std::unique_ptr<InjectedFaults> faults_;  // src/vk/faults.h
  // Set once a submission reports VK_ERROR_DEVICE_LOST: every later one fails the same way,
  // as a lost VkDevice does.
  std::atomic<bool> lost_{false};
  std::mutex queue_mutex_;
  mutable std::mutex messages_mutex_;
  std::vector<std::string> messages_;
};

}  // namespace vkgraph::vk
