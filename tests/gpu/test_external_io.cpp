// Zero-copy graph I/O (DESIGN.md rule 6) under synchronization validation. An "app" with its own
// VkBuffers, VkDeviceMemory, command buffers, descriptor sets and dispatches produces a graph's
// external input and consumes its external output on the graph's queue, ordered by the graph's
// entry and exit barriers or by semaphores; the test switches that drop those barriers, and
// ExternalSync masks that miss the app's work, are reported as hazards. Host pointers are
// imported or copied, with flush and invalidate in the sync trace. Two graphs run in flight on
// one Context, and a Context adopts a device the test created itself and leaves it alive.
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
namespace {

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
const ::testing::Environment* const kSharedContext =
    ::testing::AddGlobalTestEnvironment(new SharedContext);

std::shared_ptr<vk::Context> shared_context() {
  return SharedContext::get();
}

std::string hex(uint64_t v) {
  std::ostringstream s;
  s << "0x" << std::hex << v;
  return s.str();
}

template <typename Handle>
std::string hex_handle(Handle h) {
  return hex(reinterpret_cast<uint64_t>(h));
}

// Counts elements that differ beyond float rounding, reporting the first.
size_t mismatches(const float* got, const std::vector<float>& want, const std::string& what) {
  size_t bad = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    if (std::abs(got[i] - want[i]) <= 1e-6f * std::max(1.f, std::abs(want[i]))) continue;
    if (bad++ == 0)
      ADD_FAILURE() << what << "[" << i << "] = " << got[i] << ", expected " << want[i];
  }
  return bad;
}

// (x + c) * x: the graph every test here builds around its external or host-bound I/O.
std::vector<float> graph_reference(const std::vector<float>& x, const std::vector<float>& c) {
  std::vector<float> y(x.size());
  for (size_t i = 0; i < x.size(); ++i) y[i] = (x[i] + c[i]) * x[i];
  return y;
}

void build_graph(ComputeGraph& g, const std::vector<float>& c, IOMode mode, const char* in,
                 const char* out) {
  TensorRef x = g.add_input({static_cast<int64_t>(c.size())}, DType::Float32, in, mode);
  TensorRef k =
      g.add_constant(HostTensor::from(DType::Float32, {static_cast<int64_t>(c.size())}, c), "c");
  g.add_output(ops::binary(g, BinaryOp::Mul, ops::binary(g, BinaryOp::Add, x, k), x), out, mode);
}

uint32_t memory_type(VkPhysicalDevice physical, uint32_t type_bits, VkMemoryPropertyFlags want) {
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

// --- producer -> graph -> consumer on one queue, ordered by the graph's barriers ---

class ExternalIOProducers : public ExternalIO, public ::testing::WithParamInterface<Producer> {};

TEST_P(ExternalIOProducers, AppBuffersFlowThroughTheGraphOnOneQueue) {
  auto chain = make_chain(shared_context(), {}, GetParam());
  for (int it = 0; it < 3; ++it) {
    chain->new_data(random_floats(kN));
    chain->run_in_queue_order();
    chain->check("iteration " + std::to_string(it));
  }
}

INSTANTIATE_TEST_SUITE_P(Kinds, ExternalIOProducers,
                         ::testing::Values(Producer::Compute, Producer::Transfer),
                         [](const auto& info) {
                           return info.param == Producer::Compute ? std::string("ComputeProducer")
                                                                  : std::string("TransferProducer");
                         });

// --- semaphores between the submissions ---

// Two chunks (one node each): the first execute's waits gate the first chunk it submits and its
// signals follow the last; replays submit both in one batch with the same semaphores.
TEST_F(ExternalIO, BinarySemaphoresChainProducerGraphConsumer) {
  GraphOptions options;
  options.nodes_per_command_buffer = 1;
  auto chain = make_chain(shared_context(), options, Producer::Compute);
  VkSemaphore produced = chain->app.semaphore(false), computed = chain->app.semaphore(false);
  for (int it = 0; it < 3; ++it) {
    chain->new_data(random_floats(kN));
    chain->app.submit(chain->producer, {{}, {{produced}}});
    chain->graph.submit({{{produced, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT}}, {{computed}}});
    chain->app.submit(chain->consumer, {{{computed, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT}}, {}},
                      chain->done);
    chain->app.wait(chain->done);
    chain->graph.wait();
    chain->check("iteration " + std::to_string(it));
  }
  EXPECT_EQ(chain->graph.stats().command_buffers, 2u);
}

// One timeline semaphore counts the steps; the host waits on its value, not on a fence.
TEST_F(ExternalIO, TimelineSemaphoreChainsProducerGraphConsumer) {
  auto ctx = shared_context();
  if (!ctx->features().timeline_semaphores) GTEST_SKIP() << "no timeline semaphores";
  auto chain = make_chain(ctx, {}, Producer::Compute);
  VkSemaphore timeline = chain->app.semaphore(true);
  for (uint64_t it = 0; it < 3; ++it) {
    const uint64_t base = 3 * it;
    chain->new_data(random_floats(kN));
    chain->app.submit(chain->producer, {{}, {{timeline, base + 1}}});
    chain->graph.submit(
        {{{timeline, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, base + 1}}, {{timeline, base + 2}}});
    chain->app.submit(chain->consumer, {{{timeline, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, base + 2}},
                                        {{timeline, base + 3}}});
    const uint64_t value = base + 3;
    VkSemaphoreWaitInfo wi{VK_STRUCTURE_TYPE_SEMAPHORE_WAIT_INFO};
    wi.semaphoreCount = 1;
    wi.pSemaphores = &timeline;
    wi.pValues = &value;
    ASSERT_EQ(vkWaitSemaphores(ctx->device(), &wi, UINT64_MAX), VK_SUCCESS);
    chain->graph.wait();
    chain->check("iteration " + std::to_string(it));
  }
}

// Semaphore signal and wait operations are full memory dependencies, so with them the graph's
// entry and exit barriers are not needed: dropping both stays clean.
TEST_F(ExternalIO, SemaphoresAloneOrderTheChainWithoutTheGraphsBarriers) {
  GraphOptions options;
  options.testing_omit_external_entry_barrier = true;
  options.testing_omit_external_exit_barrier = true;
  auto chain = make_chain(shared_context(), options, Producer::Transfer);
  VkSemaphore produced = chain->app.semaphore(false), computed = chain->app.semaphore(false);
  for (int it = 0; it < 2; ++it) {
    chain->new_data(random_floats(kN));
    chain->app.submit(chain->producer, {{}, {{produced}}});
    chain->graph.submit({{{produced}}, {{computed}}});
    chain->app.submit(chain->consumer, {{{computed}}, {}}, chain->done);
    chain->app.wait(chain->done);
    chain->graph.wait();
    chain->check("iteration " + std::to_string(it));
  }
}

// --- ExternalSync narrowed to what the app really does ---

TEST_F(ExternalIO, NarrowedExternalSyncMatchingTheAppIsClean) {
  GraphOptions options;
  options.external.before_stage = VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT;
  options.external.before_access = VK_ACCESS_SHADER_WRITE_BIT;
  options.external.after_stage = VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT;
  options.external.after_access = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT;
  auto chain = make_chain(shared_context(), options, Producer::Compute);
  for (int it = 0; it < 3; ++it) {
    chain->new_data(random_floats(kN));
    chain->run_in_queue_order();
    chain->check("iteration " + std::to_string(it));
  }
}

// --- the checks can fail: barriers dropped, or masks that miss the app's work ---

struct HazardCase {
  const char* name;
  Producer producer;
  bool omit_entry, omit_exit;
  ExternalSync sync;
  bool on_p;  // the hazard is the graph's read of P (else the consumer's read of Q)
};

ExternalSync narrowed_before_to_compute() {
  ExternalSync s;
  s.before_stage = VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT;
  s.before_access = VK_ACCESS_SHADER_WRITE_BIT;
  return s;
}

ExternalSync narrowed_after_to_transfer() {
  ExternalSync s;
  s.after_stage = VK_PIPELINE_STAGE_TRANSFER_BIT;
  s.after_access = VK_ACCESS_TRANSFER_READ_BIT;
  return s;
}

class ExternalIOHazards : public ExternalIO, public ::testing::WithParamInterface<HazardCase> {};

// Each case is one iteration on a fresh instance; the hazard must be a read-after-write and
// name the submission that makes it: the graph's (reading P) or the consumer's (reading Q).
TEST_P(ExternalIOHazards, AreReportedBySynchronizationValidation) {
  const HazardCase& hc = GetParam();
  auto ctx = make_context({});
  if (!ctx->validation_enabled()) GTEST_SKIP() << "needs the validation layer";
  GraphOptions options;
  options.testing_omit_external_entry_barrier = hc.omit_entry;
  options.testing_omit_external_exit_barrier = hc.omit_exit;
  options.external = hc.sync;
  std::string producer, consumer;
  {
    auto chain = make_chain(ctx, options, hc.producer);
    producer = hex_handle(chain->producer);
    consumer = hex_handle(chain->consumer);
    chain->new_data(random_floats(kN));
    chain->run_in_queue_order();
  }
  auto messages = ctx->validation_messages();
  ASSERT_FALSE(messages.empty()) << hc.name << ": no hazard reported";
  for (const std::string& m : messages)
    EXPECT_NE(m.find("SYNC-HAZARD"), std::string::npos) << hc.name << ": not a hazard: " << m;
  // The message names the command buffer that hazards first, the one with the prior access
  // after "command_buffer:". P: the graph's read of the producer's write. Q: the consumer's read.
  const std::string prior = "command_buffer: VkCommandBuffer " + producer;
  bool found = false;
  for (const std::string& m : messages) {
    if (m.find("READ_AFTER_WRITE") == std::string::npos) continue;
    size_t first = m.find("VkCommandBuffer 0x");
    bool in_consumer = first != std::string::npos &&
                       m.compare(first + 16, consumer.size() + 1, consumer + "[") == 0;
    found |= hc.on_p ? !in_consumer && m.find(prior + "[") != std::string::npos : in_consumer;
  }
  EXPECT_TRUE(found) << hc.name << ": first message: " << messages[0];
  ctx->clear_validation_messages();
}

INSTANTIATE_TEST_SUITE_P(
    Cases, ExternalIOHazards,
    ::testing::Values(HazardCase{"OmittedEntryBarrier", Producer::Compute, true, false, {}, true},
                      HazardCase{"OmittedExitBarrier", Producer::Compute, false, true, {}, false},
                      HazardCase{"BeforeMaskMissesTransferProducer", Producer::Transfer, false,
                                 false, narrowed_before_to_compute(), true},
                      HazardCase{"AfterMaskMissesComputeConsumer", Producer::Compute, false, false,
                                 narrowed_after_to_transfer(), false}),
    [](const auto& info) { return std::string(info.param.name); });

// Rebinding after an execute re-records: results land in the new buffer (at an offset into
// it), the old one keeps what the earlier run wrote.
TEST_F(ExternalIO, RebindingAfterExecuteRecordsAgain) {
  auto ctx = shared_context();
  auto c = random_floats(kN);
  ComputeGraph g(ctx);
  build_graph(g, c, IOMode::External, "x", "y");
  AppBuffer x(*ctx, kBytes, kAppUsage, kHostMemory);
  AppBuffer y1(*ctx, kBytes, kAppUsage, kHostMemory), y2(*ctx, 2 * kBytes, kAppUsage, kHostMemory);
  g.bind_external("x", x.external());
  g.bind_external("y", y1.external());
  auto in1 = random_floats(kN);
  std::memcpy(x.floats(), in1.data(), kBytes);
  std::fill(y1.floats(), y1.floats() + kN, std::nanf(""));
  g.execute();  // ends with ALL_COMMANDS -> HOST; the memory is coherent
  const std::vector<float> want1 = graph_reference(in1, c);
  EXPECT_EQ(mismatches(y1.floats(), want1, "y1"), 0u);
  EXPECT_EQ(g.stats().recordings, 1u);

  const VkDeviceSize offset =
      std::max<VkDeviceSize>(ctx->limits().minStorageBufferOffsetAlignment, kBytes / 2 / 256 * 256);
  g.bind_external("y", y2.external(offset));
  auto in2 = random_floats(kN);
  std::memcpy(x.floats(), in2.data(), kBytes);
  std::fill(y2.floats(), y2.floats() + 2 * kN, std::nanf(""));
  g.execute();
  EXPECT_EQ(mismatches(y2.floats() + offset / sizeof(float), graph_reference(in2, c), "y2"), 0u);
  EXPECT_TRUE(std::isnan(y2.floats()[0]));  // nothing written before the offset
  EXPECT_EQ(mismatches(y1.floats(), want1, "y1 after rebinding"), 0u);
  EXPECT_EQ(g.stats().recordings, 2u);
}

// --- host memory: imported where possible, else copied ---

struct HostCase {
  const char* name;
  bool aligned_pointer;
  bool padded_size;   // bytes passed rounded up to the import alignment
  bool non_coherent;  // force_non_coherent + sync_trace
};

class HostPointer : public GpuTest, public ::testing::WithParamInterface<HostCase> {};

// Frees aligned_alloc memory.
struct FreeDeleter {
  void operator()(void* p) const { std::free(p); }
};

TEST_P(HostPointer, RoundTripsOverRuns) {
  const HostCase& hc = GetParam();
  vk::ContextOptions co;
  co.force_non_coherent = hc.non_coherent;
  co.sync_trace = hc.non_coherent;
  auto ctx = hc.non_coherent ? make_context(co) : shared_context();
  const VkDeviceSize align =
      std::max<VkDeviceSize>(ctx->features().min_imported_host_pointer_alignment, 64);
  const size_t padded = (kBytes + align - 1) / align * align;
  // One spare alignment unit so the unaligned pointer still has `padded` bytes behind it.
  std::unique_ptr<void, FreeDeleter> x_mem(std::aligned_alloc(align, padded + align));
  std::unique_ptr<void, FreeDeleter> y_mem(std::aligned_alloc(align, padded + align));
  ASSERT_TRUE(x_mem && y_mem);
  const size_t shift = hc.aligned_pointer ? 0 : sizeof(float);
  float* x = reinterpret_cast<float*>(static_cast<uint8_t*>(x_mem.get()) + shift);
  float* y = reinterpret_cast<float*>(static_cast<uint8_t*>(y_mem.get()) + shift);
  const size_t bytes = hc.padded_size ? padded : kBytes;

  auto c = random_floats(kN);
  ComputeGraph g(ctx);
  build_graph(g, c, IOMode::External, "x", "y");
  const bool importable =
      ctx->features().external_memory_host && hc.aligned_pointer && hc.padded_size;
  const HostIOPath want_path = importable ? HostIOPath::Imported : HostIOPath::Copied;
  EXPECT_EQ(g.bind_host_pointer("x", x, bytes), want_path);
  EXPECT_EQ(g.bind_host_pointer("y", y, bytes), want_path);
  g.prepare();
  vk::SyncTrace* trace = ctx->trace();
  if (trace) trace->clear();  // only the runs, not the constant upload

  constexpr int kRuns = 3;
  for (int run = 0; run < kRuns; ++run) {
    auto in = random_floats(kN);
    std::memcpy(x, in.data(), kBytes);
    // Host writes to imported non-coherent output memory could be evicted over device results.
    if (!(importable && hc.non_coherent)) std::fill(y, y + kN, std::nanf(""));
    g.execute();
    EXPECT_EQ(mismatches(y, graph_reference(in, c), "run " + std::to_string(run)), 0u);
  }
  if (!trace) return;

  // The rule-3/4 shape of every run: input flushed before its submit, output invalidated after
  // the fence wait, both on the right buffers.
  auto timeline = trace->timeline();
  std::set<uint64_t> written;  // host-visible buffers the recording writes: the output
  for (const SyncEvent& e : timeline)
    if (e.type == SyncEvent::Type::Submit)
      for (uint64_t cb : e.command_buffers)
        for (const SyncEvent& r : trace->recorded(cb))
          if (r.type == SyncEvent::Type::DeviceWrite) written.insert(r.resource);
  ASSERT_EQ(written.size(), 1u);
  int submits = 0;
  bool flushed = false, waited = false, invalidated = false;
  for (const SyncEvent& e : timeline) {
    switch (e.type) {
      case SyncEvent::Type::Flush:
        EXPECT_EQ(written.count(e.resource), 0u) << "flush of the output";
        flushed = true;
        break;
      case SyncEvent::Type::Submit:
        EXPECT_TRUE(flushed) << "submit " << submits << " without a flush of the input";
        if (submits > 0) {
          EXPECT_TRUE(invalidated) << "run " << submits - 1 << " not invalidated";
        }
        flushed = waited = invalidated = false;
        ++submits;
        break;
      case SyncEvent::Type::FenceWait:
        waited = true;
        break;
      case SyncEvent::Type::Invalidate:
        EXPECT_TRUE(waited) << "invalidate before the fence wait";
        EXPECT_EQ(written.count(e.resource), 1u) << "invalidate of another buffer";
        invalidated = true;
        break;
      default:
        break;
    }
  }
  EXPECT_EQ(submits, kRuns);
  EXPECT_TRUE(invalidated) << "last run not invalidated";
  auto problems = trace->audit();
  EXPECT_TRUE(problems.empty()) << problems[0];
}

INSTANTIATE_TEST_SUITE_P(
    Paths, HostPointer,
    ::testing::Values(HostCase{"Imported", true, true, false},
                      HostCase{"CopiedUnalignedPointer", false, true, false},
                      HostCase{"CopiedUnpaddedSize", true, false, false},
                      HostCase{"ImportedNonCoherentTraced", true, true, true},
                      HostCase{"CopiedUnalignedPointerNonCoherentTraced", false, true, true},
                      HostCase{"CopiedUnpaddedSizeNonCoherentTraced", true, false, true}),
    [](const auto& info) { return std::string(info.param.name); });

class HostPointerRebinding : public GpuTest {};

// Switching each binding between the imported and the copied path after a run records again;
// results land in the newly bound memory.
TEST_F(HostPointerRebinding, SwitchingPathsAfterARunRecordsAgain) {
  auto ctx = shared_context();
  if (!ctx->features().external_memory_host) GTEST_SKIP() << "no VK_EXT_external_memory_host";
  const VkDeviceSize align = ctx->features().min_imported_host_pointer_alignment;
  const size_t padded = (kBytes + align - 1) / align * align;
  std::vector<std::unique_ptr<void, FreeDeleter>> memory;
  auto allocate = [&](bool importable) {
    memory.emplace_back(std::aligned_alloc(align, padded + align));
    uint8_t* base = static_cast<uint8_t*>(memory.back().get());
    return reinterpret_cast<float*>(importable ? base : base + sizeof(float));
  };
  auto c = random_floats(kN);
  ComputeGraph g(ctx);
  build_graph(g, c, IOMode::External, "x", "y");
  for (bool x_imported : {true, false}) {
    float* x = allocate(x_imported);
    float* y = allocate(!x_imported);
    EXPECT_EQ(g.bind_host_pointer("x", x, padded),
              x_imported ? HostIOPath::Imported : HostIOPath::Copied);
    EXPECT_EQ(g.bind_host_pointer("y", y, padded),
              x_imported ? HostIOPath::Copied : HostIOPath::Imported);
    for (int run = 0; run < 2; ++run) {
      auto in = random_floats(kN);
      std::memcpy(x, in.data(), kBytes);
      std::fill(y, y + kN, std::nanf(""));
      g.execute();
      EXPECT_EQ(mismatches(y, graph_reference(in, c), x_imported ? "x imported" : "y imported"),
                0u);
    }
  }
}

// --- asynchronous execution ---

class AsyncGraphs : public GpuTest {};

TEST_F(AsyncGraphs, TwoGraphsInFlightOnOneContextGiveTheirOwnResults) {
  auto ctx = shared_context();
  auto ca = random_floats(kN);
  ComputeGraph a(ctx), b(ctx);
  build_graph(a, ca, IOMode::Staged, "x", "y");
  // b: x * x - d over [37, 11], d broadcast along rows.
  TensorRef bx = b.add_input({37, 11}, DType::Float32, "x");
  auto d = random_floats(11);
  TensorRef bd = b.add_constant(HostTensor::from(DType::Float32, {11}, d), "d");
  b.add_output(ops::binary(b, BinaryOp::Sub, ops::binary(b, BinaryOp::Mul, bx, bx), bd), "y");
  for (int round = 0; round < 2; ++round) {
    auto va = random_floats(kN), vb = random_floats(37 * 11);
    a.copy_to_input(0, va.data(), kBytes);
    a.submit();
    b.copy_to_input(0, vb.data(), vb.size() * sizeof(float));
    b.submit();
    EXPECT_TRUE(a.in_flight() && b.in_flight());
    b.wait();
    a.wait();
    std::vector<float> want_b(vb.size());
    for (size_t i = 0; i < vb.size(); ++i) want_b[i] = vb[i] * vb[i] - d[i % 11];
    auto ya = a.read_output(0), yb = b.read_output(0);
    EXPECT_EQ(mismatches(ya.data<float>(), graph_reference(va, ca), "a"), 0u);
    EXPECT_EQ(mismatches(yb.data<float>(), want_b, "b"), 0u);
  }
}

TEST_F(AsyncGraphs, MisuseWhileInFlightIsInvalidState) {
  auto ctx = shared_context();
  auto c = random_floats(kN);
  ComputeGraph g(ctx);
  build_graph(g, c, IOMode::Staged, "x", "y");
  expect_error([&] { g.wait(); }, ErrorKind::InvalidState, "without a submitted execution");
  auto in = random_floats(kN);
  g.copy_to_input(0, in.data(), kBytes);
  g.submit();
  std::vector<float> out(kN);
  expect_error([&] { g.copy_from_output(0, out.data(), kBytes); }, ErrorKind::InvalidState,
               "in flight");
  expect_error([&] { g.submit(); }, ErrorKind::InvalidState, "in flight");
  expect_error([&] { g.copy_to_input(0, in.data(), kBytes); }, ErrorKind::InvalidState,
               "in flight");
  EXPECT_TRUE(g.in_flight());
  g.wait();
  EXPECT_FALSE(g.in_flight());
  g.copy_from_output(0, out.data(), kBytes);
  EXPECT_EQ(mismatches(out.data(), graph_reference(in, c), "y"), 0u);
  expect_error([&] { g.wait(); }, ErrorKind::InvalidState, "without a submitted execution");
}

TEST_F(AsyncGraphs, RebindingWhileInFlightIsInvalidState) {
  auto ctx = shared_context();
  auto c = random_floats(kN);
  ComputeGraph g(ctx);
  build_graph(g, c, IOMode::External, "x", "y");
  AppBuffer x(*ctx, kBytes, kAppUsage, kHostMemory), y(*ctx, kBytes, kAppUsage, kHostMemory);
  g.bind_external("x", x.external());
  g.bind_external("y", y.external());
  auto in = random_floats(kN);
  std::memcpy(x.floats(), in.data(), kBytes);
  g.submit();
  expect_error([&] { g.bind_external("y", x.external()); }, ErrorKind::InvalidState, "in flight");
  std::vector<float> spare(kN);
  expect_error([&] { g.bind_host_pointer("y", spare.data(), kBytes); }, ErrorKind::InvalidState,
               "in flight");
  g.wait();
  EXPECT_EQ(mismatches(y.floats(), graph_reference(in, c), "y"), 0u);
}

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
  void run_across_queue_families(GraphOptions options, const std::string& what);
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
void AdoptedDevice::run_across_queue_families(GraphOptions options, const std::string& what) {
  const char* env = std::getenv("VKGRAPH_VALIDATION");
  OwnDevice own(!(env && std::string(env) == "0"), /*second_family=*/true);
  if (own.app_family == own.family) GTEST_SKIP() << "the device has one compute queue family";
  {
    auto ctx = vk::Context::adopt(own.external());
    Chain chain(ctx, options, Producer::Compute, random_floats(kN),
                AppQueue{own.app_queue, own.app_family});
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
  if (options.testing_omit_external_entry_barrier) {
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
  GraphOptions options;
  options.testing_omit_external_entry_barrier = true;
  run_across_queue_families(options, "entry barrier dropped");
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

// --- errors ---

class ExternalIOErrors : public GpuTest {};

TEST_F(ExternalIOErrors, BindExternalRejectsBadBuffersAndNames) {
  auto ctx = shared_context();
  ComputeGraph g(ctx);
  auto c = random_floats(kN);
  build_graph(g, c, IOMode::External, "x", "y");
  TensorRef z = g.add_input({4}, DType::Float32, "z");  // staged
  g.add_output(z, "z_out");
  AppBuffer good(*ctx, 2 * kBytes, kAppUsage, kHostMemory);
  AppBuffer no_storage(*ctx, kBytes, VK_BUFFER_USAGE_TRANSFER_DST_BIT, kHostMemory);
  expect_error([&] { g.bind_external("x", no_storage.external()); }, ErrorKind::InvalidArgument,
               "VK_BUFFER_USAGE_STORAGE_BUFFER_BIT");
  ExternalBuffer small = good.external();
  small.size = kBytes - 4;
  expect_error([&] { g.bind_external("x", small); }, ErrorKind::InvalidArgument,
               "needs " + std::to_string(kBytes) + " bytes");
  // In range, but the offset leaves too few bytes.
  expect_error([&] { g.bind_external("x", good.external(kBytes + 256)); },
               ErrorKind::InvalidArgument, "needs " + std::to_string(kBytes));
  const VkDeviceSize align =
      std::max<VkDeviceSize>(16, ctx->limits().minStorageBufferOffsetAlignment);
  expect_error([&] { g.bind_external("x", good.external(4)); }, ErrorKind::InvalidArgument,
               "offset 4 is not a multiple of " + std::to_string(align) + " bytes");
  ExternalBuffer null_buffer = good.external();
  null_buffer.buffer = VK_NULL_HANDLE;
  expect_error([&] { g.bind_external("x", null_buffer); }, ErrorKind::InvalidArgument,
               "null VkBuffer");
  expect_error([&] { g.bind_external("nope", good.external()); }, ErrorKind::InvalidArgument,
               "no input or output named 'nope'");
  expect_error([&] { g.bind_external("z", good.external()); }, ErrorKind::InvalidArgument,
               "'z' was not declared IOMode::External");
  expect_error([&] { g.bind_external("z_out", good.external()); }, ErrorKind::InvalidArgument,
               "'z_out' was not declared IOMode::External");
  std::vector<float> host(kN);
  expect_error([&] { g.bind_host_pointer("x", host.data(), kBytes - 4); },
               ErrorKind::InvalidArgument, "'x' needs " + std::to_string(kBytes) + " bytes");
  expect_error([&] { g.bind_host_pointer("z", host.data(), 16); }, ErrorKind::InvalidArgument,
               "not declared IOMode::External");
  // An offset that is a multiple of the alignment works (the graph is not run here).
  g.bind_external("x", good.external(align));
}

TEST_F(ExternalIOErrors, UnboundOrMisusedExternalIOIsInvalidState) {
  auto ctx = shared_context();
  ComputeGraph g(ctx);
  auto c = random_floats(kN);
  build_graph(g, c, IOMode::External, "x", "y");
  AppBuffer x(*ctx, kBytes, kAppUsage, kHostMemory), y(*ctx, kBytes, kAppUsage, kHostMemory);
  expect_error([&] { g.execute(); }, ErrorKind::InvalidState, "'x' has no buffer bound");
  g.bind_external("x", x.external());
  expect_error([&] { g.execute(); }, ErrorKind::InvalidState, "'y' has no buffer bound");
  EXPECT_FALSE(g.in_flight());
  auto in = random_floats(kN);
  expect_error([&] { g.copy_to_input(0, in.data(), kBytes); }, ErrorKind::InvalidState,
               "input 'x' is external");
  // Once bound, the same graph runs.
  g.bind_external("y", y.external());
  std::memcpy(x.floats(), in.data(), kBytes);
  g.execute();
  EXPECT_EQ(mismatches(y.floats(), graph_reference(in, c), "y"), 0u);
  std::vector<float> out(kN);
  expect_error([&] { g.copy_from_output(0, out.data(), kBytes); }, ErrorKind::InvalidState,
               "output 'y' is external");
}

TEST_F(ExternalIOErrors, ExternalOutputMustBeComputedByTheGraph) {
  ComputeGraph g(shared_context());
  TensorRef x = g.add_input({4}, DType::Float32, "x", IOMode::External);
  TensorRef k = g.add_constant(HostTensor::from(DType::Float32, {4}, std::vector<float>(4, 1.f)));
  expect_error([&] { g.add_output(x, "y", IOMode::External); }, ErrorKind::InvalidArgument,
               "external output 'y' must be computed by the graph");
  expect_error([&] { g.add_output(k, "k", IOMode::External); }, ErrorKind::InvalidArgument,
               "external output 'k'");
}

}  // namespace
}  // namespace vkgraph::testing
