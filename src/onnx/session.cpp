#include "vkgraph/session.h"

#include <chrono>
#include <fstream>
#include <set>

#include "onnx/importer.h"
#include "onnx/load.h"
#include "vkgraph/error.h"
#include "vkgraph/file_io.h"
#include "vkgraph/onnx_tensor.h"

namespace vkgraph {

namespace {
double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}
}  // namespace

struct Session::Impl {
  SessionOptions options;
  std::shared_ptr<vk::Context> context;
  onnx_import::ParsedModel model;
  std::unique_ptr<ComputeGraph> graph;
  std::map<std::string, Shape> built_for;          // input shapes the current graph was built with
  std::map<std::string, HostTensor> built_values;  // values of the needs_value inputs
  LoadTimes times;

  void load(const void* bytes, size_t size, const std::string& what) {
    auto t0 = std::chrono::steady_clock::now();
    model = onnx_import::parse_model(bytes, size, what);
    context = options.context ? options.context : vk::Context::create(options.context_options);
    times.parse_ms = ms_since(t0);
    // Build now when every input shape is known, so load errors surface at load time.
    auto shapes = onnx_import::static_input_shapes(model, options.input_shapes);
    if (!shapes) return;
    try {
      build(*shapes, {});
    } catch (const onnx_import::NeedsInputValues& e) {
      mark_needs_value(e.inputs());  // built by the first run, which gives the values
    }
  }

  void mark_needs_value(const std::set<std::string>& names) {
    for (auto& in : model.inputs)
      if (names.count(in.name)) in.needs_value = true;
  }

  // Builds for the fed shapes and values, learning which inputs' values the build needs: a
  // build reports those of every node it reaches, but nodes behind them may need more once
  // their values are known, so it retries, learning at least one input each time.
  void plan(const std::map<std::string, Shape>& shapes,
            const std::map<std::string, HostTensor>& feeds) {
    std::map<std::string, HostTensor> values;
    for (auto& in : model.inputs)
      if (in.needs_value) values[in.name] = feeds.at(in.name);
    for (;;) {
      try {
        build(shapes, values);
        built_values = std::move(values);
        return;
      } catch (const onnx_import::NeedsInputValues& e) {
        bool learned = false;
        for (const std::string& name : e.inputs())
          learned |= values.emplace(name, feeds.at(name)).second;
        if (!learned) throw;  // the values given did not make it known: an importer bug
        mark_needs_value(e.inputs());
      }
    }
  }

  bool values_changed(const std::map<std::string, HostTensor>& feeds) const {
    for (auto& [name, value] : built_values) {
      const HostTensor& fed = feeds.at(name);
      if (fed.dtype != value.dtype || fed.shape != value.shape || fed.bytes != value.bytes)
        return true;
    }
    return false;
  }

  void build(const std::map<std::string, Shape>& shapes,
             const std::map<std::string, HostTensor>& values) {
    auto t0 = std::chrono::steady_clock::now();
    graph.reset();
    auto g = std::make_unique<ComputeGraph>(context, options.graph);
    onnx_import::Importer importer(model.proto, *g, shapes, values, options.fuse, options.fp16);
    importer.build();
    times.build_ms = ms_since(t0);
    t0 = std::chrono::steady_clock::now();
    g->prepare();
    times.prepare_ms = ms_since(t0);
    for (size_t i = 0; i < g->num_outputs(); ++i) {
      TensorInfo ti = g->info(g->output(i));
      model.outputs[i].dtype = ti.dtype;
    }
    graph = std::move(g);
    built_for = shapes;
    ++times.builds;
  }
};

Session::Session(const std::string& path, SessionOptions options)
    : impl_(std::make_unique<Impl>()) {
  impl_->options = std::move(options);
  std::vector<uint8_t> bytes = read_file_bytes(path);
  impl_->load(bytes.data(), bytes.size(), path);
}

Session::Session(const void* model_bytes, size_t size, SessionOptions options)
    : impl_(std::make_unique<Impl>()) {
  impl_->options = std::move(options);
  impl_->load(model_bytes, size, "model bytes");
}

Session::~Session() = default;
Session::Session(Session&&) noexcept = default;
Session& Session::operator=(Session&&) noexcept = default;

const std::vector<ValueInfo>& Session::inputs() const {
  return impl_->model.inputs;
}
const std::vector<ValueInfo>& Session::outputs() const {
  return impl_->model.outputs;
}
int Session::opset() const {
  return onnx_import::ai_onnx_opset(impl_->model.proto);
}
ModelMetadata Session::metadata() const {
  const onnx::ModelProto& m = impl_->model.proto;
  ModelMetadata meta{m.producer_name(), m.producer_version(),   m.domain(),        m.doc_string(),
                     m.graph().name(),  m.graph().doc_string(), m.model_version(), {}};
  for (auto& prop : m.metadata_props()) meta.custom[prop.key()] = prop.value();
  return meta;
}
ComputeGraph* Session::graph() {
  return impl_->graph.get();
}
const LoadTimes& Session::load_times() const {
  return impl_->times;
}
vk::Context& Session::context() {
  return *impl_->context;
}

std::vector<HostTensor> Session::run(const std::map<std::string, HostTensor>& feeds,
                                     const std::vector<std::string>& output_names) {
  Impl& s = *impl_;
  for (auto& [name, t] : feeds) {
    bool known = false;
    for (auto& in : s.model.inputs) known |= in.name == name;
    if (!known) {
      std::string names;
      for (auto& in : s.model.inputs) names += (names.empty() ? "" : ", ") + in.name;
      throw Error(ErrorKind::InvalidArgument,
                  "unknown input '" + name + "'; the model's inputs are: " + names);
    }
  }
  std::map<std::string, Shape> shapes;
  for (auto& in : s.model.inputs) {
    auto it = feeds.find(in.name);
    if (it == feeds.end())
      throw Error(ErrorKind::InvalidArgument,
                  "missing input '" + in.name + "'" +
                      (in.needs_value ? " (its value determines the model's shapes)" : ""));
    const HostTensor& t = it->second;
    if (t.dtype != in.dtype)
      throw Error(ErrorKind::InvalidArgument, "input '" + in.name + "' must be " +
                                                  dtype_name(in.dtype) + ", got " +
                                                  dtype_name(t.dtype));
    if (t.nbytes() != static_cast<size_t>(t.numel()) * dtype_size(t.dtype))
      throw Error(ErrorKind::InvalidArgument, "input '" + in.name + "' holds " +
                                                  std::to_string(t.nbytes()) + " bytes for shape " +
                                                  shape_str(t.shape));
    auto fixed = s.options.input_shapes.find(in.name);
    const Shape& expected = fixed != s.options.input_shapes.end() ? fixed->second : in.shape;
    bool fits = t.shape.size() == expected.size();
    for (size_t d = 0; fits && d < t.shape.size(); ++d)
      fits = expected[d] < 0 || expected[d] == t.shape[d];
    if (!fits)
      throw Error(ErrorKind::InvalidArgument, "input '" + in.name + "' has shape " +
                                                  shape_str(t.shape) + ", expected " +
                                                  shape_str(expected) + " (-1 = any)");
    shapes[in.name] = t.shape;
  }
  if (!s.graph || shapes != s.built_for || s.values_changed(feeds)) s.plan(shapes, feeds);
  ComputeGraph& g = *s.graph;
  for (size_t i = 0; i < g.num_inputs(); ++i) {
    const HostTensor& t = feeds.at(g.input_name(i));
    g.copy_to_input(i, t.bytes.data(), t.bytes.size());
  }
  g.execute();
  std::vector<HostTensor> results;
  if (output_names.empty()) {
    for (size_t i = 0; i < g.num_outputs(); ++i) results.push_back(g.read_output(i));
    return results;
  }
  for (auto& name : output_names) {
    size_t i = 0;
    while (i < g.num_outputs() && g.output_name(i) != name) ++i;
    if (i == g.num_outputs())
      throw Error(ErrorKind::InvalidArgument, "unknown output '" + name + "'");
    results.push_back(g.read_output(i));
  }
  return results;
}

}  // namespace vkgraph
