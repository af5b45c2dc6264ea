// Blocks whose Pad, Slice, Reshape, Expand, Tile, Resize, Range, ConstantOfShape and TopK
// operands are computed from x.shape inside the graph (Swin's window attention, ViT's
// attention as PyTorch 2 exports it, one of each other consumer), exported by PyTorch's legacy
// exporter at several opsets (tools/models/make_shape_chains.py). Each must load with static
// shapes, match PyTorch's output (fp32, and float16 mode where the device has it), and leave
// none of the nodes computed from shapes alone on the device: those fold at load.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "gpu_test.h"
#include "shape_test_util.h"
#include "vkgraph/graph/compute_graph.h"
#include "vkgraph/session.h"
#include "vkgraph/tensor_io.h"

namespace vkgraph::testing {
namespace {

namespace fs = std::filesystem;

const fs::path kDir = fs::path(VKGRAPH_SOURCE_DIR) / "tests" / "data" / "shape_chains";

std::vector<std::string> read_lines(const fs::path& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) lines.push_back(line);
  return lines;
}

class ShapeChains : public GpuTest, public ::testing::WithParamInterface<std::string> {};

TEST_P(ShapeChains, FoldAtLoadAndMatchPyTorch) {
  const std::string name = GetParam();  // e.g. swin_window_opset17
  const std::string block = name.substr(0, name.rfind("_opset"));
  const HostTensor x = read_npy((kDir / (block + "_input.npy")).string());
  const HostTensor want = read_npy((kDir / (block + "_output.npy")).string());
  const std::vector<std::string> folded = read_lines(kDir / (name + ".folded.txt"));
  ASSERT_FALSE(folded.empty()) << "the generator found no shape chain in " << name;

  for (bool fp16 : {false, true}) {
    if (fp16 && !context()->features().storage_buffer_16bit) continue;
    SCOPED_TRACE(fp16 ? "fp16" : "fp32");
    SessionOptions options;
    options.context = context();
    options.fp16 = fp16;
    options.graph.profile = true;  // node_times() lists every device node's label
    Session session((kDir / (name + ".onnx")).string(), options);
    HostTensor y = session.run({{"x", x}}).at(0);
    expect_near(y, want, fp16 ? 1e-2f : 1e-4f);

    // Labels read "<op> '<model node name>'"; fused nodes carry their first node's name.
    const std::vector<NodeTime> nodes = session.graph()->node_times();
    ASSERT_FALSE(nodes.empty());
    for (const std::string& node : folded) {
      const std::string quoted = "'" + node + "'";
      const auto on_device = std::find_if(nodes.begin(), nodes.end(), [&](const NodeTime& t) {
        return t.label.find(quoted) != std::string::npos;
      });
      EXPECT_TRUE(on_device == nodes.end())
          << node << " is computed from shapes alone but ran on the device as " << on_device->label;
    }
  }
}

std::vector<std::string> models() {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(kDir))
    if (entry.path().extension() == ".onnx") names.push_back(entry.path().stem().string());
  std::sort(names.begin(), names.end());
  return names;
}

INSTANTIATE_TEST_SUITE_P(Exported, ShapeChains, ::testing::ValuesIn(models()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return info.param;
                         });

}  // namespace
}  // namespace vkgraph::testing
