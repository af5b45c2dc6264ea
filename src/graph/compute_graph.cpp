#include "vkgraph/graph/compute_graph.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <utility>

#include "vkgraph/error.h"
#include "vkgraph/vk/sync_trace.h"

namespace vkgraph {

enum class StorageKind { Activation, Constant, External };

struct ComputeGraph::Storage {
  StorageKind kind;
  uint64_t bytes;
  std::string name;
  std::optional<HostTensor> value;  // constants, until prepacked (kept for folding/queries)
  vk::Buffer own;                   // constants
  int32_t slot = -1;                // activations: index into activation_buffers_
  ExternalBuffer external;          // External: the app's buffer (or a host binding)
  bool host_visible = false;        // External bound to host memory
  int first_use = INT32_MAX, last_use = -1;
};

struct ComputeGraph::Node {
  enum class Kind { Dispatch, Copy } kind;
  DispatchDesc dispatch;
  // Copy
  TensorRef src, dst;
  uint64_t src_offset = 0, dst_offset = 0, bytes = 0;
  std::string label;
  const vk::Pipeline* pipeline = nullptr;
  VkDescriptorSet set = VK_NULL_HANDLE;
};

// What one recorded step touches, so barriers can be derived before recording.
struct ComputeGraph::Step {
  enum class Kind { InputCopy, OutputCopy, Node } kind;
  size_t index;  // into inputs_, outputs_ or nodes_
  std::vector<std::pair<VkBuffer, ResourceAccess>> accesses;
};

namespace {
constexpr ResourceAccess kShaderRead{VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                                     VK_ACCESS_SHADER_READ_BIT};
constexpr ResourceAccess kShaderWrite{VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                                      VK_ACCESS_SHADER_WRITE_BIT};
constexpr ResourceAccess kShaderReadWrite{VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                                          VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT};
constexpr ResourceAccess kTransferRead{VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_READ_BIT};
constexpr ResourceAccess kTransferWrite{VK_PIPELINE_STAGE_TRANSFER_BIT,
                                        VK_ACCESS_TRANSFER_WRITE_BIT};
constexpr VkBufferUsageFlags kTensorUsage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT |
                                            VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
                                            VK_BUFFER_USAGE_TRANSFER_DST_BIT;
}  // namespace

ComputeGraph::ComputeGraph(std::shared_ptr<vk::Context> context, GraphOptions options)
    : context_(std::move(context)), options_(options) {
  check(context_ != nullptr, ErrorKind::InvalidArgument, "ComputeGraph needs a Context");
  check(options_.nodes_per_command_buffer > 0, ErrorKind::InvalidArgument,
        "nodes_per_command_buffer must be positive");
}

ComputeGraph::~ComputeGraph() {
  // Never destroy command buffers or memory the GPU may still use.
  if (in_flight_) {
    try {
      fence_->wait();
    } catch (...) {
    }
  }
}

TensorRef ComputeGraph::new_tensor(Shape shape, DType dtype, std::string name, int32_t storage) {
  numel(shape);  // validates dims
  if (name.empty()) name = "t" + std::to_string(tensors_.size());
  tensors_.push_back({std::move(shape), dtype, std::move(name), storage});
  return TensorRef{static_cast<int32_t>(tensors_.size() - 1)};
}

TensorRef ComputeGraph::add_tensor(Shape shape, DType dtype, std::string name) {
  check(!prepared_, ErrorKind::InvalidState, "add_tensor after prepare()");
  uint64_t bytes = static_cast<uint64_t>(numel(shape)) * dtype_size(dtype);
  storages_.push_back(Storage{StorageKind::Activation, bytes, name});
  return new_tensor(std::move(shape), dtype, std::move(name),
                    static_cast<int32_t>(storages_.size() - 1));
}

TensorRef ComputeGraph::add_view(TensorRef source, Shape shape, std::string name) {
  const TensorInfo src = info(source);
  if (numel(shape) != numel(src.shape))
    throw Error(ErrorKind::InvalidArgument,
                "view '" + name + "' of '" + src.name + "': shape " + shape_str(shape) + " has " +
                    std::to_string(numel(shape)) + " elements, source " + shape_str(src.shape) +
                    " has " + std::to_string(numel(src.shape)));
  return new_tensor(std::move(shape), src.dtype, std::move(name), src.storage);
}

TensorRef ComputeGraph::add_constant(HostTensor value, std::string name) {
  check(!prepared_, ErrorKind::InvalidState, "add_constant after prepare()");
  check(value.nbytes() == static_cast<size_t>(value.numel()) * dtype_size(value.dtype),
        ErrorKind::InvalidArgument,
        "constant '" + name + "': " + std::to_string(value.nbytes()) + " bytes for shape " +
            shape_str(value.shape) + " of " + dtype_name(value.dtype));
  Shape shape = value.shape;
  DType dtype = value.dtype;
  storages_.push_back(Storage{StorageKind::Constant, value.nbytes(), name, std::move(value)});
  return new_tensor(std::move(shape), dtype, std::move(name),
                    static_cast<int32_t>(storages_.size() - 1));
}

TensorRef ComputeGraph::add_input(Shape shape, DType dtype, std::string name, IOMode mode) {
  for (auto& io : inputs_)
    check(io.name != name, ErrorKind::InvalidArgument, "duplicate input name '" + name + "'");
  TensorRef t = add_tensor(std::move(shape), dtype, name);
  if (mode == IOMode::External) storages_[info(t).storage].kind = StorageKind::External;
  IO io;
  io.tensor = t;
  io.name = std::move(name);
  io.mode = mode;
  inputs_.push_back(std::move(io));
  return t;
}

void ComputeGraph::add_output(TensorRef tensor, std::string name, IOMode mode) {
  check(!prepared_, ErrorKind::InvalidState, "add_output after prepare()");
  Storage& s = storages_[info(tensor).storage];
  if (mode == IOMode::External) {
    check(s.kind == StorageKind::Activation, ErrorKind::InvalidArgument,
          "external output '" + name + "' must be computed by the graph, not a constant or input");
    s.kind = StorageKind::External;
  }
  IO io;
  io.tensor = tensor;
  io.name = std::move(name);
  io.mode = mode;
  outputs_.push_back(std::move(io));
}

const TensorInfo& ComputeGraph::tensor(TensorRef t) const {
  if (t.index < 0 || static_cast<size_t>(t.index) >= tensors_.size())
    throw Error(ErrorKind::InvalidArgument, "invalid tensor reference " + std::to_string(t.index));
  return tensors_[t.index];
}

TensorInfo ComputeGraph::info(TensorRef t) const {
  return tensor(t);
}

bool ComputeGraph::is_constant(TensorRef t) const {
  return storages_[info(t).storage].kind == StorageKind::Constant;
}

const HostTensor* ComputeGraph::constant_value(TensorRef t) const {
  const Storage& s = storages_[info(t).storage];
  return s.kind == StorageKind::Constant && s.value ? &*s.value : nullptr;
}

void ComputeGraph::add_dispatch(DispatchDesc desc) {
  check(!prepared_, ErrorKind::InvalidState, "add_dispatch after prepare()");
  for (auto& b : desc.bindings) {
    const TensorInfo& ti = info(b.tensor);
    if (b.access != Access::Read && is_constant(b.tensor))
      throw Error(ErrorKind::InvalidArgument,
                  desc.label + ": writes constant tensor '" + ti.name + "'");
    uint64_t range = context_->limits().maxStorageBufferRange;
    if (ti.nbytes() > range)
      throw Error(ErrorKind::Unsupported, desc.label + ": tensor '" + ti.name + "' is " +
                                              std::to_string(ti.nbytes()) +
                                              " bytes, over the device's maxStorageBufferRange (" +
                                              std::to_string(range) + ")");
  }
  vk::find_shader(desc.shader);  // unknown shader: fail at build time, not at encode
  Node n{Node::Kind::Dispatch};
  n.label = desc.label.empty() ? desc.shader : desc.label;
  if (!label_scope_.empty()) n.label = label_scope_ + ": " + n.label;
  n.dispatch = std::move(desc);
  nodes_.push_back(std::move(n));
}

void ComputeGraph::add_copy(TensorRef src, TensorRef dst, uint64_t src_offset, uint64_t dst_offset,
                            uint64_t bytes, std::string label) {
  check(!prepared_, ErrorKind::InvalidState, "add_copy after prepare()");
  const TensorInfo &s = info(src), &d = info(dst);
  if (src_offset + bytes > s.nbytes() || dst_offset + bytes > d.nbytes())
    throw Error(ErrorKind::InvalidArgument, label + ": copy of " + std::to_string(bytes) +
                                                " bytes overruns '" + s.name + "' or '" + d.name +
                                                "'");
  check(!is_constant(dst), ErrorKind::InvalidArgument, label + ": writes a constant");
  if (bytes == 0) return;
  Node n{Node::Kind::Copy};
  n.src = src;
  n.dst = dst;
  n.src_offset = src_offset;
  n.dst_offset = dst_offset;
  n.bytes = bytes;
  n.label = label_scope_.empty() ? std::move(label) : label_scope_ + ": " + label;
  nodes_.push_back(std::move(n));
}

namespace {
// Indices come from callers, so a bad one is an Error like any other bad argument.
template <typename IOList>
const auto& io_at(const IOList& list, size_t i, const std::string& kind) {
  if (i >= list.size())
    throw Error(ErrorKind::InvalidArgument, kind + " index " + std::to_string(i) +
                                                " out of range (" + std::to_string(list.size()) +
                                                " " + kind + "s)");
  return list[i];
}
}  // namespace

const std::string& ComputeGraph::input_name(size_t i) const {
  return io_at(inputs_, i, "input").name;
}
const std::string& ComputeGraph::output_name(size_t i) const {
  return io_at(outputs_, i, "output").name;
}
TensorRef ComputeGraph::input(size_t i) const {
  return io_at(inputs_, i, "input").tensor;
}
TensorRef ComputeGraph::output(size_t i) const {
  return io_at(outputs_, i, "output").tensor;
}

ComputeGraph::Bound ComputeGraph::buffer_of(TensorRef t) const {
  const Storage& s = storages_[tensor(t).storage];
  switch (s.kind) {
    case StorageKind::Constant:
      return {s.own.handle(), 0, false};
    case StorageKind::External:
      return {s.external.buffer, s.external.offset, s.host_visible};
    default:
      return {activation_buffers_[s.slot].handle(), 0, false};
  }
}

const ComputeGraph::IO& ComputeGraph::find_io(const std::string& name) const {
  for (auto* list : {&inputs_, &outputs_})
    for (auto& io : *list)
      if (io.name == name) return io;
  throw Error(ErrorKind::InvalidArgument, "no input or output named '" + name + "'");
}

ComputeGraph::IO& ComputeGraph::find_io(const std::string& name) {
  return const_cast<IO&>(std::as_const(*this).find_io(name));
}

bool ComputeGraph::has_external() const {
  for (auto& s : storages_)
    if (s.kind == StorageKind::External) return true;
  return false;
}

void ComputeGraph::bind_external(const std::string& name, const ExternalBuffer& b) {
  require_idle("bind_external");
  IO& io = find_io(name);
  check(io.mode == IOMode::External, ErrorKind::InvalidArgument,
        "'" + name + "' was not declared IOMode::External");
  TensorInfo ti = info(io.tensor);
  check(b.buffer != VK_NULL_HANDLE, ErrorKind::InvalidArgument, "'" + name + "': null VkBuffer");
  check(b.usage & VK_BUFFER_USAGE_STORAGE_BUFFER_BIT, ErrorKind::InvalidArgument,
        "'" + name + "': the buffer needs VK_BUFFER_USAGE_STORAGE_BUFFER_BIT");
  if (b.size < ti.nbytes())
    throw Error(ErrorKind::InvalidArgument, "'" + name + "' " + shape_str(ti.shape) + " needs " +
                                                std::to_string(ti.nbytes()) +
                                                " bytes; buffer has " + std::to_string(b.size));
  // Kernels read tensors in 16-byte vectors where shapes allow, so bindings start on 16 bytes
  // even where the device would accept less.
  VkDeviceSize align =
      std::max<VkDeviceSize>(16, context_->limits().minStorageBufferOffsetAlignment);
  if (b.offset % align)
    throw Error(ErrorKind::InvalidArgument,
                "'" + name + "': offset " + std::to_string(b.offset) + " is not a multiple of " +
                    std::to_string(align) +
                    " bytes (16, or the device's minStorageBufferOffsetAlignment if larger)");
  check(
      b.queue_family == VK_QUEUE_FAMILY_IGNORED || b.queue_family < context_->queue_family_count(),
      ErrorKind::InvalidArgument,
      "'" + name + "': queue family " + std::to_string(b.queue_family) +
          " does not exist (the device has " + std::to_string(context_->queue_family_count()) +
          ")");
  check(b.size > 0 || b.queue_family == VK_QUEUE_FAMILY_IGNORED ||
            b.queue_family == context_->queue_family(),
        ErrorKind::InvalidArgument,
        "'" + name + "': an empty range has no ownership to transfer between queue families");
  Storage& s = storages_[ti.storage];
  s.external = b;
  if (s.external.queue_family == context_->queue_family())
    s.external.queue_family = VK_QUEUE_FAMILY_IGNORED;
  s.host_visible = false;
  io.host = nullptr;
  io.import.reset();
  io.host_copy.reset();
  // Descriptor sets and command buffers name the old buffer: record them again.
  if (encoded_) {
    commands_ = std::make_unique<vk::CommandPool>(*context_);
    recorded_.clear();
    recorded_ids_.clear();
    encoded_ = false;
  }
}

const ExternalBuffer& ComputeGraph::foreign_binding(const std::string& name) const {
  const IO& io = find_io(name);
  const Storage& s = storages_[info(io.tensor).storage];
  if (io.mode != IOMode::External || s.external.queue_family == VK_QUEUE_FAMILY_IGNORED)
    throw Error(
        ErrorKind::InvalidArgument,
        "'" + name + "' is not bound to a buffer of another queue family: no ownership transfer");
  return s.external;
}

// The app's halves mirror the graph's (encode()): same buffer range and family indices.
VkBufferMemoryBarrier ComputeGraph::app_release(const std::string& name,
                                                VkAccessFlags app_access) const {
  const ExternalBuffer& b = foreign_binding(name);
  VkBufferMemoryBarrier r{VK_STRUCTURE_TYPE_BUFFER_MEMORY_BARRIER};
  r.srcAccessMask = app_access;
  r.srcQueueFamilyIndex = b.queue_family;
  r.dstQueueFamilyIndex = context_->queue_family();
  r.buffer = b.buffer;
  r.offset = b.offset;
  r.size = b.size;
  return r;
}

VkBufferMemoryBarrier ComputeGraph::app_acquire(const std::string& name,
                                                VkAccessFlags app_access) const {
  VkBufferMemoryBarrier a = app_release(name, 0);
  std::swap(a.srcQueueFamilyIndex, a.dstQueueFamilyIndex);
  a.dstAccessMask = app_access;
  return a;
}

HostIOPath ComputeGraph::bind_host_pointer(const std::string& name, void* pointer, size_t bytes) {
  IO& io = find_io(name);
  size_t need = info(io.tensor).nbytes();
  // More than the tensor is fine: an app rounds its allocation up so that it can be imported.
  if (bytes < need)
    throw Error(ErrorKind::InvalidArgument, "'" + name + "' needs " + std::to_string(need) +
                                                " bytes; host binding has " +
                                                std::to_string(bytes));
  constexpr VkBufferUsageFlags usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT |
                                       VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
                                       VK_BUFFER_USAGE_TRANSFER_DST_BIT;
  HostIOPath path;
  std::unique_ptr<vk::HostImport> import;
  std::unique_ptr<vk::StagingBuffer> copy;
  if (vk::HostImport::possible(*context_, pointer, bytes)) {
    import = std::make_unique<vk::HostImport>(*context_, pointer, bytes, name);
    bind_external(name, {import->buffer(), 0, bytes, usage});
    path = HostIOPath::Imported;
  } else {
    bool is_input = &io >= inputs_.data() && &io < inputs_.data() + inputs_.size();
    copy = std::make_unique<vk::StagingBuffer>(*context_, std::max<size_t>(need, 16),
                                               is_input ? vk::StagingBuffer::Direction::ToDevice
                                                        : vk::StagingBuffer::Direction::FromDevice,
                                               "host binding '" + name + "'");
    bind_external(name, {copy->handle(), 0, copy->size(), usage});
    path = HostIOPath::Copied;
  }
  storages_[info(io.tensor).storage].host_visible = true;
  io.host = pointer;
  io.import = std::move(import);
  io.host_copy = std::move(copy);
  return path;
}

// Lifetimes in step order: input copies at -1, nodes 0..N-1, output copies at N. Activations
// whose lifetimes never overlap share one buffer (greedy, best fit by size).
void ComputeGraph::plan_and_allocate() {
  // A prepare() retried after a failure (e.g. out of memory) plans from scratch; buffers kept
  // from the failed attempt would shift every slot index.
  activation_buffers_.clear();
  stats_.activation_bytes = stats_.unplanned_activation_bytes = 0;
  const int n = static_cast<int>(nodes_.size());
  auto use = [&](TensorRef t, int when) {
    Storage& s = storages_[info(t).storage];
    s.first_use = std::min(s.first_use, when);
    s.last_use = std::max(s.last_use, when);
  };
  for (auto& io : inputs_) use(io.tensor, -1);
  for (int i = 0; i < n; ++i) {
    if (nodes_[i].kind == Node::Kind::Copy) {
      use(nodes_[i].src, i);
      use(nodes_[i].dst, i);
    } else {
      for (auto& b : nodes_[i].dispatch.bindings) use(b.tensor, i);
    }
  }
  for (auto& io : outputs_) use(io.tensor, n);

  std::vector<int32_t> order;
  for (int32_t i = 0; i < static_cast<int32_t>(storages_.size()); ++i)
    if (storages_[i].kind == StorageKind::Activation && storages_[i].last_use >= -1 &&
        storages_[i].first_use != INT32_MAX)
      order.push_back(i);
  std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
    return storages_[a].first_use < storages_[b].first_use;
  });
  struct Slot {
    uint64_t bytes = 0;
    int busy_until = -2;
  };
  std::vector<Slot> slots;
  for (int32_t si : order) {
    Storage& s = storages_[si];
    stats_.unplanned_activation_bytes += s.bytes;
    int best = -1;
    if (options_.plan_memory) {
      for (int j = 0; j < static_cast<int>(slots.size()); ++j) {
        if (slots[j].busy_until >= s.first_use) continue;
        // Prefer the smallest slot that fits, else the largest (it grows least).
        bool fits = slots[j].bytes >= s.bytes;
        if (best < 0) {
          best = j;
          continue;
        }
        bool best_fits = slots[best].bytes >= s.bytes;
        if (fits && (!best_fits || slots[j].bytes < slots[best].bytes)) best = j;
        if (!fits && !best_fits && slots[j].bytes > slots[best].bytes) best = j;
      }
    }
    if (best < 0) {
      slots.push_back({});
      best = static_cast<int>(slots.size() - 1);
    }
    slots[best].bytes = std::max(slots[best].bytes, s.bytes);
    slots[best].busy_until = s.last_use;
    s.slot = best;
  }
  for (size_t j = 0; j < slots.size(); ++j) {
    // Zero-element tensors still get a minimal buffer so descriptors stay valid.
    activation_buffers_.emplace_back(*context_, std::max<uint64_t>(slots[j].bytes, 16),
                                     vk::MemoryUsage::Device, kTensorUsage,
                                     "activation slot " + std::to_string(j));
    stats_.activation_bytes += activation_buffers_.back().size();
  }
  stats_.activation_buffers = slots.size();
}

// Constants are uploaded once, through one staging buffer and one submission.
void ComputeGraph::prepack() {
  stats_.constant_bytes = 0;  // a retried prepare() uploads again
  uint64_t total = 0;
  for (auto& s : storages_)
    if (s.kind == StorageKind::Constant) total += (s.bytes + 15) / 16 * 16;
  if (std::none_of(storages_.begin(), storages_.end(),
                   [](const Storage& s) { return s.kind == StorageKind::Constant; }))
    return;
  // Zero-element constants still get a (minimal) buffer so descriptors stay valid.
  vk::StagingBuffer staging(*context_, std::max<uint64_t>(total, 16),
                            vk::StagingBuffer::Direction::ToDevice, "prepack staging");
  vk::OneShot shot(*context_);
  uint64_t offset = 0;
  for (auto& s : storages_) {
    if (s.kind != StorageKind::Constant) continue;
    s.own = vk::Buffer(*context_, std::max<uint64_t>(s.bytes, 16), vk::MemoryUsage::Device,
                       kTensorUsage, "constant '" + s.name + "'");
    stats_.constant_bytes += s.own.size();
    if (s.bytes == 0) continue;
    std::memcpy(static_cast<uint8_t*>(staging.mapped()) + offset, s.value->bytes.data(), s.bytes);
    shot.cmd().copy_buffer(staging, s.own, offset, 0, s.bytes);
    offset += (s.bytes + 15) / 16 * 16;
  }
  staging.flush(0, total);  // submission then makes the writes visible to the device
  shot.submit_and_wait();   // ends with a barrier covering all later reads
}

void ComputeGraph::prepare() {
  if (prepared_) return;
  check(!outputs_.empty(), ErrorKind::InvalidState, "graph has no outputs");
  plan_and_allocate();
  prepack();
  for (auto& io : inputs_)
    if (io.mode == IOMode::Staged)
      io.staging = std::make_unique<vk::StagingBuffer>(
          *context_, std::max<uint64_t>(info(io.tensor).nbytes(), 16),
          vk::StagingBuffer::Direction::ToDevice, "input '" + io.name + "'");
  for (auto& io : outputs_)
    if (io.mode == IOMode::Staged)
      io.staging = std::make_unique<vk::StagingBuffer>(
          *context_, std::max<uint64_t>(info(io.tensor).nbytes(), 16),
          vk::StagingBuffer::Direction::FromDevice, "output '" + io.name + "'");

  uint32_t sets = 0, descriptors = 0;
  for (auto& n : nodes_) {
    if (n.kind != Node::Kind::Dispatch) continue;
    auto& d = n.dispatch;
    std::vector<uint32_t> spec = {d.local[0], d.local[1], d.local[2]};
    spec.insert(spec.end(), d.spec.begin(), d.spec.end());
    n.pipeline = &context_->pipelines().get({d.shader, static_cast<uint32_t>(d.bindings.size()),
                                             static_cast<uint32_t>(d.push.size()), spec});
    sets++;
    descriptors += static_cast<uint32_t>(d.bindings.size());
  }
  descriptors_ = std::make_unique<vk::DescriptorPool>(*context_, sets, descriptors);
  commands_ = std::make_unique<vk::CommandPool>(*context_);
  fence_ = std::make_unique<vk::Fence>(*context_);
  if (context_->features().timestamps) {
    uint32_t count = options_.profile ? static_cast<uint32_t>(nodes_.size()) + 1 : 2;
    timestamps_ = std::make_unique<vk::TimestampPool>(*context_, count);
  }
  stats_.nodes = nodes_.size();
  prepared_ = true;
}

// Descriptor sets are written at encode time, when external bindings are known.
void ComputeGraph::write_descriptors(Node& n) {
  std::vector<VkBuffer> buffers;
  std::vector<VkDeviceSize> offsets, sizes;
  for (auto& b : n.dispatch.bindings) {
    Bound bound = buffer_of(b.tensor);
    buffers.push_back(bound.buffer);
    offsets.push_back(bound.offset);
    sizes.push_back(std::max<uint64_t>(info(b.tensor).nbytes(), 4));
  }
  if (n.set)
    descriptors_->write(n.set, buffers, offsets, sizes);
  else
    n.set = descriptors_->allocate(n.pipeline->set_layout, buffers, offsets, sizes);
}

std::vector<ComputeGraph::Step> ComputeGraph::steps() {
  std::vector<Step> out;
  for (size_t i = 0; i < inputs_.size(); ++i)
    if (inputs_[i].mode == IOMode::Staged)
      out.push_back({Step::Kind::InputCopy,
                     i,
                     {{inputs_[i].staging->handle(), kTransferRead},
                      {buffer_of(inputs_[i].tensor).buffer, kTransferWrite}}});
  for (size_t i = 0; i < nodes_.size(); ++i) {
    Step s{Step::Kind::Node, i, {}};
    const Node& n = nodes_[i];
    if (n.kind == Node::Kind::Copy) {
      s.accesses = {{buffer_of(n.src).buffer, kTransferRead},
                    {buffer_of(n.dst).buffer, kTransferWrite}};
    } else {
      for (auto& b : n.dispatch.bindings) {
        ResourceAccess a = b.access == Access::Read    ? kShaderRead
                           : b.access == Access::Write ? kShaderWrite
                                                       : kShaderReadWrite;
        s.accesses.push_back({buffer_of(b.tensor).buffer, a});
      }
    }
    out.push_back(std::move(s));
  }
  for (size_t i = 0; i < outputs_.size(); ++i)
    if (outputs_[i].mode == IOMode::Staged)
      out.push_back({Step::Kind::OutputCopy,
                     i,
                     {{buffer_of(outputs_[i].tensor).buffer, kTransferRead},
                      {outputs_[i].staging->handle(), kTransferWrite}}});
  return out;
}

void ComputeGraph::record_step(vk::CommandBuffer& cb, const Step& step, HazardTracker& tracker,
                               size_t index) {
  vk::PipelineBarrier barrier;
  for (auto& [buffer, access] : step.accesses) {
    vk::PipelineBarrier one;
    tracker.access(buffer, access, one);
    barrier.merge(one);
  }
  bool drop = step.kind == Step::Kind::Node &&
              static_cast<int>(step.index) == options_.testing_drop_barrier_before_node;
  if (!drop) cb.record_barrier(barrier);

  switch (step.kind) {
    case Step::Kind::InputCopy: {
      const IO& io = inputs_[step.index];
      Bound dst = buffer_of(io.tensor);
      // A zero-size vkCmdCopyBuffer is invalid; empty tensors have nothing to move.
      if (size_t bytes = info(io.tensor).nbytes())
        cb.copy_buffer(io.staging->handle(), dst.buffer, 0, dst.offset, bytes, false);
      break;
    }
    case Step::Kind::OutputCopy: {
      const IO& io = outputs_[step.index];
      Bound src = buffer_of(io.tensor);
      if (size_t bytes = info(io.tensor).nbytes())
        cb.copy_buffer(src.buffer, io.staging->handle(), src.offset, 0, bytes, true);
      break;
    }
    case Step::Kind::Node: {
      const Node& n = nodes_[step.index];
      if (n.kind == Node::Kind::Copy) {
        Bound src = buffer_of(n.src), dst = buffer_of(n.dst);
        cb.copy_buffer(src.buffer, dst.buffer, src.offset + n.src_offset, dst.offset + n.dst_offset,
                       n.bytes, dst.host_visible);
      } else {
        const DispatchDesc& d = n.dispatch;
        cb.bind_pipeline(n.pipeline->pipeline);
        cb.bind_descriptor_set(n.pipeline->layout, n.set);
        cb.push_constants(n.pipeline->layout, d.push.data(), static_cast<uint32_t>(d.push.size()));
        cb.dispatch(d.groups[0], d.groups[1], d.groups[2]);
        for (auto& b : d.bindings) {
          Bound bound = buffer_of(b.tensor);
          if (b.access != Access::Read && bound.host_visible)
            cb.note_device_write(bound.buffer, info(b.tensor).nbytes(),
                                 VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT);
        }
      }
      if (options_.profile && timestamps_)
        cb.write_timestamp(VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, timestamps_->handle(),
                           static_cast<uint32_t>(step.index) + 1);
      break;
    }
  }
  (void)index;
}

// Buffers another queue family owns between executions (ExternalBuffer::queue_family): acquired
// at entry, released at exit. The acquire's source scope starts at the app's semaphore wait,
// hence the entry stages; the release's destination is the app's acquire, hence no access.
void ComputeGraph::add_ownership_transfers(vk::PipelineBarrier& entry,
                                           vk::PipelineBarrier& exit) const {
  const uint32_t graph = context_->queue_family();
  const VkPipelineStageFlags used =
      VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT;
  std::vector<const ExternalBuffer*> done;  // two IOs bound to one range transfer it once
  for (const Storage& s : storages_) {
    const ExternalBuffer& b = s.external;
    if (s.kind != StorageKind::External || b.queue_family == VK_QUEUE_FAMILY_IGNORED) continue;
    auto same = [&](const ExternalBuffer* o) {
      return o->buffer == b.buffer && o->offset == b.offset && o->size == b.size;
    };
    if (std::any_of(done.begin(), done.end(), same)) continue;
    done.push_back(&b);
    entry.add_ownership_transfer(b.buffer, b.offset, b.size, b.queue_family, graph,
                                 options_.external.before_stage, 0, used,
                                 VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT |
                                     VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT);
    exit.add_ownership_transfer(b.buffer, b.offset, b.size, graph, b.queue_family, used,
                                VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT,
                                options_.external.after_stage, 0);
  }
}

// Records the command buffers once. Replay wraps around (DESIGN.md rule 1): run N+1 follows
// run N on the queue, so the tracker starts from the state one full pass leaves behind, and
// the first access of each resource is ordered against its last access in the previous run.
void ComputeGraph::encode(bool submit_chunks, const vk::SubmitSync& sync) {
  for (auto* list : {&inputs_, &outputs_})
    for (auto& io : *list)
      if (io.mode == IOMode::External && !storages_[info(io.tensor).storage].external.buffer)
        throw Error(ErrorKind::InvalidState,
                    "external '" + io.name + "' has no buffer bound (bind_external)");
  for (auto& n : nodes_)
    if (n.kind == Node::Kind::Dispatch) write_descriptors(n);
  std::vector<Step> all = steps();
  const bool external = has_external();
  // Memory the graph does not track (DESIGN.md rule 6): order the app's earlier accesses
  // before this graph's, and this graph's writes before the app's later accesses.
  vk::PipelineBarrier entry, exit;
  const ExternalSync& ext = options_.external;
  entry.add_global(ext.before_stage, ext.before_access,
                   VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
                   VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT |
                       VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT);
  exit.add_global(VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
                  VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT, ext.after_stage,
                  ext.after_access);
  add_ownership_transfers(entry, exit);
  HazardTracker dry;
  for (auto& s : all)
    for (auto& [buffer, access] : s.accesses) {
      vk::PipelineBarrier ignored;
      dry.access(buffer, access, ignored);
    }
  HazardTracker tracker;
  tracker.set_states(dry.states());

  // Chunk boundaries count nodes; input copies join the first chunk, output copies the last.
  const size_t per = options_.nodes_per_command_buffer;
  const size_t chunks = std::max<size_t>(1, (nodes_.size() + per - 1) / per);
  size_t next = 0;
  for (size_t c = 0; c < chunks; ++c) {
    vk::CommandBuffer& cb = commands_->allocate();
    cb.begin();
    const bool first = c == 0, last = c + 1 == chunks;
    if (first && timestamps_) {
      cb.reset_queries(timestamps_->handle(), 0, timestamps_->count());
      cb.write_timestamp(VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, timestamps_->handle(), 0);
    }
    if (first && external && !options_.testing_omit_external_entry_barrier)
      cb.record_barrier(entry);
    size_t node_end = std::min(nodes_.size(), (c + 1) * per);
    while (next < all.size()) {
      const Step& s = all[next];
      if (s.kind == Step::Kind::Node && s.index >= node_end) break;
      if (s.kind == Step::Kind::OutputCopy && !last) break;
      record_step(cb, s, tracker, next);
      ++next;
    }
    if (last) {
      if (external && !options_.testing_omit_external_exit_barrier) cb.record_barrier(exit);
      if (timestamps_ && !options_.profile)
        cb.write_timestamp(VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, timestamps_->handle(), 1);
      // DESIGN.md rule 4: all device writes -> host reads, recorded once, replayed each run.
      // Its ALL_COMMANDS source scope also covers chunks submitted earlier without a fence.
      if (!options_.testing_omit_final_barrier) cb.record_barrier(vk::device_to_host_barrier());
    }
    cb.end();
    recorded_.push_back(cb.handle());
    recorded_ids_.push_back(cb.id());
    if (submit_chunks) {
      // Waits gate the first chunk, signals follow the last.
      vk::SubmitSync chunk_sync;
      if (first) chunk_sync.waits = sync.waits;
      if (last) chunk_sync.signals = sync.signals;
      cb.mark_submitted();
      context_->submit({cb.handle()}, {cb.id()}, last ? fence_->handle() : VK_NULL_HANDLE,
                       chunk_sync);
    }
  }
  stats_.command_buffers = recorded_.size();
  stats_.recordings++;
  encoded_ = true;
}

void ComputeGraph::require_idle(const char* what) const {
  if (in_flight_)
    throw Error(ErrorKind::InvalidState,
                std::string(what) + " while an execution is in flight: call wait() first");
}

void ComputeGraph::copy_to_input(size_t i, const void* data, size_t bytes) {
  const IO& io = io_at(inputs_, i, "input");
  require_idle("copy_to_input");
  prepare();
  // Runs every execution: messages are built only on failure.
  if (io.mode != IOMode::Staged)
    throw Error(ErrorKind::InvalidState,
                "input '" + io.name + "' is external: write its bound buffer instead");
  const TensorInfo& ti = tensor(io.tensor);
  size_t expected = ti.nbytes();
  if (bytes != expected)
    throw Error(ErrorKind::InvalidArgument,
                "input '" + io.name + "' " + shape_str(ti.shape) + " " + dtype_name(ti.dtype) +
                    " takes " + std::to_string(expected) + " bytes, got " + std::to_string(bytes));
  if (bytes) io.staging->copy_in(data, bytes);
}

void ComputeGraph::submit(const vk::SubmitSync& sync) {
  require_idle("submit");
  prepare();
  // Host-pointer inputs: copy into the graph's buffer, or flush imported non-coherent memory.
  for (auto& io : inputs_) {
    if (io.host_copy) io.host_copy->copy_in(io.host, tensor(io.tensor).nbytes());
    if (io.import) io.import->flush();
  }
  submitted_at_ = std::chrono::steady_clock::now();
  if (!encoded_) {
    encode(/*submit_chunks=*/true, sync);
  } else {
    for (size_t c = 0; c < commands_->size(); ++c) (*commands_)[c].mark_submitted();
    context_->submit(recorded_, recorded_ids_, fence_->handle(), sync);
  }
  in_flight_ = true;
}

void ComputeGraph::wait() {
  check(in_flight_, ErrorKind::InvalidState, "wait() without a submitted execution");
  constexpr uint64_t kMaxExpectedNs = 1'000'000;  // longer graphs may sleep: a wake-up is cheap
  fence_->wait(UINT64_MAX, std::min(last_execution_ns_, kMaxExpectedNs));
  last_execution_ns_ = static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                                 std::chrono::steady_clock::now() - submitted_at_)
                                                 .count());
  fence_->reset();
  for (size_t c = 0; c < commands_->size(); ++c) (*commands_)[c].mark_completed();
  in_flight_ = false;
  executed_ = true;
  // Host-pointer outputs: after the device->host barrier and the fence, make them visible.
  for (auto& io : outputs_) {
    if (io.import) io.import->invalidate();
    if (io.host_copy) io.host_copy->copy_out(io.host, tensor(io.tensor).nbytes());
  }
}

void ComputeGraph::execute() {
  submit();
  wait();
}

void ComputeGraph::copy_from_output(size_t i, void* data, size_t bytes) {
  const IO& io = io_at(outputs_, i, "output");
  require_idle("copy_from_output");
  // Runs every execution: messages are built only on failure.
  if (!executed_) throw Error(ErrorKind::InvalidState, "copy_from_output before any execute()");
  if (io.mode != IOMode::Staged)
    throw Error(ErrorKind::InvalidState,
                "output '" + io.name + "' is external: read its bound buffer instead");
  size_t expected = tensor(io.tensor).nbytes();
  if (bytes != expected)
    throw Error(ErrorKind::InvalidArgument, "output '" + io.name + "' holds " +
                                                std::to_string(expected) + " bytes, asked for " +
                                                std::to_string(bytes));
  // The fence waited in wait() follows the recorded device->host barrier; copy_out
  // invalidates non-coherent memory before reading.
  if (bytes) io.staging->copy_out(data, bytes);
}

HostTensor ComputeGraph::read_output(size_t i) {
  const TensorInfo& ti = tensor(output(i));
  HostTensor t(ti.dtype, ti.shape);
  copy_from_output(i, t.bytes.data(), t.bytes.size());
  return t;
}

GraphStats ComputeGraph::stats() const {
  GraphStats s = stats_;
  s.context_peak_device_bytes = context_->allocator().stats().peak_block_bytes;
  return s;
}

double ComputeGraph::last_gpu_ms() const {
  if (!timestamps_ || !executed_) return 0;
  auto ns = timestamps_->read_ns();
  return (ns.back() - ns.front()) / 1e6;
}

std::vector<NodeTime> ComputeGraph::node_times() const {
  std::vector<NodeTime> out;
  if (!timestamps_ || !options_.profile || !executed_) return out;
  auto ns = timestamps_->read_ns();
  for (size_t i = 0; i < nodes_.size(); ++i)
    out.push_back({nodes_[i].label, (ns[i + 1] - ns[i]) / 1e6});
  return out;
}

}  // namespace vkgraph
