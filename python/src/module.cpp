// vkgraph._vkgraph: the native half of the vkgraph Python package (python/vkgraph/). The
// onnxruntime-shaped API is the pure-Python layer on top; this module binds Session, the
// device list and the error kinds.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "arrays.h"
#include "py_session.h"
#include "vkgraph/error.h"
#include "vkgraph/vk/context.h"

namespace py = pybind11;
using namespace vkgraph;
using vkgraph::python::NativeOptions;
using vkgraph::python::PySession;

namespace {

struct ErrorClass {
  ErrorKind kind;
  const char* name;
  PyObject* extra_base;  // a builtin the class also derives from, so `except ValueError` works
  const char* doc;
};

// One Python exception class per ErrorKind, all under vkgraph.Error.
PyObject* g_classes[8] = {};

const char* device_type_name(VkPhysicalDeviceType type) {
  switch (type) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU:
      return "discrete_gpu";
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU:
      return "integrated_gpu";
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU:
      return "virtual_gpu";
    case VK_PHYSICAL_DEVICE_TYPE_CPU:
      return "cpu";
    default:
      return "other";
  }
}

std::string version_string(uint32_t v) {
  return std::to_string(VK_API_VERSION_MAJOR(v)) + "." + std::to_string(VK_API_VERSION_MINOR(v)) +
         "." + std::to_string(VK_API_VERSION_PATCH(v));
}

void register_errors(py::module_& m) {
  PyObject* base = PyErr_NewExceptionWithDoc(
      "vkgraph.Error", "Base class of every error vkgraph raises.", PyExc_RuntimeError, nullptr);
  m.add_object("Error", py::handle(base));
  const ErrorClass classes[] = {
      {ErrorKind::InvalidArgument, "InvalidArgument", PyExc_ValueError,
       "The caller passed something wrong: a shape, dtype, name or index."},
      {ErrorKind::Unsupported, "Unsupported", nullptr,
       "An op, attribute, type or device feature vkgraph does not handle."},
      {ErrorKind::OutOfMemory, "OutOfMemory", PyExc_MemoryError,
       "A device or host allocation failed, or the memory budget is exceeded."},
      {ErrorKind::DeviceLost, "DeviceLost", nullptr, "The Vulkan device was lost."},
      {ErrorKind::Vulkan, "VulkanError", nullptr, "A Vulkan call failed."},
      {ErrorKind::InvalidState, "InvalidState", nullptr,
       "A call in the wrong state, e.g. on a closed session."},
      {ErrorKind::Io, "IoError", PyExc_OSError, "A file could not be read or written."},
      {ErrorKind::ModelFormat, "ModelFormat", nullptr, "A malformed model or tensor file."},
  };
  for (const ErrorClass& c : classes) {
    PyObject* bases = c.extra_base ? PyTuple_Pack(2, base, c.extra_base) : PyTuple_Pack(1, base);
    std::string qualified = std::string("vkgraph.") + c.name;
    PyObject* cls = PyErr_NewExceptionWithDoc(qualified.c_str(), c.doc, bases, nullptr);
    Py_DECREF(bases);
    if (!cls) throw py::error_already_set();
    g_classes[static_cast<int>(c.kind)] = cls;
    m.add_object(c.name, py::handle(cls));
  }
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const Error& e) {
      // The class names the kind; the message is vkgraph's, without the "kind: " prefix.
      PyErr_SetString(g_classes[static_cast<int>(e.kind())], e.message().c_str());
    }
  });
}

}  // namespace

PYBIND11_MODULE(_vkgraph, m) {
  m.doc() = "Native half of the vkgraph package; use `import vkgraph`.";
  m.attr("__version__") = VKGRAPH_VERSION;
  register_errors(m);

  m.def("list_devices", [] {
    py::list devices;
    for (const vk::PhysicalDeviceInfo& d : vk::Context::list_devices()) {
      py::dict info;
      info["index"] = d.index;
      info["name"] = d.name;
      info["type"] = device_type_name(d.type);
      info["api_version"] = version_string(d.api_version);
      info["driver_version"] = d.driver_version;
      devices.append(info);
    }
    return devices;
  });

  m.def("bfloat16_bits_to_float32", &vkgraph::python::bfloat16_bits_to_float32, py::arg("bits"),
        "float32 values of bfloat16 bit patterns (uint16 or ml_dtypes.bfloat16).");
  m.def("float32_to_bfloat16_bits", &vkgraph::python::float32_to_bfloat16_bits, py::arg("values"),
        "bfloat16 bit patterns (uint16) of float32 values, truncated.");
  // For IO binding, which converts its inputs in Python: float64 narrows by the same rule as
  // run()'s inputs.
  m.def(
      "narrow_float64",
      [](const py::array& array, const std::string& name) {
        return vkgraph::python::narrowed_from_float64(array, name);
      },
      py::arg("array"), py::arg("name"));

  m.def("take_validation_messages", &vkgraph::python::take_validation_messages,
        "Validation messages of every device in use since the last call (tests check these).");

  py::class_<NativeOptions>(m, "NativeOptions")
      .def(py::init<>())
      .def_readwrite("fp16", &NativeOptions::fp16)
      .def_readwrite("fuse", &NativeOptions::fuse)
      .def_readwrite("profile", &NativeOptions::profile)
      .def_readwrite("device", &NativeOptions::device)
      .def_readwrite("validation", &NativeOptions::validation)
      .def_readwrite("pipeline_cache", &NativeOptions::pipeline_cache)
      .def_readwrite("memory_budget", &NativeOptions::memory_budget)
      .def_readwrite("input_shapes", &NativeOptions::input_shapes)
      .def_readwrite("external_data_dir", &NativeOptions::external_data_dir);

  py::class_<PySession>(m, "Session")
      .def(py::init<const py::object&, const NativeOptions&>(), py::arg("model"),
           py::arg("options"))
      .def("inputs", &PySession::inputs)
      .def("outputs", &PySession::outputs)
      .def("metadata", &PySession::metadata)
      .def("device_name", &PySession::device_name)
      .def("validation_enabled", &PySession::validation_enabled)
      .def("run", &PySession::run, py::arg("output_names"), py::arg("feeds"))
      .def("prepare_bound", &PySession::prepare_bound, py::arg("inputs"))
      .def("run_bound", &PySession::run_bound, py::arg("inputs"), py::arg("outputs"))
      .def("time_native_runs", &PySession::time_native_runs, py::arg("feeds"), py::arg("runs"))
      .def("feed_addresses", &PySession::feed_addresses, py::arg("feeds"))
      .def("write_profile", &PySession::write_profile, py::arg("path"))
      .def_property_readonly("profiling", &PySession::profiling)
      .def("validation_messages", &PySession::validation_messages)
      .def("clear_validation_messages", &PySession::clear_validation_messages)
      .def("close", &PySession::close)
      .def_property_readonly("closed", &PySession::closed);
}
