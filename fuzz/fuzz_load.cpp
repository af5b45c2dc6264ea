// libFuzzer target for the ONNX loader's host-only stage: parse, describe the inputs and
// outputs, import into a ComputeGraph that is never prepared, so no GPU work runs per input.
// Building a graph still needs a Context (it reads device limits); one is made at start-up on
// whatever Vulkan device is there. Any outcome but success or a vkgraph::Error with a message
// is a finding: other exceptions reach std::terminate and libFuzzer reports the crash.
// See fuzz/README.md for how to build and run it.
#include <cstdint>
#include <cstdlib>

#include "onnx/importer.h"
#include "onnx/load.h"
#include "vkgraph/error.h"
#include "vkgraph/vk/context.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace vkgraph;
  // Never destroyed: the Vulkan driver stays loaded until LeakSanitizer's exit check, so the
  // driver's own leaks keep their module names and tools/lsan.supp drops them (destroying the
  // Context at exit unloads the driver first, and its leaks show as "<unknown module>").
  static const std::shared_ptr<vk::Context>& context =
      *new std::shared_ptr<vk::Context>(vk::Context::create({}));
  try {
    // `data` outlives `model`: large weights are read in place, as from a Session's file.
    onnx_import::ParsedModel model = onnx_import::parse_model(
        data, size, "fuzz input", "", std::shared_ptr<const void>(data, [](const void*) {}));
    std::map<std::string, Shape> shapes;  // dynamic dims fixed at 1, as a caller would
    for (const ValueInfo& in : model.inputs) {
      Shape s = in.shape;
      for (int64_t& d : s) d = d < 0 ? 1 : d;
      shapes[in.name] = s;
    }
    ComputeGraph graph(context);
    onnx_import::Importer(model, graph, shapes, {}, true).build();
  } catch (const Error& e) {
    if (e.message().empty()) std::abort();
  }
  return 0;
}
