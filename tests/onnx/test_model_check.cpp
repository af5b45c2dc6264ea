// Model checking at load: ONNX's checker (libonnx) rejects what it rejects, with its message;
// the importer refuses any attribute of a lowered node that its lowering did not read.
#include <onnx/onnx_pb.h>

#include "gpu_test.h"
#include "vkgraph/session.h"

namespace vkgraph::testing {
namespace {

using onnx::AttributeProto;

void describe(onnx::ValueInfoProto& v, const std::string& name, const Shape& dims) {
  v.set_name(name);
  auto* tt = v.mutable_type()->mutable_tensor_type();
  tt->set_elem_type(onnx::TensorProto::FLOAT);
  for (int64_t d : dims) tt->mutable_shape()->add_dim()->set_dim_value(d);
}

// Debian's libonnx 1.12 checks models of IR version <= 8 and opset <= 17; newer ones meet only
// vkgraph's own attribute rule, which still knows 1.12's schemas up to opset 17.
constexpr int kUnchecked = 9;  // an IR version beyond the checker (recent onnx writes 9 or 10)

// X [1,1,5,5] -> Conv (3x3 weights W of ones) -> `tail` (optional) -> Y, at `opset`.
onnx::ModelProto conv_model(int opset, const std::string& tail = "", int ir_version = 8) {
  onnx::ModelProto m;
  m.set_ir_version(ir_version);
  m.add_opset_import()->set_version(opset);
  onnx::GraphProto& g = *m.mutable_graph();
  g.set_name("conv_model");
  describe(*g.add_input(), "X", {1, 1, 5, 5});
  onnx::TensorProto& w = *g.add_initializer();
  w.set_name("W");
  w.set_data_type(onnx::TensorProto::FLOAT);
  for (int64_t d : {1, 1, 3, 3}) w.add_dims(d);
  for (int i = 0; i < 9; ++i) w.add_float_data(1.f);
  onnx::NodeProto& conv = *g.add_node();
  conv.set_op_type("Conv");
  conv.set_name("conv");
  conv.add_input("X");
  conv.add_input("W");
  conv.add_output(tail.empty() ? "Y" : "C");
  if (!tail.empty()) {
    onnx::NodeProto& t = *g.add_node();
    t.set_op_type(tail);
    t.set_name("act");
    t.add_input("C");
    t.add_output("Y");
  }
  g.add_output()->set_name("Y");
  g.mutable_output(0)->mutable_type()->mutable_tensor_type()->set_elem_type(
      onnx::TensorProto::FLOAT);
  return m;
}

AttributeProto& add_attr(onnx::NodeProto& n, const std::string& name,
                         AttributeProto::AttributeType type) {
  AttributeProto& a = *n.add_attribute();
  a.set_name(name);
  a.set_type(type);
  return a;
}

void add_ints(onnx::NodeProto& n, const std::string& name, std::vector<int64_t> v) {
  AttributeProto& a = add_attr(n, name, AttributeProto::INTS);
  for (int64_t x : v) a.add_ints(x);
}

Session open(const onnx::ModelProto& m, SessionOptions options = {}) {
  std::string bytes = m.SerializeAsString();
  options.context = context();
  return Session(bytes.data(), bytes.size(), options);
}

onnx::NodeProto& node(onnx::ModelProto& m, int i) {
  return *m.mutable_graph()->mutable_node(i);
}

class ModelCheck : public GpuTest {};

TEST_F(ModelCheck, ValidConvLoadsWithAndWithoutTheChecker) {
  for (int opset : {13, 18}) {
    onnx::ModelProto m = conv_model(opset);
    add_ints(node(m, 0), "strides", {2, 2});
    add_ints(node(m, 0), "pads", {1, 1, 1, 1});
    Session s = open(m);
    EXPECT_EQ(s.run({{"X", HostTensor(DType::Float32, {1, 1, 5, 5})}})[0].shape,
              (Shape{1, 1, 3, 3}))
        << "opset " << opset;
  }
}

TEST_F(ModelCheck, OnnxCheckerRejectsMisspelledAttributes) {
  for (const char* name : {"sprides", "paes"}) {
    onnx::ModelProto m = conv_model(13);
    add_ints(node(m, 0), name, {1, 1});
    expect_error([&] { open(m); }, ErrorKind::ModelFormat,
                 {"rejected by ONNX's checker", name, "Conv"});
  }
}

TEST_F(ModelCheck, OnnxCheckerRejectsAttributesOfTheWrongType) {
  onnx::ModelProto m = conv_model(13);
  add_attr(node(m, 0), "strides", AttributeProto::FLOAT).set_f(2.f);
  expect_error([&] { open(m); }, ErrorKind::ModelFormat, {"rejected by ONNX's checker", "strides"});
}

TEST_F(ModelCheck, OnnxCheckerRejectsAWrongInputCount) {
  onnx::ModelProto m = conv_model(13);
  node(m, 0).mutable_input()->RemoveLast();
  expect_error([&] { open(m); }, ErrorKind::ModelFormat, {"rejected by ONNX's checker", "conv"});
}

// Where the checker does not judge, the importer's own rule names node and attribute.
TEST_F(ModelCheck, UnreadAttributesAreErrorsNamingNodeAndAttribute) {
  for (const char* name : {"sprides", "paes"}) {
    onnx::ModelProto m = conv_model(13, "", kUnchecked);
    add_ints(node(m, 0), name, {1, 1});
    expect_error([&] { open(m); }, ErrorKind::ModelFormat,
                 {"Conv node 'conv'", std::string("unknown attribute '") + name + "'"});
    // Beyond the schemas' opsets a name they lack may be new: Unsupported, still named.
    onnx::ModelProto newer = conv_model(18);
    add_ints(node(newer, 0), name, {1, 1});
    expect_error([&] { open(newer); }, ErrorKind::Unsupported,
                 {"Conv node 'conv'", std::string("attribute '") + name + "' (INTS)"});
  }
}

TEST_F(ModelCheck, AttributesOfTheWrongTypeAreErrors) {
  onnx::ModelProto m = conv_model(13, "", kUnchecked);
  add_attr(node(m, 0), "strides", AttributeProto::FLOAT).set_f(2.f);
  expect_error([&] { open(m); }, ErrorKind::ModelFormat,
               {"Conv node 'conv'", "attribute 'strides' is FLOAT, ONNX declares it INTS"});
  onnx::ModelProto g = conv_model(18);
  add_attr(node(g, 0), "group", AttributeProto::STRING).set_s("1");
  expect_error([&] { open(g); }, ErrorKind::Unsupported, {"Conv node 'conv'", "'group' (STRING)"});
}

// A fusion absorbs a node only when it read all its attributes; otherwise the node is lowered
// alone and the rule names it, not the fused node.
TEST_F(ModelCheck, AbsorbedNodesKeepTheirAttributeCheck) {
  onnx::ModelProto m = conv_model(13, "LeakyRelu", kUnchecked);
  add_attr(node(m, 1), "alpah", AttributeProto::FLOAT).set_f(0.5f);
  expect_error([&] { open(m); }, ErrorKind::ModelFormat,
               {"LeakyRelu node 'act'", "unknown attribute 'alpah'"});
  // Spelled right, it fuses and applies.
  onnx::ModelProto ok = conv_model(13, "LeakyRelu", kUnchecked);
  add_attr(node(ok, 1), "alpha", AttributeProto::FLOAT).set_f(0.5f);
  Session s = open(ok);
  EXPECT_EQ(s.graph()->stats().nodes, 1u);  // fused: one dispatch
  HostTensor x = HostTensor::from(DType::Float32, {1, 1, 5, 5}, std::vector<float>(25, -1.f));
  std::vector<HostTensor> y = s.run({{"X", x}});
  ASSERT_EQ(y[0].numel(), 9);
  for (int i = 0; i < 9; ++i) EXPECT_FLOAT_EQ(y[0].data<float>()[i], -4.5f);  // 0.5 * (-9)
}

// Folded nodes are held to the same rule: a Shape node (folded on the host) with an attribute
// no folder reads.
TEST_F(ModelCheck, FoldedNodesAreChecked) {
  auto shape_model = [](const char* attr) {
    onnx::ModelProto m = conv_model(15, "Shape", kUnchecked);
    m.mutable_graph()->mutable_output(0)->mutable_type()->mutable_tensor_type()->set_elem_type(
        onnx::TensorProto::INT64);
    add_attr(node(m, 1), attr, AttributeProto::INT).set_i(1);
    return m;
  };
  expect_error([&] { open(shape_model("stard")); }, ErrorKind::ModelFormat,
               {"Shape node 'act'", "unknown attribute 'stard'"});
  Session s = open(shape_model("start"));
  std::vector<HostTensor> y = s.run({{"X", HostTensor(DType::Float32, {1, 1, 5, 5})}});
  ASSERT_EQ(y[0].numel(), 3);
  EXPECT_EQ(y[0].data<int64_t>()[0], 1);
  EXPECT_EQ(y[0].data<int64_t>()[2], 3);
}

}  // namespace
}  // namespace vkgraph::testing
