#include "vkgraph/types.h"

#include <sys/mman.h>

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#endif

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <new>

#include "vkgraph/error.h"

namespace vkgraph {

size_t dtype_size(DType dtype) {
  switch (dtype) {
    case DType::Float32:
      return 4;
    case DType::Float16:
      return 2;
    case DType::Int32:
      return 4;
    case DType::Int64:
      return 8;
    case DType::Bool:
    case DType::Int8:
    case DType::UInt8:
      return 1;
  }
  throw Error(ErrorKind::InvalidArgument,
              "invalid dtype value " + std::to_string(static_cast<int>(dtype)));
}

const char* dtype_name(DType dtype) {
  switch (dtype) {
    case DType::Float32:
      return "float32";
    case DType::Float16:
      return "float16";
    case DType::Int32:
      return "int32";
    case DType::Int64:
      return "int64";
    case DType::Bool:
      return "bool";
    case DType::Int8:
      return "int8";
    case DType::UInt8:
      return "uint8";
  }
  return "invalid";
}

float half_to_float(uint16_t bits) {
  const uint32_t sign = static_cast<uint32_t>(bits & 0x8000u) << 16;
  const uint32_t exponent = (bits >> 10) & 0x1fu;
  const uint32_t mantissa = bits & 0x3ffu;
  if (exponent == 0) {
    // Zero or subnormal: mantissa * 2^-24 is exact in float.
    const float magnitude = std::ldexp(static_cast<float>(mantissa), -24);
    return sign ? -magnitude : magnitude;
  }
  if (exponent == 0x1f) {
    // Infinity or NaN; keep the NaN payload bits.
    return std::bit_cast<float>(sign | 0x7f800000u | (mantissa << 13));
  }
  return std::bit_cast<float>(sign | ((exponent - 15 + 127) << 23) | (mantissa << 13));
}

uint16_t float_to_half(float value) {
  const uint32_t x = std::bit_cast<uint32_t>(value);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  const uint32_t abs_bits = x & 0x7fffffffu;
  if (abs_bits >= 0x7f800000u) {
    // Infinity stays infinity; NaN stays a (quiet) NaN with the top payload bits.
    if (abs_bits == 0x7f800000u) return sign | 0x7c00u;
    return static_cast<uint16_t>(sign | 0x7e00u | ((abs_bits >> 13) & 0x3ffu));
  }
  if (abs_bits >= 0x477ff000u) return sign | 0x7c00u;  // >= 65520 rounds to infinity
  if (abs_bits < 0x38800000u) {
    // Below the smallest normal half (2^-14): count units of 2^-24. Scaling by a power of two
    // is exact, and nearbyint rounds ties to even in the default rounding mode. A result of
    // 1024 is the smallest normal, whose bit pattern is exactly 0x0400.
    const float units = std::bit_cast<float>(abs_bits) * 16777216.0f;
    return static_cast<uint16_t>(sign | static_cast<uint16_t>(std::nearbyint(units)));
  }
  const uint32_t exponent = (abs_bits >> 23) - 127 + 15;  // 1..30 here
  const uint32_t mantissa = abs_bits & 0x7fffffu;
  uint32_t half = (exponent << 10) | (mantissa >> 13);
  const uint32_t rest = mantissa & 0x1fffu;
  // Round to nearest, ties to even; a carry out of the mantissa correctly bumps the exponent.
  if (rest > 0x1000u || (rest == 0x1000u && (half & 1u))) ++half;
  return static_cast<uint16_t>(sign | half);
}

namespace {
#if defined(__x86_64__) && defined(__GNUC__)
// VCVTPS2PH with round-to-nearest-even is float_to_half exactly: overflow to infinity, gradual
// underflow, NaN kept quiet with its top payload bits.
__attribute__((target("avx,f16c"))) void floats_to_halves_f16c(const float* in, uint16_t* out,
                                                               size_t count) {
  size_t i = 0;
  for (; i + 8 <= count; i += 8) {
    const __m256 v = _mm256_loadu_ps(in + i);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i),
                     _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  }
  for (; i < count; ++i) out[i] = float_to_half(in[i]);
}

// VCVTPH2PS is exact: every half, subnormals included, is a float.
__attribute__((target("avx,f16c"))) void halves_to_floats_f16c(const uint16_t* in, float* out,
                                                               size_t count) {
  size_t i = 0;
  for (; i + 8 <= count; i += 8)
    _mm256_storeu_ps(out + i,
                     _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i))));
  for (; i < count; ++i) out[i] = half_to_float(in[i]);
}

// F16C from CPUID itself: clang 14 (the fuzz build's) has no "f16c" for __builtin_cpu_supports.
// "avx" there also checks that the OS saves the AVX registers.
bool cpu_has_f16c() {
  static const bool has = [] {
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    return __builtin_cpu_supports("avx") && __get_cpuid(1, &eax, &ebx, &ecx, &edx) &&
           (ecx & bit_F16C) != 0;
  }();
  return has;
}
#endif
}  // namespace

void floats_to_halves(const float* in, uint16_t* out, size_t count) {
#if defined(__x86_64__) && defined(__GNUC__)
  if (cpu_has_f16c()) return floats_to_halves_f16c(in, out, count);
#endif
  for (size_t i = 0; i < count; ++i) out[i] = float_to_half(in[i]);
}

void halves_to_floats(const uint16_t* in, float* out, size_t count) {
#if defined(__x86_64__) && defined(__GNUC__)
  if (cpu_has_f16c()) return halves_to_floats_f16c(in, out, count);
#endif
  for (size_t i = 0; i < count; ++i) out[i] = half_to_float(in[i]);
}

int64_t numel(const Shape& shape) {
  int64_t count = 1;
  for (int64_t dim : shape) {
    // Not check(): its message would be built on every call, and numel() is called often.
    if (dim < 0)
      throw Error(ErrorKind::InvalidArgument,
                  "negative dimension " + std::to_string(dim) + " in shape " + shape_str(shape));
    if (dim != 0 && count > std::numeric_limits<int64_t>::max() / dim) {
      // Rejected even if a later dim is 0: such shapes only come from corrupt files, and
      // callers may multiply prefixes of the shape themselves.
      throw Error(ErrorKind::InvalidArgument,
                  "element count of shape " + shape_str(shape) + " overflows int64");
    }
    count *= dim;
  }
  return count;
}

std::string shape_str(const Shape& shape) {
  // A corrupt model can make a shape of millions of dims; an error message names its first
  // dims and its rank instead of megabytes of them.
  constexpr size_t kShown = 16;
  std::string out = "[";
  for (size_t i = 0; i < std::min(shape.size(), kShown); ++i) {
    if (i) out += ", ";
    out += std::to_string(shape[i]);
  }
  if (shape.size() > kShown) out += ", ... (" + std::to_string(shape.size()) + " dims)";
  return out + "]";
}

namespace {
constexpr size_t kHugePage = size_t{2} << 20;
constexpr size_t kHugePageMinBytes = size_t{4} << 20;

size_t checked_nbytes(DType dtype, const Shape& shape) {
  const int64_t count = numel(shape);
  const size_t elem = dtype_size(dtype);
  check(static_cast<uint64_t>(count) <= std::numeric_limits<size_t>::max() / elem,
        ErrorKind::InvalidArgument, "tensor of shape " + shape_str(shape) + " is too large");
  return static_cast<size_t>(count) * elem;
}

// Runs `fill` (which sizes a tensor's bytes); host memory running out is OutOfMemory naming the
// tensor, not std::bad_alloc.
template <typename Fill>
void sized(const Shape& shape, size_t bytes, Fill fill) {
  try {
    fill(bytes);
  } catch (const std::bad_alloc&) {
    throw Error(ErrorKind::OutOfMemory, "tensor of shape " + shape_str(shape) + " (" +
                                            std::to_string(bytes) +
                                            " bytes) does not fit in host memory");
  }
}
}  // namespace

void* allocate_tensor_bytes(size_t bytes) {
  // Plain operator new, not a 2 MiB-aligned one: glibc then serves a run's outputs from the
  // blocks the previous run's outputs freed, already faulted in, where an aligned request
  // would take fresh (kernel-zeroed) mmap pages every time.
  void* p = ::operator new(bytes);
  if (bytes >= kHugePageMinBytes) {
    // A hint over the huge pages inside the block, for when it is fresh memory: where
    // transparent huge pages are off or the range is already backed it does nothing, and its
    // failure changes nothing but speed.
    auto begin = (reinterpret_cast<uintptr_t>(p) + kHugePage - 1) / kHugePage * kHugePage;
    auto end = (reinterpret_cast<uintptr_t>(p) + bytes) / kHugePage * kHugePage;
    if (end > begin) madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);
  }
  return p;
}

void free_tensor_bytes(void* pointer, size_t) noexcept {
  ::operator delete(pointer);
}

HostTensor::HostTensor(DType dtype, Shape shape) : dtype(dtype), shape(std::move(shape)) {
  sized(this->shape, checked_nbytes(dtype, this->shape), [&](size_t n) { bytes.assign(n, 0); });
}

HostTensor HostTensor::uninitialized(DType dtype, Shape shape) {
  HostTensor t;
  t.dtype = dtype;
  t.shape = std::move(shape);
  sized(t.shape, checked_nbytes(dtype, t.shape), [&](size_t n) { t.bytes.resize(n); });
  return t;
}

void HostTensor::check_values(const HostTensor& t, size_t count, size_t elem_size) {
  if (elem_size != dtype_size(t.dtype) || count != static_cast<size_t>(t.numel()))
    throw Error(ErrorKind::InvalidArgument, "HostTensor::from: " + std::to_string(count) +
                                                " values of " + std::to_string(elem_size) +
                                                " bytes for a " + dtype_name(t.dtype) +
                                                " tensor of shape " + shape_str(t.shape));
}

namespace {

// Bounds check shared by the element accessors: an out-of-range index is a caller bug, but
// it must surface as an Error rather than as a read past the buffer.
void check_index(const HostTensor& t, int64_t i) {
  const size_t elem = dtype_size(t.dtype);
  // The message is built only on failure: every element read of a host tensor comes here.
  if (i >= 0 && static_cast<uint64_t>(i) < t.bytes.size() / elem) return;
  throw Error(ErrorKind::InvalidArgument, "element index " + std::to_string(i) +
                                              " out of range for " + dtype_name(t.dtype) +
                                              " tensor " + shape_str(t.shape) + " holding " +
                                              std::to_string(t.bytes.size()) + " bytes");
}

template <typename T>
T load(const HostTensor& t, int64_t i) {
  T value;
  std::memcpy(&value, t.bytes.data() + static_cast<size_t>(i) * sizeof(T), sizeof(T));
  return value;
}

template <typename T>
void store(HostTensor& t, int64_t i, T value) {
  std::memcpy(t.bytes.data() + static_cast<size_t>(i) * sizeof(T), &value, sizeof(T));
}

}  // namespace

double HostTensor::as_double(int64_t i) const {
  check_index(*this, i);
  switch (dtype) {
    case DType::Float32:
      return load<float>(*this, i);
    case DType::Float16:
      return half_to_float(load<uint16_t>(*this, i));
    case DType::Int32:
      return load<int32_t>(*this, i);
    case DType::Int64:
      return static_cast<double>(load<int64_t>(*this, i));
    case DType::Bool:
      return load<uint8_t>(*this, i) ? 1.0 : 0.0;
    case DType::Int8:
      return load<int8_t>(*this, i);
    case DType::UInt8:
      return load<uint8_t>(*this, i);
  }
  throw Error(ErrorKind::InvalidArgument, "invalid dtype in HostTensor::as_double");
}

void HostTensor::set(int64_t i, double value) {
  switch (dtype) {
    case DType::Float32:
    case DType::Float16: {
      // A plain cast of a double beyond float's range is undefined; make it +-infinity.
      constexpr double kMax = std::numeric_limits<float>::max();
      const float f = value > kMax    ? std::numeric_limits<float>::infinity()
                      : value < -kMax ? -std::numeric_limits<float>::infinity()
                                      : static_cast<float>(value);
      check_index(*this, i);
      if (dtype == DType::Float32) return store(*this, i, f);
      return store(*this, i, float_to_half(f));
    }
    case DType::Bool:
      check_index(*this, i);
      return store(*this, i, static_cast<uint8_t>(value != 0.0));
    case DType::Int64:
      if (std::isnan(value)) return set_int(i, 0);
      if (value >= 9223372036854775808.0) return set_int(i, std::numeric_limits<int64_t>::max());
      if (value < -9223372036854775808.0) return set_int(i, std::numeric_limits<int64_t>::min());
      return set_int(i, static_cast<int64_t>(value));
    case DType::Int32:
    case DType::Int8:
    case DType::UInt8:
      if (std::isnan(value)) return set_int(i, 0);
      if (value >= 2147483648.0) return set_int(i, std::numeric_limits<int32_t>::max());
      if (value <= -2147483648.0) return set_int(i, std::numeric_limits<int32_t>::min());
      return set_int(i, static_cast<int64_t>(value));
  }
  throw Error(ErrorKind::InvalidArgument, "invalid dtype in HostTensor::set");
}

void HostTensor::set_int(int64_t i, int64_t value) {
  check_index(*this, i);
  switch (dtype) {
    case DType::Float32:
      return store(*this, i, static_cast<float>(value));
    case DType::Float16:
      return store(*this, i, float_to_half(static_cast<float>(value)));
    case DType::Int32:
      return store(*this, i, static_cast<int32_t>(value));
    case DType::Int64:
      return store(*this, i, value);
    case DType::Bool:
      return store(*this, i, static_cast<uint8_t>(value != 0));
    case DType::Int8:
    case DType::UInt8:
      return store(*this, i, static_cast<uint8_t>(value));
  }
  throw Error(ErrorKind::InvalidArgument, "invalid dtype in HostTensor::set_int");
}

int64_t HostTensor::as_int(int64_t i) const {
  check_index(*this, i);
  switch (dtype) {
    case DType::Float32:
    case DType::Float16: {
      // Truncate toward zero like a C cast, but saturate instead of invoking undefined
      // behaviour on NaN or out-of-range values (NaN becomes 0).
      const double v = as_double(i);
      if (std::isnan(v)) return 0;
      if (v >= 9223372036854775808.0) return std::numeric_limits<int64_t>::max();
      if (v < -9223372036854775808.0) return std::numeric_limits<int64_t>::min();
      return static_cast<int64_t>(v);
    }
    case DType::Int32:
      return load<int32_t>(*this, i);
    case DType::Int64:
      return load<int64_t>(*this, i);
    case DType::Bool:
      return load<uint8_t>(*this, i) ? 1 : 0;
    case DType::Int8:
      return load<int8_t>(*this, i);
    case DType::UInt8:
      return load<uint8_t>(*this, i);
  }
  throw Error(ErrorKind::InvalidArgument, "invalid dtype in HostTensor::as_int");
}

}  // namespace vkgraph
