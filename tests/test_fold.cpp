// Constant-folding evaluators: hand-written edge cases, then the ONNX backend conformance
// cases (libonnx-testdata) for every single-node test whose op can be folded.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "expect_error.h"
#include "onnx/fold.h"
#include "vkgraph/error.h"
#include "vkgraph/file_io.h"
#include "vkgraph/onnx_tensor.h"

namespace vkgraph::fold {
namespace {

namespace fs = std::filesystem;
using vkgraph::testing::expect_error;

const std::string kTestData = VKGRAPH_ONNX_TESTDATA_DIR;
constexpr int kOpset = 17;

HostTensor i64(Shape shape, std::vector<int64_t> v) {
  return HostTensor::from(DType::Int64, std::move(shape), v);
}
HostTensor i64(std::vector<int64_t> v) {  // 1-D
  const int64_t n = static_cast<int64_t>(v.size());
  return i64({n}, std::move(v));
}
HostTensor i32(Shape shape, std::vector<int32_t> v) {
  return HostTensor::from(DType::Int32, std::move(shape), v);
}
HostTensor f32(Shape shape, std::vector<float> v) {
  return HostTensor::from(DType::Float32, std::move(shape), v);
}
HostTensor boolean(Shape shape, std::vector<uint8_t> v) {
  return HostTensor::from(DType::Bool, std::move(shape), v);
}

// Pointer to a tensor, temporaries included: it lives until the end of the full expression,
// which covers the eval() call it is written in.
const HostTensor* ptr(const HostTensor& t) {
  return &t;
}

// Evaluates a single-output op; inputs by reference, so temporaries work.
HostTensor eval(const std::string& op, std::vector<const HostTensor*> inputs,
                const Attrs& attrs = {}, int opset = kOpset) {
  std::vector<HostTensor> out = evaluate(op, attrs, inputs, opset);
  EXPECT_EQ(out.size(), 1u);
  return out.at(0);
}

std::vector<int64_t> ints(const HostTensor& t) {
  std::vector<int64_t> v;
  for (int64_t i = 0; i < t.numel(); ++i) v.push_back(t.as_int(i));
  return v;
}

// ---- hand-written cases -----------------------------------------------------------------------

TEST(Fold, ShapeSizeWithPlaceholderInput) {
  HostTensor placeholder;  // shape only: a runtime tensor whose static shape is known
  placeholder.dtype = DType::Float16;
  placeholder.shape = {2, 3, 5, 7};
  EXPECT_EQ(ints(eval("Shape", {&placeholder})), (std::vector<int64_t>{2, 3, 5, 7}));
  Attrs a;
  a.ints = {{"start", -3}, {"end", -1}};
  EXPECT_EQ(ints(eval("Shape", {&placeholder}, a)), (std::vector<int64_t>{3, 5}));
  a.ints = {{"start", 9}};
  EXPECT_EQ(eval("Shape", {&placeholder}, a).shape, Shape{0});
  const HostTensor size = eval("Size", {&placeholder});
  EXPECT_EQ(size.shape, Shape{});
  EXPECT_EQ(size.as_int(0), 210);
}

TEST(Fold, GatherNegativeIndicesAnyAxis) {
  const HostTensor x = i64({2, 3}, {0, 1, 2, 10, 11, 12});
  Attrs a;
  a.ints["axis"] = 1;
  const HostTensor out = eval("Gather", {&x, ptr(i64({2}, {-1, 0}))}, a);
  EXPECT_EQ(out.shape, (Shape{2, 2}));
  EXPECT_EQ(ints(out), (std::vector<int64_t>{2, 0, 12, 10}));
  const HostTensor scalar_index = i32({}, {-2});
  const HostTensor row = eval("Gather", {&x, &scalar_index});  // axis 0, scalar index
  EXPECT_EQ(row.shape, Shape{3});
  EXPECT_EQ(ints(row), (std::vector<int64_t>{0, 1, 2}));
  const HostTensor bad = i64({1}, {3});
  expect_error(
      [&] {
        eval("Gather", {&x, &bad});
      },
      ErrorKind::InvalidArgument, "Gather: index 3 out of range");
}

TEST(Fold, SliceClampsAndNegativeSteps) {
  const HostTensor x = i64({6}, {0, 1, 2, 3, 4, 5});
  const int64_t kMax = std::numeric_limits<int64_t>::max();
  const int64_t kMin = std::numeric_limits<int64_t>::min();
  auto slice = [&](int64_t start, int64_t end, int64_t step) {
    const HostTensor s = i64({start}), e = i64({end}), ax = i64({0}), st = i64({step});
    return ints(eval("Slice", {&x, &s, &e, &ax, &st}));
  };
  EXPECT_EQ(slice(1, kMax, 2), (std::vector<int64_t>{1, 3, 5}));
  EXPECT_EQ(slice(-2, kMax, 1), (std::vector<int64_t>{4, 5}));
  EXPECT_EQ(slice(kMax, kMin, -1), (std::vector<int64_t>{5, 4, 3, 2, 1, 0}));
  EXPECT_EQ(slice(-1, -4, -2), (std::vector<int64_t>{5, 3}));
  EXPECT_EQ(slice(4, 1, 1), (std::vector<int64_t>{}));
  EXPECT_EQ(slice(100, 200, 1), (std::vector<int64_t>{}));
  EXPECT_EQ(slice(0, 6, kMax), (std::vector<int64_t>{0}));
  EXPECT_EQ(slice(5, -100, kMin), (std::vector<int64_t>{5}));
  expect_error([&] { slice(0, 1, 0); }, ErrorKind::InvalidArgument, "Slice: step");

  // Opset 1-9 form: attributes, no steps; negative axes.
  const HostTensor m = i64({2, 3}, {0, 1, 2, 3, 4, 5});
  Attrs a;
  a.int_lists = {{"starts", {1}}, {"ends", {3}}, {"axes", {-1}}};
  const HostTensor out = eval("Slice", {&m}, a, 9);
  EXPECT_EQ(out.shape, (Shape{2, 2}));
  EXPECT_EQ(ints(out), (std::vector<int64_t>{1, 2, 4, 5}));
}

TEST(Fold, ReshapeZeroMinusOneAllowzero) {
  const HostTensor x(DType::Float32, {2, 3, 4});
  EXPECT_EQ(eval("Reshape", {&x, ptr(i64({0, -1}))}).shape, (Shape{2, 12}));
  EXPECT_EQ(eval("Reshape", {&x, ptr(i64({-1}))}).shape, Shape{24});
  expect_error(
      [&] {
        eval("Reshape", {&x, ptr(i64({-1, -1}))});
      },
      ErrorKind::InvalidArgument, "more than one -1");
  expect_error(
      [&] {
        eval("Reshape", {&x, ptr(i64({5, -1}))});
      },
      ErrorKind::InvalidArgument, "cannot infer");
  // allowzero: 0 is a real zero-sized dim.
  const HostTensor empty(DType::Float32, {0, 3});
  Attrs a;
  a.ints["allowzero"] = 1;
  EXPECT_EQ(eval("Reshape", {&empty, ptr(i64({3, 0}))}, a).shape, (Shape{3, 0}));
  EXPECT_EQ(eval("Reshape", {&empty, ptr(i64({0, 3}))}).shape, (Shape{0, 3}));
}

TEST(Fold, IntegerDivisionTruncatesTowardZero) {
  const HostTensor a = i64({4}, {7, -7, 7, -7}), b = i64({4}, {2, 2, -2, -2});
  EXPECT_EQ(ints(eval("Div", {&a, &b})), (std::vector<int64_t>{3, -3, -3, 3}));
  const HostTensor min = i64({1}, {std::numeric_limits<int64_t>::min()}), m1 = i64({1}, {-1});
  EXPECT_EQ(ints(eval("Div", {&min, &m1})), ints(min));  // wraps, no UB
  const HostTensor zero = i64({1}, {0});
  expect_error(
      [&] {
        eval("Div", {&a, &zero});
      },
      ErrorKind::InvalidArgument, "Div: integer division by zero");
}

TEST(Fold, EveryComparisonOnFloatsAndIntegers) {
  // A NaN compares false with everything, as in NumPy.
  const HostTensor x = f32({4}, {1.f, 2.f, 3.f, NAN}), y = f32({4}, {2.f, 2.f, 2.f, 2.f});
  const HostTensor i = i32({3}, {1, 2, 3}), j = i32({1}, {2});
  const std::pair<const char*, std::vector<int64_t>> cases[] = {
      {"Equal", {0, 1, 0, 0}},       {"Less", {1, 0, 0, 0}},           {"Greater", {0, 0, 1, 0}},
      {"LessOrEqual", {1, 1, 0, 0}}, {"GreaterOrEqual", {0, 1, 1, 0}},
  };
  for (const auto& [op, want] : cases) {
    SCOPED_TRACE(op);
    EXPECT_EQ(ints(eval(op, {&x, &y})), want);
    EXPECT_EQ(ints(eval(op, {&i, &j})), std::vector<int64_t>(want.begin(), want.begin() + 3));
  }
}

TEST(Fold, BroadcastArithmeticAndComparisons) {
  const HostTensor a = i32({2, 1}, {1, 2}), b = i32({3}, {10, 20, 30});
  const HostTensor sum = eval("Add", {&a, &b});
  EXPECT_EQ(sum.dtype, DType::Int32);
  EXPECT_EQ(sum.shape, (Shape{2, 3}));
  EXPECT_EQ(ints(sum), (std::vector<int64_t>{11, 21, 31, 12, 22, 32}));
  const HostTensor eq = eval("Less", {&a, ptr(i32({}, {2}))});
  EXPECT_EQ(eq.dtype, DType::Bool);
  EXPECT_EQ(ints(eq), (std::vector<int64_t>{1, 0}));
  const HostTensor c = i32({4}, {1, 2, 3, 4});
  expect_error(
      [&] {
        eval("Mul", {&b, &c});
      },
      ErrorKind::InvalidArgument, "Mul: shapes cannot be broadcast: [3] vs [4]");
  const HostTensor f = f32({1}, {1.f});
  expect_error([&] { eval("Sub", {&a, &f}); }, ErrorKind::InvalidArgument, "dtypes differ");
  const HostTensor big = i32({1}, {2147483647}), one = i32({1}, {1});
  EXPECT_EQ(ints(eval("Add", {&big, &one})), (std::vector<int64_t>{-2147483648}));  // wraps
  const HostTensor x = f32({3}, {1.f, NAN, -2.f}), y = f32({3}, {0.5f, 1.f, -3.f});
  const HostTensor mx = eval("Max", {&x, &y});
  EXPECT_EQ(mx.data<float>()[0], 1.f);
  EXPECT_TRUE(std::isnan(mx.data<float>()[1]));
  EXPECT_EQ(mx.data<float>()[2], -2.f);
}

TEST(Fold, WhereLogicAndUnary) {
  const HostTensor cond = boolean({2, 1}, {1, 0});
  const HostTensor x = i64({2}, {1, 2}), y = i64({}, {-1});
  EXPECT_EQ(ints(eval("Where", {&cond, &x, &y})), (std::vector<int64_t>{1, 2, -1, -1}));
  const HostTensor p = boolean({2}, {1, 0}), q = boolean({2}, {1, 1});
  EXPECT_EQ(ints(eval("And", {&p, &q})), (std::vector<int64_t>{1, 0}));
  EXPECT_EQ(ints(eval("Not", {&p})), (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(ints(eval("Neg", {&x})), (std::vector<int64_t>{-1, -2}));
  EXPECT_EQ(ints(eval("Abs", {&y})), (std::vector<int64_t>{1}));
  const HostTensor f = f32({2}, {-1.5f, 4.f});
  EXPECT_EQ(eval("Floor", {&f}).as_double(0), -2.0);
  EXPECT_EQ(eval("Ceil", {&f}).as_double(0), -1.0);
  EXPECT_EQ(eval("Sqrt", {&f}).as_double(1), 2.0);
  expect_error([&] { eval("Sqrt", {&x}); }, ErrorKind::InvalidArgument, "Sqrt: needs a float");
  expect_error([&] { eval("Not", {&x}); }, ErrorKind::InvalidArgument, "Not: needs bool");
}

TEST(Fold, SqueezeUnsqueezeBothForms) {
  const HostTensor x(DType::Int64, {1, 3, 1});
  EXPECT_EQ(eval("Squeeze", {&x}).shape, Shape{3});
  Attrs old_form;
  old_form.int_lists["axes"] = {-1};
  EXPECT_EQ(eval("Squeeze", {&x}, old_form, 11).shape, (Shape{1, 3}));
  EXPECT_EQ(eval("Squeeze", {&x, ptr(i64({0}))}).shape, (Shape{3, 1}));
  expect_error(
      [&] {
        eval("Squeeze", {&x, ptr(i64({1}))});
      },
      ErrorKind::InvalidArgument, "cannot squeeze axis 1");
  EXPECT_EQ(eval("Unsqueeze", {&x, ptr(i64({-1, 0}))}).shape, (Shape{1, 1, 3, 1, 1}));
  old_form.int_lists["axes"] = {1};
  EXPECT_EQ(eval("Unsqueeze", {&x}, old_form, 11).shape, (Shape{1, 1, 3, 1}));
  expect_error(
      [&] {
        eval("Unsqueeze", {&x, ptr(i64({0, 0}))});
      },
      ErrorKind::InvalidArgument, "duplicate axis");
}

TEST(Fold, CastRangeConstantOfShape) {
  const HostTensor f = f32({4}, {-2.7f, 2.7f, 0.f, 1e20f});
  Attrs to;
  to.ints["to"] = onnx::TensorProto::INT32;
  EXPECT_EQ(ints(eval("Cast", {&f}, to)), (std::vector<int64_t>{-2, 2, 0, 2147483647}));
  to.ints["to"] = onnx::TensorProto::BOOL;
  EXPECT_EQ(ints(eval("Cast", {&f}, to)), (std::vector<int64_t>{1, 1, 0, 1}));
  to.ints["to"] = onnx::TensorProto::STRING;
  expect_error([&] { eval("Cast", {&f}, to); }, ErrorKind::Unsupported, "Cast: target type STRING");

  const HostTensor s = i64({}, {10}), l = i64({}, {1}), d = i64({}, {-4});
  EXPECT_EQ(ints(eval("Range", {&s, &l, &d})), (std::vector<int64_t>{10, 6, 2}));
  const HostTensor big = i64({}, {int64_t{1} << 40}), one = i64({}, {1}), zero = i64({}, {0});
  expect_error([&] { eval("Range", {&zero, &big, &one}); }, ErrorKind::Unsupported, "too large");
  expect_error([&] { eval("Range", {&zero, &big, &zero}); }, ErrorKind::InvalidArgument, "delta");

  const HostTensor shape = i64({2, 3});
  const HostTensor zeros = eval("ConstantOfShape", {&shape});
  EXPECT_EQ(zeros.dtype, DType::Float32);
  EXPECT_EQ(zeros.shape, (Shape{2, 3}));
  Attrs v;
  v.tensors.emplace("value", i64({1}, {7}));
  EXPECT_EQ(ints(eval("ConstantOfShape", {&shape}, v)), (std::vector<int64_t>(6, 7)));
}

TEST(Fold, ExpandTileTransposeConcat) {
  const HostTensor x = i64({3, 1}, {1, 2, 3});
  const HostTensor e = eval("Expand", {&x, ptr(i64({2, 1, 2}))});
  EXPECT_EQ(e.shape, (Shape{2, 3, 2}));
  EXPECT_EQ(ints(e), (std::vector<int64_t>{1, 1, 2, 2, 3, 3, 1, 1, 2, 2, 3, 3}));
  const HostTensor m = i64({2, 2}, {1, 2, 3, 4});
  EXPECT_EQ(ints(eval("Tile", {&m, ptr(i64({1, 2}))})),
            (std::vector<int64_t>{1, 2, 1, 2, 3, 4, 3, 4}));
  EXPECT_EQ(ints(eval("Transpose", {&m})), (std::vector<int64_t>{1, 3, 2, 4}));
  Attrs axis;
  axis.ints["axis"] = -1;
  const HostTensor column = i64({2, 1}, {7, 8});
  const HostTensor c = eval("Concat", {&m, &column}, axis);
  EXPECT_EQ(c.shape, (Shape{2, 3}));
  EXPECT_EQ(ints(c), (std::vector<int64_t>{1, 2, 7, 3, 4, 8}));
  expect_error(
      [&] {
        eval("Concat", {&m, &x}, axis);
      },
      ErrorKind::InvalidArgument, "Concat: input shapes [2, 2] and [3, 1] differ outside axis 1");
}

// An output no larger than its input folds past kMaxFoldElements (the model holds that much
// already): GPT-2's tied embedding transposed for the LM head. Outputs that amplify an input
// still stop at the limit.
TEST(Fold, LargeTransposeFoldsButAmplifyingOpsStillStop) {
  const int64_t rows = 4099, cols = 4097;  // 16,793,603 elements > 2^24
  ASSERT_GT(rows * cols, kMaxFoldElements);
  HostTensor w(DType::UInt8, {rows, cols});
  for (int64_t i = 0; i < w.numel(); ++i)
    w.bytes[i] = static_cast<uint8_t>((i * 7 + i / cols) % 251);
  const HostTensor t = eval("Transpose", {&w});
  ASSERT_EQ(t.shape, (Shape{cols, rows}));
  int64_t wrong = 0;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) wrong += t.bytes[c * rows + r] != w.bytes[r * cols + c];
  EXPECT_EQ(wrong, 0);
  // The generic path (rank 3, the blocked copy is for matrices) takes the same bound.
  HostTensor w3 = w;
  w3.shape = {1, rows, cols};
  Attrs perm;
  perm.int_lists["perm"] = {2, 0, 1};
  const HostTensor t3 = eval("Transpose", {&w3}, perm);
  EXPECT_EQ(t3.shape, (Shape{cols, 1, rows}));
  EXPECT_EQ(t3.bytes, t.bytes);
  const HostTensor one = i64({1}, {5});
  expect_error(
      [&] {
        eval("Expand", {&one, ptr(i64({kMaxFoldElements + 1}))});
      },
      ErrorKind::Unsupported, "too large to fold");
  expect_error(
      [&] {
        eval("Tile", {&w, ptr(i64({2, 1}))});
      },
      ErrorKind::Unsupported, "too large to fold");
}

TEST(Fold, ReduceAndNonZero) {
  const HostTensor x = i64({2, 3}, {1, 2, 3, 4, 5, 6});
  Attrs a;
  a.ints["keepdims"] = 0;
  EXPECT_EQ(ints(eval("ReduceSum", {&x, ptr(i64({1}))}, a)), (std::vector<int64_t>{6, 15}));
  a.int_lists["axes"] = {0};
  const HostTensor prod = eval("ReduceProd", {&x}, a);
  EXPECT_EQ(prod.shape, Shape{3});
  EXPECT_EQ(ints(prod), (std::vector<int64_t>{4, 10, 18}));
  const HostTensor all = eval("ReduceSum", {&x});
  EXPECT_EQ(all.shape, (Shape{1, 1}));
  EXPECT_EQ(all.as_int(0), 21);
  const HostTensor nz = eval("NonZero", {ptr(i64({2, 2}, {0, 3, 4, 0}))});
  EXPECT_EQ(nz.shape, (Shape{2, 2}));
  EXPECT_EQ(ints(nz), (std::vector<int64_t>{0, 1, 1, 0}));
}

// Exporters compute window padding as (w - W % w) % w and normalise axes as (axis + rank) %
// rank: Mod must take the divisor's sign (Python's %), fmod the dividend's (C's %).
TEST(Fold, ModSignsAndPowDtypes) {
  const HostTensor a = i64({-7, 7, -7, 7, 9}), b = i64({3, -3, -3, 3, -1});
  EXPECT_EQ(ints(eval("Mod", {&a, &b})), (std::vector<int64_t>{2, -2, -1, 1, 0}));
  Attrs fmod;
  fmod.ints["fmod"] = 1;
  EXPECT_EQ(ints(eval("Mod", {&a, &b}, fmod)), (std::vector<int64_t>{-1, 1, -1, 1, 0}));
  const HostTensor int_min = i64({std::numeric_limits<int64_t>::min()});
  EXPECT_EQ(eval("Mod", {&int_min, ptr(i64({-1}))}).as_int(0), 0);  // no trap
  const HostTensor fx = f32({2}, {-5.5f, 5.5f}), fy = f32({2}, {2.f, 2.f});
  const HostTensor floor_mod = eval("Mod", {&fx, &fy});
  EXPECT_EQ(floor_mod.as_double(0), 0.5);
  EXPECT_EQ(floor_mod.as_double(1), 1.5);
  EXPECT_EQ(eval("Mod", {&fx, &fy}, fmod).as_double(0), -1.5);
  expect_error(
      [&] {
        eval("Mod", {&a, ptr(i64({0}))});
      },
      ErrorKind::InvalidArgument, "Mod: integer modulo by zero");

  // Swin's (C // heads) ** -0.5: an int64 base with a float exponent keeps the base's dtype;
  // a float base with an int exponent, too.
  EXPECT_EQ(ints(eval("Pow", {ptr(i64({2, 3, -2})), ptr(i64({10, 3, 3}))})),
            (std::vector<int64_t>{1024, 27, -8}));
  EXPECT_EQ(ints(eval("Pow", {ptr(i64({2, 1, -1})), ptr(i64({-1, -5, -3}))})),
            (std::vector<int64_t>{0, 1, -1}));
  const HostTensor scale = eval("Pow", {ptr(f32({1}, {8.f})), ptr(i64({}, {-1}))});
  EXPECT_EQ(scale.dtype, DType::Float32);
  EXPECT_EQ(scale.as_double(0), 0.125);
  EXPECT_EQ(eval("Pow", {ptr(f32({}, {16.f})), ptr(f32({}, {-0.5f}))}).as_double(0), 0.25);
  expect_error(
      [&] {
        eval("Pow", {ptr(i64({0})), ptr(i64({-1}))});
      },
      ErrorKind::InvalidArgument, "Pow: zero to a negative integer power");
}

TEST(Fold, UnaryFloatOps) {
  const HostTensor x = f32({5}, {-2.5f, -0.5f, 0.5f, 1.5f, 4.f});
  auto values = [](const HostTensor& t) {
    std::vector<double> v;
    for (int64_t i = 0; i < t.numel(); ++i) v.push_back(t.as_double(i));
    return v;
  };
  EXPECT_EQ(values(eval("Round", {&x})), (std::vector<double>{-2, -0, 0, 2, 4}));  // to even
  EXPECT_EQ(values(eval("Sign", {&x})), (std::vector<double>{-1, -1, 1, 1, 1}));
  EXPECT_EQ(values(eval("Reciprocal", {&x})), (std::vector<double>{-0.4f, -2, 2, 1 / 1.5f, 0.25}));
  EXPECT_EQ(ints(eval("Sign", {ptr(i64({-3, 0, 9}))})), (std::vector<int64_t>{-1, 0, 1}));
  EXPECT_FLOAT_EQ(static_cast<float>(eval("Log", {ptr(f32({}, {4.f}))}).as_double(0)),
                  std::log(4.f));
  EXPECT_FLOAT_EQ(static_cast<float>(eval("Exp", {ptr(f32({}, {-1.f}))}).as_double(0)),
                  std::exp(-1.f));
  expect_error([&] { eval("Exp", {ptr(i64({1}))}); }, ErrorKind::InvalidArgument,
               "Exp: needs a float input");
}

// torchvision's _topk_min (K = min(k, dim)) is a ReduceMin; image batching pads to a
// ReduceMax of the sizes.
TEST(Fold, ReduceMinMax) {
  const HostTensor x = i64({2, 3}, {4, -2, 9, 7, 5, -8});
  Attrs a;
  a.ints["keepdims"] = 0;
  EXPECT_EQ(ints(eval("ReduceMin", {&x, ptr(i64({1}))}, a)), (std::vector<int64_t>{-2, -8}));
  EXPECT_EQ(ints(eval("ReduceMax", {&x, ptr(i64({0}))}, a)), (std::vector<int64_t>{7, 5, 9}));
  EXPECT_EQ(eval("ReduceMin", {&x}).as_int(0), -8);
  Attrs opset11;
  opset11.int_lists["axes"] = {-1};
  const HostTensor f = f32({2, 2}, {1.f, NAN, -3.f, 2.f});
  const HostTensor maxes = eval("ReduceMax", {&f}, opset11, 11);
  EXPECT_EQ(maxes.shape, (Shape{2, 1}));
  EXPECT_TRUE(std::isnan(maxes.as_double(0)));  // NaN propagates, as in NumPy
  EXPECT_EQ(maxes.as_double(1), 2.0);
  const HostTensor empty(DType::Int64, {0, 2});
  expect_error(
      [&] {
        eval("ReduceMax", {&empty, ptr(i64({0}))});
      },
      ErrorKind::Unsupported, "ReduceMax: reducing an empty axis");
}

// Swin's shift mask is a slice assignment into zeros (ScatterND); causal masks are Trilu.
TEST(Fold, ScatterGatherNDAndTrilu) {
  const HostTensor data = i64({2, 3}, {0, 1, 2, 3, 4, 5});
  const HostTensor rows = i64({2, 1}, {-1, 0});  // whole rows, a negative index
  const HostTensor updates = i64({2, 3}, {10, 11, 12, 20, 21, 22});
  EXPECT_EQ(ints(eval("ScatterND", {&data, &rows, &updates})),
            (std::vector<int64_t>{20, 21, 22, 10, 11, 12}));
  const HostTensor cells = i64({2, 2}, {1, 2, 1, 2});  // one element twice
  const HostTensor values = i64({2}, {7, 9});
  Attrs reduce;
  reduce.strings["reduction"] = "add";
  EXPECT_EQ(ints(eval("ScatterND", {&data, &cells, &values}, reduce)),
            (std::vector<int64_t>{0, 1, 2, 3, 4, 21}));
  reduce.strings["reduction"] = "min";
  EXPECT_EQ(ints(eval("ScatterND", {&data, &cells, &values}, reduce)),
            (std::vector<int64_t>{0, 1, 2, 3, 4, 5}));
  expect_error(
      [&] {
        eval("ScatterND", {&data, &rows, &values});
      },
      ErrorKind::InvalidArgument, "ScatterND: updates have shape [2], expected [2, 3]");
  expect_error(
      [&] {
        eval("ScatterND", {&data, ptr(i64({1, 1}, {2})), ptr(i64({1, 3}, {1, 1, 1}))});
      },
      ErrorKind::InvalidArgument, "ScatterND: index 2 out of range for axis 0");

  Attrs batched;
  batched.ints["batch_dims"] = 1;
  const HostTensor picked = eval("GatherND", {&data, ptr(i64({2, 1}, {2, -3}))}, batched);
  EXPECT_EQ(picked.shape, Shape{2});
  EXPECT_EQ(ints(picked), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(ints(eval("GatherND", {&data, ptr(i64({1, 2}, {1, 1}))})), (std::vector<int64_t>{4}));

  const HostTensor ones = i64({3, 3}, {1, 1, 1, 1, 1, 1, 1, 1, 1});
  EXPECT_EQ(ints(eval("Trilu", {&ones, ptr(i64({}, {1}))})),
            (std::vector<int64_t>{0, 1, 1, 0, 0, 1, 0, 0, 0}));
  Attrs lower;
  lower.ints["upper"] = 0;
  EXPECT_EQ(ints(eval("Trilu", {&ones, ptr(i64({}, {-1}))}, lower)),
            (std::vector<int64_t>{0, 0, 0, 1, 0, 0, 1, 1, 0}));
}

TEST(Fold, ErrorsNameTheOp) {
  EXPECT_FALSE(can_fold("Conv"));
  EXPECT_TRUE(can_fold("Gather"));
  const HostTensor x = i64({1});
  expect_error([&] { eval("Conv", {&x}); }, ErrorKind::Unsupported, "Conv: no constant-folding");
  expect_error([&] { eval("Add", {&x}); }, ErrorKind::InvalidArgument,
               "Add: missing required input 1");
  HostTensor broken = i64({4});
  broken.bytes.resize(3);
  expect_error([&] { eval("Identity", {&broken}); }, ErrorKind::InvalidArgument,
               "Identity: input 0");
  const HostTensor huge_shape = i64({1 << 13, 1 << 13});
  expect_error([&] { eval("ConstantOfShape", {&huge_shape}); }, ErrorKind::Unsupported,
               "too large to fold");
  const HostTensor neg = i64({-1});
  expect_error([&] { eval("ConstantOfShape", {&neg}); }, ErrorKind::InvalidArgument,
               "ConstantOfShape: negative dimension");
}

TEST(Fold, AttrsFromNode) {
  onnx::NodeProto node;
  node.set_op_type("ConstantOfShape");
  auto* value = node.add_attribute();
  value->set_name("value");
  value->set_type(onnx::AttributeProto::TENSOR);
  *value->mutable_t() = onnx_io::tensor_to_proto(i64({1}, {3}));
  auto* axes = node.add_attribute();
  axes->set_name("axes");
  axes->set_type(onnx::AttributeProto::INTS);
  axes->add_ints(-1);
  auto* alpha = node.add_attribute();
  alpha->set_name("alpha");
  alpha->set_type(onnx::AttributeProto::FLOAT);
  alpha->set_f(0.5f);
  const Attrs attrs = attrs_from_node(node);
  ASSERT_NE(attrs.find_tensor("value"), nullptr);
  EXPECT_EQ(attrs.find_tensor("value")->as_int(0), 3);
  ASSERT_NE(attrs.find_ints("axes"), nullptr);
  EXPECT_EQ(*attrs.find_ints("axes"), std::vector<int64_t>{-1});
  EXPECT_EQ(attrs.floats.at("alpha"), 0.5f);
  EXPECT_EQ(attrs.get_int("missing", 42), 42);
}

// Random small inputs and attributes: every op either evaluates or throws vkgraph::Error.
// Under the sanitizers this is the memory-safety check for malformed models.
TEST(Fold, RandomInputsNeverCrash) {
  const std::vector<std::string> ops = {"Shape",
                                        "Size",
                                        "Gather",
                                        "Slice",
                                        "Concat",
                                        "Unsqueeze",
                                        "Squeeze",
                                        "Cast",
                                        "CastLike",
                                        "Range",
                                        "ConstantOfShape",
                                        "Reshape",
                                        "Expand",
                                        "Identity",
                                        "Add",
                                        "Sub",
                                        "Mul",
                                        "Div",
                                        "Equal",
                                        "Less",
                                        "Greater",
                                        "Where",
                                        "Not",
                                        "And",
                                        "Or",
                                        "Min",
                                        "Max",
                                        "Neg",
                                        "Abs",
                                        "Floor",
                                        "Ceil",
                                        "Sqrt",
                                        "Transpose",
                                        "ReduceSum",
                                        "ReduceProd",
                                        "Tile",
                                        "NonZero",
                                        "Mod",
                                        "Pow",
                                        "Sign",
                                        "Round",
                                        "Reciprocal",
                                        "Exp",
                                        "Log",
                                        "ReduceMin",
                                        "ReduceMax",
                                        "GatherND",
                                        "ScatterND",
                                        "Trilu"};
  const DType dtypes[] = {DType::Int64, DType::Int32, DType::Float32, DType::Float16, DType::Bool};
  std::mt19937 rng(7);
  auto small = [&](int lo, int hi) { return lo + static_cast<int>(rng() % (hi - lo + 1)); };
  auto random_tensor = [&] {
    Shape shape(small(0, 3));
    for (int64_t& d : shape) d = small(0, 3);
    HostTensor t(dtypes[rng() % 5], shape);
    for (int64_t i = 0; i < t.numel(); ++i) {
      const int v = small(-4, 4);
      switch (t.dtype) {
        case DType::Int64:
          t.data<int64_t>()[i] = v;
          break;
        case DType::Int32:
          t.data<int32_t>()[i] = v;
          break;
        case DType::Float32:
          t.data<float>()[i] = static_cast<float>(v) * 0.75f;
          break;
        case DType::Float16:
          t.data<uint16_t>()[i] = float_to_half(static_cast<float>(v));
          break;
        case DType::Bool:
          t.data<uint8_t>()[i] = v > 0;
          break;
        case DType::Int8:
        case DType::UInt8:  // not among `dtypes`: the frontend folds int8/uint8 as Int32
          t.bytes[i] = static_cast<uint8_t>(v);
          break;
      }
    }
    return t;
  };
  int evaluated = 0;
  for (int trial = 0; trial < 6000; ++trial) {
    const std::string& op = ops[trial % ops.size()];
    std::vector<HostTensor> storage(small(0, 5));
    for (HostTensor& t : storage) t = random_tensor();
    std::vector<const HostTensor*> inputs;
    for (const HostTensor& t : storage) inputs.push_back(rng() % 6 ? &t : nullptr);
    Attrs attrs;
    for (const char* name : {"axis", "start", "end", "keepdims", "allowzero",
                             "noop_with_empty_axes", "fmod", "batch_dims", "upper"}) {
      if (rng() % 2) attrs.ints[name] = small(-4, 4);
    }
    if (rng() % 2) attrs.ints["to"] = small(0, 17);
    for (const char* name : {"axes", "perm", "starts", "ends", "shape"}) {
      if (rng() % 3 == 0) {
        std::vector<int64_t> list(small(0, 4));
        for (int64_t& v : list) v = small(-4, 4);
        attrs.int_lists[name] = list;
      }
    }
    if (rng() % 4 == 0) attrs.tensors["value"] = random_tensor();
    if (rng() % 4 == 0) attrs.strings["reduction"] = rng() % 2 ? "max" : "mul";
    try {
      evaluate(op, attrs, inputs, small(9, 17));
      ++evaluated;
    } catch (const Error&) {
    }
  }
  std::printf("[          ] evaluated %d of 6000\n", evaluated);
  EXPECT_GT(evaluated, 300);  // the generator must reach the evaluators, not only the checks
}

// ---- ONNX conformance -------------------------------------------------------------------------

enum class Outcome { Pass, Fail, Skip };

struct CaseResult {
  Outcome outcome = Outcome::Pass;
  std::string detail;
  bool converted = false;  // some tensor was read through a non-native type (uint8, double, ...)
};

bool parse_file(const std::string& path, google::protobuf::MessageLite* message) {
  const std::vector<uint8_t> bytes = read_file_bytes(path);
  return message->ParseFromArray(bytes.data(), static_cast<int>(bytes.size()));
}

// Reads a TensorProto, noting whether its type needed conversion. The file's type must be the
// one the model declares: ONNX 1.12 stores bfloat16 data as UINT16, which would read as
// integers, so such cases are reported as Unsupported (skipped).
HostTensor read_case_tensor(const std::string& path, const onnx::ValueInfoProto& info,
                            CaseResult* result) {
  onnx::TensorProto proto;
  if (!parse_file(path, &proto)) throw Error(ErrorKind::ModelFormat, path + ": unparsable");
  const int32_t declared = info.type().tensor_type().elem_type();
  if (proto.data_type() != declared) {
    throw Error(ErrorKind::Unsupported,
                path + " stores " + onnx_io::onnx_type_name(proto.data_type()) +
                    ", model declares " + onnx_io::onnx_type_name(declared));
  }
  result->converted |= !onnx_io::is_native_onnx_type(proto.data_type());
  return onnx_io::tensor_from_proto(proto);
}

std::string compare(const HostTensor& got, const HostTensor& want) {
  if (got.dtype != want.dtype) {
    return std::string("dtype ") + dtype_name(got.dtype) + " != " + dtype_name(want.dtype);
  }
  if (got.shape != want.shape)
    return "shape " + shape_str(got.shape) + " != " + shape_str(want.shape);
  for (int64_t i = 0; i < want.numel(); ++i) {
    bool equal;
    if (want.dtype == DType::Float32 || want.dtype == DType::Float16) {
      const double g = got.as_double(i), w = want.as_double(i);
      // 1e-5 for float32; float16 results may differ by rounding (one ulp ~ 1e-3 relative).
      const double rel = want.dtype == DType::Float16 ? 1e-3 : 1e-5;
      equal = (std::isnan(g) && std::isnan(w)) || g == w ||
              std::fabs(g - w) <= 1e-5 + rel * std::fabs(w);
    } else {
      equal = got.as_int(i) == want.as_int(i);
    }
    if (!equal) {
      return "element " + std::to_string(i) + ": " + std::to_string(got.as_double(i)) +
             " != " + std::to_string(want.as_double(i));
    }
  }
  return "";
}

CaseResult run_case(const fs::path& dir, const onnx::ModelProto& model) {
  CaseResult result;
  auto skip = [&](const std::string& why) {
    result.outcome = Outcome::Skip;
    result.detail = why;
    return result;
  };
  const onnx::GraphProto& graph = model.graph();
  const onnx::NodeProto& node = graph.node(0);
  int opset = 0;
  for (const auto& import : model.opset_import()) {
    if (import.domain().empty() || import.domain() == "ai.onnx")
      opset = static_cast<int>(import.version());
  }
  for (const auto& io : graph.input()) {
    if (!io.type().has_tensor_type()) return skip("non-tensor input");
  }
  for (const auto& io : graph.output()) {
    if (!io.type().has_tensor_type()) return skip("non-tensor output");
  }
  const Attrs attrs = attrs_from_node(node);

  int sets = 0;
  for (const auto& set : fs::directory_iterator(dir)) {
    if (!set.is_directory() || set.path().filename().string().rfind("test_data_set_", 0) != 0) {
      continue;
    }
    ++sets;
    std::map<std::string, HostTensor> values;
    std::vector<HostTensor> expected;
    try {
      for (int i = 0; i < graph.input_size(); ++i) {
        const std::string file = "input_" + std::to_string(i) + ".pb";
        values[graph.input(i).name()] =
            read_case_tensor((set.path() / file).string(), graph.input(i), &result);
      }
      for (int i = 0; i < graph.output_size(); ++i) {
        const std::string file = "output_" + std::to_string(i) + ".pb";
        expected.push_back(
            read_case_tensor((set.path() / file).string(), graph.output(i), &result));
      }
    } catch (const Error& e) {
      return skip(std::string("unreadable data: ") + e.what());
    }
    std::vector<const HostTensor*> inputs;
    for (const std::string& name : node.input()) {
      if (name.empty()) {
        inputs.push_back(nullptr);
        continue;
      }
      auto it = values.find(name);
      if (it == values.end()) return skip("input '" + name + "' not given");
      inputs.push_back(&it->second);
    }
    std::vector<HostTensor> got;
    try {
      got = evaluate(node.op_type(), attrs, inputs, opset);
    } catch (const Error& e) {
      if (e.kind() == ErrorKind::Unsupported) return skip(e.what());
      result.outcome = Outcome::Fail;
      result.detail = e.what();
      return result;
    }
    if (got.size() != expected.size()) {
      result.outcome = Outcome::Fail;
      result.detail = "output count " + std::to_string(got.size());
      return result;
    }
    for (size_t i = 0; i < got.size(); ++i) {
      const std::string diff = compare(got[i], expected[i]);
      if (!diff.empty()) {
        result.outcome = Outcome::Fail;
        result.detail =
            set.path().filename().string() + " output " + std::to_string(i) + ": " + diff;
        return result;
      }
    }
  }
  if (sets == 0) return skip("no test data sets");
  return result;
}

TEST(FoldConformance, OnnxNodeTests) {
  const fs::path root = kTestData + "/node";
  if (!fs::exists(root)) GTEST_SKIP() << "no ONNX test data at " << kTestData;
  std::vector<fs::path> dirs;
  for (const auto& entry : fs::directory_iterator(root)) dirs.push_back(entry.path());
  std::sort(dirs.begin(), dirs.end());

  int pass = 0, pass_converted = 0;
  std::vector<std::string> failures, skips;
  std::map<std::string, std::pair<int, int>> per_op;  // op -> (pass, total run)
  for (const fs::path& dir : dirs) {
    onnx::ModelProto model;
    if (!fs::exists(dir / "model.onnx") || !parse_file((dir / "model.onnx").string(), &model)) {
      continue;
    }
    if (model.graph().node_size() != 1) continue;
    const onnx::NodeProto& node = model.graph().node(0);
    if ((!node.domain().empty() && node.domain() != "ai.onnx") || !can_fold(node.op_type()))
      continue;
    const std::string name = dir.filename().string();
    const CaseResult r = run_case(dir, model);
    if (r.outcome == Outcome::Skip) {
      skips.push_back(name + " (" + r.detail + ")");
      continue;
    }
    auto& [op_pass, op_total] = per_op[node.op_type()];
    ++op_total;
    if (r.outcome == Outcome::Pass) {
      ++op_pass;
      ++pass;
      pass_converted += r.converted;
      continue;
    }
    ADD_FAILURE() << name << ": " << r.detail;
    failures.push_back(name);
  }
  for (const std::string& s : skips) std::printf("[  SKIP    ] %s\n", s.c_str());
  std::string ops;
  for (const auto& [op, counts] : per_op) {
    ops += " " + op + " " + std::to_string(counts.first) + "/" + std::to_string(counts.second);
  }
  std::printf("[          ] per op:%s\n", ops.c_str());
  std::printf(
      "[          ] conformance: %d passed (%d through converted dtypes), %zu failed, %zu "
      "skipped\n",
      pass, pass_converted, failures.size(), skips.size());
  RecordProperty("passed", pass);
  RecordProperty("failed", static_cast<int>(failures.size()));
  RecordProperty("skipped", static_cast<int>(skips.size()));
  EXPECT_GE(pass, 150);
}

}  // namespace
}  // namespace vkgraph::fold
