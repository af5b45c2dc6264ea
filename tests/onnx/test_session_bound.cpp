// Session::prepare_bound / run_bound (zero-copy IO binding on app memory), the declared types
// and dim names in ValueInfo, model metadata, and the Chrome trace writer.
#include <onnx/onnx_pb.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>

#include "gpu_test.h"
#include "model_builder.h"
#include "vkgraph/chrome_trace.h"
#include "vkgraph/error.h"
#include "vkgraph/session.h"

namespace vkgraph::testing {
namespace {

constexpr int kFloat = onnx::TensorProto::FLOAT;
constexpr size_t kPage = 4096;

// Page-aligned memory rounded up to whole pages: what the device can import.
struct PageBuffer {
  explicit PageBuffer(size_t bytes)
      : size((bytes + kPage - 1) / kPage * kPage),
        data(static_cast<float*>(std::aligned_alloc(kPage, size)), std::free) {}
  size_t size;
  std::unique_ptr<float, decltype(&std::free)> data;
  HostBinding binding(Shape shape) { return {data.get(), size, DType::Float32, std::move(shape)}; }
};

void poison(float* p, size_t n) {
  for (size_t i = 0; i < n; ++i) p[i] = std::numeric_limits<float>::quiet_NaN();
}

class SessionBound : public GpuTest {};

// y = Relu(x), z = x * x
ModelBuilder relu_and_square(int64_t n) {
  ModelBuilder m(13);
  m.input("x", kFloat, {n});
  m.output("y", kFloat);
  m.output("z", kFloat);
  m.node("Relu", {"x"}, {"y"});
  m.node("Mul", {"x", "x"}, {"z"});
  return m;
}

TEST_F(SessionBound, MatchesRunImportsAlignedMemoryAndReplays) {
  const int64_t n = 3000;  // not a whole page of floats: the allocation is rounded up
  Session s = relu_and_square(n).session();
  PageBuffer x(n * 4), y(n * 4), z(n * 4);
  std::vector<float> values = random_floats(n);
  std::memcpy(x.data.get(), values.data(), n * 4);
  poison(y.data.get(), n);
  poison(z.data.get(), n);
  std::vector<ValueInfo> outs = s.prepare_bound({{"x", x.binding({n})}});
  ASSERT_EQ(outs.size(), 2u);
  EXPECT_EQ(outs[0].shape, Shape{n});
  EXPECT_EQ(outs[1].dtype, DType::Float32);
  auto paths = s.run_bound({{"x", x.binding({n})}}, {{"y", y.binding({n})}, {"z", z.binding({n})}});
  const HostIOPath want =
      context()->features().external_memory_host ? HostIOPath::Imported : HostIOPath::Copied;
  EXPECT_EQ(paths.at("x"), want);
  EXPECT_EQ(paths.at("y"), want);
  EXPECT_EQ(paths.at("z"), want);
  for (int64_t i = 0; i < n; ++i) {
    ASSERT_EQ(y.data.get()[i], std::max(values[i], 0.f)) << i;
    ASSERT_EQ(z.data.get()[i], values[i] * values[i]) << i;
  }
  const size_t recordings = s.graph()->stats().recordings;
  // New values in the same memory: replayed, not re-recorded.
  values = random_floats(n, -2.f, 2.f);
  std::memcpy(x.data.get(), values.data(), n * 4);
  s.run_bound({{"x", x.binding({n})}}, {{"y", y.binding({n})}, {"z", z.binding({n})}});
  EXPECT_EQ(s.graph()->stats().recordings, recordings);
  for (int64_t i = 0; i < n; ++i) ASSERT_EQ(y.data.get()[i], std::max(values[i], 0.f)) << i;
  // Other memory: bound anew, recorded again.
  PageBuffer x2(n * 4);
  std::memcpy(x2.data.get(), values.data(), n * 4);
  s.run_bound({{"x", x2.binding({n})}}, {{"y", y.binding({n})}, {"z", z.binding({n})}});
  EXPECT_GT(s.graph()->stats().recordings, recordings);
  // run() after run_bound() rebuilds for staged I/O and agrees.
  std::vector<HostTensor> staged = s.run({{"x", HostTensor::from(DType::Float32, {n}, values)}});
  EXPECT_EQ(std::memcmp(staged[1].bytes.data(), z.data.get(), n * 4), 0);
}

TEST_F(SessionBound, UnalignedMemoryIsCopied) {
  const int64_t n = 37;
  Session s = relu_and_square(n).session();
  std::vector<float> x = random_floats(n), y(n + 1), z(n + 1);
  poison(y.data(), y.size());
  poison(z.data(), z.size());
  // One float past an aligned start is never page-aligned.
  HostBinding in{x.data(), x.size() * 4, DType::Float32, {n}};
  auto paths = s.run_bound({{"x", in}}, {{"y", {y.data() + 1, n * 4, DType::Float32, {n}}},
                                         {"z", {z.data() + 1, n * 4, DType::Float32, {n}}}});
  EXPECT_EQ(paths.at("y"), HostIOPath::Copied);
  for (int64_t i = 0; i < n; ++i) {
    ASSERT_EQ(y[i + 1], std::max(x[i], 0.f));
    ASSERT_EQ(z[i + 1], x[i] * x[i]);
  }
  EXPECT_TRUE(std::isnan(y[0]));  // nothing written before the binding
}

TEST_F(SessionBound, OutputThatIsAnInputIsCopied) {
  ModelBuilder m(13);
  m.input("x", kFloat, {16});
  m.output("r", kFloat);
  m.output("x", kFloat);
  m.node("Relu", {"x"}, {"r"});
  Session s = m.session();
  PageBuffer x(64), r(64), echo(64);
  std::vector<float> values = random_floats(16);
  std::memcpy(x.data.get(), values.data(), 64);
  poison(echo.data.get(), 16);
  auto paths =
      s.run_bound({{"x", x.binding({16})}}, {{"r", r.binding({16})}, {"x", echo.binding({16})}});
  EXPECT_EQ(std::memcmp(echo.data.get(), values.data(), 64), 0);
  EXPECT_EQ(paths.at("x"), HostIOPath::Copied);  // the output; the input went its own way
  for (int i = 0; i < 16; ++i) ASSERT_EQ(r.data.get()[i], std::max(values[i], 0.f));
}

TEST_F(SessionBound, RefusesBadBindings) {
  Session s = relu_and_square(8).session();
  PageBuffer x(32), y(32), z(32);
  expect_error(
      [&] {
        s.run_bound({{"x", x.binding({8})}}, {{"y", y.binding({8})}});
      },
      ErrorKind::InvalidArgument, "output 'z' is not bound");
  expect_error(
      [&] {
        s.run_bound({{"x", x.binding({8})}}, {{"y", y.binding({4, 2})}, {"z", z.binding({8})}});
      },
      ErrorKind::InvalidArgument, "output 'y' is float32 [8]");
  expect_error(
      [&] {
        s.run_bound({{"x", x.binding({8})}},
                    {{"y", y.binding({8})}, {"z", z.binding({8})}, {"w", z.binding({8})}});
      },
      ErrorKind::InvalidArgument, "unknown output 'w'");
  expect_error(
      [&] {
        s.run_bound({{"x", {x.data.get(), 16, DType::Float32, {8}}}},
                    {{"y", y.binding({8})}, {"z", z.binding({8})}});
      },
      ErrorKind::InvalidArgument, "holds 16 bytes");
  expect_error(
      [&] {
        s.prepare_bound({{"x", x.binding({9})}});
      },
      ErrorKind::InvalidArgument, "shape");
}

// fuzz_feeds: a null pointer for an input whose values shape the graph was read while planning.
TEST_F(SessionBound, RefusesNullInputPointers) {
  ModelBuilder m(13);
  m.input("x", kFloat, {8});
  m.input("shape", onnx::TensorProto::INT64, {2});
  m.output("y", kFloat);
  m.node("Reshape", {"x", "shape"}, {"y"});
  Session s = m.session();
  PageBuffer x(32), y(32);
  std::unique_ptr<int64_t, decltype(&std::free)> shape(
      static_cast<int64_t*>(std::aligned_alloc(kPage, kPage)), std::free);
  shape.get()[0] = 2;
  shape.get()[1] = 4;
  const HostBinding good_shape{shape.get(), kPage, DType::Int64, {2}};
  const HostBinding null_shape{nullptr, 16, DType::Int64, {2}};
  expect_error(
      [&] {
        s.prepare_bound({{"x", x.binding({8})}, {"shape", null_shape}});
      },
      ErrorKind::InvalidArgument, "input 'shape': null host pointer");
  expect_error(
      [&] {
        s.run_bound({{"x", x.binding({8})}, {"shape", null_shape}}, {{"y", y.binding({2, 4})}});
      },
      ErrorKind::InvalidArgument, "input 'shape': null host pointer");
  expect_error(
      [&] {
        s.run_bound({{"x", {nullptr, 32, DType::Float32, {8}}}, {"shape", good_shape}},
                    {{"y", y.binding({2, 4})}});
      },
      ErrorKind::InvalidArgument, "input 'x': null host pointer");
  // And the Session still runs.
  for (int i = 0; i < 8; ++i) x.data.get()[i] = static_cast<float>(i) - 3.5f;
  poison(y.data.get(), 8);
  s.run_bound({{"x", x.binding({8})}, {"shape", good_shape}}, {{"y", y.binding({2, 4})}});
  for (int i = 0; i < 8; ++i) EXPECT_EQ(y.data.get()[i], static_cast<float>(i) - 3.5f);
}

TEST_F(SessionBound, ValueInfoKeepsDeclaredTypesAndDimNames) {
  ModelBuilder m(13);
  m.input("a", onnx::TensorProto::UINT8, {-1, 3});
  m.input("b", onnx::TensorProto::DOUBLE, {2});
  m.output("a", onnx::TensorProto::UINT8);
  Session s = m.session();
  const ValueInfo& a = s.inputs()[0];
  EXPECT_EQ(a.dtype, DType::Int32);
  EXPECT_EQ(a.onnx_type, onnx::TensorProto::UINT8);
  EXPECT_EQ(a.dim_names, (std::vector<std::string>{"a_d0", ""}));
  EXPECT_EQ(s.inputs()[1].onnx_type, onnx::TensorProto::DOUBLE);
  EXPECT_EQ(s.inputs()[1].dtype, DType::Float32);
}

TEST(ChromeTrace, OneSlicePerNodeAndRun) {
  std::vector<TraceRun> runs = {{0, {{"Conv \"a\"", 0.5}, {"Relu", 0.25}}}, {1000, {{"Conv", 1}}}};
  std::string json = chrome_trace_json(runs);
  EXPECT_NE(json.find("{\"name\":\"Conv \\\"a\\\"\",\"ph\":\"X\",\"pid\":1,\"tid\":1,\"ts\":0,"
                      "\"dur\":500,\"args\":{\"index\":0,\"run\":0}}"),
            std::string::npos)
      << json;
  EXPECT_NE(json.find("\"ts\":500,\"dur\":250"), std::string::npos) << json;
  EXPECT_NE(json.find("\"ts\":1000,\"dur\":1000,\"args\":{\"index\":0,\"run\":1}"),
            std::string::npos)
      << json;
  expect_error([&] { write_chrome_trace("/nonexistent-dir/trace.json", runs); }, ErrorKind::Io,
               "/nonexistent-dir/trace.json");
}

}  // namespace
}  // namespace vkgraph::testing
