#include "onnx/host_constant.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/parallel_for.h"
#include "vkgraph/onnx_tensor.h"

namespace vkgraph::onnx_import {

namespace {

// `n` float32 values at `in` (any alignment: a proto's raw bytes) -> float16, clamped a block at
// a time into a stack buffer and converted in bulk (floats_to_halves: F16C where the CPU has
// it). A per-element conversion dominated a large model's load time.
void halves_of(const uint8_t* in, size_t n, uint16_t* out) {
  constexpr float kHalfMax = 65504.f;
  constexpr size_t kBlock = 2048;
  // Pieces of at least 256 Ki values (1 MiB read) start on block multiples.
  parallel_for(n, size_t{1} << 18, kBlock, [&](size_t begin, size_t end) {
    float block[kBlock];
    for (size_t start = begin; start < end; start += kBlock) {
      const size_t count = std::min(kBlock, end - start);
      std::memcpy(block, in + start * sizeof(float), count * sizeof(float));
      for (size_t i = 0; i < count; ++i)
        if (std::isfinite(block[i])) block[i] = std::clamp(block[i], -kHalfMax, kHalfMax);
      floats_to_halves(block, out + start, count);
    }
  });
}

// The proto's float32 elements in place (in `raw_data` where kept outside the proto), or null
// where they are not raw FLOAT data.
const uint8_t* raw_floats(const onnx::TensorProto& proto,
                          std::optional<std::span<const uint8_t>> raw_data) {
  if (proto.data_type() != onnx::TensorProto::FLOAT || !proto.has_raw_data()) return nullptr;
  if (raw_data) return raw_data->data();
  return reinterpret_cast<const uint8_t*>(proto.raw_data().data());
}

}  // namespace

HostTensor half_of(const HostTensor& t) {
  HostTensor r = HostTensor::uninitialized(DType::Float16, t.shape);
  halves_of(t.bytes.data(), static_cast<size_t>(t.numel()), r.data<uint16_t>());
  return r;
}

HostConstant HostConstant::of_initializer(const onnx::TensorProto& proto,
                                          std::optional<std::span<const uint8_t>> raw_data) {
  HostConstant c;
  c.type_ = onnx_io::check_tensor_proto(proto, raw_data);
  c.proto_ = &proto;
  c.raw_data_ = raw_data;
  return c;
}

const HostTensor& HostConstant::materialized() const {
  if (!tensor_) {
    tensor_ = onnx_io::tensor_from_proto(*proto_, raw_data_);
    proto_ = nullptr;
  }
  return *tensor_;
}

HostTensor HostConstant::copy() const {
  if (tensor_ || !proto_) return materialized();
  return onnx_io::tensor_from_proto(*proto_, raw_data_);
}

HostTensor HostConstant::half() const {
  if (tensor_ || !proto_) return half_of(materialized());
  const uint8_t* floats = raw_floats(*proto_, raw_data_);
  if (!floats) return half_of(onnx_io::tensor_from_proto(*proto_, raw_data_));
  HostTensor r = HostTensor::uninitialized(DType::Float16, type_.shape);
  halves_of(floats, static_cast<size_t>(r.numel()), r.data<uint16_t>());
  return r;
}

}  // namespace vkgraph::onnx_import
