#pragma once
// NumPy arrays <-> vkgraph HostTensors at the Python boundary, in the element types the model
// declares (what onnxruntime hands its users) rather than the ones vkgraph computes in: a
// model input declared UINT8 takes a uint8 array, which becomes an Int32 tensor.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <string>

#include "vkgraph/session.h"
#include "vkgraph/types.h"

namespace vkgraph::python {

namespace py = pybind11;

// "tensor(float)", "tensor(uint8)", ...: onnxruntime's NodeArg.type for an ONNX element type
// (or, when the model declares none, for the type vkgraph computes in).
std::string type_string(const ValueInfo& info);

// The NumPy dtype a model value is fed and returned in.
py::dtype declared_dtype(const ValueInfo& info);

// `value` as run() reads it: C-contiguous, native byte order, in info.dtype's element type.
// The array itself when it is that already (no copy: Session::run_views reads it in place),
// else one converted copy. Refuses, as InvalidArgument, anything whose element type is not the
// declared one (onnxruntime does not convert either). Needs the GIL.
py::array input_array(const py::handle& value, const ValueInfo& info);

// A HostView of an input_array result; valid while `array` lives.
HostView view_of(const py::array& array, DType dtype);

// A float32 array of a float64 array (any layout), through onnx_io::narrow_float64: a
// finite value beyond float32's range is InvalidArgument naming input `name`. Needs the GIL.
py::array narrowed_from_float64(py::array array, const std::string& name);

// A NumPy array of the declared type; zero-copy when that is the computed type (the array
// owns the tensor's bytes). Needs the GIL.
py::array to_numpy(HostTensor&& tensor, const ValueInfo& info);

// App memory for Session::run_bound: `item` is (array, capacity). The array must already be
// C-contiguous, of `dtype`, and writeable when `writeable`; `capacity` is the bytes usable
// from its first element (an aligned allocation rounded up to pages lets the device import
// it). Needs the GIL.
HostBinding to_binding(const std::string& name, const py::handle& item, DType dtype,
                       bool writeable);

// bfloat16 at the boundary (NumPy has none): a model value declared BFLOAT16 is fed and
// returned as its uint16 bit patterns (ml_dtypes.bfloat16 arrays are taken too), and vkgraph
// computes it in float32. These convert with onnx_io's rules (to bfloat16 truncates, NaN stays
// NaN); each returns a new C-contiguous array. Need the GIL.
py::array bfloat16_bits_to_float32(const py::handle& bits);
py::array float32_to_bfloat16_bits(const py::handle& values);

// NumPy's name for the dtype vkgraph computes in ("float32", ...).
const char* numpy_name(DType dtype);

// Whether two NumPy dtypes hold the same element type (kind and size; byte order aside).
bool same_element_type(const py::dtype& a, const py::dtype& b);

}  // namespace vkgraph::python
