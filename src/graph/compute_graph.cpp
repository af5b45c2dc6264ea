// ComputeGraph builds the tables (graph_state.h) and hands each later job to its part:
// memory_plan (activations, constants), graph_io (inputs, outputs, bindings), encoder
// (recording, replay, profiling).
#include "vkgraph/graph/compute_graph.h"

#include <chrono>
#include <utility>

#include "graph/graph_impl.h"
#include "graph/memory_plan.h"
#include "vkgraph/error.h"

namespace vkgraph {

namespace {

// Claims the graph for the calling thread for the duration of one running method. Nested
// calls on the same thread (execute -> submit) pass; another thread gets InvalidState, every
// time the calls overlap, so misuse is an error rather than a mix of two executions.
class ExclusiveUse {
 public:
  ExclusiveUse(std::atomic<std::thread::id>& user, const char* what) : user_(user) {
    std::thread::id idle{}, me = std::this_thread::get_id();
    if (user_.compare_exchange_strong(idle, me, std::memory_order_acquire)) {
      owner_ = true;
    } else if (idle != me) {
      throw Error(ErrorKind::InvalidState,
                  std::string(what) +
                      ": the graph is in use by another thread (one thread at a time; "
                      "Session::run serialises for you)");
    }
  }
  ~ExclusiveUse() {
    if (owner_) user_.store(std::thread::id{}, std::memory_order_release);
  }
  ExclusiveUse(const ExclusiveUse&) = delete;
  ExclusiveUse& operator=(const ExclusiveUse&) = delete;

 private:
  std::atomic<std::thread::id>& user_;
  bool owner_ = false;
};

}  // namespace

GraphState::GraphState(std::shared_ptr<vk::Context> ctx, GraphOptions opts)
    : context(std::move(ctx)), options(opts) {
  check(context != nullptr, ErrorKind::InvalidArgument, "ComputeGraph needs a Context");
  check(options.nodes_per_command_buffer > 0, ErrorKind::InvalidArgument,
        "nodes_per_command_buffer must be positive");
}

const TensorInfo& GraphState::tensor(TensorRef t) const {
  if (t.index < 0 || static_cast<size_t>(t.index) >= tensors.size())
    throw Error(ErrorKind::InvalidArgument, "invalid tensor reference " + std::to_string(t.index));
  return tensors[t.index];
}

bool GraphState::has_external() const {
  for (auto& s : storages)
    if (s.kind == StorageKind::External) return true;
  return false;
}

void GraphState::require_idle(const char* what) const {
  if (in_flight)
    throw Error(ErrorKind::InvalidState,
                std::string(what) + " while an execution is in flight: call wait() first");
}

Bound GraphState::buffer_of(TensorRef t) const {
  const Storage& s = storage_of(t);
  switch (s.kind) {
    case StorageKind::Constant:
      return {s.own.handle(), 0, false};
    case StorageKind::External:
      return {s.external.buffer, s.external.offset, s.host_visible};
    default:
      return {activation_buffers[s.slot].handle(), 0, false};
  }
}

namespace {
TensorRef new_tensor(GraphState& g, Shape shape, DType dtype, std::string name, int32_t storage) {
  numel(shape);  // validates dims
  if (name.empty()) name = "t" + std::to_string(g.tensors.size());
  g.tensors.push_back({std::move(shape), dtype, std::move(name), storage});
  return TensorRef{static_cast<int32_t>(g.tensors.size() - 1)};
}
}  // namespace

ComputeGraph::ComputeGraph(std::shared_ptr<vk::Context> context, GraphOptions options)
    : impl_(std::make_unique<Impl>(std::move(context), options)) {}

ComputeGraph::~ComputeGraph() = default;

TensorRef ComputeGraph::add_tensor(Shape shape, DType dtype, std::string name) {
  check(!impl_->prepared, ErrorKind::InvalidState, "add_tensor after prepare()");
  GraphState& g = impl_->state;
  uint64_t bytes = static_cast<uint64_t>(numel(shape)) * dtype_size(dtype);
  g.storages.push_back(Storage{StorageKind::Activation, bytes, name});
  return new_tensor(g, std::move(shape), dtype, std::move(name),
                    static_cast<int32_t>(g.storages.size() - 1));
}

TensorRef ComputeGraph::add_view(TensorRef source, Shape shape, std::string name) {
  const TensorInfo src = info(source);
  if (numel(shape) != numel(src.shape))
    throw Error(ErrorKind::InvalidArgument,
                "view '" + name + "' of '" + src.name + "': shape " + shape_str(shape) + " has " +
                    std::to_string(numel(shape)) + " elements, source " + shape_str(src.shape) +
                    " has " + std::to_string(numel(src.shape)));
  return new_tensor(impl_->state, std::move(shape), src.dtype, std::move(name), src.storage);
}

TensorRef ComputeGraph::add_state(HostTensor initial, std::string name) {
  TensorRef t = add_constant(std::move(initial), std::move(name));
  // Uploaded once like a constant, but neither folded nor read-only.
  impl_->state.storages[info(t).storage].state = true;
  return t;
}

TensorRef ComputeGraph::add_constant(HostTensor value, std::string name) {
  check(!impl_->prepared, ErrorKind::InvalidState, "add_constant after prepare()");
  check(value.nbytes() == static_cast<size_t>(value.numel()) * dtype_size(value.dtype),
        ErrorKind::InvalidArgument,
        "constant '" + name + "': " + std::to_string(value.nbytes()) + " bytes for shape " +
            shape_str(value.shape) + " of " + dtype_name(value.dtype));
  GraphState& g = impl_->state;
  Shape shape = value.shape;
  DType dtype = value.dtype;
  g.storages.push_back(Storage{StorageKind::Constant, value.nbytes(), name, std::move(value)});
  return new_tensor(g, std::move(shape), dtype, std::move(name),
                    static_cast<int32_t>(g.storages.size() - 1));
}

TensorRef ComputeGraph::add_input(Shape shape, DType dtype, std::string name, IOMode mode) {
  impl_->io.require_new_input_name(name);
  TensorRef t = add_tensor(std::move(shape), dtype, name);
  impl_->io.add_input(t, std::move(name), mode);
  return t;
}

void ComputeGraph::add_output(TensorRef tensor, std::string name, IOMode mode) {
  check(!impl_->prepared, ErrorKind::InvalidState, "add_output after prepare()");
  impl_->io.add_output(tensor, std::move(name), mode);
}

TensorInfo ComputeGraph::info(TensorRef t) const {
  return impl_->state.tensor(t);
}

bool ComputeGraph::is_constant(TensorRef t) const {
  return impl_->state.is_constant(t);
}

const HostTensor* ComputeGraph::constant_value(TensorRef t) const {
  const Storage& s = impl_->state.storage_of(t);
  return is_constant(t) && s.value ? &*s.value : nullptr;
}

vk::Context& ComputeGraph::context() {
  return *impl_->state.context;
}

const GraphOptions& ComputeGraph::options() const {
  return impl_->state.options;
}

void ComputeGraph::set_label_scope(std::string scope) {
  impl_->label_scope = std::move(scope);
}

void ComputeGraph::add_dispatch(DispatchDesc desc) {
  check(!impl_->prepared, ErrorKind::InvalidState, "add_dispatch after prepare()");
  const GraphState& g = impl_->state;
  for (auto& b : desc.bindings) {
    const TensorInfo& ti = g.tensor(b.tensor);
    if (b.access != Access::Read && is_constant(b.tensor))
      throw Error(ErrorKind::InvalidArgument,
                  desc.label + ": writes constant tensor '" + ti.name + "'");
    uint64_t range = g.context->limits().maxStorageBufferRange;
    if (ti.nbytes() > range)
      throw Error(ErrorKind::Unsupported, desc.label + ": tensor '" + ti.name + "' is " +
                                              std::to_string(ti.nbytes()) +
                                              " bytes, over the device's maxStorageBufferRange (" +
                                              std::to_string(range) + ")");
  }
  // Unknown shader: fail at build time, not at encode.
  const vk::ShaderInfo& shader = desc.shader.resolve();
  Node n{Node::Kind::Dispatch};
  n.label = desc.label.empty() ? std::string(shader.name) : desc.label;
  if (!impl_->label_scope.empty()) n.label = impl_->label_scope + ": " + n.label;
  n.dispatch = std::move(desc);
  impl_->state.nodes.push_back(std::move(n));
}

void ComputeGraph::add_copy(TensorRef src, TensorRef dst, uint64_t src_offset, uint64_t dst_offset,
                            uint64_t bytes, std::string label) {
  check(!impl_->prepared, ErrorKind::InvalidState, "add_copy after prepare()");
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
  const std::string& scope = impl_->label_scope;
  n.label = scope.empty() ? std::move(label) : scope + ": " + label;
  impl_->state.nodes.push_back(std::move(n));
}

size_t ComputeGraph::num_inputs() const {
  return impl_->io.inputs().size();
}
size_t ComputeGraph::num_outputs() const {
  return impl_->io.outputs().size();
}
const std::string& ComputeGraph::input_name(size_t i) const {
  return impl_->io.input(i).name;
}
const std::string& ComputeGraph::output_name(size_t i) const {
  return impl_->io.output(i).name;
}
TensorRef ComputeGraph::input(size_t i) const {
  return impl_->io.input(i).tensor;
}
TensorRef ComputeGraph::output(size_t i) const {
  return impl_->io.output(i).tensor;
}

void ComputeGraph::bind_external(const std::string& name, const ExternalBuffer& buffer) {
  ExclusiveUse use(impl_->user, "bind_external");
  impl_->io.bind_external(name, buffer);
  impl_->encoder.invalidate();
}

VkBufferMemoryBarrier ComputeGraph::app_release(const std::string& name,
                                                VkAccessFlags app_access) const {
  return impl_->io.app_release(name, app_access);
}

VkBufferMemoryBarrier ComputeGraph::app_acquire(const std::string& name,
                                                VkAccessFlags app_access) const {
  return impl_->io.app_acquire(name, app_access);
}

HostIOPath ComputeGraph::bind_host_pointer(const std::string& name, void* pointer, size_t bytes) {
  ExclusiveUse use(impl_->user, "bind_host_pointer");
  HostIOPath path = impl_->io.bind_host_pointer(name, pointer, bytes);
  impl_->encoder.invalidate();
  return path;
}

void ComputeGraph::prepare() {
  ExclusiveUse use(impl_->user, "prepare");
  if (impl_->prepared) return;
  GraphIO& io = impl_->io;
  check(!io.outputs().empty(), ErrorKind::InvalidState, "graph has no outputs");
  GraphStats& stats = impl_->state.stats;
  auto t0 = std::chrono::steady_clock::now();
  auto lap = [&t0] {
    auto t1 = std::chrono::steady_clock::now();
    double ms = std::chrono::duration<double, std::milli>(t1 - t0).count();
    t0 = t1;
    return ms;
  };
  plan_activations(impl_->state, io.input_tensors(), io.output_tensors());
  stats.prepare_plan_ms = lap();
  prepack_constants(impl_->state);
  io.allocate_staging();
  stats.prepare_upload_ms = lap();
  impl_->encoder.prepare();
  stats.prepare_encoder_ms = lap();
  stats.nodes = impl_->state.nodes.size();
  impl_->prepared = true;
}

void ComputeGraph::copy_to_input(size_t i, const void* data, size_t bytes) {
  ExclusiveUse use(impl_->user, "copy_to_input");
  impl_->io.input(i);  // a bad index first, as for every other call taking one
  impl_->state.require_idle("copy_to_input");
  prepare();
  impl_->io.copy_to_input(i, data, bytes);
}

void ComputeGraph::submit() {
  submit(vk::SubmitSync{});
}

void ComputeGraph::submit(const vk::SubmitSync& sync) {
  ExclusiveUse use(impl_->user, "submit");
  impl_->state.require_idle("submit");
  prepare();
  impl_->io.before_submit();
  impl_->encoder.submit(sync);
}

void ComputeGraph::wait() {
  ExclusiveUse use(impl_->user, "wait");
  impl_->encoder.wait();
  impl_->io.after_wait();
}

bool ComputeGraph::in_flight() const {
  return impl_->state.in_flight;
}

void ComputeGraph::execute() {
  ExclusiveUse use(impl_->user, "execute");
  submit();
  wait();
}

void ComputeGraph::copy_from_output(size_t i, void* data, size_t bytes) {
  copy_from_output(i, data, bytes, info(output(i)).dtype);
}

void ComputeGraph::copy_from_output(size_t i, void* data, size_t bytes, DType as) {
  ExclusiveUse use(impl_->user, "copy_from_output");
  impl_->io.output(i);
  impl_->state.require_idle("copy_from_output");
  // Runs every execution: messages are built only on failure.
  if (!impl_->state.executed)
    throw Error(ErrorKind::InvalidState, "copy_from_output before any execute()");
  impl_->io.copy_from_output(i, data, bytes, as);
}

HostTensor ComputeGraph::read_output(size_t i) {
  return read_output(i, info(output(i)).dtype);
}

HostTensor ComputeGraph::read_output(size_t i, DType as) {
  ExclusiveUse use(impl_->user, "read_output");
  const TensorInfo& ti = impl_->state.tensor(output(i));
  // Not zero-filled: the readback writes every byte, and a fill would double its cost.
  HostTensor t = HostTensor::uninitialized(as, ti.shape);
  copy_from_output(i, t.bytes.data(), t.bytes.size(), as);
  return t;
}

GraphStats ComputeGraph::stats() const {
  GraphStats s = impl_->state.stats;
  s.context_peak_device_bytes = impl_->state.context->allocator().stats().peak_block_bytes;
  return s;
}

double ComputeGraph::last_gpu_ms() const {
  return impl_->encoder.last_gpu_ms();
}

std::vector<NodeTime> ComputeGraph::node_times() const {
  return impl_->encoder.node_times();
}

void ComputeGraph::set_profile(bool on) {
  ExclusiveUse use(impl_->user, "set_profile");
  impl_->encoder.set_profile(on);
}

}  // namespace vkgraph
