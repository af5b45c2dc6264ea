#include "py_session.h"

#include <pybind11/stl.h>

#include "arrays.h"
#include "vkgraph/error.h"

namespace vkgraph::python {

namespace {
std::mutex g_contexts_mutex;
std::map<std::string, std::weak_ptr<vk::Context>> g_contexts;  // by device options
}  // namespace

std::shared_ptr<vk::Context> shared_context(const NativeOptions& options) {
  // Unset options stay unset in the key: they mean "the environment's choice".
  auto opt = [](const auto& o) -> std::string {
    if (!o) return "-";
    if constexpr (std::is_same_v<std::decay_t<decltype(*o)>, bool>)
      return *o ? "1" : "0";
    else
      return "=" + *o;
  };
  const std::string key = opt(options.device) + "|" + opt(options.validation) + "|" +
                          opt(options.pipeline_cache) + "|" + std::to_string(options.memory_budget);
  std::lock_guard lock(g_contexts_mutex);
  if (auto existing = g_contexts[key].lock()) return existing;
  vk::ContextOptions co;
  co.device = options.device;
  co.validation = options.validation;
  co.pipeline_cache = options.pipeline_cache;
  co.memory_budget = options.memory_budget;
  auto context = vk::Context::create(co);
  g_contexts[key] = context;
  return context;
}

std::vector<std::string> take_validation_messages() {
  std::lock_guard lock(g_contexts_mutex);
  std::vector<std::string> all;
  for (auto& [key, weak] : g_contexts)
    if (auto context = weak.lock()) {
      for (std::string& m : context->validation_messages()) all.push_back(std::move(m));
      context->clear_validation_messages();
    }
  return all;
}

PySession::PySession(const py::object& model, const NativeOptions& options)
    : options_(options), created_(std::chrono::steady_clock::now()) {
  SessionOptions so;
  so.fp16 = options.fp16;
  so.fuse = options.fuse;
  so.input_shapes = options.input_shapes;
  so.external_data_dir = options.external_data_dir;
  so.graph.profile = options.profile;
  if (py::isinstance<py::str>(model)) {
    const std::string path = model.cast<std::string>();
    py::gil_scoped_release release;
    so.context = shared_context(options);
    session_ = std::make_unique<Session>(path, std::move(so));
    return;
  }
  // bytes, bytearray, memoryview: read through the buffer protocol, without a copy.
  py::buffer_info buffer = py::reinterpret_borrow<py::buffer>(model).request();
  const void* data = buffer.ptr;
  const size_t size = static_cast<size_t>(buffer.size * buffer.itemsize);
  py::gil_scoped_release release;
  so.context = shared_context(options);
  session_ = std::make_unique<Session>(data, size, std::move(so));
}

Session& PySession::session() const {
  if (!session_) throw Error(ErrorKind::InvalidState, "the InferenceSession has been closed");
  return *session_;
}

namespace {
py::object shape_of(const ValueInfo& v) {
  py::list shape;
  for (size_t d = 0; d < v.shape.size(); ++d) {
    if (v.shape[d] >= 0)
      shape.append(v.shape[d]);
    else if (d < v.dim_names.size() && !v.dim_names[d].empty())
      shape.append(v.dim_names[d]);
    else
      shape.append(py::none());
  }
  return shape;
}

py::list describe(const std::vector<ValueInfo>& values) {
  py::list list;
  for (const ValueInfo& v : values)
    list.append(py::make_tuple(v.name, shape_of(v), type_string(v), v.needs_value));
  return list;
}
}  // namespace

py::list PySession::inputs() const {
  return describe(session().inputs());
}
py::list PySession::outputs() const {
  return describe(session().outputs());
}

py::dict PySession::metadata() const {
  ModelMetadata m = session().metadata();
  py::dict d;
  d["producer_name"] = m.producer_name;
  d["producer_version"] = m.producer_version;
  d["domain"] = m.domain;
  d["description"] = m.description;
  d["graph_name"] = m.graph_name;
  d["graph_description"] = m.graph_description;
  d["version"] = m.model_version;
  d["custom_metadata_map"] = m.custom;
  return d;
}

std::string PySession::device_name() const {
  return session().context().properties().deviceName;
}

bool PySession::validation_enabled() const {
  return session().context().validation_enabled();
}

const ValueInfo* PySession::find_input(const std::string& name) const {
  for (const ValueInfo& in : session().inputs())
    if (in.name == name) return &in;
  return nullptr;
}

std::map<std::string, HostView> PySession::views_of(const py::dict& feeds,
                                                    std::vector<py::array>& arrays,
                                                    bool refuse_unknown) const {
  std::map<std::string, HostView> views;
  for (auto [key, value] : feeds) {
    std::string name = py::str(key);
    const ValueInfo* info = find_input(name);
    if (!info) {
      if (refuse_unknown) throw Error(ErrorKind::InvalidArgument, "unknown input '" + name + "'");
      // Goes through empty: Session::run_views refuses it, listing the real inputs.
      views.emplace(name, HostView{});
      continue;
    }
    arrays.push_back(input_array(value, *info));
    views.emplace(name, view_of(arrays.back(), info->dtype));
  }
  return views;
}

py::list PySession::run(const py::object& output_names, const py::dict& feeds) {
  session();                      // refuse a closed session before converting anything
  std::vector<py::array> arrays;  // what the views point into, alive until the run returns
  const std::map<std::string, HostView> views = views_of(feeds, arrays, false);
  std::vector<std::string> names;
  if (!output_names.is_none()) names = output_names.cast<std::vector<std::string>>();
  std::vector<HostTensor> results;
  std::vector<ValueInfo> outs;  // copied under the lock: a build updates their dtypes
  {
    py::gil_scoped_release release;
    std::lock_guard lock(run_mutex_);
    Session& locked = session();  // close() may have run while this thread waited
    const auto start = std::chrono::steady_clock::now();
    results = locked.run_views(views, names);
    outs = locked.outputs();
    if (options_.profile && locked.graph())
      trace_.push_back({std::chrono::duration<double, std::micro>(start - created_).count(),
                        locked.graph()->node_times()});
  }
  py::list list;
  for (size_t i = 0; i < results.size(); ++i) {
    size_t index = i;
    if (!names.empty())
      for (size_t k = 0; k < outs.size(); ++k)
        if (outs[k].name == names[i]) index = k;
    list.append(to_numpy(std::move(results[i]), outs[index]));
  }
  return list;
}

namespace {
const ValueInfo& info_named(const std::vector<ValueInfo>& values, const std::string& name,
                            const char* what) {
  for (const ValueInfo& v : values)
    if (v.name == name) return v;
  throw Error(ErrorKind::InvalidArgument, std::string("unknown ") + what + " '" + name + "'");
}

std::map<std::string, HostBinding> bindings_of(const py::dict& arrays,
                                               const std::vector<ValueInfo>& values,
                                               const char* what, bool writeable) {
  std::map<std::string, HostBinding> bindings;
  for (auto [key, item] : arrays) {
    std::string name = py::str(key);
    const ValueInfo& info = info_named(values, name, what);
    bindings.emplace(name, to_binding(name, item, info.dtype, writeable));
  }
  return bindings;
}
}  // namespace

py::list PySession::prepare_bound(const py::dict& inputs) {
  std::map<std::string, HostBinding> in = bindings_of(inputs, session().inputs(), "input", false);
  std::vector<ValueInfo> outs;
  {
    py::gil_scoped_release release;
    std::lock_guard lock(run_mutex_);
    outs = session().prepare_bound(in);
  }
  py::list list;
  for (const ValueInfo& o : outs)
    list.append(py::make_tuple(o.name, py::tuple(py::cast(o.shape)), numpy_name(o.dtype)));
  return list;
}

py::dict PySession::run_bound(const py::dict& inputs, const py::dict& outputs) {
  std::map<std::string, HostBinding> in = bindings_of(inputs, session().inputs(), "input", false);
  // Output dtypes are known once built: a run_bound follows a prepare_bound for these inputs.
  std::map<std::string, HostBinding> out;
  for (auto [key, item] : outputs) {
    std::string name = py::str(key);
    auto array = py::reinterpret_borrow<py::array>(py::reinterpret_borrow<py::tuple>(item)[0]);
    DType dtype = DType::Float32;
    bool found = false;
    for (DType d : {DType::Float32, DType::Float16, DType::Int32, DType::Int64, DType::Bool})
      if (!found && same_element_type(array.dtype(), py::dtype(numpy_name(d)))) {
        dtype = d;
        found = true;
      }
    if (!found)
      throw Error(ErrorKind::InvalidArgument,
                  "output binding '" + name + "' has a dtype vkgraph does not compute in");
    out.emplace(name, to_binding(name, item, dtype, true));
  }
  std::map<std::string, HostIOPath> paths;
  {
    py::gil_scoped_release release;
    std::lock_guard lock(run_mutex_);
    paths = session().run_bound(in, out);
  }
  // The graph keeps these bound (imported) until the next rebinding: keep them alive as long.
  for (auto [key, item] : inputs) bound_arrays_[key] = item;
  for (auto [key, item] : outputs) bound_arrays_[key] = item;
  py::dict result;
  for (auto& [name, path] : paths)
    result[py::str(name)] = path == HostIOPath::Imported ? "imported" : "copied";
  return result;
}

std::vector<double> PySession::time_native_runs(const py::dict& feeds, int runs) {
  std::vector<py::array> arrays;
  const std::map<std::string, HostView> views = views_of(feeds, arrays, true);
  std::vector<double> seconds;
  py::gil_scoped_release release;
  std::lock_guard lock(run_mutex_);
  for (int i = 0; i < runs; ++i) {
    const auto start = std::chrono::steady_clock::now();
    session().run_views(views);
    seconds.push_back(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  return seconds;
}

py::dict PySession::feed_addresses(const py::dict& feeds) const {
  std::vector<py::array> arrays;
  py::dict addresses;
  for (auto& [name, view] : views_of(feeds, arrays, true))
    addresses[py::str(name)] = reinterpret_cast<uintptr_t>(view.data);
  return addresses;
}

void PySession::write_profile(const std::string& path) {
  py::gil_scoped_release release;  // a run may hold the lock: let other threads go on
  std::lock_guard lock(run_mutex_);
  write_chrome_trace(path, trace_);
  trace_.clear();
}

std::vector<std::string> PySession::validation_messages() const {
  return session().context().validation_messages();
}
void PySession::clear_validation_messages() {
  session().context().clear_validation_messages();
}

void PySession::close() {
  bound_arrays_.clear();  // with the GIL: these are Python objects
  py::gil_scoped_release release;
  std::lock_guard lock(run_mutex_);
  session_.reset();
}

}  // namespace vkgraph::python
