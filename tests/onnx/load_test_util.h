#pragma once
// Shared by the loader robustness tests (test_load_robustness.cpp: mutations;
// test_load_regressions.cpp: what they and fuzz/fuzz_load found; test_session_misuse.cpp): the
// seed models, random feeds, the host-only load and the fixture.
#include <onnx/onnx_pb.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <iterator>
#include <sstream>
#include <typeinfo>

#include "gpu_test.h"
#include "onnx/importer.h"
#include "onnx/load.h"
#include "vkgraph/error.h"
#include "vkgraph/file_io.h"
#include "vkgraph/onnx_tensor.h"
#include "vkgraph/session.h"

namespace vkgraph::testing {

namespace fs = std::filesystem;
using Rng = std::mt19937_64;

inline const std::string kTestData = VKGRAPH_ONNX_TESTDATA_DIR;
inline const std::string kDigitsModel = std::string(VKGRAPH_SOURCE_DIR) + "/models/digits.onnx";

// Small conformance models covering the loader's main paths (conv, gemm, reshape, slice,
// gather, softmax, resize, pooling, normalization, split, pad, ...).
inline const char* const kSeedCases[] = {
    "node/test_conv_with_strides_padding",
    "node/test_convtranspose",
    "node/test_gemm_all_attributes",
    "node/test_matmul_3d",
    "node/test_reshape_reordered_all_dims",
    "node/test_slice",
    "node/test_gather_0",
    "node/test_softmax_axis_1",
    "node/test_resize_upsample_scales_linear",
    "node/test_batchnorm_example",
    "node/test_maxpool_2d_pads",
    "node/test_concat_3d_axis_1",
    "node/test_transpose_all_permutations_0",
    "node/test_split_equal_parts_1d",
    "node/test_expand_dim_changed",
    "node/test_layer_normalization_3d_axis1_epsilon",
    "node/test_where_example",
    "node/test_reduce_mean_keepdims_example",
    "node/test_tile",
    "node/test_unsqueeze_axis_0",
    "node/test_edge_pad",
    "node/test_clip",
    "pytorch-converted/test_Conv2d",
    "pytorch-converted/test_Linear",
    "pytorch-converted/test_Embedding",
    "pytorch-converted/test_PixelShuffle",
    "pytorch-converted/test_softmax_lastdim",
    "pytorch-converted/test_BatchNorm2d_eval",
    "pytorch-operator/test_operator_view",
    "pytorch-operator/test_operator_chunk",
};

struct SeedModel {
  std::string name;
  std::string bytes;
};

inline std::string file_bytes(const std::string& path) {
  std::vector<uint8_t> b = read_file_bytes(path);
  return std::string(b.begin(), b.end());
}

// A conformance case with every input but the first turned into an initializer (from
// test_data_set_0), the way exporters emit shapes, indices, weights and scales. They stay
// listed as graph inputs (IR < 4 style), so dropping one makes it a real input again.
inline SeedModel load_case(const std::string& name) {
  const fs::path dir = fs::path(kTestData) / name;
  onnx::ModelProto model;
  if (!model.ParseFromString(file_bytes((dir / "model.onnx").string())))
    throw std::runtime_error("cannot parse " + name);
  auto& graph = *model.mutable_graph();
  for (int i = 1; i < graph.input_size(); ++i) {
    const fs::path pb = dir / "test_data_set_0" / ("input_" + std::to_string(i) + ".pb");
    if (!fs::exists(pb)) continue;
    *graph.add_initializer() =
        onnx_io::tensor_to_proto(onnx_io::read_tensor_pb(pb.string()), graph.input(i).name());
  }
  return {name, model.SerializeAsString()};
}

inline const std::vector<SeedModel>& seed_models() {
  static const std::vector<SeedModel> seeds = [] {
    std::vector<SeedModel> v;
    for (const char* name : kSeedCases) v.push_back(load_case(name));
    v.push_back({"models/digits.onnx", file_bytes(kDigitsModel)});
    return v;
  }();
  return seeds;
}

// Dynamic dims become 2, as a caller fixing them through SessionOptions::input_shapes would.
inline std::map<std::string, Shape> concrete_shapes(const std::vector<ValueInfo>& inputs) {
  std::map<std::string, Shape> shapes;
  for (auto& in : inputs) {
    Shape s = in.shape;
    for (auto& d : s) d = d < 0 ? 2 : d;
    shapes[in.name] = s;
  }
  return shapes;
}

// Random values of the declared shape and dtype; integers in [-3, 3] so index inputs hit
// both valid and out-of-range entries.
inline HostTensor random_input(const ValueInfo& in, const Shape& shape, Rng& rng) {
  HostTensor t(in.dtype, shape);
  std::uniform_real_distribution<float> real(-1.f, 1.f);
  std::uniform_int_distribution<int> small(-3, 3);
  for (int64_t i = 0; i < t.numel(); ++i) {
    switch (in.dtype) {
      case DType::Float32:
        t.data<float>()[i] = real(rng);
        break;
      case DType::Float16:
        t.data<uint16_t>()[i] = float_to_half(real(rng));
        break;
      case DType::Int32:
        t.data<int32_t>()[i] = small(rng);
        break;
      case DType::Int64:
        t.data<int64_t>()[i] = small(rng);
        break;
      case DType::Bool:
        t.data<uint8_t>()[i] = small(rng) > 0;
        break;
      case DType::Int8:
      case DType::UInt8:  // model inputs are never 8-bit (the frontend widens them)
        t.bytes[i] = static_cast<uint8_t>(small(rng));
        break;
    }
  }
  return t;
}

// The host-only stage: parse and import into a graph that is never prepared.
inline void load_on_host(const std::string& bytes, const std::string& label,
                         std::shared_ptr<vk::Context> ctx) {
  // Kept alive as a Session keeps a model's mapped file, so large weights are read in place
  // (weights_in_place.h) and mutations reach that path too.
  auto kept = std::make_shared<const std::string>(bytes);
  onnx_import::ParsedModel m =
      onnx_import::parse_model(kept->data(), kept->size(), label, "", kept);
  ComputeGraph graph(std::move(ctx));
  // Float16 mode for every other model, by its size: the importer's casts and conversions too.
  const bool fp16 = bytes.size() % 2 == 0;
  onnx_import::Importer(m, graph, concrete_shapes(m.inputs), {}, true, fp16).build();
}

class LoadRobustness : public GpuTest {
 protected:
  void SetUp() override {
    GpuTest::SetUp();
    if (!fs::exists(kTestData)) GTEST_SKIP() << "no ONNX test data at " << kTestData;
  }
};

}  // namespace vkgraph::testing
