#include "graph/graph_io.h"

#include <algorithm>
#include <utility>

#include "vkgraph/error.h"

namespace vkgraph {

namespace {
// Indices come from callers, so a bad one is an Error like any other bad argument.
const GraphPort& port_at(const std::vector<GraphPort>& list, size_t i, const std::string& kind) {
  if (i >= list.size())
    throw Error(ErrorKind::InvalidArgument, kind + " index " + std::to_string(i) +
                                                " out of range (" + std::to_string(list.size()) +
                                                " " + kind + "s)");
  return list[i];
}

std::vector<TensorRef> tensors_of(const std::vector<GraphPort>& ports) {
  std::vector<TensorRef> out;
  for (auto& p : ports) out.push_back(p.tensor);
  return out;
}
}  // namespace

void GraphIO::require_new_input_name(const std::string& name) const {
  for (auto& io : inputs_)
    check(io.name != name, ErrorKind::InvalidArgument, "duplicate input name '" + name + "'");
}

void GraphIO::add_input(TensorRef tensor, std::string name, IOMode mode) {
  if (mode == IOMode::External) g_.storage_of(tensor).kind = StorageKind::External;
  GraphPort io;
  io.tensor = tensor;
  io.name = std::move(name);
  io.mode = mode;
  inputs_.push_back(std::move(io));
}

void GraphIO::add_output(TensorRef tensor, std::string name, IOMode mode) {
  Storage& s = g_.storage_of(tensor);
  if (mode == IOMode::External) {
    check(s.kind == StorageKind::Activation, ErrorKind::InvalidArgument,
          "external output '" + name + "' must be computed by the graph, not a constant or input");
    s.kind = StorageKind::External;
  }
  GraphPort io;
  io.tensor = tensor;
  io.name = std::move(name);
  io.mode = mode;
  outputs_.push_back(std::move(io));
}

const GraphPort& GraphIO::input(size_t i) const {
  return port_at(inputs_, i, "input");
}
const GraphPort& GraphIO::output(size_t i) const {
  return port_at(outputs_, i, "output");
}
std::vector<TensorRef> GraphIO::input_tensors() const {
  return tensors_of(inputs_);
}
std::vector<TensorRef> GraphIO::output_tensors() const {
  return tensors_of(outputs_);
}

const GraphPort& GraphIO::find(const std::string& name) const {
  for (auto* list : {&inputs_, &outputs_})
    for (auto& io : *list)
      if (io.name == name) return io;
  throw Error(ErrorKind::InvalidArgument, "no input or output named '" + name + "'");
}

GraphPort& GraphIO::find(const std::string& name) {
  return const_cast<GraphPort&>(std::as_const(*this).find(name));
}

void GraphIO::bind_external(const std::string& name, const ExternalBuffer& b) {
  g_.require_idle("bind_external");
  GraphPort& io = find(name);
  check(io.mode == IOMode::External, ErrorKind::InvalidArgument,
        "'" + name + "' was not declared IOMode::External");
  const TensorInfo& ti = g_.tensor(io.tensor);
  const vk::Context& ctx = *g_.context;
  check(b.buffer != VK_NULL_HANDLE, ErrorKind::InvalidArgument, "'" + name + "': null VkBuffer");
  check(b.usage & VK_BUFFER_USAGE_STORAGE_BUFFER_BIT, ErrorKind::InvalidArgument,
        "'" + name + "': the buffer needs VK_BUFFER_USAGE_STORAGE_BUFFER_BIT");
  if (b.size < ti.nbytes())
    throw Error(ErrorKind::InvalidArgument, "'" + name + "' " + shape_str(ti.shape) + " needs " +
                                                std::to_string(ti.nbytes()) +
                                                " bytes; buffer has " + std::to_string(b.size));
  // Kernels read tensors in 16-byte vectors where shapes allow, so bindings start on 16 bytes
  // even where the device would accept less.
  VkDeviceSize align = std::max<VkDeviceSize>(16, ctx.limits().minStorageBufferOffsetAlignment);
  if (b.offset % align)
    throw Error(ErrorKind::InvalidArgument,
                "'" + name + "': offset " + std::to_string(b.offset) + " is not a multiple of " +
                    std::to_string(align) +
                    " bytes (16, or the device's minStorageBufferOffsetAlignment if larger)");
  check(b.queue_family == VK_QUEUE_FAMILY_IGNORED || b.queue_family < ctx.queue_family_count(),
        ErrorKind::InvalidArgument,
        "'" + name + "': queue family " + std::to_string(b.queue_family) +
            " does not exist (the device has " + std::to_string(ctx.queue_family_count()) + ")");
  check(b.size > 0 || b.queue_family == VK_QUEUE_FAMILY_IGNORED ||
            b.queue_family == ctx.queue_family(),
        ErrorKind::InvalidArgument,
        "'" + name + "': an empty range has no ownership to transfer between queue families");
  Storage& s = g_.storages[ti.storage];
  s.external = b;
  if (s.external.queue_family == ctx.queue_family())
    s.external.queue_family = VK_QUEUE_FAMILY_IGNORED;
  s.host_visible = false;
  io.host = nullptr;
  io.import.reset();
  io.host_copy.reset();
}

const ExternalBuffer& GraphIO::foreign_binding(const std::string& name) const {
  const GraphPort& io = find(name);
  const Storage& s = g_.storage_of(io.tensor);
  if (io.mode != IOMode::External || s.external.queue_family == VK_QUEUE_FAMILY_IGNORED)
    throw Error(
        ErrorKind::InvalidArgument,
        "'" + name + "' is not bound to a buffer of another queue family: no ownership transfer");
  return s.external;
}

// The app's halves mirror the graph's (Encoder::add_ownership_transfers): same buffer range and
// family indices.
VkBufferMemoryBarrier GraphIO::app_release(const std::string& name,
                                           VkAccessFlags app_access) const {
  const ExternalBuffer& b = foreign_binding(name);
  VkBufferMemoryBarrier r{VK_STRUCTURE_TYPE_BUFFER_MEMORY_BARRIER};
  r.srcAccessMask = app_access;
  r.srcQueueFamilyIndex = b.queue_family;
  r.dstQueueFamilyIndex = g_.context->queue_family();
  r.buffer = b.buffer;
  r.offset = b.offset;
  r.size = b.size;
  return r;
}

VkBufferMemoryBarrier GraphIO::app_acquire(const std::string& name,
                                           VkAccessFlags app_access) const {
  VkBufferMemoryBarrier a = app_release(name, 0);
  std::swap(a.srcQueueFamilyIndex, a.dstQueueFamilyIndex);
  a.dstAccessMask = app_access;
  return a;
}

HostIOPath GraphIO::bind_host_pointer(const std::string& name, void* pointer, size_t bytes) {
  GraphPort& io = find(name);
  size_t need = g_.tensor(io.tensor).nbytes();
  if (!pointer) throw Error(ErrorKind::InvalidArgument, "'" + name + "': null host pointer");
  // More than the tensor is fine: an app rounds its allocation up so that it can be imported.
  if (bytes < need)
    throw Error(ErrorKind::InvalidArgument, "'" + name + "' needs " + std::to_string(need) +
                                                " bytes; host binding has " +
                                                std::to_string(bytes));
  vk::Context& ctx = *g_.context;
  HostIOPath path;
  std::unique_ptr<vk::HostImport> import;
  std::unique_ptr<vk::StagingBuffer> copy;
  if (vk::HostImport::possible(ctx, pointer, bytes)) {
    import = std::make_unique<vk::HostImport>(ctx, pointer, bytes, name);
    bind_external(name, {import->buffer(), 0, bytes, kTensorUsage});
    path = HostIOPath::Imported;
  } else {
    bool is_input = &io >= inputs_.data() && &io < inputs_.data() + inputs_.size();
    copy = std::make_unique<vk::StagingBuffer>(ctx, std::max<size_t>(need, 16),
                                               is_input
                                                   ? vk::StagingBuffer::Direction::ToDeviceEveryRun
                                                   : vk::StagingBuffer::Direction::FromDevice,
                                               "host binding '" + name + "'");
    bind_external(name, {copy->handle(), 0, copy->size(), kTensorUsage});
    path = HostIOPath::Copied;
  }
  g_.storage_of(io.tensor).host_visible = true;
  io.host = pointer;
  io.import = std::move(import);
  io.host_copy = std::move(copy);
  return path;
}

void GraphIO::allocate_staging() {
  for (auto& io : inputs_)
    if (io.mode == IOMode::Staged)
      io.staging = std::make_unique<vk::StagingBuffer>(
          *g_.context, std::max<uint64_t>(g_.tensor(io.tensor).nbytes(), 16),
          vk::StagingBuffer::Direction::ToDeviceEveryRun, "input '" + io.name + "'");
  for (auto& io : outputs_)
    if (io.mode == IOMode::Staged)
      io.staging = std::make_unique<vk::StagingBuffer>(
          *g_.context, std::max<uint64_t>(g_.tensor(io.tensor).nbytes(), 16),
          vk::StagingBuffer::Direction::FromDevice, "output '" + io.name + "'");
}

void GraphIO::require_bound() const {
  for (auto* list : {&inputs_, &outputs_})
    for (auto& io : *list)
      if (io.mode == IOMode::External && !g_.storage_of(io.tensor).external.buffer)
        throw Error(ErrorKind::InvalidState,
                    "external '" + io.name + "' has no buffer bound (bind_external)");
}

void GraphIO::copy_to_input(size_t i, const void* data, size_t bytes) {
  const GraphPort& io = input(i);
  // Runs every execution: messages are built only on failure.
  if (io.mode != IOMode::Staged)
    throw Error(ErrorKind::InvalidState,
                "input '" + io.name + "' is external: write its bound buffer instead");
  const TensorInfo& ti = g_.tensor(io.tensor);
  size_t expected = ti.nbytes();
  if (bytes != expected)
    throw Error(ErrorKind::InvalidArgument,
                "input '" + io.name + "' " + shape_str(ti.shape) + " " + dtype_name(ti.dtype) +
                    " takes " + std::to_string(expected) + " bytes, got " + std::to_string(bytes));
  if (bytes && !data)
    throw Error(ErrorKind::InvalidArgument, "copy_to_input: null data for input '" + io.name + "'");
  if (bytes) io.staging->copy_in(data, bytes);
}

void GraphIO::copy_from_output(size_t i, void* data, size_t bytes, DType as) const {
  const GraphPort& io = output(i);
  // Runs every execution: messages are built only on failure.
  if (io.mode != IOMode::Staged)
    throw Error(ErrorKind::InvalidState,
                "output '" + io.name + "' is external: read its bound buffer instead");
  const TensorInfo& ti = g_.tensor(io.tensor);
  const bool widen = as == DType::Float32 && ti.dtype == DType::Float16;
  if (as != ti.dtype && !widen)
    throw Error(ErrorKind::InvalidArgument, "output '" + io.name + "' is " + dtype_name(ti.dtype) +
                                                "; it cannot be read as " + dtype_name(as));
  const size_t expected =
      widen ? static_cast<size_t>(numel(ti.shape)) * sizeof(float) : ti.nbytes();
  if (bytes != expected)
    throw Error(ErrorKind::InvalidArgument,
                "output '" + io.name + "' holds " + std::to_string(expected) + " bytes as " +
                    dtype_name(as) + ", asked for " + std::to_string(bytes));
  // The fence waited in wait() follows the recorded device->host barrier; copy_out
  // invalidates non-coherent memory before reading.
  if (bytes && !data)
    throw Error(ErrorKind::InvalidArgument,
                "copy_from_output: null destination for output '" + io.name + "'");
  if (!bytes) return;
  if (widen)
    io.staging->copy_out_widened(static_cast<float*>(data), bytes / sizeof(float));
  else
    io.staging->copy_out(data, bytes);
}

// Host-pointer inputs: copy into the graph's buffer, or flush imported non-coherent memory.
void GraphIO::before_submit() {
  for (auto& io : inputs_) {
    if (io.host_copy) io.host_copy->copy_in(io.host, g_.tensor(io.tensor).nbytes());
    if (io.import) io.import->flush();
  }
}

// Host-pointer outputs: after the device->host barrier and the fence, make them visible.
void GraphIO::after_wait() {
  for (auto& io : outputs_) {
    if (io.import) io.import->invalidate();
    if (io.host_copy) io.host_copy->copy_out(io.host, g_.tensor(io.tensor).nbytes());
  }
}

}  // namespace vkgraph
