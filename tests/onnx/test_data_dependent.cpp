// Ops whose output size depends on their input values (NonMaxSuppression, Unique) run on the
// host: on model inputs the session specialises the graph to their values (re-planning when
// they change); on values computed on the device they are a clear error naming the node.
#include "model_builder.h"

namespace vkgraph::testing {
namespace {

constexpr int kFloat = onnx::TensorProto::FLOAT;
constexpr int kInt64 = onnx::TensorProto::INT64;

TEST_F(GpuTest, UniqueOfAModelInputFollowsItsValues) {
  ModelBuilder m(11);
  m.input("x", kFloat, {5});
  m.output("y", kFloat);
  for (const char* name : {"indices", "inverse", "counts"}) m.output(name, kInt64);
  m.node("Unique", {"x"}, {"y", "indices", "inverse", "counts"});
  Session s = m.session();
  auto r =
      s.run({{"x", HostTensor::from(DType::Float32, {5}, std::vector<float>{2, -1, 2, 7, -1})}});
  ASSERT_EQ(r.size(), 4u);
  EXPECT_EQ(r[0].shape, (Shape{3}));
  EXPECT_EQ(std::vector<float>(r[0].data<float>(), r[0].data<float>() + 3),
            (std::vector<float>{-1, 2, 7}));
  EXPECT_EQ(std::vector<int64_t>(r[2].data<int64_t>(), r[2].data<int64_t>() + 5),
            (std::vector<int64_t>{1, 0, 1, 2, 0}));
  // New values, new output size.
  r = s.run({{"x", HostTensor::from(DType::Float32, {5}, std::vector<float>{4, 4, 4, 4, 4})}});
  EXPECT_EQ(r[0].shape, (Shape{1}));
  EXPECT_EQ(r[3].data<int64_t>()[0], 5);
}

// Boxes computed on the device: the Session reads them back (a segment, docs/notes/staged.md)
// and NonMaxSuppression runs on the host as for boxes fed directly. Two boxes that overlap
// entirely: only the higher-scoring one is kept, whichever order the scores give.
TEST_F(GpuTest, NonMaxSuppressionOfComputedBoxesRunsThroughASegment) {
  ModelBuilder m(11);
  m.input("boxes", kFloat, {1, 2, 4});
  m.input("scores", kFloat, {1, 1, 2});
  m.output("selected", kInt64);
  onnx::TensorProto max_boxes;
  max_boxes.set_name("max_boxes");
  max_boxes.set_data_type(onnx::TensorProto::INT64);
  max_boxes.add_int64_data(2);
  m.initializer(max_boxes);
  m.node("Relu", {"boxes"}, {"positive"});
  m.node("NonMaxSuppression", {"positive", "scores", "max_boxes"}, {"selected"});
  Session s = m.session();
  HostTensor boxes =
      HostTensor::from(DType::Float32, {1, 2, 4}, std::vector<float>{0, 0, 1, 1, 0, 0, 1, 1});
  for (int first : {0, 1}) {
    std::vector<float> score{0.2f, 0.2f};
    score[first] = 0.9f;
    auto r =
        s.run({{"boxes", boxes}, {"scores", HostTensor::from(DType::Float32, {1, 1, 2}, score)}});
    ASSERT_EQ(r[0].shape, (Shape{1, 3}));
    EXPECT_EQ(r[0].data<int64_t>()[2], first);
  }
}

}  // namespace
}  // namespace vkgraph::testing
