// A torchvision detection model end to end, post-processing included: SSDLite (MobileNetV3
// backbone, SSDLite head, score threshold, per-class TopK, batched NMS, the cut to
// detections_per_img), small and with random weights, exported by the legacy exporter with
// PyTorch's outputs (tools/models/make_detection.py). Its TopK sizes and NMS selection depend on
// values the graph computes, so the Session runs segments and reads them back before the
// model's graph; a second run replays them. Outputs arrive in poisoned app memory.
#include <cstring>

#include "model_builder.h"
#include "shape_test_util.h"
#include "vkgraph/tensor_io.h"

namespace vkgraph::testing {
namespace {

class Detection : public GpuTest {
 protected:
  // Runs through run_bound into outputs whose bytes are all 0xFF (NaN as float32, -1 as int64),
  // so that an element the graph does not write shows.
  std::vector<HostTensor> run_poisoned(Session& s, HostTensor& image) {
    std::map<std::string, HostBinding> in{
        {"images", HostBinding{image.bytes.data(), image.bytes.size(), image.dtype, image.shape}}};
    std::vector<ValueInfo> outs = s.prepare_bound(in);
    std::vector<HostTensor> results;
    std::map<std::string, HostBinding> out;
    for (const ValueInfo& o : outs) {
      HostTensor& t = results.emplace_back(HostTensor::uninitialized(o.dtype, o.shape));
      std::memset(t.bytes.data(), 0xFF, t.bytes.size());
      out[o.name] = HostBinding{t.bytes.data(), t.bytes.size(), t.dtype, t.shape};
    }
    s.run_bound(in, out);
    return results;
  }
};

TEST_F(Detection, SsdLiteMatchesPyTorch) {
  const std::string base = std::string(VKGRAPH_SOURCE_DIR) + "/tests/models/ssdlite_small";
  HostTensor image = read_npy(base + "_input.npy");
  HostTensor boxes = read_npy(base + "_boxes.npy"), scores = read_npy(base + "_scores.npy"),
             labels = read_npy(base + "_labels.npy");
  // The export script picked an input whose deciding scores differ by more than 1e-4
  // (relative) and whose IoUs are more than 5e-3 from the NMS threshold, so that float32
  // rounding cannot reorder or swap detections: the labels and their number must be exact.
  ASSERT_GT(labels.numel(), 1);
  SessionOptions options;
  options.context = context();
  Session s(base + ".onnx", options);
  int builds = 0;
  for (int run = 0; run < 2; ++run) {
    SCOPED_TRACE("run " + std::to_string(run));
    std::vector<HostTensor> got = run_poisoned(s, image);
    ASSERT_EQ(got.size(), 3u);
    expect_same(got[2], labels);
    expect_near(got[1], scores, 1e-5f);
    expect_near(got[0], boxes, 1e-4f);  // pixels, up to 128: 1e-4 * (1 + |x|) is at most 0.013
    // The second run replays the segments, finds the same values and rebuilds nothing.
    if (run == 0) {
      builds = s.load_times().builds;
      EXPECT_GT(builds, 1);  // the model's graph and at least one segment
    } else {
      EXPECT_EQ(s.load_times().builds, builds);
    }
  }
}

}  // namespace
}  // namespace vkgraph::testing
