#pragma once
// ComputeGraph: tensors plus nodes (compute dispatches and buffer copies). Build it, call
// prepare() (memory plan, allocation, prepacking of constants, pipeline creation), then
// execute() as often as you like: the first execute() records the command buffers (submitting
// earlier chunks as it goes), later ones replay them. Every recording ends with the
// device->host barrier, so outputs are read after: barrier, fence wait, invalidate, read.
//
// Threads: one graph is used by one thread at a time. Several graphs may share a Context.
// Running methods (prepare, copy_to_input, bind_*, submit, wait, execute, copy_from_output,
// read_output) called from a second thread while one is inside any of them throw
// InvalidState instead of racing; a sequence of them (inputs, execute, outputs) is the
// caller's to serialise. Session::run does, so one Session may be shared by threads.
#include <vulkan/vulkan.h>

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "vkgraph/types.h"
#include "vkgraph/vk/shader_ref.h"

namespace vkgraph {
namespace ops {
struct Tuning;
}

namespace vk {
class Context;
struct SubmitSync;
}  // namespace vk

struct TensorRef {
  int32_t index = -1;
  bool valid() const { return index >= 0; }
  bool operator==(const TensorRef& o) const { return index == o.index; }
};

enum class Access : uint8_t { Read, Write, ReadWrite };

struct Binding {
  TensorRef tensor;
  Access access;
};

// One compute dispatch. Specialization constants 0..2 are the workgroup size; `spec` holds the
// shader's own constants (ids 3, 4, ...).
struct DispatchDesc {
  vk::ShaderRef shader;
  std::vector<Binding> bindings;  // binding i of set 0
  std::array<uint32_t, 3> groups{1, 1, 1};
  std::array<uint32_t, 3> local{64, 1, 1};
  std::vector<uint32_t> spec;
  std::vector<uint8_t> push;
  std::string label;  // names the node in errors and profiles, e.g. "Conv /layer1/conv"
};

// An app-owned buffer bound as a graph input or output: no staging copy (zero-copy I/O).
struct ExternalBuffer {
  VkBuffer buffer = VK_NULL_HANDLE;
  VkDeviceSize offset = 0;       // a multiple of 16 bytes (and of minStorageBufferOffsetAlignment)
  VkDeviceSize size = 0;         // bytes available from offset
  VkBufferUsageFlags usage = 0;  // the usage the app created it with; needs STORAGE_BUFFER
  // The queue family that owns an EXCLUSIVE-sharing buffer between executions, when it is not
  // the graph's (Context::queue_family()). The graph then acquires [offset, offset+size) at
  // its entry and releases it back at its exit; around every execution the app records the
  // matching halves on its own queue (ComputeGraph::app_release / app_acquire) and orders the
  // queues with semaphores (SubmitSync). IGNORED: same family, or a CONCURRENT buffer.
  uint32_t queue_family = VK_QUEUE_FAMILY_IGNORED;
};

// How the app uses external buffers around the graph (DESIGN.md rule 6). The graph does not
// track that memory, so it records global barriers at its entry (the app's earlier accesses
// -> this graph's) and exit (this graph's writes -> the app's later accesses). The defaults
// are correct whatever the app does; narrow them when you know the stage and access.
struct ExternalSync {
  VkPipelineStageFlags before_stage = VK_PIPELINE_STAGE_ALL_COMMANDS_BIT;
  VkAccessFlags before_access = VK_ACCESS_MEMORY_WRITE_BIT;
  VkPipelineStageFlags after_stage = VK_PIPELINE_STAGE_ALL_COMMANDS_BIT;
  VkAccessFlags after_access = VK_ACCESS_MEMORY_READ_BIT | VK_ACCESS_MEMORY_WRITE_BIT;
};

enum class IOMode {
  Staged,    // the graph owns the tensor; copy_to_input / copy_from_output move the data
  External,  // the app binds a buffer or a host pointer; nothing is copied by the graph
};

// Which path bind_host_pointer took.
enum class HostIOPath { Imported, Copied };

struct GraphOptions {
  uint32_t nodes_per_command_buffer = 64;  // chunk size for submission
  bool plan_memory = true;                 // share activation memory between tensors by lifetime
  bool profile = false;                    // per-node timestamps (ComputeGraph::set_profile)
  ExternalSync external;
  // Kernel tuning for the ops that build this graph (vkgraph/ops/tuning.h); null: the device's
  // defaults. The graph only carries it.
  std::shared_ptr<const ops::Tuning> tuning;
};

struct TensorInfo {
  Shape shape;
  DType dtype;
  std::string name;
  int32_t storage;  // views share their source's storage
  size_t nbytes() const { return static_cast<size_t>(numel(shape)) * dtype_size(dtype); }
};

struct GraphStats {
  size_t nodes = 0;
  size_t command_buffers = 0;
  uint64_t activation_bytes = 0;            // after lifetime sharing
  uint64_t unplanned_activation_bytes = 0;  // if every activation had its own buffer
  uint64_t constant_bytes = 0;
  // The Context allocator's high-water mark of device memory blocks: every graph and buffer on
  // the Context counted, in whole blocks, so not this graph's own footprint (that is
  // activation_bytes + constant_bytes, plus staging).
  uint64_t context_peak_device_bytes = 0;
  size_t activation_buffers = 0;
  // Times the command buffers were recorded: once, plus once per rebinding of external I/O
  // after an execution. Replays record nothing.
  size_t recordings = 0;
  // Where prepare() spent its time: the activation plan, the constants' allocation and upload,
  // and the encoder (pipelines from the Context's cache, descriptor and command pools).
  double prepare_plan_ms = 0;
  double prepare_upload_ms = 0;
  double prepare_encoder_ms = 0;
};

struct NodeTime {
  std::string label;
  double gpu_ms;
};

// The graph's parts live in src/graph (graph_state.h: the tables; memory_plan, graph_io,
// encoder: one job each); this class is their public face.
class ComputeGraph {
 public:
  explicit ComputeGraph(std::shared_ptr<vk::Context> context, GraphOptions options = {});
  ~ComputeGraph();
  ComputeGraph(const ComputeGraph&) = delete;
  ComputeGraph& operator=(const ComputeGraph&) = delete;

  // --- building ---
  TensorRef add_tensor(Shape shape, DType dtype, std::string name = "");
  // Same bytes, new shape (Reshape, Flatten, Squeeze, Unsqueeze cost nothing).
  TensorRef add_view(TensorRef source, Shape shape, std::string name = "");
  TensorRef add_constant(HostTensor value, std::string name = "");
  // A tensor that keeps its contents from one execution to the next, starting as `initial`:
  // dispatches may write it (a kernel's own counters, e.g. the fused split-K GEMM's), it shares
  // memory with nothing, and the graph orders each run's first access after the previous run's
  // last.
  TensorRef add_state(HostTensor initial, std::string name = "");
  TensorRef add_input(Shape shape, DType dtype, std::string name, IOMode mode = IOMode::Staged);
  void add_output(TensorRef tensor, std::string name, IOMode mode = IOMode::Staged);
  void add_dispatch(DispatchDesc desc);
  // Prefixes the labels of nodes added from now on (the ONNX importer names the model node),
  // so errors and profiles say which model node a dispatch belongs to.
  void set_label_scope(std::string scope);
  void add_copy(TensorRef src, TensorRef dst, uint64_t src_offset, uint64_t dst_offset,
                uint64_t bytes, std::string label = "copy");

  // By value: adding tensors may move the table, so references would dangle.
  TensorInfo info(TensorRef t) const;
  bool is_constant(TensorRef t) const;
  const HostTensor* constant_value(TensorRef t) const;  // null unless a constant
  vk::Context& context();
  const GraphOptions& options() const;

  // --- running ---
  void prepare();
  size_t num_inputs() const;
  size_t num_outputs() const;
  const std::string& input_name(size_t i) const;
  const std::string& output_name(size_t i) const;
  TensorRef input(size_t i) const;
  TensorRef output(size_t i) const;
  // `bytes` must equal the tensor's size exactly.
  void copy_to_input(size_t i, const void* data, size_t bytes);
  // Binds an app buffer to an External input or output (by name). Rebinding after the first
  // execute re-records the command buffers.
  void bind_external(const std::string& name, const ExternalBuffer& buffer);
  // The app's halves of the ownership transfer of an External binding with a foreign
  // queue_family: record app_release before each execution (after the app's last write or
  // read there; its srcAccessMask is `app_access`) and app_acquire after it (before the app's
  // next access; dstAccessMask `app_access`). Stage masks are the app's to choose.
  VkBufferMemoryBarrier app_release(const std::string& name, VkAccessFlags app_access) const;
  VkBufferMemoryBarrier app_acquire(const std::string& name, VkAccessFlags app_access) const;
  // Binds app host memory to an External input or output: imported (zero-copy) where the
  // device allows (VK_EXT_external_memory_host, aligned pointer and size), else through a
  // graph-owned host-visible buffer and a memcpy at submit (inputs) / wait (outputs). `bytes`
  // is what the app has at `pointer`, at least the tensor's size; allocations rounded up to
  // features().min_imported_host_pointer_alignment can be imported whatever the tensor's size.
  // The memory must stay valid while bound; outputs are readable there after wait().
  HostIOPath bind_host_pointer(const std::string& name, void* pointer, size_t bytes);
  void execute();  // submit() + wait()
  // Asynchronous; outputs may be read only after wait(). `sync` adds semaphores to wait on
  // (producers on other queues) and to signal (consumers).
  void submit();
  void submit(const vk::SubmitSync& sync);
  void wait();
  bool in_flight() const;
  void copy_from_output(size_t i, void* data, size_t bytes);
  HostTensor read_output(size_t i);
  // read_output as `as`: the output's dtype, or Float32 for a Float16 output, widened on the
  // host as it is copied (half the bytes of a float32 output cross the bus).
  void copy_from_output(size_t i, void* data, size_t bytes, DType as);
  HostTensor read_output(size_t i, DType as);

  GraphStats stats() const;
  double last_gpu_ms() const;                // GPU time of the last execution (timestamps)
  std::vector<NodeTime> node_times() const;  // needs options.profile
  // Turns per-node timestamps on or off after building (the next execution records its command
  // buffers again): a timestamp after every node costs GPU time, so time runs without them.
  void set_profile(bool on);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  // tests/gpu/graph_testing.h reaches the parts through it (tests break the graph's
  // synchronization on purpose there, to prove the checks can fail).
  friend struct GraphInternals;
};

}  // namespace vkgraph
