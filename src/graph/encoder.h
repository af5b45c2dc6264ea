#pragma once
// Records a prepared graph into command buffers once, with the barriers the hazard tracker
// derives (DESIGN.md rules 1, 4 and 6), submits chunks as it records them, and replays the
// recording on later executions. Owns the pipelines' descriptor sets, the command buffers,
// the fence and the timestamps (profiling).
#include <chrono>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "graph/graph_io.h"
#include "graph/graph_state.h"
#include "graph/hazard_tracker.h"
#include "vkgraph/vk/command.h"
#include "vkgraph/vk/pipeline.h"

namespace vkgraph {

// Breaks the synchronization contract on purpose, to prove the checks (sync trace audit,
// synchronization validation) can fail. Only tests set it (tests/gpu/graph_testing.h).
struct SyncFaults {
  bool omit_final_barrier = false;
  int drop_barrier_before_node = -1;
  bool omit_external_entry_barrier = false;
  bool omit_external_exit_barrier = false;
};

class Encoder {
 public:
  Encoder(GraphState& graph, GraphIO& io) : g_(graph), io_(io) {}
  ~Encoder();  // waits for an execution in flight: never free what the GPU may still use
  Encoder(const Encoder&) = delete;
  Encoder& operator=(const Encoder&) = delete;

  void prepare();     // pipelines, descriptor and command pools, fence, timestamps
  void invalidate();  // after an I/O rebinding: the next submit records again
  // Per-node timestamps on or off; the next submit records again. Not while in flight.
  void set_profile(bool on);
  // Records (submitting each chunk as it ends) on the first call, replays afterwards.
  void submit(const vk::SubmitSync& sync);
  void wait();
  double last_gpu_ms() const;
  std::vector<NodeTime> node_times() const;

  SyncFaults faults;

 private:
  // What one recorded step touches, so barriers can be derived before recording.
  struct Step {
    enum class Kind { InputCopy, OutputCopy, Node } kind;
    size_t index;  // into the inputs, the outputs or the nodes
    std::vector<std::pair<VkBuffer, ResourceAccess>> accesses;
  };
  void make_timestamps();  // the pool options.profile needs
  void write_descriptors(Node& node);
  std::vector<Step> steps() const;
  void add_ownership_transfers(vk::PipelineBarrier& entry, vk::PipelineBarrier& exit) const;
  void encode(const vk::SubmitSync& sync);
  // encode()'s recording, one command buffer per chunk, each submitted as it ends; counts the
  // submitted ones in `submitted`.
  void record_and_submit(const std::vector<Step>& all, HazardTracker& tracker,
                         const vk::PipelineBarrier& entry, const vk::PipelineBarrier& exit,
                         const vk::SubmitSync& sync, size_t& submitted);
  void discard_recording();
  void record_step(vk::CommandBuffer& cb, const Step& step, HazardTracker& tracker);

  GraphState& g_;
  GraphIO& io_;
  std::unique_ptr<vk::DescriptorPool> descriptors_;
  std::unique_ptr<vk::CommandPool> commands_;
  std::unique_ptr<vk::Fence> fence_;
  std::unique_ptr<vk::TimestampPool> timestamps_;
  std::vector<VkCommandBuffer> recorded_;
  std::vector<uint64_t> recorded_ids_;
  bool encoded_ = false;
  bool timed_ = false;  // the timestamp pool holds a finished execution's times
  // Submit to fence signal of the last execution, which the next wait polls through (capped)
  // rather than sleep for a graph longer than the fixed poll.
  std::chrono::steady_clock::time_point submitted_at_;
  uint64_t last_execution_ns_ = 0;
};

}  // namespace vkgraph
