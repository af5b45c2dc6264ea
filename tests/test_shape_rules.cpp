// The host-only shape rules that both constant folding and the device ops use.
#include <gtest/gtest.h>

#include <limits>

#include "core/shape_rules.h"
#include "expect_error.h"

namespace vkgraph {
namespace {

using testing::expect_error;
using Strides = std::vector<int64_t>;

TEST(ShapeRules, CeilDivDoesNotOverflow) {
  EXPECT_EQ(shapes::ceil_div(0, 4), 0u);
  EXPECT_EQ(shapes::ceil_div(7, 4), 2u);
  EXPECT_EQ(shapes::ceil_div(8, 4), 2u);
  const uint64_t max = std::numeric_limits<uint64_t>::max();
  EXPECT_EQ(shapes::ceil_div(max, 2), max / 2 + 1);  // (a + b - 1) / b would wrap to 0
}

TEST(ShapeRules, ContiguousStrides) {
  EXPECT_EQ(shapes::contiguous_strides({2, 3, 4}), (Strides{12, 4, 1}));
  EXPECT_EQ(shapes::contiguous_strides({}), Strides{});
  EXPECT_EQ(shapes::contiguous_strides({5}), Strides{1});
  // An empty tensor with huge dims: the overflowing strides are 0, not wrapped values.
  const int64_t huge = int64_t{1} << 62;
  EXPECT_EQ(shapes::contiguous_strides({huge, huge, 0}), (Strides{0, 0, 1}));
}

TEST(ShapeRules, Broadcast) {
  const Shape a{2, 1, 4}, b{3, 1}, c{4}, d{3, 5};
  EXPECT_EQ(shapes::broadcast({&a, &b}), (Shape{2, 3, 4}));
  EXPECT_EQ(shapes::broadcast({&a, &b, &c}), (Shape{2, 3, 4}));
  EXPECT_EQ(shapes::broadcast({&c}), c);
  const Shape scalar{}, empty{0, 1};
  EXPECT_EQ(shapes::broadcast({&scalar, &a}), a);
  EXPECT_EQ(shapes::broadcast({&empty, &c}), (Shape{0, 4}));  // 0 against 1
  const Shape e{3, 1};
  EXPECT_EQ(shapes::broadcast({&empty, &e}), std::nullopt);  // 0 against 3
  EXPECT_EQ(shapes::broadcast({&a, &d}), std::nullopt);      // 4 against 5
}

TEST(ShapeRules, BroadcastStrides) {
  EXPECT_EQ(shapes::broadcast_strides({3, 1}, {2, 3, 4}), (Strides{0, 1, 0}));
  EXPECT_EQ(shapes::broadcast_strides({2, 3, 4}, {2, 3, 4}), (Strides{12, 4, 1}));
  EXPECT_EQ(shapes::broadcast_strides({}, {2, 3}), (Strides{0, 0}));
  // A size-1 dim that is not broadcast keeps its contiguous stride.
  EXPECT_EQ(shapes::broadcast_strides({1, 4}, {1, 4}), (Strides{4, 1}));
}

TEST(ShapeRules, NormalizeAxis) {
  EXPECT_EQ(shapes::normalize_axis(-1, 3, "op"), 2);
  EXPECT_EQ(shapes::normalize_axis(0, 3, "op"), 0);
  expect_error([] { shapes::normalize_axis(3, 3, "Gather"); }, ErrorKind::InvalidArgument,
               "Gather: axis 3 out of range for rank 3");
  expect_error([] { shapes::normalize_axis(0, 0, "concat"); }, ErrorKind::InvalidArgument,
               "rank 0");
}

TEST(ShapeRules, ReshapeResolvesZeroAndMinusOne) {
  const Shape in{2, 3, 4};
  EXPECT_EQ(shapes::resolve_reshape(in, {0, -1}, false, "op"), (Shape{2, 12}));
  EXPECT_EQ(shapes::resolve_reshape(in, {-1}, false, "op"), Shape{24});
  EXPECT_EQ(shapes::resolve_reshape(in, {4, 0, 2}, false, "op"), (Shape{4, 3, 2}));
  EXPECT_EQ(shapes::resolve_reshape({0, 3}, {3, 0}, true, "op"), (Shape{3, 0}));
  EXPECT_EQ(shapes::resolve_reshape({0, 3}, {0, 3}, false, "op"), (Shape{0, 3}));
  EXPECT_EQ(shapes::resolve_reshape({}, {1, 1}, false, "op"), (Shape{1, 1}));
}

TEST(ShapeRules, ReshapeErrorsNameTheOpAndTheProblem) {
  const Shape in{2, 3, 4};
  const ErrorKind bad = ErrorKind::InvalidArgument;
  expect_error(
      [&] {
        shapes::resolve_reshape(in, {-1, -1}, false, "reshape");
      },
      bad, {"reshape:", "more than one -1"});
  expect_error(
      [&] {
        shapes::resolve_reshape(in, {0, 0, 0, 0}, false, "reshape");
      },
      bad, {"position 3", "no matching dim"});
  expect_error(
      [&] {
        shapes::resolve_reshape(in, {-2, -12}, false, "reshape");
      },
      bad, "negative dim");
  expect_error(
      [&] {
        shapes::resolve_reshape(in, {5, -1}, false, "Reshape");
      },
      bad, {"Reshape:", "cannot infer"});
  expect_error(
      [&] {
        shapes::resolve_reshape(in, {5, 5}, false, "reshape");
      },
      bad, {"reshape: input [2, 3, 4] has 24 elements", "cannot reshape", "25 elements"});
  expect_error([&] { shapes::resolve_reshape(in, {0, 24}, true, "reshape"); }, bad, "elements");
  expect_error(
      [&] {
        shapes::resolve_reshape({0, 3}, {-1, 0}, true, "Reshape");
      },
      bad, "both -1 and 0 with allowzero");
  const int64_t big = int64_t{1} << 40;
  expect_error(
      [&] {
        shapes::resolve_reshape(in, {big, -1, big}, false, "Reshape");
      },
      bad, {"Reshape:", "overflows int64"});
}

TEST(ShapeRules, PermDefaultsToReversedAndMustBePermutation) {
  EXPECT_EQ(shapes::resolve_perm({2, 3, 4}, {}, "op"), (Strides{2, 1, 0}));
  EXPECT_EQ(shapes::resolve_perm({2, 3, 4}, {1, 2, 0}, "op"), (Strides{1, 2, 0}));
  EXPECT_EQ(shapes::resolve_perm({}, {}, "op"), Strides{});
  for (const Strides& bad : {Strides{0, 0, 1}, Strides{0, 1}, Strides{-1, 0, 1}, Strides{0, 1, 3}})
    expect_error(
        [&] {
          shapes::resolve_perm({2, 3, 4}, bad, "transpose");
        },
        ErrorKind::InvalidArgument,
        {"transpose: perm " + shape_str(bad), "not a permutation of the dims of [2, 3, 4]"});
}

TEST(ShapeRules, GatherShapeReplacesTheAxisByTheIndexShape) {
  EXPECT_EQ(shapes::gather_shape({5, 6, 7}, {2, 3}, 1), (Shape{5, 2, 3, 7}));
  EXPECT_EQ(shapes::gather_shape({5, 6}, {}, 0), Shape{6});
  EXPECT_EQ(shapes::gather_shape({5}, {4}, 0), Shape{4});
}

TEST(ShapeRules, ConcatNeedsEqualDimsOffTheAxis) {
  EXPECT_TRUE(shapes::concat_compatible({2, 3, 4}, {2, 7, 4}, 1));
  EXPECT_TRUE(shapes::concat_compatible({2, 3}, {0, 3}, 0));
  EXPECT_FALSE(shapes::concat_compatible({2, 3, 4}, {2, 3, 5}, 1));
  EXPECT_FALSE(shapes::concat_compatible({2, 3, 4}, {2, 3}, 1));
}

TEST(ShapeRules, ReducedShapeKeepsOrDropsReducedDims) {
  EXPECT_EQ(shapes::reduced_shape({2, 3, 4}, {false, true, false}, true), (Shape{2, 1, 4}));
  EXPECT_EQ(shapes::reduced_shape({2, 3, 4}, {false, true, false}, false), (Shape{2, 4}));
  EXPECT_EQ(shapes::reduced_shape({2, 3}, {true, true}, false), Shape{});
  EXPECT_EQ(shapes::reduced_shape({2, 0}, {false, true}, true), (Shape{2, 1}));
}

TEST(ShapeRules, SliceClampsAndCounts) {
  using R = shapes::SliceRange;
  auto same = [](R a, R b) { return a.first == b.first && a.count == b.count && a.step == b.step; };
  const int64_t kMax = std::numeric_limits<int64_t>::max();
  const int64_t kMin = std::numeric_limits<int64_t>::min();
  EXPECT_TRUE(same(shapes::resolve_slice(6, 1, kMax, 2), R{1, 3, 2}));
  EXPECT_TRUE(same(shapes::resolve_slice(6, -2, kMax, 1), R{4, 2, 1}));
  EXPECT_TRUE(same(shapes::resolve_slice(6, kMax, kMin, -1), R{5, 6, -1}));
  EXPECT_TRUE(same(shapes::resolve_slice(6, -1, -4, -2), R{5, 2, -2}));
  EXPECT_TRUE(same(shapes::resolve_slice(6, 4, 1, 1), R{0, 0, 1}));
  EXPECT_TRUE(same(shapes::resolve_slice(6, 100, 200, 1), R{0, 0, 1}));
  // A step larger than the dim takes one element and is reported as 1 (never multiplied).
  EXPECT_TRUE(same(shapes::resolve_slice(6, 0, 6, kMax), R{0, 1, 1}));
  EXPECT_TRUE(same(shapes::resolve_slice(6, 5, -100, kMin), R{5, 1, 1}));
  EXPECT_TRUE(same(shapes::resolve_slice(0, 0, 1, 1), R{0, 0, 1}));
  EXPECT_TRUE(same(shapes::resolve_slice(0, -1, -2, -1), R{0, 0, 1}));
}

}  // namespace
}  // namespace vkgraph
