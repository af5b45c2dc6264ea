// Session with value-specialised inputs: model inputs whose values decide shapes (Reshape's
// target shape, Slice's starts/ends, Expand's shape, Resize's scales). The graph is built for
// the values a run gives and re-planned only when they change.
#include <onnx/onnx_pb.h>

#include <cmath>
#include <initializer_list>
#include <string>

#include "gpu_test.h"
#include "model_builder.h"
#include "vkgraph/error.h"
#include "vkgraph/session.h"

namespace vkgraph::testing {
namespace {

constexpr int kFloat = onnx::TensorProto::FLOAT;
constexpr int kInt64 = onnx::TensorProto::INT64;

HostTensor ints(std::vector<int64_t> v) {
  return HostTensor::from(DType::Int64, {static_cast<int64_t>(v.size())}, v);
}

class SessionValues : public GpuTest {
 protected:
  HostTensor random_tensor(Shape shape) {
    return HostTensor::from(DType::Float32, shape, random_floats(numel(shape)));
  }
};

void expect_floats(const HostTensor& got, const Shape& shape, const std::vector<float>& want) {
  ASSERT_EQ(got.shape, shape);
  ASSERT_EQ(got.dtype, DType::Float32);
  for (size_t i = 0; i < want.size(); ++i) ASSERT_EQ(got.data<float>()[i], want[i]) << "at " << i;
}

TEST_F(SessionValues, ReshapeReplansOnlyWhenTheShapeValueChanges) {
  ModelBuilder m(14);
  m.input("x", kFloat, {2, 3, 4});
  m.input("shape", kInt64, {3});
  m.output("y", kFloat);
  m.output("shape_mod", kInt64);
  m.initializer("seven", {7});
  m.node("Reshape", {"x", "shape"}, {"y"});
  // Mod is not folded on the host: the shape input is also read on the device.
  m.node("Mod", {"shape", "seven"}, {"shape_mod"});
  Session s = m.session();
  ASSERT_EQ(s.inputs().size(), 2u);
  EXPECT_FALSE(s.inputs()[0].needs_value);
  EXPECT_TRUE(s.inputs()[1].needs_value);
  EXPECT_EQ(s.inputs()[1].shape, Shape{3});
  EXPECT_EQ(s.graph(), nullptr);  // planned when a run gives the value

  HostTensor x = random_tensor({2, 3, 4});
  std::vector<float> xs(x.data<float>(), x.data<float>() + 24);
  struct Case {
    std::vector<int64_t> shape;
    Shape want;
    int builds;
  };
  const Case cases[] = {{{4, 3, 2}, {4, 3, 2}, 1},
                        {{12, -1, 1}, {12, 2, 1}, 2},
                        {{12, -1, 1}, {12, 2, 1}, 2},  // same value: replayed
                        {{4, 3, 2}, {4, 3, 2}, 3}};
  for (const Case& c : cases) {
    auto out = s.run({{"x", x}, {"shape", ints(c.shape)}});
    ASSERT_EQ(out.size(), 2u);
    expect_floats(out[0], c.want, xs);
    ASSERT_EQ(out[1].shape, Shape{3});
    for (int i = 0; i < 3; ++i)
      EXPECT_EQ(out[1].data<int64_t>()[i], (c.shape[i] % 7 + 7) % 7);  // ONNX Mod: sign of divisor
    EXPECT_EQ(s.load_times().builds, c.builds);
  }
}

TEST_F(SessionValues, SliceWithStartsAndEndsInputs) {
  ModelBuilder m(13);
  m.input("x", kFloat, {5, 7});
  m.input("starts", kInt64, {2});
  m.input("ends", kInt64, {2});
  m.output("y", kFloat);
  m.node("Slice", {"x", "starts", "ends"}, {"y"});
  Session s = m.session();
  EXPECT_TRUE(s.inputs()[1].needs_value);
  EXPECT_TRUE(s.inputs()[2].needs_value);
  HostTensor x = random_tensor({5, 7});
  const float* xs = x.data<float>();
  struct Case {
    int64_t r0, c0, r1, c1;  // ends may exceed the dims (clamped) or be negative
  };
  for (Case c : {Case{1, 0, 4, 5}, Case{0, 2, 99, -1}, Case{1, 0, 4, 5}}) {
    auto out = s.run({{"x", x}, {"starts", ints({c.r0, c.c0})}, {"ends", ints({c.r1, c.c1})}});
    int64_t r1 = std::min<int64_t>(c.r1, 5), c1 = c.c1 < 0 ? 7 + c.c1 : c.c1;
    std::vector<float> want;
    for (int64_t r = c.r0; r < r1; ++r)
      for (int64_t col = c.c0; col < c1; ++col) want.push_back(xs[r * 7 + col]);
    expect_floats(out[0], {r1 - c.r0, c1 - c.c0}, want);
  }
  EXPECT_EQ(s.load_times().builds, 3);
}

TEST_F(SessionValues, ExpandWithAShapeInputOfDynamicLength) {
  ModelBuilder m(13);
  m.input("x", kFloat, {3, 1});
  m.input("shape", kInt64, {-1});
  m.output("y", kFloat);
  m.node("Expand", {"x", "shape"}, {"y"});
  Session s = m.session();  // a dynamic dim: nothing is built before the first run
  HostTensor x = random_tensor({3, 1});
  const float* xs = x.data<float>();
  auto out = s.run({{"x", x}, {"shape", ints({2, 3, 5})}});
  EXPECT_TRUE(s.inputs()[1].needs_value);
  std::vector<float> want;
  for (int b = 0; b < 2; ++b)
    for (int r = 0; r < 3; ++r)
      for (int c = 0; c < 5; ++c) want.push_back(xs[r]);
  expect_floats(out[0], {2, 3, 5}, want);
  out = s.run({{"x", x}, {"shape", ints({1, 4})}});
  want.clear();
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 4; ++c) want.push_back(xs[r]);
  expect_floats(out[0], {3, 4}, want);
}

TEST_F(SessionValues, ResizeWithAScalesInput) {
  ModelBuilder m(13);
  m.input("x", kFloat, {1, 2, 3, 5});
  m.input("scales", kFloat, {4});
  m.output("y", kFloat);
  onnx::NodeProto& n = m.node("Resize", {"x", "", "scales"}, {"y"});
  auto attr = [&](const char* name, const char* value) {
    onnx::AttributeProto* a = n.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::STRING);
    a->set_s(value);
  };
  attr("mode", "nearest");
  attr("coordinate_transformation_mode", "asymmetric");
  attr("nearest_mode", "floor");
  Session s = m.session();
  EXPECT_TRUE(s.inputs()[1].needs_value);
  HostTensor x = random_tensor({1, 2, 3, 5});
  const float* xs = x.data<float>();
  for (std::vector<float> scales : {std::vector<float>{1, 1, 2, 3}, {1, 1, 1.5f, 0.5f}}) {
    int64_t oh = static_cast<int64_t>(std::floor(3 * scales[2]));
    int64_t ow = static_cast<int64_t>(std::floor(5 * scales[3]));
    std::vector<float> want;
    for (int64_t c = 0; c < 2; ++c)
      for (int64_t i = 0; i < oh; ++i)
        for (int64_t j = 0; j < ow; ++j) {
          int64_t si = std::min<int64_t>(static_cast<int64_t>(std::floor(i / scales[2])), 2);
          int64_t sj = std::min<int64_t>(static_cast<int64_t>(std::floor(j / scales[3])), 4);
          want.push_back(xs[(c * 3 + si) * 5 + sj]);
        }
    auto out = s.run({{"x", x}, {"scales", HostTensor::from(DType::Float32, {4}, scales)}});
    expect_floats(out[0], {1, 2, oh, ow}, want);
  }
}

TEST_F(SessionValues, RangeAndConstantOfShapeFoldFromInputValues) {
  ModelBuilder m(13);
  m.input("n", kInt64, {});
  m.output("r", kInt64);
  m.output("c", kFloat);
  m.initializer("zero", {0}, true);
  m.initializer("two", {2}, true);
  m.initializer("cols", {2});
  m.node("Range", {"zero", "n", "two"}, {"r"});  // 0, 2, 4, ... < n
  m.node("Shape", {"r"}, {"r_len"});
  onnx::AttributeProto* axis = m.node("Concat", {"r_len", "cols"}, {"c_shape"}).add_attribute();
  axis->set_name("axis");
  axis->set_type(onnx::AttributeProto::INT);
  axis->set_i(0);
  m.node("ConstantOfShape", {"c_shape"}, {"c"});
  Session s = m.session();
  EXPECT_TRUE(s.inputs()[0].needs_value);
  for (int64_t n : {7, 4}) {
    auto out = s.run({{"n", HostTensor::from(DType::Int64, {}, std::vector<int64_t>{n})}});
    int64_t len = (n + 1) / 2;
    ASSERT_EQ(out[0].shape, Shape{len});
    for (int64_t i = 0; i < len; ++i) EXPECT_EQ(out[0].data<int64_t>()[i], 2 * i);
    expect_floats(out[1], {len, 2}, std::vector<float>(len * 2, 0.f));
  }
}

TEST_F(SessionValues, MissingOrInvalidValuesAreClearErrors) {
  ModelBuilder m(14);
  m.input("x", kFloat, {2, 3, 4});
  m.input("target", kInt64, {2});
  m.output("y", kFloat);
  m.node("Reshape", {"x", "target"}, {"y"});
  Session s = m.session();
  HostTensor x = random_tensor({2, 3, 4});
  try {
    s.run({{"x", x}});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::InvalidArgument);
    EXPECT_NE(e.message().find("'target'"), std::string::npos) << e.message();
  }
  try {
    s.run({{"x", x}, {"target", ints({5, 5})}});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(e.message().find("Reshape node"), std::string::npos) << e.message();
    EXPECT_NE(e.message().find("cannot reshape"), std::string::npos) << e.message();
  }
  // A good value afterwards still works.
  auto out = s.run({{"x", x}, {"target", ints({6, -1})}});
  EXPECT_EQ(out[0].shape, (Shape{6, 4}));
}

}  // namespace
}  // namespace vkgraph::testing
