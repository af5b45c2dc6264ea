#pragma once
// The description of one model input or output: what Session::inputs()/outputs() report and
// what the host-only loader (parse_model) reads from the file. Host-only, so that describing
// a model never pulls in Vulkan.
#include <string>

#include "vkgraph/types.h"

namespace vkgraph {

struct ValueInfo {
  std::string name;
  Shape shape;  // -1 marks a dynamic dimension
  DType dtype;
  bool needs_value = false;  // inputs only: the graph is specialised to this input's values
};

}  // namespace vkgraph
