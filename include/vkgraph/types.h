#pragma once
// Value types shared by every layer above vk/: element types, shapes and host tensors.
#include <cstddef>
#include <cstdint>
#include <new>
#include <string>
#include <vector>

namespace vkgraph {

// Int8 and UInt8 are quantized storage types (one byte per element, 8-bit storage buffers);
// the ONNX frontend computes other int8/uint8 values in Int32.
enum class DType : uint8_t { Float32, Float16, Int32, Int64, Bool, Int8, UInt8 };

size_t dtype_size(DType dtype);
const char* dtype_name(DType dtype);

// IEEE 754 binary16 <-> binary32. Float16 tensors store the raw 16-bit patterns; these convert
// one element (round to nearest even, NaN and infinity preserved).
float half_to_float(uint16_t bits);
uint16_t float_to_half(float value);
// float_to_half over `count` elements, bit for bit; several at a time where the CPU converts
// in hardware (x86 F16C), which loading a model's weights in float16 mode needs.
void floats_to_halves(const float* in, uint16_t* out, size_t count);
// half_to_float over `count` elements, F16C where the CPU has it (reading a float16 output
// back as float32). NaNs stay NaNs (F16C sets the quiet bit of a signalling one).
void halves_to_floats(const uint16_t* in, float* out, size_t count);

using Shape = std::vector<int64_t>;

int64_t numel(const Shape& shape);
std::string shape_str(const Shape& shape);  // "[2, 3, 4]"

// Raw storage for tensor bytes. The huge pages inside large blocks (4 MiB and up) are marked
// for transparent huge pages, so a fresh output faults in hundreds of times fewer pages.
void* allocate_tensor_bytes(size_t bytes);
void free_tensor_bytes(void* pointer, size_t bytes) noexcept;

// The allocator of HostTensor::bytes. Growing the vector without a value (resize(n)) leaves the
// new bytes uninitialised: outputs are written in full by their readback, and zero-filling
// 25 MB of logits first costs as much as copying them.
template <typename T>
struct TensorByteAllocator {
  using value_type = T;
  TensorByteAllocator() = default;
  template <typename U>
  TensorByteAllocator(const TensorByteAllocator<U>&) noexcept {}
  T* allocate(size_t n) { return static_cast<T*>(allocate_tensor_bytes(n * sizeof(T))); }
  void deallocate(T* p, size_t n) noexcept { free_tensor_bytes(p, n * sizeof(T)); }
  template <typename U>
  void construct(U* p) noexcept {
    ::new (static_cast<void*>(p)) U;  // default-initialised: no zero fill
  }
  template <typename U>
  bool operator==(const TensorByteAllocator<U>&) const noexcept {
    return true;
  }
};

using TensorBytes = std::vector<uint8_t, TensorByteAllocator<uint8_t>>;

// A dense, row-major tensor in host memory. Bool is stored as one byte per element.
struct HostTensor {
  DType dtype = DType::Float32;
  Shape shape;
  TensorBytes bytes;

  HostTensor() = default;
  // Zero-filled. A negative dim is InvalidArgument, more bytes than the host has OutOfMemory.
  HostTensor(DType dtype, Shape shape);
  // Bytes left uninitialised, for a buffer the caller overwrites in full (a readback).
  static HostTensor uninitialized(DType dtype, Shape shape);
  // `values` must fill `shape` exactly, in elements of the dtype's size (InvalidArgument).
  template <typename T>
  static HostTensor from(DType dtype, Shape shape, const std::vector<T>& values) {
    HostTensor t(dtype, std::move(shape));
    check_values(t, values.size(), sizeof(T));
    t.bytes.assign(reinterpret_cast<const uint8_t*>(values.data()),
                   reinterpret_cast<const uint8_t*>(values.data()) + values.size() * sizeof(T));
    return t;
  }

  int64_t numel() const { return vkgraph::numel(shape); }
  size_t nbytes() const { return bytes.size(); }
  template <typename T>
  T* data() {
    return reinterpret_cast<T*>(bytes.data());
  }
  template <typename T>
  const T* data() const {
    return reinterpret_cast<const T*>(bytes.data());
  }
  static void check_values(const HostTensor& t, size_t count, size_t elem_size);  // for from()
  // Element i converted to double / int64, whatever the dtype.
  double as_double(int64_t i) const;
  int64_t as_int(int64_t i) const;
  // Sets element i to `value` converted to the dtype, defined for every double:
  // - Float32/Float16 round to nearest even; beyond the float range becomes +-infinity;
  // - Int32/Int64 truncate toward zero, saturate at the dtype's range, and NaN becomes 0;
  // - Int8/UInt8 truncate and saturate as Int32, then keep the low 8 bits (as set_int);
  // - Bool is value != 0 (NaN counts as true, like NumPy's astype(bool)).
  void set(int64_t i, double value);
  // Sets element i to the integer `value`: floats round to nearest, Int32/Int8/UInt8 keep the
  // low bits (two's-complement wrap-around, as ONNX runtimes narrow), Bool is value != 0.
  void set_int(int64_t i, int64_t value);
};

}  // namespace vkgraph
