// libFuzzer target for the TensorProto .pb decoder (src/onnx/onnx_tensor.cpp), which reads the
// conformance cases' inputs and expected outputs and the CLI's .pb inputs. Every input must
// decode or fail with a vkgraph::Error; a tensor that decodes must also survive
// tensor_to_proto, serialisation and decode_tensor_pb again unchanged. See fuzz/README.md.
#include <cstdint>
#include <cstdlib>
#include <span>
#include <string>

#include "vkgraph/error.h"
#include "vkgraph/onnx_tensor.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace vkgraph;
  HostTensor tensor;
  std::string name;
  try {
    tensor = onnx_io::decode_tensor_pb(std::span(data, size), "fuzz input", &name);
  } catch (const Error& e) {
    if (e.message().empty()) std::abort();
    return 0;
  }
  // Outside the try: the round trip of an accepted tensor must not fail.
  const std::string bytes = onnx_io::tensor_to_proto(tensor, name).SerializeAsString();
  std::string name_again;
  const HostTensor again = onnx_io::decode_tensor_pb(
      std::span(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()), "round trip",
      &name_again);
  if (again.dtype != tensor.dtype || again.shape != tensor.shape || again.bytes != tensor.bytes ||
      name_again != name)
    std::abort();
  return 0;
}
