#pragma once
// A model whose lowering needs values the graph computes from data (an If condition, a Loop's
// condition, a Reshape shape taken from a tensor, the inputs of a host-evaluated op) runs in
// segments. Each segment is a graph that computes only those values from the model's inputs;
// the Session runs it, reads the values back through the graph's readback path (the final
// HOST/HOST_READ barrier, the fence, the invalidate: DESIGN.md rule 4), and builds the next
// segment, and at last the model's own graph, with them known like constants. Every run replays
// the segments first; a value that differs from the one the later graphs were built for drops
// those graphs and re-plans from there. Cost: one more submission and readback per segment per
// run, and a rebuild when a value read back changes. See docs/notes/staged.md.
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "onnx/importer.h"
#include "vkgraph/graph/compute_graph.h"

namespace vkgraph::onnx_import {

// A fed model input: a HostTensor's bytes for run(), the app's memory for run_bound().
struct Feed {
  DType dtype;
  const Shape* shape;
  const void* data;
  size_t bytes;  // at `data`; at least the tensor's size
};
using Feeds = std::map<std::string, Feed>;

class Segments {
 public:
  // Builds a graph for one segment (Staging::targets as its outputs), prepared, Staged I/O.
  using Build = std::function<std::unique_ptr<ComputeGraph>(const Staging&)>;
  // A model that needs more segments than this is refused, naming the value.
  static constexpr size_t kMaxSegments = 256;

  void clear();
  size_t size() const { return segments_.size(); }
  // Every value the segments read back: what the next build folds.
  const std::map<std::string, HostTensor>& known() const { return known_; }
  // Builds and runs the segment that computes `need`'s values (first those its build needs
  // in turn), adding what it reads back to known().
  void add(const NeedsComputedValues& need, const Build& build, const Feeds& feeds);
  // Runs the segments with `feeds`. False when a value read back differs from what the later
  // segments were built for: they are dropped, known() holds the new values, and the caller
  // builds again from there.
  bool replay(const Feeds& feeds);

 private:
  struct Segment {
    std::unique_ptr<ComputeGraph> graph;
    std::map<std::string, HostTensor> read;  // the values it read back last
  };
  static std::map<std::string, HostTensor> run(ComputeGraph& graph, const Feeds& feeds);
  void add_one(const NeedsComputedValues& need, const Build& build, const Feeds& feeds,
               size_t depth);

  std::vector<Segment> segments_;
  std::map<std::string, HostTensor> known_;
};

}  // namespace vkgraph::onnx_import
