#pragma once
// Chrome trace files (chrome://tracing, ui.perfetto.dev) of per-node GPU times: one complete
// ("X") slice per node, the nodes of a run laid end to end from the run's start. One writer
// for `vkgraph bench --trace` and the Python package's profiling, so both give the same file.
#include <string>
#include <vector>

#include "vkgraph/graph/compute_graph.h"

namespace vkgraph {

struct TraceRun {
  double start_us = 0;  // where the run's first node starts on the trace's time axis
  std::vector<NodeTime> nodes;
};

std::string chrome_trace_json(const std::vector<TraceRun>& runs);
// Throws Error(Io) when `path` cannot be written.
void write_chrome_trace(const std::string& path, const std::vector<TraceRun>& runs);

}  // namespace vkgraph
