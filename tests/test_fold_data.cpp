// Host evaluation of NonMaxSuppression and Unique (fold_data.cpp): the cases ONNX's
// conformance data leaves out, checked against hand-computed results.
#include <gtest/gtest.h>

#include <vector>

#include "expect_error.h"
#include "onnx/fold.h"
#include "vkgraph/error.h"

namespace vkgraph::fold {
namespace {

using vkgraph::testing::expect_error;

HostTensor f32(Shape shape, std::vector<float> v) {
  return HostTensor::from(DType::Float32, std::move(shape), v);
}
HostTensor i64(Shape shape, std::vector<int64_t> v) {
  return HostTensor::from(DType::Int64, std::move(shape), v);
}
std::vector<int64_t> ints(const HostTensor& t) {
  return std::vector<int64_t>(t.data<int64_t>(), t.data<int64_t>() + t.numel());
}

std::vector<HostTensor> nms(const HostTensor& boxes, const HostTensor& scores, int64_t max_boxes,
                            float iou, const HostTensor* score_threshold, int64_t center = 0) {
  const HostTensor m = i64({1}, {max_boxes});
  const HostTensor t = f32({1}, {iou});
  Attrs a;
  a.ints["center_point_box"] = center;
  return evaluate("NonMaxSuppression", a, {&boxes, &scores, &m, &t, score_threshold}, 11);
}

TEST(FoldNms, PerClassSelectionAndLimits) {
  // Box 1 overlaps box 0 by IoU 0.81/1.19; box 2 is disjoint. Class 1 prefers box 1.
  const HostTensor boxes = f32({1, 3, 4}, {0, 0, 1, 1, 0.1f, 0, 1, 0.9f, 5, 5, 6, 6});
  const HostTensor scores = f32({1, 2, 3}, {0.9f, 0.8f, 0.7f, 0.1f, 0.95f, 0.2f});
  std::vector<HostTensor> r = nms(boxes, scores, 3, 0.5f, nullptr);
  EXPECT_EQ(r[0].shape, (Shape{4, 3}));
  EXPECT_EQ(ints(r[0]), (std::vector<int64_t>{0, 0, 0, 0, 0, 2, 0, 1, 1, 0, 1, 2}));
  // A threshold above the overlap keeps all three; max 1 keeps the best per class.
  EXPECT_EQ(nms(boxes, scores, 3, 0.9f, nullptr)[0].shape, (Shape{6, 3}));
  EXPECT_EQ(ints(nms(boxes, scores, 1, 0.5f, nullptr)[0]),
            (std::vector<int64_t>{0, 0, 0, 0, 1, 1}));
  // Max 0 (the default) selects nothing; a score threshold is strict.
  EXPECT_EQ(nms(boxes, scores, 0, 0.5f, nullptr)[0].shape, (Shape{0, 3}));
  const HostTensor threshold = f32({1}, {0.8f});
  EXPECT_EQ(ints(nms(boxes, scores, 3, 0.5f, &threshold)[0]),
            (std::vector<int64_t>{0, 0, 0, 0, 1, 1}));
}

TEST(FoldNms, EqualScoresKeepBoxOrderAndDegenerateBoxesNeverSuppress) {
  // Identical boxes with equal scores: the first wins. A zero-area box is kept beside it.
  const HostTensor boxes = f32({1, 3, 4}, {0, 0, 1, 1, 0, 0, 1, 1, 0, 0, 0, 1});
  const HostTensor scores = f32({1, 1, 3}, {0.5f, 0.5f, 0.5f});
  EXPECT_EQ(ints(nms(boxes, scores, 5, 0.0f, nullptr)[0]),
            (std::vector<int64_t>{0, 0, 0, 0, 0, 2}));
}

TEST(FoldNms, CenterPointFormat) {
  // [xc, yc, w, h]: the second box is the first shifted by half its width (IoU 1/3).
  const HostTensor boxes = f32({1, 2, 4}, {0.5f, 0.5f, 1, 1, 1, 0.5f, 1, 1});
  const HostTensor scores = f32({1, 1, 2}, {0.6f, 0.9f});
  EXPECT_EQ(ints(nms(boxes, scores, 2, 0.3f, nullptr, 1)[0]), (std::vector<int64_t>{0, 0, 1}));
  EXPECT_EQ(ints(nms(boxes, scores, 2, 0.34f, nullptr, 1)[0]),
            (std::vector<int64_t>{0, 0, 1, 0, 0, 0}));
}

TEST(FoldNms, BadInputsAreErrors) {
  const HostTensor boxes = f32({1, 2, 4}, std::vector<float>(8, 0.f));
  const HostTensor scores = f32({1, 1, 3}, {0, 0, 0});
  expect_error([&] { nms(boxes, scores, 1, 0.5f, nullptr); }, ErrorKind::InvalidArgument,
               {"NonMaxSuppression", "do not match"});
  const HostTensor ok_scores = f32({1, 1, 2}, {0, 0});
  expect_error([&] { nms(boxes, ok_scores, 1, 1.5f, nullptr); }, ErrorKind::InvalidArgument,
               {"NonMaxSuppression", "iou_threshold"});
  expect_error([&] { nms(boxes, ok_scores, 1, 0.5f, nullptr, 2); }, ErrorKind::InvalidArgument,
               "center_point_box");
}

std::vector<HostTensor> unique(const HostTensor& x, int64_t sorted, const int64_t* axis) {
  Attrs a;
  a.ints["sorted"] = sorted;
  if (axis) a.ints["axis"] = *axis;
  return evaluate("Unique", a, {&x}, 11);
}

TEST(FoldUnique, FourOutputsSortedAndUnsorted) {
  const HostTensor x = i64({2, 3}, {3, 1, 3, -2, 1, 3});
  std::vector<HostTensor> s = unique(x, 1, nullptr);
  ASSERT_EQ(s.size(), 4u);
  EXPECT_EQ(ints(s[0]), (std::vector<int64_t>{-2, 1, 3}));
  EXPECT_EQ(ints(s[1]), (std::vector<int64_t>{3, 1, 0}));
  EXPECT_EQ(ints(s[2]), (std::vector<int64_t>{2, 1, 2, 0, 1, 2}));
  EXPECT_EQ(ints(s[3]), (std::vector<int64_t>{1, 2, 3}));
  std::vector<HostTensor> u = unique(x, 0, nullptr);
  EXPECT_EQ(ints(u[0]), (std::vector<int64_t>{3, 1, -2}));
  EXPECT_EQ(ints(u[1]), (std::vector<int64_t>{0, 1, 3}));
  EXPECT_EQ(ints(u[2]), (std::vector<int64_t>{0, 1, 0, 2, 1, 0}));
  EXPECT_EQ(ints(u[3]), (std::vector<int64_t>{3, 2, 1}));
}

TEST(FoldUnique, SlicesAlongAnInnerAxisUnsorted) {
  // Columns of [[1, 0, 1], [2, 5, 2]]: column 2 repeats column 0.
  const HostTensor x = f32({2, 3}, {1, 0, 1, 2, 5, 2});
  const int64_t axis = -1;
  std::vector<HostTensor> u = unique(x, 0, &axis);
  EXPECT_EQ(u[0].shape, (Shape{2, 2}));
  const float* y = u[0].data<float>();
  EXPECT_EQ(std::vector<float>(y, y + 4), (std::vector<float>{1, 0, 2, 5}));
  EXPECT_EQ(ints(u[1]), (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(ints(u[2]), (std::vector<int64_t>{0, 1, 0}));
  EXPECT_EQ(ints(u[3]), (std::vector<int64_t>{2, 1}));
  const int64_t bad = 2;
  expect_error([&] { unique(x, 1, &bad); }, ErrorKind::InvalidArgument, "Unique");
}

TEST(FoldUnique, EmptyInput) {
  std::vector<HostTensor> s = unique(f32({0}, {}), 1, nullptr);
  EXPECT_EQ(s[0].shape, (Shape{0}));
  EXPECT_EQ(s[2].shape, (Shape{0}));
}

}  // namespace
}  // namespace vkgraph::fold
