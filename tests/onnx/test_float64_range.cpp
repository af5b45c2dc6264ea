// vkgraph computes float64 tensors in float32 (onnx_tensor.h). A finite float64 value beyond
// float32's range would become inf there, a silent wrong answer, so it is refused naming the
// tensor and the value: Unsupported in a model constant (initializer or Constant node) at load,
// InvalidArgument in data to run on (a .pb input file, as the conformance runner reads them).
#include <onnx/onnx_pb.h>

#include "../tensor_test_util.h"
#include "model_builder.h"
#include "vkgraph/file_io.h"
#include "vkgraph/onnx_tensor.h"

namespace vkgraph::testing {
namespace {

constexpr int kDouble = onnx::TensorProto::DOUBLE;

onnx::TensorProto float64_tensor(const std::string& name, std::vector<double> values) {
  onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(kDouble);
  t.add_dims(static_cast<int64_t>(values.size()));
  for (double v : values) t.add_double_data(v);
  return t;
}

// y = x + c, all float64 [2], with c as an initializer or a Constant node.
ModelBuilder add_model(const std::vector<double>& c, bool constant_node) {
  ModelBuilder m(14);
  m.input("x", kDouble, {2});
  m.output("y", kDouble);
  if (constant_node) {
    onnx::AttributeProto* a = m.node("Constant", {}, {"c"}).add_attribute();
    a->set_name("value");
    a->set_type(onnx::AttributeProto::TENSOR);
    *a->mutable_t() = float64_tensor("c", c);
  } else {
    m.initializer(float64_tensor("c", c));
  }
  m.node("Add", {"x", "c"}, {"y"});
  return m;
}

class Float64Range : public GpuTest {};

TEST_F(Float64Range, ConstantBeyondFloat32IsUnsupported) {
  for (bool constant_node : {false, true}) {
    SCOPED_TRACE(constant_node ? "Constant node" : "initializer");
    ModelBuilder m = add_model({1.0, -2.4e198}, constant_node);
    HostTensor x(DType::Float32, {2});
    x.data<float>()[0] = 0.25f;
    x.data<float>()[1] = -1.5f;
    expect_error(
        [&] {
          m.session().run({{"x", x}});
        },
        ErrorKind::Unsupported, {"'c'", "float64 value -2.4e+198 is beyond float32's range"});
  }
}

TEST_F(Float64Range, RunInputBeyondFloat32IsInvalidArgument) {
  Session s = add_model({1.0, 3e38}, false).session();
  TempDir dir;
  auto write_input = [&](std::vector<double> values) {
    const std::string bytes = float64_tensor("x", values).SerializeAsString();
    write_file_bytes(dir.file("input_0.pb"), to_bytes(bytes));
    return onnx_io::read_tensor_pb(dir.file("input_0.pb"));
  };
  // Finite values within range run, rounded to float32 (3e38 + 1e37 stays finite).
  std::vector<HostTensor> y = s.run({{"x", write_input({0.1, 1e37})}});
  ASSERT_EQ(y.size(), 1u);
  EXPECT_FLOAT_EQ(y[0].data<float>()[0], 1.1f);
  EXPECT_FLOAT_EQ(y[0].data<float>()[1], 3.1e38f);
  expect_error(
      [&] {
        write_input({0.5, 5.9e199});
      },
      ErrorKind::InvalidArgument,
      {"input_0.pb", "'x'", "float64 value 5.9e+199 is beyond float32's range"});
}

}  // namespace
}  // namespace vkgraph::testing
