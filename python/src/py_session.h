#pragma once
// The native half of vkgraph.InferenceSession: one vkgraph::Session, the lock that makes it
// safe to call from several Python threads, and the profile of its runs.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "vkgraph/chrome_trace.h"
#include "vkgraph/session.h"

namespace vkgraph::python {

namespace py = pybind11;

// What vkgraph.SessionOptions carries into the native session.
struct NativeOptions {
  bool fp16 = false;
  bool fuse = true;
  bool profile = false;
  std::optional<std::string> device;  // index or name substring; default: env / best device
  std::optional<bool> validation;     // default: env VKGRAPH_VALIDATION
  std::optional<std::string> pipeline_cache;
  uint64_t memory_budget = 0;
  std::map<std::string, Shape> input_shapes;
  std::string external_data_dir;  // SessionOptions::external_data_dir
};

// Sessions with equal device options share one vk::Context (device, queue, allocator,
// pipeline cache) for as long as any of them lives: creating a Vulkan device per session
// would cost more than loading most models.
std::shared_ptr<vk::Context> shared_context(const NativeOptions& options);
// The validation messages of every live shared context, cleared as they are taken.
std::vector<std::string> take_validation_messages();

class PySession {
 public:
  // `model` is a path (str) or the model's bytes (bytes-like). Loads with the GIL released.
  PySession(const py::object& model, const NativeOptions& options);

  py::list inputs() const;
  py::list outputs() const;
  py::dict metadata() const;
  std::string device_name() const;
  bool validation_enabled() const;

  // Outputs in `output_names` order (all, in model order, when None or empty). The GIL is
  // released while the device runs; runs of one session from several threads take turns.
  py::list run(const py::object& output_names, const py::dict& feeds);

  // IO binding (Session::prepare_bound / run_bound). Arrays are C-contiguous, of the computed
  // dtype (the Python layer converts); each comes as (array, capacity in bytes).
  // prepare_bound returns (name, shape, numpy dtype name) per output; run_bound returns
  // {name: "imported" | "copied"} and keeps the arrays alive while the graph holds them.
  py::list prepare_bound(const py::dict& inputs);
  py::dict run_bound(const py::dict& inputs, const py::dict& outputs);

  // Seconds per Session::run over `runs` runs on `feeds`, timed in C++ with nothing of Python
  // in the loop: the baseline the benchmark compares run() against (tools/bench_python.py).
  std::vector<double> time_native_runs(const py::dict& feeds, int runs);

  // {name: address} of the memory run() would read each fed input from: the array's own data
  // when it is fed in place. For the tests of that.
  py::dict feed_addresses(const py::dict& feeds) const;

  // Writes the Chrome trace of the runs since creation (or the last call) and clears them.
  void write_profile(const std::string& path);
  bool profiling() const { return options_.profile; }

  std::vector<std::string> validation_messages() const;
  void clear_validation_messages();

  void close();
  bool closed() const { return !session_; }

 private:
  Session& session() const;  // throws InvalidState once closed
  const ValueInfo* find_input(const std::string& name) const;
  // Views of the fed arrays for Session::run_views, each array used in place where it is
  // already C-contiguous and of the computed type; `arrays` keeps them (and any converted
  // copies) alive. An unknown name is refused here or left for the Session to refuse.
  std::map<std::string, HostView> views_of(const py::dict& feeds, std::vector<py::array>& arrays,
                                           bool refuse_unknown) const;
  const ValueInfo& output_info(size_t index) const;

  NativeOptions options_;
  std::unique_ptr<Session> session_;
  mutable std::mutex run_mutex_;  // one run (or close) at a time
  std::chrono::steady_clock::time_point created_;
  std::vector<TraceRun> trace_;
  py::dict bound_arrays_;  // what the graph's host bindings point into
};

}  // namespace vkgraph::python
