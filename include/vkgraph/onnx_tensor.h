#pragma once
// ONNX TensorProto <-> HostTensor, and TensorProto .pb files (the ONNX test-data format).
// Links onnx_proto; the rest of vkgraph/ stays protobuf-free.
//
// Element types: FLOAT, FLOAT16, INT32, INT64 and BOOL map 1:1 onto DType. Other numeric types
// are read by converting every value to the nearest DType that the GPU kernels support:
//   DOUBLE                     -> Float32 (rounded to nearest; precision is lost by design,
//                                 the runtime computes in float32 anyway; a finite value
//                                 beyond float32's range is refused: narrow_float64)
//   INT8, UINT8, INT16, UINT16 -> Int32   (every value fits exactly)
//   INT4, UINT4 (packed pairs) -> Int32   (ONNX 1.16; numbered here, onnx.proto 1.12 lacks them)
//   UINT32, UINT64             -> Int64   (exact; a UINT64 value above INT64_MAX is rejected)
//   BFLOAT16                   -> Float32 (exact: a bfloat16 is a float32's top 16 bits)
// Note that a converted tensor no longer has its source type's wrap-around semantics (uint8
// 200 + 100 is 300 in Int32). STRING and COMPLEX are Unsupported.
#include <onnx/onnx_pb.h>

#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "vkgraph/error.h"
#include "vkgraph/types.h"

namespace vkgraph::onnx_io {

inline constexpr int32_t kOnnxUInt4 = 21, kOnnxInt4 = 22;
inline bool is_4bit_onnx_type(int32_t onnx_type) {
  return onnx_type == kOnnxUInt4 || onnx_type == kOnnxInt4;
}

// TensorProto.DataType value -> DType, applying the conversions above. Throws Unsupported.
DType dtype_from_onnx(int32_t onnx_type);
// True for the five types that map 1:1 (no conversion on read).
bool is_native_onnx_type(int32_t onnx_type);
// DType -> TensorProto.DataType (always one of the native five).
int32_t onnx_type_of(DType dtype);
// bfloat16 bit patterns <-> float32. To bfloat16 truncates the low 16 bits, as ONNX 1.12's
// reference Cast does (its test data expects it; later ONNX versions round to nearest even);
// NaN stays a (quiet) NaN.
float bfloat16_to_float(uint16_t bits);
uint16_t float_to_bfloat16(float value);
// float64 -> float32, the one place vkgraph narrows float64 data (model constants, .pb files,
// Python arrays): each value rounds to the nearest float32, NaN and +-inf stay, and a finite
// value beyond float32's range throws `kind` naming `what` ("input 'x'") and the value, since
// as inf it would be a silent wrong answer. `to` must be as long as `from`.
void narrow_float64(std::span<const double> from, std::span<float> to, const std::string& what,
                    ErrorKind kind);
// "FLOAT", "UINT8", ... or "type <n>" for unknown values; for error messages.
std::string onnx_type_name(int32_t onnx_type);

// Reads dims, data_type and the data from raw_data or the typed repeated field. Validates that
// the data size matches the shape. Errors name the tensor (proto.name()):
// ModelFormat for malformed protos, Unsupported for external data, segments and the types above,
// and for float64 values beyond float32's range (the proto is a model constant).
// `raw_data`, when given, is the tensor's raw data kept outside the proto (a model's weights
// left in its mapped file); the proto's own raw_data field then only says that the data is raw.
HostTensor tensor_from_proto(const onnx::TensorProto& proto,
                             std::optional<std::span<const uint8_t>> raw_data = std::nullopt);
// What tensor_from_proto would give, after every one of its checks (so with its errors), read
// without touching the data: the DType and shape.
struct ProtoTensorType {
  DType dtype;
  Shape shape;
};
ProtoTensorType check_tensor_proto(const onnx::TensorProto& proto,
                                   std::optional<std::span<const uint8_t>> raw_data = std::nullopt);
// Writes dims, data_type and raw_data (little-endian, as onnx.numpy_helper does).
onnx::TensorProto tensor_to_proto(const HostTensor& tensor, const std::string& name = "");

// A serialized TensorProto file (e.g. test_data_set_0/input_0.pb). `name`, when given,
// receives the proto's name field. Errors name the path. The file is data to run on, so a
// float64 value beyond float32's range is InvalidArgument here.
HostTensor read_tensor_pb(const std::string& path, std::string* name = nullptr);
// Same, from the file's bytes in memory; `label` prefixes error messages (read_tensor_pb
// passes the path).
HostTensor decode_tensor_pb(std::span<const uint8_t> bytes, const std::string& label,
                            std::string* name = nullptr);
void write_tensor_pb(const std::string& path, const HostTensor& tensor,
                     const std::string& name = "");

}  // namespace vkgraph::onnx_io
