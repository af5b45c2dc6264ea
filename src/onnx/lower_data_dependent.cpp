// NonMaxSuppression and Unique: how many values they output depends on their input values, so
// they are evaluated on the host (fold_data.cpp) once those are known: constants, or model
// inputs the graph is specialised to (NeedsInputValues). The importer folds them before any
// lowering runs; reaching a lowering means an input is computed on the device.
#include "onnx/importer.h"

namespace vkgraph::onnx_import {
namespace {

std::vector<Value> lower_host_evaluated(Importer& im, const onnx::NodeProto& node,
                                        const fold::Attrs&) {
  im.require_host_values(node, {0, 1, 2, 3, 4});
  for (size_t i = 0; i < im.num_inputs(node); ++i)
    if (im.has_input(node, i) && !im.constant(node, i))
      im.fail(node, "input " + std::to_string(i) + " ('" + node.input(i) +
                        "') is computed on the device, but the output size depends on its "
                        "values; this op runs on the host and needs them known at load time");
  im.fail(node, "could not be evaluated on the host (output too large to fold)");
}

}  // namespace

void register_data_dependent(LoweringTable& t) {
  t["NonMaxSuppression"] = lower_host_evaluated;
  t["Unique"] = lower_host_evaluated;
}

}  // namespace vkgraph::onnx_import
