#pragma once
// Test-only access to a ComputeGraph's parts: break its synchronization on purpose, to prove
// that the checks (sync trace audit, synchronization validation) can fail; and to a Context's
// fault injection (src/vk/faults.h), to drive the error paths of allocation and submission.
#include "graph/graph_impl.h"
#include "vk/faults.h"
#include "vkgraph/graph/compute_graph.h"
#include "vkgraph/vk/context.h"

namespace vkgraph {

struct GraphInternals {
  static ComputeGraph::Impl& of(ComputeGraph& graph) { return *graph.impl_; }
};

// Applies to the graph's next recording (its first execution, or the one after a rebinding).
inline void inject_sync_faults(ComputeGraph& graph, const SyncFaults& faults) {
  GraphInternals::of(graph).encoder.faults = faults;
}

// The n-th device memory allocation from now fails with `result`; 0: none.
inline void fail_allocation(vk::Context& ctx, uint64_t n,
                            VkResult result = VK_ERROR_OUT_OF_DEVICE_MEMORY) {
  vk::ContextInternals::faults(ctx).allocations.arm(n, result);
}
// The n-th Vulkan object creation (vk::create_object: buffers, pipelines, pools, fences, ...)
// from now fails with `result`; 0: none.
inline void fail_creation(vk::Context& ctx, uint64_t n,
                          VkResult result = VK_ERROR_OUT_OF_DEVICE_MEMORY) {
  vk::ContextInternals::faults(ctx).creations.arm(n, result);
}
// The n-th queue submission from now fails with `result`; 0: none.
inline void fail_submission(vk::Context& ctx, uint64_t n, VkResult result) {
  vk::ContextInternals::faults(ctx).submissions.arm(n, result);
}
// The n-th queue submission from now reports VK_ERROR_DEVICE_LOST, and the Context stays lost.
inline void lose_device_at_submit(vk::Context& ctx, uint64_t n) {
  fail_submission(ctx, n, VK_ERROR_DEVICE_LOST);
}
// Calls the Context has made or failed so far, of each kind.
inline uint64_t allocations_attempted(vk::Context& ctx) {
  return vk::ContextInternals::faults(ctx).allocations.calls.load();
}
inline uint64_t creations_attempted(vk::Context& ctx) {
  return vk::ContextInternals::faults(ctx).creations.calls.load();
}
inline uint64_t submissions_attempted(vk::Context& ctx) {
  return vk::ContextInternals::faults(ctx).submissions.calls.load();
}
// The validation messages `ctx` has not handed out when it is destroyed, among them the
// layer's report of every object left undestroyed at vkDestroyDevice: filled at destruction.
inline std::shared_ptr<std::vector<std::string>> messages_at_destruction(vk::Context& ctx) {
  auto& sink = vk::ContextInternals::faults(ctx).messages_at_destruction;
  sink = std::make_shared<std::vector<std::string>>();
  return sink;
}

}  // namespace vkgraph
