#include "onnx/segments.h"

#include <cstring>

#include "vkgraph/error.h"

namespace vkgraph::onnx_import {

namespace {
bool same(const HostTensor& a, const HostTensor& b) {
  return a.dtype == b.dtype && a.shape == b.shape && a.bytes == b.bytes;
}
}  // namespace

void Segments::clear() {
  segments_.clear();
  known_.clear();
}

std::map<std::string, HostTensor> Segments::run(ComputeGraph& graph, const Feeds& feeds) {
  for (size_t i = 0; i < graph.num_inputs(); ++i) {
    const Feed& f = feeds.at(graph.input_name(i));
    graph.copy_to_input(i, f.data, static_cast<size_t>(numel(*f.shape)) * dtype_size(f.dtype));
  }
  // execute() ends with the HOST/HOST_READ barrier and the fence wait; read_output invalidates
  // non-coherent memory before it copies (DESIGN.md rule 4).
  graph.execute();
  std::map<std::string, HostTensor> read;
  for (size_t i = 0; i < graph.num_outputs(); ++i)
    read.emplace(graph.output_name(i), graph.read_output(i));
  return read;
}

void Segments::add(const NeedsComputedValues& need, const Build& build, const Feeds& feeds) {
  add_one(need, build, feeds, 0);
}

void Segments::add_one(const NeedsComputedValues& need, const Build& build, const Feeds& feeds,
                       size_t depth) {
  for (const std::string& name : need.values())
    if (known_.count(name))
      throw Error(ErrorKind::Unsupported, need.message() + " (read back already: '" + name +
                                              "' did not become known to the build)");
  for (;;) {
    if (segments_.size() >= kMaxSegments || depth > kMaxSegments)
      throw Error(ErrorKind::Unsupported, need.message() + "; the model needs more than " +
                                              std::to_string(kMaxSegments) +
                                              " segments, more than vkgraph runs");
    Staging staging;
    staging.computed = known_;
    staging.targets = need.values();
    staging.roots = need.roots();
    std::unique_ptr<ComputeGraph> graph;
    try {
      graph = build(staging);
    } catch (const NeedsComputedValues& first) {
      add_one(first, build, feeds, depth + 1);  // values this segment needs in its turn
      continue;
    }
    Segment segment{std::move(graph), {}};
    segment.read = run(*segment.graph, feeds);
    for (auto& [name, value] : segment.read) known_[name] = value;
    segments_.push_back(std::move(segment));
    return;
  }
}

bool Segments::replay(const Feeds& feeds) {
  for (size_t k = 0; k < segments_.size(); ++k) {
    std::map<std::string, HostTensor> read = run(*segments_[k].graph, feeds);
    bool changed = false;
    for (auto& [name, value] : read) changed |= !same(value, segments_[k].read.at(name));
    if (!changed) continue;
    segments_[k].read = std::move(read);
    segments_.resize(k + 1);
    known_.clear();
    for (const Segment& s : segments_) known_.insert(s.read.begin(), s.read.end());
    return false;
  }
  return true;
}

}  // namespace vkgraph::onnx_import
