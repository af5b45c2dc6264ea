#pragma once
// The app side of the external I/O tests (test_external_io.cpp, test_host_pointer.cpp,
// test_adopted_device.cpp): its own buffers, memory, queue work and descriptor sets around a
// graph that computes (x + c) * x, and one shared Context for the tests that expect no
// messages at all.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <set>
#include <sstream>

#include "gpu_test.h"
#include "vkgraph/error.h"
#include "vkgraph/ops.h"
#include "vkgraph/vk/pipeline.h"
#include "vkgraph/vk/result.h"
#include "vkgraph/vk/sync_trace.h"

namespace vkgraph::testing {

using ops::BinaryOp;
using vk::SyncEvent;

constexpr uint32_t kN = 1000;  // not a multiple of the workgroup size
constexpr VkDeviceSize kBytes = kN * sizeof(float);
constexpr uint32_t kLocal = 64;
constexpr VkBufferUsageFlags kAppUsage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT |
                                         VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
                                         VK_BUFFER_USAGE_TRANSFER_DST_BIT;
constexpr VkMemoryPropertyFlags kHostMemory =
    VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;

// One instance for the tests here that expect no messages at all. It is destroyed when the
// test program's environment is torn down, not by a static destructor during exit(): there the
// 1.3.239 layer's vkDeviceWaitIdle sometimes never returns.
class SharedContext : public ::testing::Environment {
 public:
  static std::shared_ptr<vk::Context> get() {
    if (!context_) context_ = make_context({});
    return context_;
  }
  void TearDown() override { context_.reset(); }

 private:
  static inline std::shared_ptr<vk::Context> context_;
};
inline const ::testing::Environment* const kSharedContext =
    ::testing::AddGlobalTestEnvironment(new SharedContext);

inline std::shared_ptr<vk::Context> shared_context() {
  return SharedContext::get();
}

inline std::string hex(uint64_t v) {
  std::ostringstream s;
  s << "0x" << std::hex << v;
  return s.str();
}

template <typename Handle>
inline std::string hex_handle(Handle h) {
  return hex(reinterpret_cast<uint64_t>(h));
}

// Counts elements that differ beyond float rounding, reporting the first.
inline size_t mismatches(const float* got, const std::vector<float>& want,
                         const std::string& what) {
  size_t bad = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    if (std::abs(got[i] - want[i]) <= 1e-6f * std::max(1.f, std::abs(want[i]))) continue;
    if (bad++ == 0)
      ADD_FAILURE() << what << "[" << i << "] = " << got[i] << ", expected " << want[i];
  }
  return bad;
}

// (x + c) * x: the graph every test here builds around its external or host-bound I/O.
inline std::vector<float> graph_reference(const std::vector<float>& x,
                                          const std::vector<float>& c) {
  std::vector<float> y(x.size());
  for (size_t i = 0; i < x.size(); ++i) y[i] = (x[i] + c[i]) * x[i];
  return y;
}

inline void build_graph(ComputeGraph& g, const std::vector<float>& c, IOMode mode, const char* in,
                        const char* out) {
  TensorRef x = g.add_input({static_cast<int64_t>(c.size())}, DType::Float32, in, mode);
  TensorRef k =
      g.add_constant(HostTensor::from(DType::Float32, {static_cast<int64_t>(c.size())}, c), "c");
  g.add_output(ops::binary(g, BinaryOp::Mul, ops::binary(g, BinaryOp::Add, x, k), x), out, mode);
}

inline uint32_t memory_type(VkPhysicalDevice physical, uint32_t type_bits,
                            VkMemoryPropertyFlags want) {
  VkPhysicalDeviceMemoryProperties props;
  vkGetPhysicalDeviceMemoryProperties(physical, &props);
  for (uint32_t i = 0; i < props.memoryTypeCount; ++i)
    if ((type_bits & (1u << i)) && (props.memoryTypes[i].propertyFlags & want) == want) return i;
  throw Error(ErrorKind::Unsupported, "test: no memory type with flags " + hex(want));
}

// A buffer the app owns outright: its own VkBuffer and VkDeviceMemory, not vkgraph's allocator.
class AppBuffer {
 public:
  AppBuffer(VkPhysicalDevice physical, VkDevice device, VkDeviceSize size, VkBufferUsageFlags usage,
            VkMemoryPropertyFlags memory)
      : device_(device), size_(size), usage_(usage) {
    VkBufferCreateInfo ci{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
    ci.size = size;
    ci.usage = usage;
    ci.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
    vk::check_vk(vkCreateBuffer(device, &ci, nullptr, &buffer_), "test vkCreateBuffer");
    VkMemoryRequirements req;
    vkGetBufferMemoryRequirements(device, buffer_, &req);
    VkMemoryAllocateInfo ai{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
    ai.allocationSize = req.size;
    ai.memoryTypeIndex = memory_type(physical, req.memoryTypeBits, memory);
    vk::check_vk(vkAllocateMemory(device, &ai, nullptr, &memory_), "test vkAllocateMemory");
    vk::check_vk(vkBindBufferMemory(device, buffer_, memory_, 0), "test vkBindBufferMemory");
    if (memory & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT)
      vk::check_vk(vkMapMemory(device, memory_, 0, VK_WHOLE_SIZE, 0, &mapped_), "test vkMapMemory");
  }
  AppBuffer(vk::Context& ctx, VkDeviceSize size, VkBufferUsageFlags usage,
            VkMemoryPropertyFlags memory)
      : AppBuffer(ctx.physical_device(), ctx.device(), size, usage, memory) {}
  ~AppBuffer() {
    if (mapped_) vkUnmapMemory(device_, memory_);
    vkDestroyBuffer(device_, buffer_, nullptr);
    vkFreeMemory(device_, memory_, nullptr);
  }
  AppBuffer(const AppBuffer&) = delete;
  AppBuffer& operator=(const AppBuffer&) = delete;

  VkBuffer handle() const { return buffer_; }
  float* floats() const { return static_cast<float*>(mapped_); }  // host-visible ones only
  ExternalBuffer external(VkDeviceSize offset = 0) const {
    return {buffer_, offset, size_ - offset, usage_};
  }

 private:
  VkDevice device_;
  VkDeviceSize size_;
  VkBufferUsageFlags usage_;
  VkBuffer buffer_ = VK_NULL_HANDLE;
  VkDeviceMemory memory_ = VK_NULL_HANDLE;
  void* mapped_ = nullptr;
};

// Push constants of src/ops/binary.comp (MAX_RANK 6).
struct BinaryPush {
  int32_t n, rank;
  int32_t shape[6], stride_a[6], stride_b[6];
};

// The app's side of the queue: its own command pool, descriptor pool, fences and semaphores,
// and dispatches of vkgraph's embedded shaders through its own descriptor sets.
// Its queue is vkgraph's unless the test gives it one of another queue family.
struct AppQueue {
  VkQueue queue;
  uint32_t family;
};

class App {
 public:
  explicit App(vk::Context& ctx, std::optional<AppQueue> own_queue = {})
      : ctx_(ctx),
        device_(ctx.device()),
        queue_(own_queue.value_or(AppQueue{ctx.queue(), ctx.queue_family()})) {
    VkCommandPoolCreateInfo pci{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
    pci.queueFamilyIndex = queue_.family;
    vk::check_vk(vkCreateCommandPool(device_, &pci, nullptr, &commands_), "test command pool");
    VkDescriptorPoolSize size{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 24};
    VkDescriptorPoolCreateInfo dci{VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
    dci.maxSets = 8;
    dci.poolSizeCount = 1;
    dci.pPoolSizes = &size;
    vk::check_vk(vkCreateDescriptorPool(device_, &dci, nullptr, &descriptors_),
                 "test descriptor pool");
  }
  ~App() {
    wait_idle();
    for (VkFence f : fences_) vkDestroyFence(device_, f, nullptr);
    for (VkSemaphore s : semaphores_) vkDestroySemaphore(device_, s, nullptr);
    vkDestroyDescriptorPool(device_, descriptors_, nullptr);
    vkDestroyCommandPool(device_, commands_, nullptr);
  }
  App(const App&) = delete;
  App& operator=(const App&) = delete;

  VkCommandBuffer begin() {
    VkCommandBufferAllocateInfo ai{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
    ai.commandPool = commands_;
    ai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
    ai.commandBufferCount = 1;
    VkCommandBuffer cb;
    vk::check_vk(vkAllocateCommandBuffers(device_, &ai, &cb), "test vkAllocateCommandBuffers");
    VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    vk::check_vk(vkBeginCommandBuffer(cb, &bi), "test vkBeginCommandBuffer");
    return cb;
  }
  void end(VkCommandBuffer cb) { vk::check_vk(vkEndCommandBuffer(cb), "test vkEndCommandBuffer"); }

  // c[i] = a[i] OP b[i] for i < n through vkgraph's "binary_<op>_f32" pipeline.
  void binary(VkCommandBuffer cb, const std::string& shader, VkBuffer a, VkBuffer b, VkBuffer c,
              uint32_t n) {
    const vk::Pipeline& pipe =
        ctx_.pipelines().get({shader, 3, sizeof(BinaryPush), {kLocal, 1, 1}});
    VkDescriptorSetAllocateInfo ai{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO};
    ai.descriptorPool = descriptors_;
    ai.descriptorSetCount = 1;
    ai.pSetLayouts = &pipe.set_layout;
    VkDescriptorSet set;
    vk::check_vk(vkAllocateDescriptorSets(device_, &ai, &set), "test vkAllocateDescriptorSets");
    VkDescriptorBufferInfo infos[3] = {{a, 0, n * 4u}, {b, 0, n * 4u}, {c, 0, n * 4u}};
    VkWriteDescriptorSet writes[3];
    for (uint32_t i = 0; i < 3; ++i) {
      writes[i] = {VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
      writes[i].dstSet = set;
      writes[i].dstBinding = i;
      writes[i].descriptorCount = 1;
      writes[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
      writes[i].pBufferInfo = &infos[i];
    }
    vkUpdateDescriptorSets(device_, 3, writes, 0, nullptr);
    BinaryPush push{};
    push.n = static_cast<int32_t>(n);
    push.rank = 1;
    push.shape[0] = static_cast<int32_t>(n);
    push.stride_a[0] = push.stride_b[0] = 1;
    vkCmdBindPipeline(cb, VK_PIPELINE_BIND_POINT_COMPUTE, pipe.pipeline);
    vkCmdBindDescriptorSets(cb, VK_PIPELINE_BIND_POINT_COMPUTE, pipe.layout, 0, 1, &set, 0,
                            nullptr);
    vkCmdPushConstants(cb, pipe.layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof push, &push);
    vkCmdDispatch(cb, (n + kLocal - 1) / kLocal, 1, 1);
  }
  void copy(VkCommandBuffer cb, VkBuffer src, VkBuffer dst, VkDeviceSize bytes) {
    VkBufferCopy region{0, 0, bytes};
    vkCmdCopyBuffer(cb, src, dst, 1, &region);
  }
  // Buffer barriers only: the app orders its own buffers, never the graph's.
  void barrier(VkCommandBuffer cb, const std::vector<VkBuffer>& buffers,
               VkPipelineStageFlags src_stage, VkAccessFlags src_access,
               VkPipelineStageFlags dst_stage, VkAccessFlags dst_access) {
    std::vector<VkBufferMemoryBarrier> bs;
    for (VkBuffer b : buffers) {
      VkBufferMemoryBarrier bb{VK_STRUCTURE_TYPE_BUFFER_MEMORY_BARRIER};
      bb.srcAccessMask = src_access;
      bb.dstAccessMask = dst_access;
      bb.srcQueueFamilyIndex = bb.dstQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED;
      bb.buffer = b;
      bb.size = VK_WHOLE_SIZE;
      bs.push_back(bb);
    }
    vkCmdPipelineBarrier(cb, src_stage, dst_stage, 0, 0, nullptr, static_cast<uint32_t>(bs.size()),
                         bs.data(), 0, nullptr);
  }

  VkFence fence() {
    VkFenceCreateInfo ci{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    VkFence f;
    vk::check_vk(vkCreateFence(device_, &ci, nullptr, &f), "test vkCreateFence");
    fences_.push_back(f);
    return f;
  }
  VkSemaphore semaphore(bool timeline) {
    VkSemaphoreTypeCreateInfo type{VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO};
    type.semaphoreType = VK_SEMAPHORE_TYPE_TIMELINE;
    VkSemaphoreCreateInfo ci{VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO};
    if (timeline) ci.pNext = &type;
    VkSemaphore s;
    vk::check_vk(vkCreateSemaphore(device_, &ci, nullptr, &s), "test vkCreateSemaphore");
    semaphores_.push_back(s);
    return s;
  }

  uint32_t family() const { return queue_.family; }

  // On vkgraph's queue, holding its queue mutex as the ExternalDevice sharing rule asks.
  void submit(VkCommandBuffer cb, const vk::SubmitSync& sync = {}, VkFence fence = VK_NULL_HANDLE) {
    std::vector<VkSemaphore> waits, signals;
    std::vector<VkPipelineStageFlags> stages;
    std::vector<uint64_t> wait_values, signal_values;
    bool timeline = false;
    for (const auto& w : sync.waits) {
      waits.push_back(w.semaphore);
      stages.push_back(w.stage);
      wait_values.push_back(w.value);
      timeline |= w.value != 0;
    }
    for (const auto& s : sync.signals) {
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
    if (timeline) si.pNext = &tsi;
    si.waitSemaphoreCount = static_cast<uint32_t>(waits.size());
    si.pWaitSemaphores = waits.data();
    si.pWaitDstStageMask = stages.data();
    si.commandBufferCount = 1;
    si.pCommandBuffers = &cb;
    si.signalSemaphoreCount = static_cast<uint32_t>(signals.size());
    si.pSignalSemaphores = signals.data();
    std::lock_guard<std::mutex> lock(ctx_.queue_mutex());
    vk::check_vk(vkQueueSubmit(queue_.queue, 1, &si, fence), "test vkQueueSubmit");
  }
  // Whatever a failed test left pending must finish before the objects it uses go.
  void wait_idle() {
    std::lock_guard<std::mutex> lock(ctx_.queue_mutex());
    vkQueueWaitIdle(queue_.queue);
  }
  void pipeline_barrier(VkCommandBuffer cb, VkPipelineStageFlags src, VkPipelineStageFlags dst,
                        const std::vector<VkBufferMemoryBarrier>& barriers) {
    vkCmdPipelineBarrier(cb, src, dst, 0, 0, nullptr, static_cast<uint32_t>(barriers.size()),
                         barriers.data(), 0, nullptr);
  }
  void wait(VkFence fence) {
    vk::check_vk(vkWaitForFences(device_, 1, &fence, VK_TRUE, UINT64_MAX), "test fence wait");
    vk::check_vk(vkResetFences(device_, 1, &fence), "test vkResetFences");
  }

 private:
  vk::Context& ctx_;
  VkDevice device_;
  AppQueue queue_;
  VkCommandPool commands_ = VK_NULL_HANDLE;
  VkDescriptorPool descriptors_ = VK_NULL_HANDLE;
  std::vector<VkFence> fences_;
  std::vector<VkSemaphore> semaphores_;
};

enum class Producer { Compute, Transfer };

// The app's work around one graph, each step its own submission on the graph's queue:
//   producer  P = U + U (a compute dispatch) or P = U (a transfer copy); no barrier of its own
//   graph     Q = (P + C) * P, P and Q bound with bind_external
//   consumer  R = Q + Q, then R -> H with the app's own barriers, H read by the host.
// U and H are host-visible, P, Q and R device-local; the app allocated all of them.
// With an app queue of another family, P and Q change owner around every execution: the
// producer releases them to the graph's family and the consumer acquires them back.
struct Chain {
  Chain(std::shared_ptr<vk::Context> context, GraphOptions options, Producer producer_kind,
        std::vector<float> constant, std::optional<AppQueue> app_queue = {})
      : ctx(std::move(context)),
        kind(producer_kind),
        c(std::move(constant)),
        app(*ctx, app_queue),
        u(*ctx, kBytes, kAppUsage, kHostMemory),
        p(*ctx, kBytes, kAppUsage, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT),
        q(*ctx, kBytes, kAppUsage, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT),
        r(*ctx, kBytes, kAppUsage, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT),
        h(*ctx, kBytes, VK_BUFFER_USAGE_TRANSFER_DST_BIT, kHostMemory),
        graph(ctx, options) {
    build_graph(graph, c, IOMode::External, "p", "q");
    const bool transfer = app.family() != ctx->queue_family();
    ExternalBuffer pe = p.external(), qe = q.external();
    if (transfer) pe.queue_family = qe.queue_family = app.family();
    graph.bind_external("p", pe);
    graph.bind_external("q", qe);
    // Now, not in the first submit: the constant upload's own barrier would otherwise sit
    // between the producer and the graph and order them in place of the graph's entry barrier.
    graph.prepare();

    producer = app.begin();
    if (kind == Producer::Compute)
      app.binary(producer, "binary_add_f32", u.handle(), u.handle(), p.handle(), kN);
    else
      app.copy(producer, u.handle(), p.handle(), kBytes);
    if (transfer)
      app.pipeline_barrier(
          producer, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
          VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT,
          {graph.app_release("p", kind == Producer::Compute ? VK_ACCESS_SHADER_WRITE_BIT
                                                            : VK_ACCESS_TRANSFER_WRITE_BIT),
           graph.app_release("q", 0)});
    app.end(producer);

    consumer = app.begin();
    // The acquire's source stage is the one the consumer's semaphore wait names.
    if (transfer)
      app.pipeline_barrier(
          consumer, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
          VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
          {graph.app_acquire("p", VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT),
           graph.app_acquire("q", VK_ACCESS_SHADER_READ_BIT)});
    // The app's own order across iterations: the last copy (reads R, writes H) before this
    // iteration's writes of R and H. Buffer barriers, so they order nothing of the graph's.
    app.barrier(consumer, {r.handle(), h.handle()}, VK_PIPELINE_STAGE_TRANSFER_BIT,
                VK_ACCESS_TRANSFER_WRITE_BIT,
                VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
                VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT);
    app.binary(consumer, "binary_add_f32", q.handle(), q.handle(), r.handle(), kN);
    app.barrier(consumer, {r.handle()}, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                VK_ACCESS_SHADER_WRITE_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT,
                VK_ACCESS_TRANSFER_READ_BIT);
    app.copy(consumer, r.handle(), h.handle(), kBytes);
    app.barrier(consumer, {h.handle()}, VK_PIPELINE_STAGE_TRANSFER_BIT,
                VK_ACCESS_TRANSFER_WRITE_BIT, VK_PIPELINE_STAGE_HOST_BIT, VK_ACCESS_HOST_READ_BIT);
    app.end(consumer);
    done = app.fence();
  }
  // Buffers go before the App; nothing may still use them then.
  ~Chain() { app.wait_idle(); }
  Chain(const Chain&) = delete;
  Chain& operator=(const Chain&) = delete;

  // New producer input, written by the host before the producer's submission (which makes it
  // visible to the device); H is poisoned so a result that never arrives is caught.
  void new_data(std::vector<float> values) {
    u_data = std::move(values);
    std::memcpy(u.floats(), u_data.data(), kBytes);
    std::fill(h.floats(), h.floats() + kN, std::nanf(""));
  }
  // After the host has waited for the consumer.
  void check(const std::string& what) const {
    std::vector<float> pv(kN);
    for (uint32_t i = 0; i < kN; ++i)
      pv[i] = kind == Producer::Compute ? u_data[i] + u_data[i] : u_data[i];
    std::vector<float> want = graph_reference(pv, c);
    for (float& v : want) v = v + v;
    EXPECT_EQ(mismatches(h.floats(), want, what), 0u);
  }

  // One iteration ordered by the graph's entry and exit barriers alone: three submissions,
  // graph still in flight when the consumer is submitted.
  void run_in_queue_order() {
    app.submit(producer);
    graph.submit();
    app.submit(consumer, {}, done);
    app.wait(done);
    graph.wait();
  }

  std::shared_ptr<vk::Context> ctx;
  Producer kind;
  std::vector<float> c, u_data;
  App app;
  AppBuffer u, p, q, r, h;
  ComputeGraph graph;
  VkCommandBuffer producer = VK_NULL_HANDLE, consumer = VK_NULL_HANDLE;
  VkFence done = VK_NULL_HANDLE;
};

class ExternalIO : public GpuTest {
 protected:
  std::unique_ptr<Chain> make_chain(std::shared_ptr<vk::Context> ctx, GraphOptions options,
                                    Producer kind) {
    return std::make_unique<Chain>(std::move(ctx), options, kind, random_floats(kN));
  }
};

}  // namespace vkgraph::testing
