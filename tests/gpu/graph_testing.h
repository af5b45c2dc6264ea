#pragma once
// Test-only access to a ComputeGraph's parts: break its synchronization on purpose, to prove
// that the checks (sync trace audit, synchronization validation) can fail.
#include "graph/graph_impl.h"
#include "vkgraph/graph/compute_graph.h"

namespace vkgraph {

struct GraphInternals {
  static ComputeGraph::Impl& of(ComputeGraph& graph) { return *graph.impl_; }
};

// Applies to the graph's next recording (its first execution, or the one after a rebinding).
inline void inject_sync_faults(ComputeGraph& graph, const SyncFaults& faults) {
  GraphInternals::of(graph).encoder.faults = faults;
}

}  // namespace vkgraph
