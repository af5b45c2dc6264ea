// Ops of issue 13 whose conformance data is thin: the optimizers' first step (T = 0) and bad
// inputs, TfIdfVectorizer's IDF/TFIDF modes with weights and a shuffled column map on int32
// tokens, and a Cast to bfloat16 of a value computed on the device.
#include <cmath>
#include <cstring>

#include "model_builder.h"
#include "vkgraph/onnx_tensor.h"

namespace vkgraph::testing {
namespace {

constexpr int kFloat = onnx::TensorProto::FLOAT;
constexpr int kInt64 = onnx::TensorProto::INT64;

void set_float(onnx::NodeProto& n, const std::string& name, float v) {
  onnx::AttributeProto& a = *n.add_attribute();
  a.set_name(name);
  a.set_type(onnx::AttributeProto::FLOAT);
  a.set_f(v);
}
void set_int(onnx::NodeProto& n, const std::string& name, int64_t v) {
  onnx::AttributeProto& a = *n.add_attribute();
  a.set_name(name);
  a.set_type(onnx::AttributeProto::INT);
  a.set_i(v);
}
void set_ints(onnx::NodeProto& n, const std::string& name, const std::vector<int64_t>& v) {
  onnx::AttributeProto& a = *n.add_attribute();
  a.set_name(name);
  a.set_type(onnx::AttributeProto::INTS);
  for (int64_t x : v) a.add_ints(x);
}
void set_string(onnx::NodeProto& n, const std::string& name, const std::string& v) {
  onnx::AttributeProto& a = *n.add_attribute();
  a.set_name(name);
  a.set_type(onnx::AttributeProto::STRING);
  a.set_s(v);
}

HostTensor scalar_f(float v) {
  return HostTensor::from(DType::Float32, {}, std::vector<float>{v});
}
HostTensor scalar_i(int64_t v) {
  return HostTensor::from(DType::Int64, {}, std::vector<int64_t>{v});
}

class MoreOps : public GpuTest {
 protected:
  HostTensor vec(size_t n) {
    return HostTensor::from(DType::Float32, {static_cast<int64_t>(n)}, random_floats(n, 0.1f, 1.f));
  }
};

TEST_F(MoreOps, AdamAndNesterovMomentumFirstAndLaterSteps) {
  const float alpha = 0.9f, beta = 0.99f, eps = 1e-6f, norm = 0.01f, post = 0.1f,
              momentum_beta = 0.5f;
  ModelBuilder m(14);
  m.import_domain("ai.onnx.preview.training", 1);
  for (const char* name : {"R", "T"}) m.input(name, name[0] == 'T' ? kInt64 : kFloat, {});
  for (const char* name : {"X", "G", "V", "H"}) m.input(name, kFloat, {5});
  for (const char* name : {"X_adam", "V_adam", "H_adam", "X_mom", "V_mom"}) m.output(name, kFloat);
  onnx::NodeProto& adam =
      m.node("Adam", {"R", "T", "X", "G", "V", "H"}, {"X_adam", "V_adam", "H_adam"});
  adam.set_domain("ai.onnx.preview.training");
  set_float(adam, "alpha", alpha);
  set_float(adam, "beta", beta);
  set_float(adam, "epsilon", eps);
  set_float(adam, "norm_coefficient", norm);
  set_float(adam, "norm_coefficient_post", post);
  onnx::NodeProto& mom = m.node("Momentum", {"R", "T", "X", "G", "V"}, {"X_mom", "V_mom"});
  mom.set_domain("ai.onnx.preview.training");
  set_float(mom, "alpha", alpha);
  set_float(mom, "beta", momentum_beta);
  set_float(mom, "norm_coefficient", norm);
  set_string(mom, "mode", "nesterov");
  Session s = m.session();
  const HostTensor x = vec(5), g = vec(5), v = vec(5), h = vec(5);
  for (int64_t t : {0, 3}) {
    SCOPED_TRACE("T = " + std::to_string(t));
    const float r = 0.05f;
    auto out =
        s.run({{"R", scalar_f(r)}, {"T", scalar_i(t)}, {"X", x}, {"G", g}, {"V", v}, {"H", h}});
    ASSERT_EQ(out.size(), 5u);
    for (int i = 0; i < 5; ++i) {
      const double xi = x.data<float>()[i], vi = v.data<float>()[i], hi = h.data<float>()[i];
      const double gr = norm * xi + g.data<float>()[i];
      const double v2 = alpha * vi + (1 - alpha) * gr, h2 = beta * hi + (1 - beta) * gr * gr;
      const double rate =
          t > 0 ? r * std::sqrt(1 - std::pow(beta, t)) / (1 - std::pow(alpha, t)) : r;
      const double x2 = (1 - post) * (xi - rate * v2 / (std::sqrt(h2) + eps));
      EXPECT_NEAR(out[0].data<float>()[i], x2, 1e-5);
      EXPECT_NEAR(out[1].data<float>()[i], v2, 1e-5);
      EXPECT_NEAR(out[2].data<float>()[i], h2, 1e-5);
      const double vm = alpha * vi + (t > 0 ? momentum_beta : 1.0) * gr;
      EXPECT_NEAR(out[3].data<float>()[i], xi - r * (gr + alpha * vm), 1e-5);
      EXPECT_NEAR(out[4].data<float>()[i], vm, 1e-5);
    }
  }
}

TEST_F(MoreOps, OptimizerShapeMismatchNamesTheNode) {
  ModelBuilder m(14);
  m.import_domain("ai.onnx.preview.training", 1);
  m.input("R", kFloat, {});
  m.input("T", kInt64, {});
  m.input("X", kFloat, {3});
  m.input("G", kFloat, {4});
  m.input("H", kFloat, {3});
  m.output("X_new", kFloat);
  m.node("Adagrad", {"R", "T", "X", "G", "H"}, {"X_new"}).set_domain("ai.onnx.preview.training");
  vkgraph::testing::expect_error([&] { m.session(); }, ErrorKind::InvalidArgument,
                                 {"Adagrad node 'Adagrad1'", "does not match"});
}

TEST_F(MoreOps, TfIdfIdfAndWeightedModesOnInt32Tokens) {
  // Pool: 1-grams {4, 9}, 2-grams {(4, 9), (9, 9)}, mapped to columns in reverse order.
  for (const char* mode : {"IDF", "TFIDF"}) {
    SCOPED_TRACE(mode);
    ModelBuilder m(9);
    m.input("x", onnx::TensorProto::INT32, {2, 5});
    m.output("y", kFloat);
    onnx::NodeProto& n = m.node("TfIdfVectorizer", {"x"}, {"y"});
    set_int(n, "min_gram_length", 1);
    set_int(n, "max_gram_length", 2);
    set_int(n, "max_skip_count", 1);
    set_string(n, "mode", mode);
    set_ints(n, "ngram_counts", {0, 2});
    set_ints(n, "ngram_indexes", {3, 2, 1, 0});
    set_ints(n, "pool_int64s", {4, 9, 4, 9, 9, 9});
    onnx::AttributeProto& w = *n.add_attribute();
    w.set_name("weights");
    w.set_type(onnx::AttributeProto::FLOATS);
    for (float f : {0.5f, 2.f, 3.f, 0.25f}) w.add_floats(f);
    const std::vector<int32_t> tokens{4, 9, 9, 4, 9, /**/ 1, 2, 9, 7, 9};
    auto y = m.session().run({{"x", HostTensor::from(DType::Int32, {2, 5}, tokens)}})[0];
    ASSERT_EQ(y.shape, (Shape{2, 4}));
    // Row 0 counts: 4 x2, 9 x3, (4,9): (0,1) (0,2) (3,4) = 3, (9,9): (1,2) (2,4) = 2.
    // Row 1: 9 x2, (9,9): (7,9) skipping one = 1.
    const float counts[2][4] = {{2, 3, 3, 2}, {0, 2, 0, 1}};
    const float weights[4] = {0.5f, 2.f, 3.f, 0.25f};
    for (int row = 0; row < 2; ++row)
      for (int gram = 0; gram < 4; ++gram) {
        const float c = counts[row][gram];
        const float want =
            std::string(mode) == "IDF" ? (c > 0 ? weights[gram] : 0.f) : c * weights[gram];
        EXPECT_EQ(y.data<float>()[row * 4 + (3 - gram)], want) << row << " " << gram;
      }
  }
}

TEST_F(MoreOps, TfIdfRejectsStringsAndBadPools) {
  ModelBuilder m(9);
  m.input("x", kInt64, {6});
  m.output("y", kFloat);
  onnx::NodeProto& n = m.node("TfIdfVectorizer", {"x"}, {"y"});
  set_int(n, "min_gram_length", 2);
  set_int(n, "max_gram_length", 2);
  set_int(n, "max_skip_count", 0);
  set_string(n, "mode", "TF");
  set_ints(n, "ngram_counts", {0, 1});
  set_ints(n, "ngram_indexes", {0, 1});
  set_ints(n, "pool_int64s", {1, 2, 3, 4});  // 1 unigram, then 3 items: not whole 2-grams
  vkgraph::testing::expect_error([&] { m.session(); }, ErrorKind::InvalidArgument,
                                 {"TfIdfVectorizer node 'TfIdfVectorizer1'", "2-grams"});
}

TEST_F(MoreOps, CastToBfloat16OfAComputedValueTruncates) {
  ModelBuilder m(13);
  m.input("x", kFloat, {64});
  m.output("y", onnx::TensorProto::BFLOAT16);
  m.node("Exp", {"x"}, {"e"});
  set_int(m.node("Cast", {"e"}, {"y"}), "to", onnx::TensorProto::BFLOAT16);
  HostTensor x = HostTensor::from(DType::Float32, {64}, random_floats(64, -3.f, 3.f));
  auto y = m.session().run({{"x", x}})[0];
  ASSERT_EQ(y.dtype, DType::Float32);
  int exact = 0;
  for (int i = 0; i < 64; ++i) {
    const float e = std::exp(x.data<float>()[i]);
    const float got = y.data<float>()[i];
    uint32_t bits;
    std::memcpy(&bits, &got, 4);
    EXPECT_EQ(bits & 0xffffu, 0u) << "element " << i << " is not a bfloat16";
    // Truncation: at or below the value, within one bfloat16 step (2^-7 relative).
    EXPECT_LE(got, e * (1 + 1e-6f));
    EXPECT_GT(got, e * (1 - 1.f / 128));
    exact += got == onnx_io::bfloat16_to_float(onnx_io::float_to_bfloat16(e));
  }
  EXPECT_GE(exact, 60);  // device exp may differ from the host's in the last bits
}

}  // namespace
}  // namespace vkgraph::testing
