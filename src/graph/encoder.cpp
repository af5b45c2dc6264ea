#include "graph/encoder.h"

#include <algorithm>

#include "vkgraph/error.h"
#include "vkgraph/vk/barrier.h"

namespace vkgraph {

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
}  // namespace

Encoder::~Encoder() {
  if (g_.in_flight) {
    try {
      fence_->wait();
    } catch (...) {
    }
  }
}

void Encoder::prepare() {
  vk::Context& ctx = *g_.context;
  uint32_t sets = 0, descriptors = 0;
  // Asked for all at once, so that the ones not compiled yet compile on several threads.
  std::vector<vk::PipelineKey> keys;
  std::vector<Node*> dispatches;
  for (auto& n : g_.nodes) {
    if (n.kind != Node::Kind::Dispatch) continue;
    auto& d = n.dispatch;
    std::vector<uint32_t> spec = {d.local[0], d.local[1], d.local[2]};
    spec.insert(spec.end(), d.spec.begin(), d.spec.end());
    keys.push_back({d.shader.resolve().name, static_cast<uint32_t>(d.bindings.size()),
                    static_cast<uint32_t>(d.push.size()), std::move(spec)});
    dispatches.push_back(&n);
    sets++;
    descriptors += static_cast<uint32_t>(d.bindings.size());
  }
  std::vector<const vk::Pipeline*> pipelines = ctx.pipelines().get_all(keys);
  for (size_t i = 0; i < dispatches.size(); ++i) dispatches[i]->pipeline = pipelines[i];
  descriptors_ = std::make_unique<vk::DescriptorPool>(ctx, sets, descriptors);
  commands_ = std::make_unique<vk::CommandPool>(ctx);
  fence_ = std::make_unique<vk::Fence>(ctx);
  make_timestamps();
}

void Encoder::make_timestamps() {
  if (!g_.context->features().timestamps) return;
  uint32_t count = g_.options.profile ? static_cast<uint32_t>(g_.nodes.size()) + 1 : 2;
  timestamps_ = std::make_unique<vk::TimestampPool>(*g_.context, count);
}

void Encoder::set_profile(bool on) {
  check(!g_.in_flight, ErrorKind::InvalidState, "set_profile() while an execution is in flight");
  if (g_.options.profile == on) return;
  g_.options.profile = on;
  if (!timestamps_) return;  // not prepared yet (or no timestamps): prepare() sizes the pool
  // The recorded command buffers write into the old pool: record them again.
  if (encoded_) discard_recording();
  make_timestamps();
  timed_ = false;  // the new pool holds no execution's times yet
}

void Encoder::invalidate() {
  // Descriptor sets and command buffers name the old buffer: record them again.
  if (encoded_) discard_recording();
}

// The command buffers go with their pool; encode() makes a new one. Nothing may be pending.
void Encoder::discard_recording() {
  commands_.reset();
  recorded_.clear();
  recorded_ids_.clear();
  encoded_ = false;
}

// Descriptor sets are written at encode time, when external bindings are known.
void Encoder::write_descriptors(Node& n) {
  std::vector<VkBuffer> buffers;
  std::vector<VkDeviceSize> offsets, sizes;
  for (auto& b : n.dispatch.bindings) {
    Bound bound = g_.buffer_of(b.tensor);
    buffers.push_back(bound.buffer);
    offsets.push_back(bound.offset);
    sizes.push_back(std::max<uint64_t>(g_.tensor(b.tensor).nbytes(), 4));
  }
  if (n.set)
    descriptors_->write(n.set, buffers, offsets, sizes);
  else
    n.set = descriptors_->allocate(n.pipeline->set_layout, buffers, offsets, sizes);
}

std::vector<Encoder::Step> Encoder::steps() const {
  const std::vector<GraphPort>& inputs = io_.inputs();
  const std::vector<GraphPort>& outputs = io_.outputs();
  std::vector<Step> out;
  for (size_t i = 0; i < inputs.size(); ++i)
    if (inputs[i].mode == IOMode::Staged)
      out.push_back({Step::Kind::InputCopy,
                     i,
                     {{inputs[i].staging->handle(), kTransferRead},
                      {g_.buffer_of(inputs[i].tensor).buffer, kTransferWrite}}});
  for (size_t i = 0; i < g_.nodes.size(); ++i) {
    Step s{Step::Kind::Node, i, {}};
    const Node& n = g_.nodes[i];
    if (n.kind == Node::Kind::Copy) {
      s.accesses = {{g_.buffer_of(n.src).buffer, kTransferRead},
                    {g_.buffer_of(n.dst).buffer, kTransferWrite}};
    } else {
      for (auto& b : n.dispatch.bindings) {
        ResourceAccess a = b.access == Access::Read    ? kShaderRead
                           : b.access == Access::Write ? kShaderWrite
                                                       : kShaderReadWrite;
        s.accesses.push_back({g_.buffer_of(b.tensor).buffer, a});
      }
    }
    out.push_back(std::move(s));
  }
  for (size_t i = 0; i < outputs.size(); ++i)
    if (outputs[i].mode == IOMode::Staged)
      out.push_back({Step::Kind::OutputCopy,
                     i,
                     {{g_.buffer_of(outputs[i].tensor).buffer, kTransferRead},
                      {outputs[i].staging->handle(), kTransferWrite}}});
  return out;
}

void Encoder::record_step(vk::CommandBuffer& cb, const Step& step, HazardTracker& tracker) {
  vk::PipelineBarrier barrier;
  for (auto& [buffer, access] : step.accesses) {
    vk::PipelineBarrier one;
    tracker.access(buffer, access, one);
    barrier.merge(one);
  }
  bool drop = step.kind == Step::Kind::Node &&
              static_cast<int>(step.index) == faults.drop_barrier_before_node;
  if (!drop) cb.record_barrier(barrier);

  switch (step.kind) {
    case Step::Kind::InputCopy: {
      const GraphPort& io = io_.inputs()[step.index];
      Bound dst = g_.buffer_of(io.tensor);
      // A zero-size vkCmdCopyBuffer is invalid; empty tensors have nothing to move.
      if (size_t bytes = g_.tensor(io.tensor).nbytes())
        cb.copy_buffer(io.staging->handle(), dst.buffer, 0, dst.offset, bytes, false);
      break;
    }
    case Step::Kind::OutputCopy: {
      const GraphPort& io = io_.outputs()[step.index];
      Bound src = g_.buffer_of(io.tensor);
      if (size_t bytes = g_.tensor(io.tensor).nbytes())
        cb.copy_buffer(src.buffer, io.staging->handle(), src.offset, 0, bytes, true);
      break;
    }
    case Step::Kind::Node: {
      const Node& n = g_.nodes[step.index];
      if (n.kind == Node::Kind::Copy) {
        Bound src = g_.buffer_of(n.src), dst = g_.buffer_of(n.dst);
        cb.copy_buffer(src.buffer, dst.buffer, src.offset + n.src_offset, dst.offset + n.dst_offset,
                       n.bytes, dst.host_visible);
      } else {
        const DispatchDesc& d = n.dispatch;
        cb.bind_pipeline(n.pipeline->pipeline);
        cb.bind_descriptor_set(n.pipeline->layout, n.set);
        cb.push_constants(n.pipeline->layout, d.push.data(), static_cast<uint32_t>(d.push.size()));
        cb.dispatch(d.groups[0], d.groups[1], d.groups[2]);
        for (auto& b : d.bindings) {
          Bound bound = g_.buffer_of(b.tensor);
          if (b.access != Access::Read && bound.host_visible)
            cb.note_device_write(bound.buffer, g_.tensor(b.tensor).nbytes(),
                                 VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT);
        }
      }
      if (g_.options.profile && timestamps_)
        cb.write_timestamp(VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, timestamps_->handle(),
                           static_cast<uint32_t>(step.index) + 1);
      break;
    }
  }
}

// Buffers another queue family owns between executions (ExternalBuffer::queue_family): acquired
// at entry, released at exit. The acquire's source scope starts at the app's semaphore wait,
// hence the entry stages; the release's destination is the app's acquire, hence no access.
void Encoder::add_ownership_transfers(vk::PipelineBarrier& entry, vk::PipelineBarrier& exit) const {
  const uint32_t graph = g_.context->queue_family();
  const VkPipelineStageFlags used =
      VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT;
  const ExternalSync& ext = g_.options.external;
  std::vector<const ExternalBuffer*> done;  // two IOs bound to one range transfer it once
  for (const Storage& s : g_.storages) {
    const ExternalBuffer& b = s.external;
    if (s.kind != StorageKind::External || b.queue_family == VK_QUEUE_FAMILY_IGNORED) continue;
    auto same = [&](const ExternalBuffer* o) {
      return o->buffer == b.buffer && o->offset == b.offset && o->size == b.size;
    };
    if (std::any_of(done.begin(), done.end(), same)) continue;
    done.push_back(&b);
    entry.add_ownership_transfer(b.buffer, b.offset, b.size, b.queue_family, graph,
                                 ext.before_stage, 0, used,
                                 VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT |
                                     VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT);
    exit.add_ownership_transfer(b.buffer, b.offset, b.size, graph, b.queue_family, used,
                                VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT,
                                ext.after_stage, 0);
  }
}

// Records the command buffers once, submitting each chunk as it ends. Replay wraps around
// (DESIGN.md rule 1): run N+1 follows run N on the queue, so the tracker starts from the state
// one full pass leaves behind, and the first access of each resource is ordered against its
// last access in the previous run.
void Encoder::encode(const vk::SubmitSync& sync) {
  io_.require_bound();
  for (auto& n : g_.nodes)
    if (n.kind == Node::Kind::Dispatch) write_descriptors(n);
  std::vector<Step> all = steps();
  // Memory the graph does not track (DESIGN.md rule 6): order the app's earlier accesses
  // before this graph's, and this graph's writes before the app's later accesses.
  vk::PipelineBarrier entry, exit;
  const ExternalSync& ext = g_.options.external;
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

  // A recording that failed part-way (a command buffer not allocated, a submission refused)
  // is discarded whole, after the chunks it did submit have finished, and the next submit
  // records again from the start.
  size_t submitted = 0;
  try {
    if (!commands_) commands_ = std::make_unique<vk::CommandPool>(*g_.context);
    record_and_submit(all, tracker, entry, exit, sync, submitted);
  } catch (...) {
    try {
      if (submitted) g_.context->wait_idle();
    } catch (...) {
      // The first failure is the one to report; a lost device has nothing pending anyway.
    }
    discard_recording();
    throw;
  }
  g_.stats.command_buffers = recorded_.size();
  g_.stats.recordings++;
  encoded_ = true;
}

void Encoder::record_and_submit(const std::vector<Step>& all, HazardTracker& tracker,
                                const vk::PipelineBarrier& entry, const vk::PipelineBarrier& exit,
                                const vk::SubmitSync& sync, size_t& submitted) {
  const bool external = g_.has_external();
  // Chunk boundaries count nodes; input copies join the first chunk, output copies the last.
  const size_t nodes = g_.nodes.size();
  const size_t per = g_.options.nodes_per_command_buffer;
  const size_t chunks = std::max<size_t>(1, (nodes + per - 1) / per);
  size_t next = 0;
  for (size_t c = 0; c < chunks; ++c) {
    vk::CommandBuffer& cb = commands_->allocate();
    cb.begin();
    const bool first = c == 0, last = c + 1 == chunks;
    if (first && timestamps_) {
      cb.reset_queries(timestamps_->handle(), 0, timestamps_->count());
      cb.write_timestamp(VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, timestamps_->handle(), 0);
    }
    if (first && external && !faults.omit_external_entry_barrier) cb.record_barrier(entry);
    size_t node_end = std::min(nodes, (c + 1) * per);
    while (next < all.size()) {
      const Step& s = all[next];
      if (s.kind == Step::Kind::Node && s.index >= node_end) break;
      if (s.kind == Step::Kind::OutputCopy && !last) break;
      record_step(cb, s, tracker);
      ++next;
    }
    if (last) {
      if (external && !faults.omit_external_exit_barrier) cb.record_barrier(exit);
      if (timestamps_ && !g_.options.profile)
        cb.write_timestamp(VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, timestamps_->handle(), 1);
      // DESIGN.md rule 4: all device writes -> host reads, recorded once, replayed each run.
      // Its ALL_COMMANDS source scope also covers chunks submitted earlier without a fence.
      if (!faults.omit_final_barrier) cb.record_barrier(vk::device_to_host_barrier());
    }
    cb.end();
    recorded_.push_back(cb.handle());
    recorded_ids_.push_back(cb.id());
    // Waits gate the first chunk, signals follow the last.
    vk::SubmitSync chunk_sync;
    if (first) chunk_sync.waits = sync.waits;
    if (last) chunk_sync.signals = sync.signals;
    cb.mark_submitted();
    try {
      g_.context->submit({cb.handle()}, {cb.id()}, last ? fence_->handle() : VK_NULL_HANDLE,
                         chunk_sync);
    } catch (...) {
      cb.mark_completed();  // never submitted
      throw;
    }
    ++submitted;
  }
}

void Encoder::submit(const vk::SubmitSync& sync) {
  submitted_at_ = std::chrono::steady_clock::now();
  g_.context->check_not_lost();  // before any command buffer changes state
  if (!encoded_) {
    encode(sync);
  } else {
    for (size_t c = 0; c < commands_->size(); ++c) (*commands_)[c].mark_submitted();
    try {
      g_.context->submit(recorded_, recorded_ids_, fence_->handle(), sync);
    } catch (...) {
      for (size_t c = 0; c < commands_->size(); ++c) (*commands_)[c].mark_completed();
      throw;
    }
  }
  g_.in_flight = true;
}

void Encoder::wait() {
  check(g_.in_flight, ErrorKind::InvalidState, "wait() without a submitted execution");
  auto since_submit = [&] {
    return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                     std::chrono::steady_clock::now() - submitted_at_)
                                     .count());
  };
  // What is left of the expected execution time since this one's submit (an app may work
  // between submit() and wait()). A run slower than the next sleeps too long once; the next
  // measures less by the poll period until it is back (Fence::wait).
  const uint64_t elapsed = since_submit();
  const bool done_before = fence_->signaled();
  fence_->wait(UINT64_MAX, last_execution_ns_ > elapsed ? last_execution_ns_ - elapsed : 0);
  // An execution that ended before the wait began says nothing of how long it took.
  if (!done_before || last_execution_ns_ == 0) last_execution_ns_ = since_submit();
  fence_->reset();
  for (size_t c = 0; c < commands_->size(); ++c) (*commands_)[c].mark_completed();
  g_.in_flight = false;
  g_.executed = true;
  timed_ = true;
}

double Encoder::last_gpu_ms() const {
  if (!timestamps_ || !timed_) return 0;
  auto ns = timestamps_->read_ns();
  return (ns.back() - ns.front()) / 1e6;
}

std::vector<NodeTime> Encoder::node_times() const {
  std::vector<NodeTime> out;
  if (!timestamps_ || !g_.options.profile || !timed_) return out;
  auto ns = timestamps_->read_ns();
  for (size_t i = 0; i < g_.nodes.size(); ++i)
    out.push_back({g_.nodes[i].label, (ns[i + 1] - ns[i]) / 1e6});
  return out;
}

}  // namespace vkgraph
