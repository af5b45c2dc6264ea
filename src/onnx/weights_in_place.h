#pragma once
// Weights read where the file holds them. Parsing a model copies every initializer's raw_data
// into a string of its own: for a model of large weights, a fresh allocation of the model's
// size, page-faulted and zero-filled by the kernel before the copy, and the bulk of the parse
// time. A model loaded from a file (kept mapped by its Session) is instead parsed from a copy
// of its bytes in which each large initializer's raw_data is cut to a one-byte placeholder;
// the importer reads the real bytes from the mapping (ParsedModel::initializer_data).
// External data goes the same way (external_data.h). The mapping is private and read-only;
// like any memory-mapped loader, a file truncated or rewritten in place under a live Session
// changes (or faults) what later builds read.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace vkgraph::onnx_import {

// The raw_data an initializer is cut to: present (so the tensor still counts as raw data, which
// ONNX's checker requires of a tensor with no typed data) and one byte long, so anything that
// read it in place of the real bytes would fail the size check against the dims.
inline constexpr char kPlaceholderRawData[] = "\0";
inline constexpr size_t kPlaceholderRawDataSize = 1;

// One cut: the raw_data of graph initializer `initializer` (its index in GraphProto.initializer)
// lies at [offset, offset + size) of the original bytes.
struct Excision {
  int initializer = 0;
  size_t offset = 0, size = 0;
};

struct ExcisedModel {
  std::string bytes;  // the ModelProto with each cut raw_data replaced by the placeholder
  std::vector<Excision> excisions;
};

// Cuts the raw_data of every initializer of the main graph holding at least `min_bytes` out of
// a serialized ModelProto. nullopt when nothing is that large, or when the bytes are not a
// plain well-formed message along the way (a truncated or group field, a graph or raw_data
// field given twice, which protobuf would merge): the caller then parses the bytes as they are
// and protobuf says what is wrong. Reads the protobuf wire format only along
// ModelProto.graph (7) -> GraphProto.initializer (5) -> TensorProto.raw_data (9); every other
// field is copied as it is.
std::optional<ExcisedModel> excise_initializer_data(std::span<const uint8_t> model,
                                                    size_t min_bytes);

}  // namespace vkgraph::onnx_import
