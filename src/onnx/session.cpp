#include "vkgraph/session.h"

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>

#include "onnx/importer.h"
#include "onnx/load.h"
#include "onnx/segments.h"
#include "vkgraph/error.h"
#include "vkgraph/file_io.h"
#include "vkgraph/onnx_tensor.h"

namespace vkgraph {

namespace {
double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}
}  // namespace

namespace {
using onnx_import::Feed;
using onnx_import::Feeds;

size_t tensor_bytes(DType dtype, const Shape& shape) {
  return static_cast<size_t>(numel(shape)) * dtype_size(dtype);
}

HostTensor value_of(const Feed& f) {
  HostTensor t;
  t.dtype = f.dtype;
  t.shape = *f.shape;
  const auto* p = static_cast<const uint8_t*>(f.data);
  t.bytes.assign(p, p + tensor_bytes(f.dtype, *f.shape));
  return t;
}
}  // namespace

struct Session::Impl {
  SessionOptions options;
  std::shared_ptr<vk::Context> context;
  onnx_import::ParsedModel model;
  std::unique_ptr<ComputeGraph> graph;
  // Where lowering needs values the graph computes: the graphs that compute them, run before
  // `graph` (segments.h).
  onnx_import::Segments segments;
  std::map<std::string, Shape> built_for;          // input shapes the current graph was built with
  std::map<std::string, HostTensor> built_values;  // values of the needs_value inputs
  IOMode built_io = IOMode::Staged;                // Staged for run(), External for run_bound()
  std::set<std::string> external_outputs;          // of a graph built for run_bound()
  std::set<std::string> widened_outputs;           // float16 on the device, float32 to the app
  // What run_bound() last bound, by name: the same memory again needs no rebinding (which
  // would re-record the command buffers).
  std::map<std::string, std::pair<const void*, size_t>> bound;
  std::map<std::string, HostIOPath> bound_paths;
  LoadTimes times;
  // run() is whole under this lock: the graph holds one execution's inputs and outputs, and
  // a run may rebuild it, so runs from several threads take turns.
  std::mutex run_mutex;

  // `data_dir`: the folder of the model's external data (its own folder for a file).
  // `bytes_owner`, where given, keeps `bytes` valid: the weights are then read from them in
  // place (weights_in_place.h).
  void load(const void* bytes, size_t size, const std::string& what, const std::string& data_dir,
            std::shared_ptr<const void> bytes_owner = nullptr) {
    auto t0 = std::chrono::steady_clock::now();
    model = onnx_import::parse_model(bytes, size, what, data_dir, std::move(bytes_owner));
    check_input_shapes();
    context = options.context ? options.context : vk::Context::create(options.context_options);
    times.parse_ms = ms_since(t0);
    // Build now when every input shape is known, so load errors surface at load time.
    auto shapes = onnx_import::static_input_shapes(model, options.input_shapes);
    if (!shapes) return;
    try {
      build(*shapes, {}, IOMode::Staged);
    } catch (const onnx_import::NeedsInputValues& e) {
      mark_needs_value(e.inputs());  // built by the first run, which gives the values
    } catch (const onnx_import::NeedsComputedValues&) {
      // Built in segments by the first run, which gives the data they compute from.
    }
  }

  // SessionOptions::input_shapes must name model inputs: a misspelt name would otherwise be
  // ignored and the model run with other shapes than asked.
  void check_input_shapes() const {
    for (auto& [name, shape] : options.input_shapes) {
      const ValueInfo* declared = nullptr;
      for (auto& in : model.inputs)
        if (in.name == name) declared = &in;
      if (!declared)
        throw Error(ErrorKind::InvalidArgument, "input_shapes names unknown input '" + name +
                                                    "'; the model's inputs are: " + input_names());
      for (int64_t d : shape)
        if (d < -1)
          throw Error(ErrorKind::InvalidArgument, "input_shapes['" + name + "'] = " +
                                                      shape_str(shape) + ": dims are >= 0 or -1");
      // The model's declared rank and fixed dims bind the override (an empty declared shape is
      // a scalar or an unknown rank: nothing to hold it to); otherwise the mismatch surfaces
      // deep in some node, naming that node instead of the option.
      if (!declared->shape.empty() && !fits_declared(shape, declared->shape))
        throw Error(ErrorKind::InvalidArgument, "input_shapes['" + name +
                                                    "'] = " + shape_str(shape) +
                                                    " does not fit the model's input " +
                                                    shape_str(declared->shape) + " (-1 = any)");
    }
  }

  static bool fits_declared(const Shape& shape, const Shape& declared) {
    if (shape.size() != declared.size()) return false;
    for (size_t d = 0; d < shape.size(); ++d)
      if (declared[d] >= 0 && shape[d] >= 0 && shape[d] != declared[d]) return false;
    return true;
  }

  std::string input_names() const {
    std::string names;
    for (auto& in : model.inputs) names += (names.empty() ? "" : ", ") + in.name;
    return names;
  }

  void mark_needs_value(const std::set<std::string>& names) {
    for (auto& in : model.inputs)
      if (names.count(in.name)) in.needs_value = true;
  }

  // Builds for the fed shapes and values, learning which inputs' values the build needs: a
  // build reports those of every node it reaches, but nodes behind them may need more once
  // their values are known, so it retries, learning at least one input each time.
  // Values the graph computes and a build needs are read back by segments, built on the way.
  void plan(const std::map<std::string, Shape>& shapes, const Feeds& feeds, IOMode io) {
    std::map<std::string, HostTensor> values;
    for (auto& in : model.inputs)
      if (in.needs_value) values[in.name] = value_of(feeds.at(in.name));
    graph.reset();
    auto build_segment = [&](const onnx_import::Staging& staging) {
      return std::move(make_graph(shapes, values, IOMode::Staged, staging).graph);
    };
    for (;;) {
      try {
        onnx_import::Staging staging;
        staging.computed = segments.known();
        build(shapes, values, io, staging);
        built_values = std::move(values);
        return;
      } catch (const onnx_import::NeedsInputValues& e) {
        bool learned = false;
        for (const std::string& name : e.inputs())
          learned |= values.emplace(name, value_of(feeds.at(name))).second;
        if (!learned) throw;  // the values given did not make it known: an importer bug
        mark_needs_value(e.inputs());
        segments.clear();  // built without those values folded
      } catch (const onnx_import::NeedsComputedValues& e) {
        segments.add(e, build_segment, feeds);
      }
    }
  }

  bool values_changed(const Feeds& feeds) const {
    for (auto& [name, value] : built_values) {
      const Feed& fed = feeds.at(name);
      if (fed.dtype != value.dtype || *fed.shape != value.shape ||
          std::memcmp(fed.data, value.bytes.data(), value.bytes.size()) != 0)
        return true;
    }
    return false;
  }

  // Checks the feeds against the model's inputs and returns their shapes.
  std::map<std::string, Shape> check_feeds(const Feeds& feeds) const;

  // The graph for these feeds and I/O mode: the current one, or a new build.
  ComputeGraph& graph_for(const Feeds& feeds, IOMode io) {
    std::map<std::string, Shape> shapes = check_feeds(feeds);
    if (!graph || io != built_io || shapes != built_for || values_changed(feeds)) {
      segments.clear();
      plan(shapes, feeds, io);
    } else if (!segments.replay(feeds)) {
      plan(shapes, feeds, io);  // from the first segment whose values changed
    }
    return *graph;
  }

  // What the app gets for output i of `g`: its dtype, or float32 where it was widened.
  DType output_dtype(const ComputeGraph& g, size_t i) const {
    return widened_outputs.count(g.output_name(i)) ? DType::Float32 : g.info(g.output(i)).dtype;
  }

  struct Built {
    std::unique_ptr<ComputeGraph> graph;
    std::set<std::string> external_outputs, widened_outputs;  // the importer's
  };
  // A prepared graph for one build, with the outputs it made External or left in float16.
  Built make_graph(const std::map<std::string, Shape>& shapes,
                   const std::map<std::string, HostTensor>& values, IOMode io,
                   const onnx_import::Staging& staging) {
    auto t0 = std::chrono::steady_clock::now();
    auto g = std::make_unique<ComputeGraph>(context, options.graph);
    onnx_import::Importer importer(model, *g, shapes, values, options.fuse, options.fp16, io);
    importer.set_staging(staging);
    importer.build();
    times.build_ms = ms_since(t0);
    t0 = std::chrono::steady_clock::now();
    g->prepare();
    times.prepare_ms = ms_since(t0);
    ++times.builds;
    return {std::move(g), importer.external_outputs(), importer.widened_outputs()};
  }

  void build(const std::map<std::string, Shape>& shapes,
             const std::map<std::string, HostTensor>& values, IOMode io,
             const onnx_import::Staging& staging = {}) {
    graph.reset();
    bound.clear();
    bound_paths.clear();
    auto [g, externals, widened] = make_graph(shapes, values, io, staging);
    external_outputs = std::move(externals);
    widened_outputs = std::move(widened);
    built_io = io;
    for (size_t i = 0; i < g->num_outputs(); ++i) model.outputs[i].dtype = output_dtype(*g, i);
    graph = std::move(g);
    built_for = shapes;
  }
};

Session::Session(const std::string& path, SessionOptions options)
    : impl_(std::make_unique<Impl>()) {
  impl_->options = std::move(options);
  auto file = std::make_shared<const MappedFile>(path);
  std::string data_dir = impl_->options.external_data_dir;
  if (data_dir.empty()) data_dir = std::filesystem::path(path).parent_path().string();
  impl_->load(file->data(), file->size(), path, data_dir.empty() ? "." : data_dir, file);
}

Session::Session(const void* model_bytes, size_t size, SessionOptions options)
    : impl_(std::make_unique<Impl>()) {
  if (!model_bytes && size > 0)
    throw Error(ErrorKind::InvalidArgument,
                "Session: model_bytes is null but size is " + std::to_string(size));
  impl_->options = std::move(options);
  impl_->load(model_bytes, size, "model bytes", impl_->options.external_data_dir);
}

Session::~Session() = default;
Session::Session(Session&&) noexcept = default;
Session& Session::operator=(Session&&) noexcept = default;

Session::Impl& Session::impl() const {
  if (!impl_) throw Error(ErrorKind::InvalidState, "Session: used after it was moved from");
  return *impl_;
}

const std::vector<ValueInfo>& Session::inputs() const {
  return impl().model.inputs;
}
const std::vector<ValueInfo>& Session::outputs() const {
  return impl().model.outputs;
}
int Session::opset() const {
  return onnx_import::ai_onnx_opset(impl().model.proto);
}
ModelMetadata Session::metadata() const {
  const onnx::ModelProto& m = impl().model.proto;
  ModelMetadata meta{m.producer_name(), m.producer_version(),   m.domain(),        m.doc_string(),
                     m.graph().name(),  m.graph().doc_string(), m.model_version(), {}};
  for (auto& prop : m.metadata_props()) meta.custom[prop.key()] = prop.value();
  return meta;
}
ComputeGraph* Session::graph() {
  return impl().graph.get();
}
const LoadTimes& Session::load_times() const {
  return impl().times;
}
vk::Context& Session::context() {
  return *impl().context;
}

std::map<std::string, Shape> Session::Impl::check_feeds(const Feeds& feeds) const {
  for (auto& [name, t] : feeds) {
    bool known = false;
    for (auto& in : model.inputs) known |= in.name == name;
    if (!known)
      throw Error(ErrorKind::InvalidArgument,
                  "unknown input '" + name + "'; the model's inputs are: " + input_names());
  }
  std::map<std::string, Shape> shapes;
  for (auto& in : model.inputs) {
    auto it = feeds.find(in.name);
    if (it == feeds.end())
      throw Error(ErrorKind::InvalidArgument,
                  "missing input '" + in.name + "'" +
                      (in.needs_value ? " (its value determines the model's shapes)" : ""));
    const Feed& t = it->second;
    if (t.dtype != in.dtype)
      throw Error(ErrorKind::InvalidArgument, "input '" + in.name + "' must be " +
                                                  dtype_name(in.dtype) + ", got " +
                                                  dtype_name(t.dtype));
    const size_t need = tensor_bytes(t.dtype, *t.shape);
    if (t.bytes < need)
      throw Error(ErrorKind::InvalidArgument, "input '" + in.name + "' holds " +
                                                  std::to_string(t.bytes) + " bytes for shape " +
                                                  shape_str(*t.shape));
    // Before the values of needs_value inputs are read while planning.
    if (!t.data && need > 0)
      throw Error(ErrorKind::InvalidArgument, "input '" + in.name + "': null host pointer");
    auto fixed = options.input_shapes.find(in.name);
    const Shape& expected = fixed != options.input_shapes.end() ? fixed->second : in.shape;
    bool fits = t.shape->size() == expected.size();
    for (size_t d = 0; fits && d < t.shape->size(); ++d)
      fits = expected[d] < 0 || expected[d] == (*t.shape)[d];
    if (!fits)
      throw Error(ErrorKind::InvalidArgument, "input '" + in.name + "' has shape " +
                                                  shape_str(*t.shape) + ", expected " +
                                                  shape_str(expected) + " (-1 = any)");
    shapes[in.name] = *t.shape;
  }
  return shapes;
}

std::vector<HostTensor> Session::run(const std::map<std::string, HostTensor>& feeds,
                                     const std::vector<std::string>& output_names) {
  std::map<std::string, HostView> views;
  for (auto& [name, t] : feeds)
    views.emplace(name, HostView{t.dtype, t.shape, t.bytes.data(), t.bytes.size()});
  return run_views(views, output_names);
}

std::vector<HostTensor> Session::run_views(const std::map<std::string, HostView>& feeds,
                                           const std::vector<std::string>& output_names) {
  Impl& s = impl();
  std::lock_guard<std::mutex> lock(s.run_mutex);
  Feeds views;
  for (auto& [name, v] : feeds) views.emplace(name, Feed{v.dtype, &v.shape, v.data, v.bytes});
  ComputeGraph& g = s.graph_for(views, IOMode::Staged);
  for (size_t i = 0; i < g.num_inputs(); ++i) {
    const HostView& v = feeds.at(g.input_name(i));
    // Exactly the tensor's bytes: more would mean the shape and the data disagree.
    if (v.bytes != tensor_bytes(v.dtype, v.shape))
      throw Error(ErrorKind::InvalidArgument, "input '" + g.input_name(i) + "' holds " +
                                                  std::to_string(v.bytes) + " bytes for shape " +
                                                  shape_str(v.shape));
    g.copy_to_input(i, v.data, v.bytes);
  }
  g.execute();
  std::vector<HostTensor> results;
  if (output_names.empty()) {
    for (size_t i = 0; i < g.num_outputs(); ++i)
      results.push_back(g.read_output(i, s.output_dtype(g, i)));
    return results;
  }
  for (auto& name : output_names) {
    size_t i = 0;
    while (i < g.num_outputs() && g.output_name(i) != name) ++i;
    if (i == g.num_outputs())
      throw Error(ErrorKind::InvalidArgument, "unknown output '" + name + "'");
    results.push_back(g.read_output(i, s.output_dtype(g, i)));
  }
  return results;
}

namespace {
Feeds feeds_of(const std::map<std::string, HostBinding>& bindings) {
  Feeds feeds;
  for (auto& [name, b] : bindings) feeds.emplace(name, Feed{b.dtype, &b.shape, b.data, b.bytes});
  return feeds;
}
}  // namespace

std::vector<ValueInfo> Session::prepare_bound(const std::map<std::string, HostBinding>& inputs) {
  Impl& s = impl();
  std::lock_guard<std::mutex> lock(s.run_mutex);
  ComputeGraph& g = s.graph_for(feeds_of(inputs), IOMode::External);
  std::vector<ValueInfo> outs = s.model.outputs;
  for (size_t i = 0; i < g.num_outputs(); ++i) {
    TensorInfo ti = g.info(g.output(i));
    outs[i].shape = ti.shape;
    outs[i].dtype = ti.dtype;
  }
  return outs;
}

std::map<std::string, HostIOPath> Session::run_bound(
    const std::map<std::string, HostBinding>& inputs,
    const std::map<std::string, HostBinding>& outputs) {
  Impl& s = impl();
  std::lock_guard<std::mutex> lock(s.run_mutex);
  ComputeGraph& g = s.graph_for(feeds_of(inputs), IOMode::External);
  for (auto& [name, b] : outputs) {
    bool known = false;
    for (size_t i = 0; i < g.num_outputs(); ++i) known |= g.output_name(i) == name;
    if (!known) throw Error(ErrorKind::InvalidArgument, "unknown output '" + name + "'");
  }
  // Binds `name` to `b` unless it is bound there already (a rebinding re-records).
  auto bind = [&](const std::string& name, const HostBinding& b) {
    auto key = std::make_pair(static_cast<const void*>(b.data), b.bytes);
    auto it = s.bound.find(name);
    if (it != s.bound.end() && it->second == key) return;
    s.bound_paths[name] = g.bind_host_pointer(name, b.data, b.bytes);
    s.bound[name] = key;
  };
  for (size_t i = 0; i < g.num_inputs(); ++i) bind(g.input_name(i), inputs.at(g.input_name(i)));
  std::vector<std::pair<size_t, const HostBinding*>> staged;  // outputs copied after the run
  for (size_t i = 0; i < g.num_outputs(); ++i) {
    const std::string& name = g.output_name(i);
    auto it = outputs.find(name);
    if (it == outputs.end())
      throw Error(ErrorKind::InvalidArgument, "output '" + name + "' is not bound");
    const HostBinding& b = it->second;
    TensorInfo ti = g.info(g.output(i));
    if (b.dtype != ti.dtype || b.shape != ti.shape)
      throw Error(ErrorKind::InvalidArgument, "output '" + name + "' is " + dtype_name(ti.dtype) +
                                                  " " + shape_str(ti.shape) + "; the binding is " +
                                                  dtype_name(b.dtype) + " " + shape_str(b.shape));
    if (b.bytes < ti.nbytes())
      throw Error(ErrorKind::InvalidArgument,
                  "output '" + name + "' needs " + std::to_string(ti.nbytes()) +
                      " bytes; the binding has " + std::to_string(b.bytes));
    if (s.external_outputs.count(name))
      bind(name, b);
    else
      staged.emplace_back(i, &b);
  }
  g.execute();
  std::map<std::string, HostIOPath> paths = s.bound_paths;
  for (auto& [i, b] : staged) {
    g.copy_from_output(i, b->data, g.info(g.output(i)).nbytes());
    paths[g.output_name(i)] = HostIOPath::Copied;
  }
  return paths;
}

}  // namespace vkgraph
