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

namespace vk {
struct ContextInternals {
  static InjectedFaults& faults(Context& ctx) { return *ctx.faults_; }
};
}  // namespace vk

// The n-th device memory allocation from now fails with VK_ERROR_OUT_OF_DEVICE_MEMORY; 0: none.
inline void fail_allocation(vk::Context& ctx, uint64_t n) {
  vk::ContextInternals::faults(ctx).allocations_until_failure = n;
}
// The n-th queue submission from now reports VK_ERROR_DEVICE_LOST, and the Context stays lost.
inline void lose_device_at_submit(vk::Context& ctx, uint64_t n) {
  vk::ContextInternals::faults(ctx).submits_until_device_loss = n;
}
// Device memory allocations the Context's allocator has attempted so far.
inline uint64_t allocations_attempted(vk::Context& ctx) {
  return vk::ContextInternals::faults(ctx).allocations.load();
}

}  // namespace vkgraph
