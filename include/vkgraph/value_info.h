#pragma once
// The description of one model input or output: what Session::inputs()/outputs() report and
// what the host-only loader (parse_model) reads from the file. Host-only, so that describing
// a model never pulls in Vulkan.
#include <cstdint>
#include <string>
#include <vector>

#include "vkgraph/types.h"

namespace vkgraph {

struct ValueInfo {
  std::string name;
  Shape shape;               // -1 marks a dynamic dimension
  DType dtype;               // what vkgraph computes in and Session::run takes and returns
  bool needs_value = false;  // inputs only: the graph is specialised to this input's values
  // As the model declares it: the ONNX TensorProto.DataType (UINT8, DOUBLE, ...; 0 when the
  // model leaves it out), which `dtype` may widen (onnx_tensor.h), and the symbolic name of
  // each dimension ("batch"; empty for fixed or unnamed dims). For bindings that hand users
  // the declared types and names, as onnxruntime does.
  int32_t onnx_type = 0;
  std::vector<std::string> dim_names;
};

}  // namespace vkgraph
