// Every public entry point checks its pointers and sizes: null pointers, sizes that do not
// match, impossible allocations and moved-from objects are a vkgraph::Error naming the problem,
// never a crash (include/vkgraph/*.h: Session, ComputeGraph, tensor_io, onnx_tensor, HostTensor).
#include <onnx/onnx_pb.h>

#include <filesystem>

#include "model_builder.h"
#include "vkgraph/onnx_tensor.h"
#include "vkgraph/ops.h"
#include "vkgraph/tensor_io.h"

#if defined(__SANITIZE_ADDRESS__)
#define VKGRAPH_UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define VKGRAPH_UNDER_ASAN 1
#endif
#endif

namespace vkgraph::testing {
namespace {

constexpr int kFloat = onnx::TensorProto::FLOAT;

class ApiEntryPoints : public GpuTest {
 protected:
  static ModelBuilder relu_model() {
    ModelBuilder m(14);
    m.input("x", kFloat, {-1, 4});
    m.output("y", kFloat);
    m.node("Relu", {"x"}, {"y"});
    return m;
  }
};

TEST_F(ApiEntryPoints, SessionFromNullBytes) {
  SessionOptions o;
  o.context = context();
  expect_error([&] { Session(nullptr, 100, o); }, ErrorKind::InvalidArgument,
               {"model_bytes is null", "100"});
  // Null and empty is an empty model: a format error, not a crash.
  try {
    Session(nullptr, 0, o);
    ADD_FAILURE() << "an empty model loaded";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::ModelFormat) << e.what();
  }
}

TEST_F(ApiEntryPoints, SessionFromMissingFile) {
  SessionOptions o;
  o.context = context();
  expect_error([&] { Session("/nonexistent/model.onnx", o); }, ErrorKind::Io,
               "/nonexistent/model.onnx");
}

TEST_F(ApiEntryPoints, MovedFromSession) {
  Session s = relu_model().session();
  Session t = std::move(s);
  EXPECT_EQ(t.inputs().size(), 1u);
  HostTensor x = HostTensor::from(DType::Float32, {1, 4}, std::vector<float>{1, -1, 2, -2});
  expect_error([&] { s.run({{"x", x}}); }, ErrorKind::InvalidState, "moved from");
  expect_error([&] { (void)s.inputs(); }, ErrorKind::InvalidState, "moved from");
  expect_error([&] { (void)s.graph(); }, ErrorKind::InvalidState, "moved from");
  EXPECT_EQ(t.run({{"x", x}})[0].as_double(1), 0.0);
}

// A misspelt name in SessionOptions::input_shapes (the CLI's --shape) is an error, not a
// silently ignored option.
TEST_F(ApiEntryPoints, InputShapesNameUnknownInput) {
  SessionOptions o;
  o.input_shapes["X"] = {2, 4};
  expect_error([&] { relu_model().session(o); }, ErrorKind::InvalidArgument,
               {"input_shapes names unknown input 'X'", "inputs are: x"});
  SessionOptions bad_dim;
  bad_dim.input_shapes["x"] = {-2, 4};
  expect_error([&] { relu_model().session(bad_dim); }, ErrorKind::InvalidArgument,
               {"input_shapes['x']", "-2"});
  // The override fits the declared [-1, 4]: its rank, and its fixed dims.
  for (const Shape& wrong : {Shape{2}, Shape{2, 4, 1}, Shape{2, 5}}) {
    SessionOptions o2;
    o2.input_shapes["x"] = wrong;
    expect_error([&] { relu_model().session(o2); }, ErrorKind::InvalidArgument,
                 {"input_shapes['x'] = " + shape_str(wrong), "does not fit", "[-1, 4]"});
  }
  SessionOptions fits;
  fits.input_shapes["x"] = {3, 4};
  Session s = relu_model().session(fits);
  HostTensor x = HostTensor::from(DType::Float32, {3, 4}, std::vector<float>(12, -1.f));
  EXPECT_EQ(s.run({{"x", x}})[0].as_double(11), 0.0);
}

TEST_F(ApiEntryPoints, HostTensorSizes) {
  expect_error(
      [] {
        HostTensor(DType::Float32, {2, -3});
      },
      ErrorKind::InvalidArgument, "negative dimension -3");
  expect_error(
      [] {
        HostTensor(DType::Float32, {INT64_MAX, 4});
      },
      ErrorKind::InvalidArgument, "overflows");
  expect_error(
      [] {
        HostTensor::from(DType::Float32, {2, 2}, std::vector<float>(3));
      },
      ErrorKind::InvalidArgument, {"HostTensor::from", "3 values", "[2, 2]"});
  expect_error([] { HostTensor::from(DType::Float32, {2}, std::vector<double>(2)); },
               ErrorKind::InvalidArgument, {"8 bytes", "float32"});
  EXPECT_EQ(HostTensor::from(DType::Int64, {3}, std::vector<int64_t>{1, 2, 3}).as_int(2), 3);
#ifndef VKGRAPH_UNDER_ASAN  // ASan aborts on an allocation this large instead of failing it
  expect_error(
      [] {
        HostTensor(DType::Float32, {int64_t{1} << 40, int64_t{1} << 10});
      },
      ErrorKind::OutOfMemory, "does not fit in host memory");
#endif
}

TEST_F(ApiEntryPoints, TensorFilesAndBytes) {
  expect_error([] { read_npy("/nonexistent/x.npy"); }, ErrorKind::Io, "/nonexistent/x.npy");
  expect_error([] { onnx_io::read_tensor_pb("/nonexistent/x.pb"); }, ErrorKind::Io,
               "/nonexistent/x.pb");
  try {
    decode_npy(std::span<const uint8_t>{});
    ADD_FAILURE() << "empty .npy decoded";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::ModelFormat) << e.what();
  }
  HostTensor bad(DType::Float32, {4});
  bad.bytes.resize(3);
  expect_error([&] { encode_npy(bad); }, ErrorKind::InvalidArgument, "");
  onnx::TensorProto p;
  p.set_data_type(onnx::TensorProto::FLOAT);
  p.add_dims(3);
  p.add_float_data(1.f);
  try {
    onnx_io::tensor_from_proto(p);
    ADD_FAILURE() << "3 dims from 1 value";
  } catch (const Error&) {
  }
}

TEST_F(ApiEntryPoints, ComputeGraphPointersAndSizes) {
  expect_error([] { ComputeGraph g(nullptr); }, ErrorKind::InvalidArgument, "needs a Context");
  ComputeGraph g(context());
  expect_error([&] { g.add_input({-1}, DType::Float32, "neg"); }, ErrorKind::InvalidArgument,
               "negative dimension");
  HostTensor short_constant(DType::Float32, {4});
  short_constant.bytes.resize(12);
  expect_error([&] { g.add_constant(short_constant, "c"); }, ErrorKind::InvalidArgument,
               "12 bytes for shape [4]");
  TensorRef x = g.add_input({4}, DType::Float32, "x");
  try {
    ops::binary(g, ops::BinaryOp::Add, x, TensorRef{12345});  // not a tensor of this graph
    ADD_FAILURE() << "a foreign TensorRef was accepted";
  } catch (const Error&) {
  }
  g.add_output(ops::binary(g, ops::BinaryOp::Add, x, x), "y");
  g.prepare();
  expect_error([&] { g.copy_to_input(0, nullptr, 16); }, ErrorKind::InvalidArgument,
               "null data for input 'x'");
  std::vector<float> in{1, 2, 3, 4}, out(4);
  g.copy_to_input(0, in.data(), 16);
  g.execute();
  expect_error([&] { g.copy_from_output(0, nullptr, 16); }, ErrorKind::InvalidArgument,
               "null destination for output 'y'");
  g.copy_from_output(0, out.data(), 16);
  EXPECT_EQ(out[3], 8.f);

  ComputeGraph h(context());
  TensorRef hx = h.add_input({4}, DType::Float32, "hx", IOMode::External);
  h.add_output(ops::binary(h, ops::BinaryOp::Add, hx, hx), "hy");
  expect_error([&] { h.bind_host_pointer("hx", nullptr, 16); }, ErrorKind::InvalidArgument,
               "null host pointer");
}

}  // namespace
}  // namespace vkgraph::testing
