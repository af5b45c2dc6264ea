// libFuzzer target for the .npy decoder (src/io/tensor_io.cpp), which reads the CLI's --input
// files and the Python package's arrays. Every input must decode or fail with a
// vkgraph::Error; a tensor that decodes must also survive encode_npy and decode again
// unchanged, so a decoder that accepts what it cannot describe is a finding too.
// See fuzz/README.md.
#include <cstdint>
#include <cstdlib>
#include <span>

#include "vkgraph/error.h"
#include "vkgraph/tensor_io.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace vkgraph;
  HostTensor tensor;
  try {
    tensor = decode_npy(std::span(data, size), "fuzz input");
  } catch (const Error& e) {
    if (e.message().empty()) std::abort();
    return 0;
  }
  // Outside the try: the round trip of an accepted tensor must not fail.
  const HostTensor again = decode_npy(encode_npy(tensor), "round trip");
  if (again.dtype != tensor.dtype || again.shape != tensor.shape || again.bytes != tensor.bytes)
    std::abort();
  return 0;
}
