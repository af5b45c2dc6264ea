#include "arrays.h"

#include <cstring>
#include <memory>
#include <span>

#include "vkgraph/error.h"
#include "vkgraph/onnx_tensor.h"

namespace vkgraph::python {

namespace {

// ONNX TensorProto.DataType values (onnx.proto); the binding needs only their numbers.
enum OnnxType : int32_t {
  kFloat = 1,
  kUint8 = 2,
  kInt8 = 3,
  kUint16 = 4,
  kInt16 = 5,
  kInt32 = 6,
  kInt64 = 7,
  kBool = 9,
  kFloat16 = 10,
  kDouble = 11,
  kUint32 = 12,
  kUint64 = 13,
  kBfloat16 = 16,
};

struct TypeNames {
  const char* onnx;   // as onnxruntime spells it in "tensor(...)"
  const char* numpy;  // NumPy dtype name
};

TypeNames names_of(int32_t onnx_type) {
  switch (onnx_type) {
    case kFloat:
      return {"float", "float32"};
    case kUint8:
      return {"uint8", "uint8"};
    case kInt8:
      return {"int8", "int8"};
    case kUint16:
      return {"uint16", "uint16"};
    case kInt16:
      return {"int16", "int16"};
    case kInt32:
      return {"int32", "int32"};
    case kInt64:
      return {"int64", "int64"};
    case kBool:
      return {"bool", "bool"};
    case kFloat16:
      return {"float16", "float16"};
    case kDouble:
      return {"double", "float64"};
    case kUint32:
      return {"uint32", "uint32"};
    case kUint64:
      return {"uint64", "uint64"};
    case kBfloat16:
      // NumPy has no bfloat16: its values cross as their bit patterns, as ONNX's test data and
      // numpy_helper hold them (bfloat16_arrays below).
      return {"bfloat16", "uint16"};
  }
  return {nullptr, nullptr};
}

int32_t onnx_type_of(DType dtype) {
  switch (dtype) {
    case DType::Float32:
      return kFloat;
    case DType::Float16:
      return kFloat16;
    case DType::Int32:
      return kInt32;
    case DType::Int64:
      return kInt64;
    case DType::Bool:
      return kBool;
    case DType::Int8:
      return kInt8;
    case DType::UInt8:
      return kUint8;
  }
  return 0;
}

// The declared type when vkgraph knows how to feed it, else the computed one.
int32_t effective_onnx_type(const ValueInfo& info) {
  return names_of(info.onnx_type).onnx ? info.onnx_type : onnx_type_of(info.dtype);
}

py::dtype numpy_dtype(int32_t onnx_type) {
  return py::dtype(names_of(onnx_type).numpy);
}

// Sizes through NumPy's Python attributes, not pybind11's view of its C structs: Debian's
// pybind11 2.10 reads the descriptor's element size at NumPy 1's offset, which NumPy 2 moved
// (every size came out 0 there, seen with Python 3.12 and NumPy 2 on the H200 machine).
py::ssize_t itemsize_of(const py::dtype& dt) {
  return dt.attr("itemsize").cast<py::ssize_t>();
}

size_t nbytes_of(const py::array& a) {
  return a.attr("nbytes").cast<size_t>();
}

// C-order strides for a new array of `dt` (pybind11 would derive them from its element size).
std::vector<py::ssize_t> c_strides(const std::vector<py::ssize_t>& shape, const py::dtype& dt) {
  std::vector<py::ssize_t> strides(shape.size());
  py::ssize_t step = itemsize_of(dt);
  for (size_t i = shape.size(); i-- > 0;) {
    strides[i] = step;
    step *= shape[i];
  }
  return strides;
}

std::string onnx_type_string_of(const py::dtype& dt) {
  // The "tensor(...)" name of a fed array, for the refusal message; NumPy's name otherwise.
  for (int32_t t : {kFloat, kUint8, kInt8, kUint16, kInt16, kInt32, kInt64, kBool, kFloat16,
                    kDouble, kUint32, kUint64}) {
    py::dtype candidate = numpy_dtype(t);
    if (candidate.kind() == dt.kind() && itemsize_of(candidate) == itemsize_of(dt))
      return std::string("tensor(") + names_of(t).onnx + ")";
  }
  return "numpy dtype " + py::str(static_cast<const py::handle&>(dt)).cast<std::string>();
}

// uint16 bit patterns, or ml_dtypes.bfloat16 (a 2-byte dtype NumPy knows by that name).
bool is_bfloat16_array(const py::dtype& dt) {
  if (itemsize_of(dt) != 2) return false;
  return dt.kind() == 'u' || dt.attr("name").cast<std::string>() == "bfloat16";
}

bool is_bfloat16(const ValueInfo& info) {
  return effective_onnx_type(info) == kBfloat16;
}

}  // namespace

py::array narrowed_from_float64(py::array array, const std::string& name) {
  const py::dtype float64 = numpy_dtype(kDouble);
  if (!array.dtype().attr("isnative").cast<bool>() || !(array.flags() & py::array::c_style) ||
      !same_element_type(array.dtype(), float64))
    array = array.attr("astype")(float64, py::arg("order") = "C");
  std::vector<py::ssize_t> shape(array.shape(), array.shape() + array.ndim());
  const py::dtype f32 = numpy_dtype(kFloat);
  py::array narrowed(f32, shape, c_strides(shape, f32));
  const size_t count = nbytes_of(array) / sizeof(double);
  onnx_io::narrow_float64(std::span(static_cast<const double*>(array.data()), count),
                          std::span(static_cast<float*>(narrowed.mutable_data()), count),
                          "input '" + name + "'", ErrorKind::InvalidArgument);
  return narrowed;
}

bool same_element_type(const py::dtype& a, const py::dtype& b) {
  return a.kind() == b.kind() && itemsize_of(a) == itemsize_of(b);
}

std::string type_string(const ValueInfo& info) {
  const char* name = names_of(effective_onnx_type(info)).onnx;
  return std::string("tensor(") + (name ? name : "unknown") + ")";
}

py::dtype declared_dtype(const ValueInfo& info) {
  return numpy_dtype(effective_onnx_type(info));
}

py::array bfloat16_bits_to_float32(const py::handle& value) {
  py::array bits = py::array::ensure(value);
  if (!bits || !is_bfloat16_array(bits.dtype()))
    throw Error(ErrorKind::InvalidArgument,
                "bfloat16 values are uint16 bit patterns (or ml_dtypes.bfloat16), got " +
                    onnx_type_string_of(bits.dtype()));
  const py::dtype u16("uint16");
  if (bits.dtype().kind() != 'u')  // ml_dtypes.bfloat16: the same bits under another name
    bits = py::module_::import("numpy").attr("ascontiguousarray")(bits).attr("view")(u16);
  bits = bits.attr("astype")(u16, py::arg("order") = "C", py::arg("copy") = false);
  std::vector<py::ssize_t> shape(bits.shape(), bits.shape() + bits.ndim());
  const py::dtype f32("float32");
  py::array values(f32, shape, c_strides(shape, f32));
  const auto* in = static_cast<const uint16_t*>(bits.data());
  auto* out = static_cast<float*>(values.mutable_data());
  const size_t n = nbytes_of(bits) / sizeof(uint16_t);
  for (size_t i = 0; i < n; ++i) out[i] = onnx_io::bfloat16_to_float(in[i]);
  return values;
}

py::array float32_to_bfloat16_bits(const py::handle& value) {
  py::array values = py::array::ensure(value);
  const py::dtype f32("float32");
  if (!values || !same_element_type(values.dtype(), f32))
    throw Error(ErrorKind::InvalidArgument, "float32_to_bfloat16_bits takes a float32 array");
  values = values.attr("astype")(f32, py::arg("order") = "C", py::arg("copy") = false);
  std::vector<py::ssize_t> shape(values.shape(), values.shape() + values.ndim());
  const py::dtype u16("uint16");
  py::array bits(u16, shape, c_strides(shape, u16));
  const auto* in = static_cast<const float*>(values.data());
  auto* out = static_cast<uint16_t*>(bits.mutable_data());
  const size_t n = nbytes_of(values) / sizeof(float);
  for (size_t i = 0; i < n; ++i) out[i] = onnx_io::float_to_bfloat16(in[i]);
  return bits;
}

py::array input_array(const py::handle& value, const ValueInfo& info) {
  py::array array = py::array::ensure(value);
  if (!array)
    throw Error(ErrorKind::InvalidArgument,
                "input '" + info.name + "' must be a numpy.ndarray (or convertible to one), got " +
                    py::str(py::type::handle_of(value).attr("__name__")).cast<std::string>());
  const py::dtype want = declared_dtype(info);
  const bool bfloat16 = is_bfloat16(info);
  if (bfloat16 ? !is_bfloat16_array(array.dtype()) : !same_element_type(array.dtype(), want))
    throw Error(ErrorKind::InvalidArgument,
                "unexpected input data type for '" + info.name + "': got " +
                    onnx_type_string_of(array.dtype()) + ", expected " + type_string(info) +
                    (bfloat16 ? " (as uint16 bit patterns or ml_dtypes.bfloat16)" : ""));
  if (bfloat16) return bfloat16_bits_to_float32(array);
  if (same_element_type(want, numpy_dtype(kDouble)) && info.dtype == DType::Float32)
    return narrowed_from_float64(array, info.name);
  // astype copies into a C-contiguous, native-order array of the computed type; arrays that
  // are already that are used as they are.
  const py::dtype computed = numpy_dtype(onnx_type_of(info.dtype));
  if (!same_element_type(array.dtype(), computed) || !array.dtype().attr("isnative").cast<bool>() ||
      !(array.flags() & py::array::c_style))
    array = array.attr("astype")(computed, py::arg("order") = "C");
  return array;
}

HostView view_of(const py::array& array, DType dtype) {
  HostView v;
  v.dtype = dtype;
  v.shape.assign(array.shape(), array.shape() + array.ndim());
  v.data = array.data();
  v.bytes = nbytes_of(array);
  return v;
}

py::array to_numpy(HostTensor&& tensor, const ValueInfo& info) {
  const py::dtype computed = numpy_dtype(onnx_type_of(tensor.dtype));
  std::vector<py::ssize_t> shape(tensor.shape.begin(), tensor.shape.end());
  py::array array;
  if (tensor.bytes.empty()) {
    array = py::array(computed, shape, c_strides(shape, computed));
  } else {
    auto owner = std::make_unique<HostTensor>(std::move(tensor));
    void* data = owner->bytes.data();
    py::capsule base(owner.get(), [](void* p) { delete static_cast<HostTensor*>(p); });
    owner.release();
    array = py::array(computed, shape, c_strides(shape, computed), data, base);
  }
  if (is_bfloat16(info)) return float32_to_bfloat16_bits(array);
  const py::dtype want = declared_dtype(info);
  if (!same_element_type(want, computed)) return array.attr("astype")(want);
  return array;
}

const char* numpy_name(DType dtype) {
  return names_of(onnx_type_of(dtype)).numpy;
}

HostBinding to_binding(const std::string& name, const py::handle& item, DType dtype,
                       bool writeable) {
  auto pair = py::reinterpret_borrow<py::tuple>(item);
  py::array array = py::reinterpret_borrow<py::array>(pair[0]);
  const size_t capacity = pair[1].cast<size_t>();
  if (!same_element_type(array.dtype(), numpy_dtype(onnx_type_of(dtype))) ||
      !array.dtype().attr("isnative").cast<bool>())
    throw Error(ErrorKind::InvalidArgument,
                "binding '" + name + "' must be " + numpy_name(dtype) + ", got " +
                    py::str(static_cast<const py::handle&>(array.dtype())).cast<std::string>());
  if (!(array.flags() & py::array::c_style))
    throw Error(ErrorKind::InvalidArgument, "binding '" + name + "' must be C-contiguous");
  if (writeable && !array.writeable())
    throw Error(ErrorKind::InvalidArgument, "output binding '" + name + "' is read-only");
  if (capacity < nbytes_of(array))
    throw Error(ErrorKind::InvalidArgument, "binding '" + name + "': capacity below its size");
  HostBinding b;
  b.data = const_cast<void*>(array.data());
  b.bytes = capacity;
  b.dtype = dtype;
  b.shape.assign(array.shape(), array.shape() + array.ndim());
  return b;
}

}  // namespace vkgraph::python
