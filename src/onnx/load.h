#pragma once
// The host-only stage of loading an ONNX model: parse the bytes and describe the model's
// inputs and outputs. Importing the parsed model into a ComputeGraph (importer.h) is host work
// too, up to ComputeGraph::prepare(). Session runs this stage, then imports and prepares; the
// loader's robustness tests and fuzzer run it without touching the device.
#include <onnx/onnx_pb.h>

#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "vkgraph/types.h"
#include "vkgraph/value_info.h"

namespace vkgraph::onnx_import {

struct ParsedModel {
  onnx::ModelProto proto;
  std::vector<ValueInfo> inputs;  // graph inputs that are not initializers
  std::vector<ValueInfo> outputs;
  // The raw data of main-graph initializers that `proto` holds only a placeholder of
  // (weights_in_place.h), by index in GraphProto.initializer: bytes of the model's file or of
  // its external data files, mapped for as long as `keep_alive` lives (copies share it).
  std::map<int, std::span<const uint8_t>> initializer_data;
  std::vector<std::shared_ptr<const void>> keep_alive;

  // Initializer `index`'s raw data where it is not in the proto, else nullopt.
  std::optional<std::span<const uint8_t>> raw_data_of(int index) const {
    auto it = initializer_data.find(index);
    if (it == initializer_data.end()) return std::nullopt;
    return it->second;
  }
};

// Parses a serialized ModelProto, reads the tensors it stores in external data (files in
// `external_data_dir`, the model's folder; external_data.h), runs ONNX's checker on it
// (model_check.h) and checks that it has a graph with outputs and tensor-typed inputs and
// outputs. `what` names the model in errors (a path, "model bytes"). Throws Error.
// With `bytes_owner` (which keeps `bytes` valid, e.g. the file's mapping), the large
// initializers' raw data stays in `bytes` (ParsedModel::initializer_data) instead of being
// copied into the proto.
ParsedModel parse_model(const void* bytes, size_t size, const std::string& what,
                        const std::string& external_data_dir = "",
                        std::shared_ptr<const void> bytes_owner = nullptr);

// Initializers of at least this many bytes stay in the model's file (weights_in_place.h).
inline constexpr size_t kInPlaceMinBytes = 4096;

// The model's ai.onnx opset version: its opset_import entry for the default domain (the last
// one, should a broken model list it twice); 1 when the model imports no opset at all, the
// oldest; 0 when it imports only other domains (no ai.onnx operator is then defined).
int ai_onnx_opset(const onnx::ModelProto& model);

// The shape of every input, `overrides` taking precedence over the declared shapes; nullopt
// while some dimension is still unknown.
std::optional<std::map<std::string, Shape>> static_input_shapes(
    const ParsedModel& model, const std::map<std::string, Shape>& overrides);

}  // namespace vkgraph::onnx_import
