#pragma once
// A model value known on the host. An initializer stays in the model's TensorProto until
// something reads its elements: a weight that is only uploaded is converted once, from the
// proto's raw data straight into the graph's constant (float16 in fp16 mode), and never has a
// float32 HostTensor copy beside it. Reads are by Importer code on one thread.
#include <onnx/onnx_pb.h>

#include <optional>
#include <span>

#include "vkgraph/onnx_tensor.h"
#include "vkgraph/types.h"

namespace vkgraph::onnx_import {

class HostConstant {
 public:
  HostConstant() = default;
  HostConstant(HostTensor tensor) : tensor_(std::move(tensor)) {}  // NOLINT: a value, as before
  // Checks `proto` as tensor_from_proto does (every load error surfaces now), reads nothing.
  // `proto` must outlive this constant (the Session keeps the model's proto), and so must
  // `raw_data`, the proto's raw data where it is kept outside it (ParsedModel::raw_data_of).
  static HostConstant of_initializer(
      const onnx::TensorProto& proto,
      std::optional<std::span<const uint8_t>> raw_data = std::nullopt);

  bool has_value() const { return tensor_.has_value() || proto_ != nullptr; }
  // Without reading the elements.
  const Shape& shape() const { return tensor_ ? tensor_->shape : type_.shape; }
  DType dtype() const { return tensor_ ? tensor_->dtype : type_.dtype; }
  explicit operator bool() const { return has_value(); }
  // The elements, read from the proto on first use.
  const HostTensor& operator*() const { return materialized(); }
  const HostTensor* operator->() const { return &materialized(); }

  // The value as a tensor of its own for the graph: the proto's data read straight into it
  // when nothing has read it on the host yet (one copy), else a copy of the host tensor.
  HostTensor copy() const;
  // The float16 copy of a Float32 value (half_of's rule), converted from the proto's raw data
  // when nothing has read it on the host yet.
  HostTensor half() const;

 private:
  const HostTensor& materialized() const;

  mutable std::optional<HostTensor> tensor_;
  mutable const onnx::TensorProto* proto_ = nullptr;   // until read into tensor_
  std::optional<std::span<const uint8_t>> raw_data_;   // proto_'s, where kept outside it
  onnx_io::ProtoTensorType type_{DType::Float32, {}};  // the proto's
};

// The float16 copy of a Float32 tensor for float16 mode: finite values beyond float16's range
// saturate to +-65504 rather than become infinite (exporters write "minus infinity" masks as
// finfo(float32).min or -1e9, and an infinite one would turn 0 * mask into NaN). Large tensors
// convert on several threads.
HostTensor half_of(const HostTensor& t);

}  // namespace vkgraph::onnx_import
