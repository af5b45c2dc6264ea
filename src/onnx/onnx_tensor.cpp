#include "vkgraph/onnx_tensor.h"

#include <bit>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string_view>
#include <utility>

#include "core/parallel_for.h"
#include "vkgraph/error.h"
#include "vkgraph/file_io.h"

namespace vkgraph::onnx_io {

// raw_data is little-endian by the ONNX spec; we copy it as is.
static_assert(std::endian::native == std::endian::little, "vkgraph assumes a little-endian host");

using TP = onnx::TensorProto;

DType dtype_from_onnx(int32_t onnx_type) {
  if (is_4bit_onnx_type(onnx_type)) return DType::Int32;
  switch (onnx_type) {
    case TP::FLOAT:
    case TP::DOUBLE:
      return DType::Float32;
    case TP::FLOAT16:
      return DType::Float16;
    case TP::BFLOAT16:
      return DType::Float32;
    case TP::INT32:
    case TP::INT8:
    case TP::UINT8:
    case TP::INT16:
    case TP::UINT16:
      return DType::Int32;
    case TP::INT64:
    case TP::UINT32:
    case TP::UINT64:
      return DType::Int64;
    case TP::BOOL:
      return DType::Bool;
    default:
      throw Error(ErrorKind::Unsupported,
                  "ONNX tensor type " + onnx_type_name(onnx_type) + " is not supported");
  }
}

namespace {

// The ONNX type each dtype is stored as, one each; other ONNX types convert on load.
constexpr std::pair<DType, int32_t> kNativeTypes[] = {
    {DType::Float32, TP::FLOAT}, {DType::Float16, TP::FLOAT16}, {DType::Int32, TP::INT32},
    {DType::Int64, TP::INT64},   {DType::Bool, TP::BOOL},
};

}  // namespace

bool is_native_onnx_type(int32_t onnx_type) {
  for (const auto& [dtype, type] : kNativeTypes)
    if (type == onnx_type) return true;
  return false;
}

int32_t onnx_type_of(DType dtype) {
  for (const auto& [d, type] : kNativeTypes)
    if (d == dtype) return type;
  throw Error(ErrorKind::InvalidArgument, "invalid dtype");
}

float bfloat16_to_float(uint16_t bits) {
  const uint32_t wide = uint32_t{bits} << 16;
  float value;
  std::memcpy(&value, &wide, sizeof(value));
  return value;
}

uint16_t float_to_bfloat16(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  // A NaN whose payload sits only in the low bits would truncate to infinity.
  if (std::isnan(value)) return static_cast<uint16_t>((bits >> 16) | 0x0040u);
  return static_cast<uint16_t>(bits >> 16);
}

void narrow_float64(std::span<const double> from, std::span<float> to, const std::string& what,
                    ErrorKind kind) {
  check(from.size() == to.size(), ErrorKind::InvalidArgument,
        what + ": narrow_float64 given spans of different lengths");
  constexpr double kMax = std::numeric_limits<float>::max();
  for (size_t i = 0; i < from.size(); ++i) {
    const double v = from[i];
    // Also keeps the cast defined: a finite double beyond the float range is undefined
    // behaviour to convert.
    if (std::isfinite(v) && std::fabs(v) > kMax) {
      char value[32];
      std::snprintf(value, sizeof(value), "%.6g", v);
      throw Error(kind, what + ": float64 value " + value +
                            " is beyond float32's range (vkgraph computes float64 tensors in "
                            "float32)");
    }
    to[i] = static_cast<float>(v);
  }
}

std::string onnx_type_name(int32_t onnx_type) {
  // Newer than the onnx.proto vkgraph builds against (ONNX 1.12).
  if (onnx_type == kOnnxUInt4) return "UINT4";
  if (onnx_type == kOnnxInt4) return "INT4";
  if (TP::DataType_IsValid(onnx_type)) {
    return TP::DataType_Name(static_cast<TP::DataType>(onnx_type));
  }
  return "type " + std::to_string(onnx_type);
}

namespace {

// Bytes per element of the *source* type in raw_data; 0 for types we never read.
size_t onnx_elem_size(int32_t onnx_type) {
  switch (onnx_type) {
    case TP::BOOL:
    case TP::INT8:
    case TP::UINT8:
      return 1;
    case TP::FLOAT16:
    case TP::BFLOAT16:
    case TP::INT16:
    case TP::UINT16:
      return 2;
    case TP::FLOAT:
    case TP::INT32:
    case TP::UINT32:
      return 4;
    case TP::INT64:
    case TP::UINT64:
    case TP::DOUBLE:
      return 8;
    default:
      return 0;
  }
}

template <typename T>
T raw_at(std::string_view raw, int64_t i) {
  T value;
  std::memcpy(&value, raw.data() + static_cast<size_t>(i) * sizeof(T), sizeof(T));
  return value;
}

// Source element i of an integer-typed proto as int64, read from raw_data or the typed field
// that ONNX assigns to the type. Narrow types are truncated to their declared width first, so
// a typed-field value outside the type's range reads the way the type would store it.
int64_t int_element(const TP& proto, std::string_view r, bool raw, int64_t i,
                    const std::string& label) {
  const int idx = static_cast<int>(i);
  switch (proto.data_type()) {
    case TP::INT8:
      return raw ? raw_at<int8_t>(r, i) : static_cast<int8_t>(proto.int32_data(idx));
    case TP::UINT8:
      return raw ? raw_at<uint8_t>(r, i) : static_cast<uint8_t>(proto.int32_data(idx));
    case TP::INT16:
      return raw ? raw_at<int16_t>(r, i) : static_cast<int16_t>(proto.int32_data(idx));
    case TP::UINT16:
      return raw ? raw_at<uint16_t>(r, i) : static_cast<uint16_t>(proto.int32_data(idx));
    case TP::INT32:
      return raw ? raw_at<int32_t>(r, i) : proto.int32_data(idx);
    case TP::INT64:
      return raw ? raw_at<int64_t>(r, i) : proto.int64_data(idx);
    case TP::BOOL:
      return (raw ? raw_at<uint8_t>(r, i) : proto.int32_data(idx)) != 0;
    case TP::UINT32:
      return raw ? raw_at<uint32_t>(r, i) : static_cast<uint32_t>(proto.uint64_data(idx));
    case TP::UINT64: {
      const uint64_t v = raw ? raw_at<uint64_t>(r, i) : proto.uint64_data(idx);
      check(v <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max()), ErrorKind::Unsupported,
            label + ": UINT64 value " + std::to_string(v) + " does not fit in int64");
      return static_cast<int64_t>(v);
    }
    default:
      throw Error(ErrorKind::Unsupported, label + ": not an integer type");
  }
}

// Number of values in the typed repeated field that ONNX uses for this data type.
int64_t typed_count(const TP& proto) {
  switch (proto.data_type()) {
    case TP::FLOAT:
      return proto.float_data_size();
    case TP::DOUBLE:
      return proto.double_data_size();
    case TP::INT64:
      return proto.int64_data_size();
    case TP::UINT32:
    case TP::UINT64:
      return proto.uint64_data_size();
    default:  // FLOAT16 (bit patterns), BOOL and the narrow integer types
      return proto.int32_data_size();
  }
}

// INT4 / UINT4 (ONNX 1.16, opset 21): two values per byte, the first in the low nibble, in
// raw_data or one packed byte per int32_data entry (as onnx.helper.make_tensor writes them).
// Read as Int32 values, like the 8-bit types.
void check_4bit_proto(const TP& proto, std::string_view raw_bytes, const Shape& shape,
                      int64_t count, bool raw, const std::string& label) {
  const int64_t bytes = count / 2 + count % 2;  // (count + 1) / 2 overflows at INT64_MAX
  const int64_t have = raw ? static_cast<int64_t>(raw_bytes.size()) : proto.int32_data_size();
  check(!raw || typed_count(proto) == 0, ErrorKind::ModelFormat,
        label + ": has both raw_data and a typed data field");
  check(have == bytes, ErrorKind::ModelFormat,
        label + ": holds " + std::to_string(have) + " packed bytes, dims " + shape_str(shape) +
            " need " + std::to_string(bytes));
}

HostTensor from_4bit_proto(const TP& proto, std::string_view raw_bytes, Shape shape, int64_t count,
                           bool raw) {
  const bool is_signed = proto.data_type() == kOnnxInt4;
  HostTensor out(DType::Int32, std::move(shape));
  for (int64_t i = 0; i < count; ++i) {
    const uint32_t byte = raw ? static_cast<uint8_t>(raw_bytes[i / 2])
                              : static_cast<uint8_t>(proto.int32_data(static_cast<int>(i / 2)));
    const int32_t nibble = static_cast<int32_t>(i % 2 ? byte >> 4 : byte & 15u);
    out.data<int32_t>()[i] = is_signed ? (nibble ^ 8) - 8 : nibble;
  }
  return out;
}

// A TensorProto whose dims, type and amount of data were checked, before anything is read.
struct CheckedProto {
  std::string label;
  DType dtype;
  Shape shape;
  int64_t count;
  bool raw;
  std::string_view raw_bytes;  // the raw data, wherever it is kept
};

// `where` prefixes every message (a file path, or empty); `raw_data` as tensor_from_proto's.
CheckedProto check_proto(const TP& proto, const std::string& where,
                         std::optional<std::span<const uint8_t>> raw_data) {
  std::string label =
      where + "tensor '" + proto.name() + "' (" + onnx_type_name(proto.data_type()) + ")";
  if (proto.data_location() == TP::EXTERNAL || proto.external_data_size() > 0) {
    throw Error(ErrorKind::Unsupported,
                label + ": external data is not supported; save the model with the data embedded");
  }
  check(!proto.has_segment(), ErrorKind::Unsupported,
        label + ": segmented tensors are not supported");
  check(proto.has_data_type(), ErrorKind::ModelFormat, label + ": missing data_type");
  const DType dtype = [&] {
    try {
      return dtype_from_onnx(proto.data_type());
    } catch (const Error&) {
      throw Error(ErrorKind::Unsupported, label + ": element type is not supported");
    }
  }();

  Shape shape(proto.dims().begin(), proto.dims().end());
  int64_t count = 0;
  try {
    count = numel(shape);
  } catch (const Error&) {
    throw Error(ErrorKind::ModelFormat, label + ": invalid dims " + shape_str(shape));
  }

  // Check the amount of data before allocating anything sized from dims.
  const bool raw = proto.has_raw_data();
  const std::string_view raw_bytes =
      raw_data ? std::string_view(reinterpret_cast<const char*>(raw_data->data()), raw_data->size())
               : std::string_view(proto.raw_data());
  if (is_4bit_onnx_type(proto.data_type())) {
    check_4bit_proto(proto, raw_bytes, shape, count, raw, label);
    return {std::move(label), dtype, std::move(shape), count, raw, raw_bytes};
  }
  const size_t src_elem = onnx_elem_size(proto.data_type());
  if (raw) {
    check(typed_count(proto) == 0, ErrorKind::ModelFormat,
          label + ": has both raw_data and a typed data field");
    const size_t have = raw_bytes.size();
    check(static_cast<uint64_t>(count) <= have / src_elem && have == count * src_elem,
          ErrorKind::ModelFormat,
          label + ": raw_data holds " + std::to_string(have) + " bytes, dims " + shape_str(shape) +
              " need " + std::to_string(count) + " elements of " + std::to_string(src_elem) +
              " bytes");
  } else {
    check(typed_count(proto) == count, ErrorKind::ModelFormat,
          label + ": holds " + std::to_string(typed_count(proto)) + " values, dims " +
              shape_str(shape) + " need " + std::to_string(count));
  }
  return {std::move(label), dtype, std::move(shape), count, raw, raw_bytes};
}

// `narrow_error` is the kind a float64 value beyond float32's range throws: Unsupported for a
// model constant, InvalidArgument for data to run on.
HostTensor from_proto(const TP& proto, const std::string& where, ErrorKind narrow_error,
                      std::optional<std::span<const uint8_t>> raw_data = std::nullopt) {
  CheckedProto checked = check_proto(proto, where, raw_data);
  const std::string_view raw_bytes = checked.raw_bytes;
  const std::string& label = checked.label;
  const DType dtype = checked.dtype;
  Shape& shape = checked.shape;
  const int64_t count = checked.count;
  const bool raw = checked.raw;
  const int32_t type = proto.data_type();
  if (is_4bit_onnx_type(type))
    return from_4bit_proto(proto, raw_bytes, std::move(shape), count, raw);

  if (raw && type == onnx_type_of(dtype) && type != TP::BOOL) {
    // Same layout on both sides: copy the bytes (memcpy needs non-null pointers, even for 0).
    // Not zero-filled first: the copy writes every byte, and a fill would double the cost of
    // loading the weights.
    HostTensor out = HostTensor::uninitialized(dtype, std::move(shape));
    parallel_memcpy(out.bytes.data(), raw_bytes.data(), out.bytes.size());
    return out;
  }
  HostTensor out(dtype, std::move(shape));
  for (int64_t i = 0; i < count; ++i) {
    const int idx = static_cast<int>(i);
    switch (type) {
      case TP::FLOAT:
        out.data<float>()[i] = proto.float_data(idx);
        break;
      case TP::DOUBLE: {
        const double v = raw ? raw_at<double>(raw_bytes, i) : proto.double_data(idx);
        narrow_float64(std::span(&v, 1), std::span(out.data<float>() + i, 1), label, narrow_error);
        break;
      }
      case TP::FLOAT16:
        // Typed form stores each 16-bit pattern in the low bits of an int32.
        out.data<uint16_t>()[i] = static_cast<uint16_t>(proto.int32_data(idx));
        break;
      case TP::BFLOAT16:
        out.data<float>()[i] = bfloat16_to_float(
            raw ? raw_at<uint16_t>(raw_bytes, i) : static_cast<uint16_t>(proto.int32_data(idx)));
        break;
      default: {
        const int64_t v = int_element(proto, raw_bytes, raw, i, label);
        if (dtype == DType::Int32) {
          out.data<int32_t>()[i] = static_cast<int32_t>(v);  // exact: source is <= 32 bits
        } else if (dtype == DType::Int64) {
          out.data<int64_t>()[i] = v;
        } else {
          out.data<uint8_t>()[i] = v != 0;
        }
      }
    }
  }
  return out;
}

}  // namespace

HostTensor tensor_from_proto(const TP& proto, std::optional<std::span<const uint8_t>> raw_data) {
  return from_proto(proto, "", ErrorKind::Unsupported, raw_data);
}

ProtoTensorType check_tensor_proto(const TP& proto,
                                   std::optional<std::span<const uint8_t>> raw_data) {
  CheckedProto checked = check_proto(proto, "", raw_data);
  return {checked.dtype, std::move(checked.shape)};
}

TP tensor_to_proto(const HostTensor& tensor, const std::string& name) {
  const int64_t count = numel(tensor.shape);
  const size_t elem = dtype_size(tensor.dtype);
  check(static_cast<uint64_t>(count) <= tensor.bytes.size() / elem &&
            static_cast<size_t>(count) * elem == tensor.bytes.size(),
        ErrorKind::InvalidArgument,
        "tensor_to_proto: " + std::string(dtype_name(tensor.dtype)) + " tensor " +
            shape_str(tensor.shape) + " holds " + std::to_string(tensor.bytes.size()) + " bytes");
  TP proto;
  proto.set_name(name);
  proto.set_data_type(onnx_type_of(tensor.dtype));
  for (int64_t d : tensor.shape) proto.add_dims(d);
  proto.set_raw_data(tensor.bytes.data(), tensor.bytes.size());
  return proto;
}

HostTensor read_tensor_pb(const std::string& path, std::string* name) {
  return decode_tensor_pb(read_file_bytes(path), path, name);
}

HostTensor decode_tensor_pb(std::span<const uint8_t> bytes, const std::string& label,
                            std::string* name) {
  check(bytes.size() <= static_cast<size_t>(std::numeric_limits<int>::max()),
        ErrorKind::Unsupported, label + ": TensorProto files over 2 GiB are not supported");
  TP proto;
  check(proto.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())), ErrorKind::ModelFormat,
        label + ": not a valid serialized onnx.TensorProto");
  if (name) *name = proto.name();
  return from_proto(proto, label + ": ", ErrorKind::InvalidArgument);
}

void write_tensor_pb(const std::string& path, const HostTensor& tensor, const std::string& name) {
  const std::string serialized = tensor_to_proto(tensor, name).SerializeAsString();
  write_file_bytes(
      path, std::span(reinterpret_cast<const uint8_t*>(serialized.data()), serialized.size()));
}

}  // namespace vkgraph::onnx_io
