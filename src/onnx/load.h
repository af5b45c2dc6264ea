#pragma once
// The host-only stage of loading an ONNX model: parse the bytes and describe the model's
// inputs and outputs. Importing the parsed model into a ComputeGraph (importer.h) is host work
// too, up to ComputeGraph::prepare(). Session runs this stage, then imports and prepares; the
// loader's robustness tests and fuzzer run it without touching the device.
#include <onnx/onnx_pb.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "vkgraph/types.h"
#include "vkgraph/value_info.h"

namespace vkgraph::onnx_import {

struct ParsedModel {
  onnx::ModelProto proto;
  std::vector<ValueInfo> inputs;  // graph inputs that are not initializers
  std::vector<ValueInfo> outputs;
};

// Parses a serialized ModelProto, reads the tensors it stores in external data (files in
// `external_data_dir`, the model's folder; external_data.h), runs ONNX's checker on it
// (model_check.h) and checks that it has a graph with outputs and tensor-typed inputs and
// outputs. `what` names the model in errors (a path, "model bytes"). Throws Error.
ParsedModel parse_model(const void* bytes, size_t size, const std::string& what,
                        const std::string& external_data_dir = "");

// The model's ai.onnx opset version: its opset_import entry for the default domain (the last
// one, should a broken model list it twice); 1 when the model imports no opset at all, the
// oldest; 0 when it imports only other domains (no ai.onnx operator is then defined).
int ai_onnx_opset(const onnx::ModelProto& model);

// The shape of every input, `overrides` taking precedence over the declared shapes; nullopt
// while some dimension is still unknown.
std::optional<std::map<std::string, Shape>> static_input_shapes(
    const ParsedModel& model, const std::map<std::string, Shape>& overrides);

}  // namespace vkgraph::onnx_import
