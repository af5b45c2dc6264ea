// If, Loop and Scan with subgraphs that capture outer values, and values the graph computes
// from data that lowering needs (an If condition, a Loop condition, a Reshape shape): the
// Session runs such models in segments, reading those values back, and rebuilds only when
// they change. Outputs arrive in poisoned app memory (run_bound) and are checked against host
// references.
#include <onnx/onnx_pb.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "gpu_test.h"
#include "model_builder.h"
#include "vkgraph/error.h"
#include "vkgraph/session.h"

namespace vkgraph::testing {
namespace {

constexpr int kFloat = onnx::TensorProto::FLOAT;
constexpr int kInt64 = onnx::TensorProto::INT64;
constexpr int kBool = onnx::TensorProto::BOOL;

onnx::NodeProto& add_node(onnx::GraphProto& g, const std::string& op,
                          std::initializer_list<std::string> inputs,
                          std::initializer_list<std::string> outputs) {
  onnx::NodeProto* n = g.add_node();
  n->set_op_type(op);
  n->set_name(g.name() + "_" + op + std::to_string(g.node_size()));
  for (auto& i : inputs) n->add_input(i);
  for (auto& o : outputs) n->add_output(o);
  return *n;
}

void describe(onnx::ValueInfoProto* v, const std::string& name, int elem_type) {
  v->set_name(name);
  v->mutable_type()->mutable_tensor_type()->set_elem_type(elem_type);
}

onnx::GraphProto graph(const std::string& name,
                       std::initializer_list<std::pair<const char*, int>> in,
                       std::initializer_list<std::pair<const char*, int>> out) {
  onnx::GraphProto g;
  g.set_name(name);
  for (auto& [n, t] : in) describe(g.add_input(), n, t);
  for (auto& [n, t] : out) describe(g.add_output(), n, t);
  return g;
}

void set_graph(onnx::NodeProto& node, const std::string& name, const onnx::GraphProto& g) {
  onnx::AttributeProto* a = node.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::GRAPH);
  *a->mutable_g() = g;
}

void float_init(onnx::GraphProto& g, const std::string& name, const Shape& shape,
                std::vector<float> values) {
  onnx::TensorProto* t = g.add_initializer();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto::FLOAT);
  for (int64_t d : shape) t->add_dims(d);
  for (float v : values) t->add_float_data(v);
}

void scalar_init(onnx::GraphProto& g, const std::string& name, int type, int64_t value) {
  onnx::TensorProto* t = g.add_initializer();
  t->set_name(name);
  t->set_data_type(type);
  if (type == onnx::TensorProto::INT64)
    t->add_int64_data(value);
  else
    t->add_int32_data(static_cast<int32_t>(value));  // BOOL is stored in int32_data
}

class ControlFlow : public GpuTest {
 protected:
  HostTensor floats(Shape shape, float lo = -1.f, float hi = 1.f) {
    return HostTensor::from(DType::Float32, shape, random_floats(numel(shape), lo, hi));
  }
  // Runs through run_bound into outputs filled with NaN, so that an element the graph does
  // not write shows; returns them as tensors.
  std::vector<HostTensor> run_poisoned(Session& s, std::map<std::string, HostTensor>& feeds) {
    std::map<std::string, HostBinding> in;
    for (auto& [name, t] : feeds)
      in[name] = HostBinding{t.bytes.data(), t.bytes.size(), t.dtype, t.shape};
    std::vector<ValueInfo> outs = s.prepare_bound(in);
    std::vector<HostTensor> results;
    for (auto& o : outs) {
      results.push_back(HostTensor::uninitialized(o.dtype, o.shape));
      std::vector<float> nan(results.back().numel(), std::nanf(""));
      std::memcpy(results.back().bytes.data(), nan.data(), results.back().nbytes());
    }
    std::map<std::string, HostBinding> out;
    for (size_t i = 0; i < outs.size(); ++i)
      out[outs[i].name] = HostBinding{results[i].bytes.data(), results[i].bytes.size(),
                                      results[i].dtype, results[i].shape};
    s.run_bound(in, out);
    return results;
  }
};

void expect_near(const HostTensor& got, const Shape& shape, const std::vector<double>& want) {
  ASSERT_EQ(got.shape, shape);
  ASSERT_EQ(got.dtype, DType::Float32);
  ASSERT_EQ(static_cast<size_t>(got.numel()), want.size());
  for (size_t i = 0; i < want.size(); ++i)
    ASSERT_NEAR(got.data<float>()[i], want[i], 1e-5 * (1 + std::fabs(want[i]))) << "at " << i;
}

// y = sum(relu(x)) > 1 ? x * 2 : -x, the condition computed on the device.
TEST_F(ControlFlow, IfWithAComputedCondition) {
  ModelBuilder m(13);
  m.input("x", kFloat, {8});
  m.output("y", kFloat);
  float_init(m.graph(), "one", {}, {1.f});
  m.node("Relu", {"x"}, {"r"});
  onnx::NodeProto& sum = m.node("ReduceSum", {"r"}, {"s"});
  set_int(sum, "keepdims", 0);
  m.node("Greater", {"s", "one"}, {"cond"});
  onnx::NodeProto& node = m.node("If", {"cond"}, {"y"});
  onnx::GraphProto then_branch = graph("then", {}, {{"doubled", kFloat}});
  float_init(then_branch, "two", {}, {2.f});
  add_node(then_branch, "Mul", {"x", "two"}, {"doubled"});  // captures x
  onnx::GraphProto else_branch = graph("else", {}, {{"negated", kFloat}});
  add_node(else_branch, "Neg", {"x"}, {"negated"});
  set_graph(node, "then_branch", then_branch);
  set_graph(node, "else_branch", else_branch);
  Session s = m.session();

  for (bool positive : {true, false, true}) {
    HostTensor x = floats({8}, positive ? 0.5f : -1.f, positive ? 1.f : -0.1f);
    std::map<std::string, HostTensor> feeds{{"x", x}};
    std::vector<HostTensor> got = run_poisoned(s, feeds);
    double relu_sum = 0;
    for (int i = 0; i < 8; ++i) relu_sum += std::max(0.f, x.data<float>()[i]);
    std::vector<double> want;
    for (int i = 0; i < 8; ++i)
      want.push_back(relu_sum > 1 ? 2.0 * x.data<float>()[i] : -x.data<float>()[i]);
    expect_near(got.at(0), {8}, want);
    EXPECT_EQ(relu_sum > 1, positive);
  }
  // One segment (the condition) and a graph per branch taken: true, false, true again.
  EXPECT_EQ(s.load_times().builds, 4);
}

// A while loop: y += relu(x) while sum(y) < 4, at most 10 times; scan outputs y and y * i.
TEST_F(ControlFlow, LoopWithAComputedConditionCarriedValuesAndScanOutputs) {
  ModelBuilder m(13);
  m.input("x", kFloat, {3});
  m.input("y0", kFloat, {3});
  m.output("y", kFloat);
  m.output("ys", kFloat);
  m.output("yi", kFloat);
  scalar_init(m.graph(), "max_trips", onnx::TensorProto::INT64, 10);
  scalar_init(m.graph(), "start", onnx::TensorProto::BOOL, 1);
  float_init(m.graph(), "limit", {}, {4.f});
  m.node("Relu", {"x"}, {"step"});
  onnx::NodeProto& loop = m.node("Loop", {"max_trips", "start", "y0"}, {"y", "ys", "yi"});
  onnx::GraphProto body =
      graph("body", {{"i", kInt64}, {"cond_in", kBool}, {"y_in", kFloat}},
            {{"cond_out", kBool}, {"y_out", kFloat}, {"scan_y", kFloat}, {"scan_yi", kFloat}});
  add_node(body, "Add", {"y_in", "step"}, {"y_out"});  // captures the outer step
  onnx::NodeProto& sum = add_node(body, "ReduceSum", {"y_out"}, {"s"});
  set_int(sum, "keepdims", 0);
  add_node(body, "Less", {"s", "limit"}, {"cond_out"});
  add_node(body, "Identity", {"y_out"}, {"scan_y"});
  onnx::NodeProto& cast = add_node(body, "Cast", {"i"}, {"i_float"});
  set_int(cast, "to", onnx::TensorProto::FLOAT);
  add_node(body, "Mul", {"y_out", "i_float"}, {"scan_yi"});
  set_graph(loop, "body", body);
  Session s = m.session();

  for (float lo : {0.8f, 0.15f}) {
    HostTensor x = floats({3}, lo, lo + 0.1f);
    HostTensor y0 = floats({3}, -0.1f, 0.1f);
    std::map<std::string, HostTensor> feeds{{"x", x}, {"y0", y0}};
    std::vector<HostTensor> got = run_poisoned(s, feeds);
    std::vector<double> y(y0.data<float>(), y0.data<float>() + 3), ys, yi;
    int trips = 0;
    for (bool cond = true; trips < 10 && cond; ++trips) {
      double total = 0;
      for (int k = 0; k < 3; ++k) {
        y[k] += std::max(0.f, x.data<float>()[k]);
        total += y[k];
      }
      for (int k = 0; k < 3; ++k) ys.push_back(y[k]);
      for (int k = 0; k < 3; ++k) yi.push_back(y[k] * trips);
      cond = total < 4;
    }
    EXPECT_GE(trips, 2);
    expect_near(got.at(0), {3}, y);
    expect_near(got.at(1), {trips, 3}, ys);
    expect_near(got.at(2), {trips, 3}, yi);
  }
}

// s += x[t] * w over the sequence in reverse; the states stacked along axis 1.
TEST_F(ControlFlow, ScanOverASmallSequence) {
  ModelBuilder m(11);
  m.input("s0", kFloat, {2});
  m.input("x", kFloat, {4, 2});
  m.output("s", kFloat);
  m.output("states", kFloat);
  float_init(m.graph(), "w", {2}, {0.5f, -2.f});
  onnx::NodeProto& scan = m.node("Scan", {"s0", "x"}, {"s", "states"});
  set_int(scan, "num_scan_inputs", 1);
  set_ints(scan, "scan_input_directions", {1});
  set_ints(scan, "scan_output_axes", {1});
  onnx::GraphProto body =
      graph("body", {{"s_in", kFloat}, {"x_t", kFloat}}, {{"s_out", kFloat}, {"state", kFloat}});
  add_node(body, "Mul", {"x_t", "w"}, {"wx"});  // captures w
  add_node(body, "Add", {"s_in", "wx"}, {"s_out"});
  add_node(body, "Identity", {"s_out"}, {"state"});
  set_graph(scan, "body", body);
  Session s = m.session();

  HostTensor s0 = floats({2}), x = floats({4, 2});
  std::map<std::string, HostTensor> feeds{{"s0", s0}, {"x", x}};
  std::vector<HostTensor> got = run_poisoned(s, feeds);
  const float w[2] = {0.5f, -2.f};
  std::vector<double> state(s0.data<float>(), s0.data<float>() + 2);
  std::vector<double> states(8);
  for (int t = 0; t < 4; ++t) {
    for (int k = 0; k < 2; ++k) {
      state[k] += x.data<float>()[(3 - t) * 2 + k] * w[k];
      states[k * 4 + t] = state[k];
    }
  }
  expect_near(got.at(0), {2}, state);
  expect_near(got.at(1), {2, 4}, states);
}

// Reshape(x, table[argmax(p)]): the target shape is computed on the device from data.
TEST_F(ControlFlow, ReshapeWithAComputedShapeRebuildsWhenTheShapeChanges) {
  ModelBuilder m(13);
  m.input("x", kFloat, {2, 3, 4});
  m.input("p", kFloat, {2});
  m.output("y", kFloat);
  m.initializer("table", std::vector<int64_t>{6, 4, 1, 4, 3, 2});
  m.initializer("table_shape", std::vector<int64_t>{2, 3});
  m.initializer("three", std::vector<int64_t>{3});
  m.node("Reshape", {"table", "table_shape"}, {"rows"});
  onnx::NodeProto& argmax = m.node("ArgMax", {"p"}, {"k"});
  set_int(argmax, "keepdims", 1);
  m.node("Gather", {"rows", "k"}, {"row"});
  m.node("Reshape", {"row", "three"}, {"shape"});
  m.node("Reshape", {"x", "shape"}, {"y"});
  Session s = m.session();

  struct Case {
    float p0, p1;
    Shape want;
    int builds;  // the segment once; the model's graph once per shape
  };
  for (const Case& c : {Case{0.9f, 0.1f, {6, 4, 1}, 2}, Case{-0.5f, 0.7f, {4, 3, 2}, 3},
                        Case{-0.2f, 0.3f, {4, 3, 2}, 3}, Case{0.4f, 0.3f, {6, 4, 1}, 4}}) {
    HostTensor x = floats({2, 3, 4});
    HostTensor p = HostTensor::from(DType::Float32, {2}, std::vector<float>{c.p0, c.p1});
    std::map<std::string, HostTensor> feeds{{"x", x}, {"p", p}};
    std::vector<HostTensor> got = run_poisoned(s, feeds);
    std::vector<double> want(x.data<float>(), x.data<float>() + 24);
    expect_near(got.at(0), c.want, want);
    EXPECT_EQ(s.load_times().builds, c.builds);
  }
  // run() (Staged outputs) takes the same path.
  HostTensor x = floats({2, 3, 4});
  HostTensor p = HostTensor::from(DType::Float32, {2}, std::vector<float>{0.1f, 0.2f});
  std::vector<HostTensor> got = s.run({{"x", x}, {"p", p}});
  expect_near(got.at(0), {4, 3, 2}, std::vector<double>(x.data<float>(), x.data<float>() + 24));
}

// A for loop whose body holds an If on a condition computed from the carried value; the
// branches capture names of the body (y_in) and of the model (x, half).
TEST_F(ControlFlow, IfInsideALoopBodyWithComputedConditions) {
  ModelBuilder m(13);
  m.input("x", kFloat, {2});
  m.input("y0", kFloat, {2});
  m.output("y", kFloat);
  scalar_init(m.graph(), "trips", onnx::TensorProto::INT64, 4);
  float_init(m.graph(), "half", {}, {0.5f});
  onnx::NodeProto& loop = m.node("Loop", {"trips", "", "y0"}, {"y"});
  onnx::GraphProto body = graph("body", {{"i", kInt64}, {"c", kBool}, {"y_in", kFloat}},
                                {{"c", kBool}, {"y_out", kFloat}});
  add_node(body, "Relu", {"y_in"}, {"r"});
  onnx::NodeProto& sum = add_node(body, "ReduceSum", {"r"}, {"s"});
  set_int(sum, "keepdims", 0);
  add_node(body, "Greater", {"s", "half"}, {"big"});
  onnx::NodeProto& branch = add_node(body, "If", {"big"}, {"y_out"});
  onnx::GraphProto then_branch = graph("then", {}, {{"shrunk", kFloat}});
  add_node(then_branch, "Mul", {"y_in", "half"}, {"shrunk"});
  onnx::GraphProto else_branch = graph("else", {}, {{"grown", kFloat}});
  add_node(else_branch, "Add", {"y_in", "x"}, {"grown"});
  set_graph(branch, "then_branch", then_branch);
  set_graph(branch, "else_branch", else_branch);
  set_graph(loop, "body", body);
  Session s = m.session();

  for (int run = 0; run < 3; ++run) {
    HostTensor x = floats({2}, 0.1f, 0.6f), y0 = floats({2}, -0.5f, 1.f);
    std::map<std::string, HostTensor> feeds{{"x", x}, {"y0", y0}};
    std::vector<HostTensor> got = run_poisoned(s, feeds);
    std::vector<double> y(y0.data<float>(), y0.data<float>() + 2);
    for (int i = 0; i < 4; ++i) {
      const double relu_sum = std::max(0.0, y[0]) + std::max(0.0, y[1]);
      for (int k = 0; k < 2; ++k) y[k] = relu_sum > 0.5 ? y[k] * 0.5 : y[k] + x.data<float>()[k];
    }
    expect_near(got.at(0), {2}, y);
  }
}

// M = 0: no iteration runs and the carried values come out as they went in.
TEST_F(ControlFlow, LoopOfZeroIterationsPassesTheCarriedValuesThrough) {
  ModelBuilder m(13);
  m.input("y0", kFloat, {3});
  m.output("y", kFloat);
  scalar_init(m.graph(), "trips", onnx::TensorProto::INT64, 0);
  onnx::NodeProto& loop = m.node("Loop", {"trips", "", "y0"}, {"y"});
  onnx::GraphProto body = graph("body", {{"i", kInt64}, {"c", kBool}, {"y_in", kFloat}},
                                {{"c", kBool}, {"y_out", kFloat}});
  add_node(body, "Neg", {"y_in"}, {"y_out"});
  set_graph(loop, "body", body);
  Session s = m.session();
  HostTensor y0 = floats({3});
  std::map<std::string, HostTensor> feeds{{"y0", y0}};
  std::vector<HostTensor> got = run_poisoned(s, feeds);
  expect_near(got.at(0), {3}, std::vector<double>(y0.data<float>(), y0.data<float>() + 3));
}

TEST_F(ControlFlow, LoopWithoutTripCountOrConditionFailsNamingTheNode) {
  ModelBuilder m(13);
  m.input("y0", kFloat, {2});
  m.output("y", kFloat);
  onnx::NodeProto& loop = m.node("Loop", {"", "", "y0"}, {"y"});
  loop.set_name("forever");
  onnx::GraphProto body = graph("body", {{"i", kInt64}, {"c", kBool}, {"y_in", kFloat}},
                                {{"c", kBool}, {"y_out", kFloat}});
  add_node(body, "Neg", {"y_in"}, {"y_out"});
  set_graph(loop, "body", body);
  expect_error([&] { m.session(); }, ErrorKind::ModelFormat, {"Loop node 'forever'", "never ends"});
}

TEST_F(ControlFlow, SubgraphReadingAMissingValueFailsNamingTheNode) {
  ModelBuilder m(13);
  m.input("cond", kBool, {});
  m.input("x", kFloat, {2});
  m.output("y", kFloat);
  onnx::NodeProto& node = m.node("If", {"cond"}, {"y"});
  node.set_name("choose");
  onnx::GraphProto then_branch = graph("then", {}, {{"a", kFloat}});
  add_node(then_branch, "Add", {"x", "ghost"}, {"a"});
  onnx::GraphProto else_branch = graph("else", {}, {{"b", kFloat}});
  add_node(else_branch, "Neg", {"x"}, {"b"});
  set_graph(node, "then_branch", then_branch);
  set_graph(node, "else_branch", else_branch);
  // ONNX's checker finds it first (IR <= 8); past what the checker knows, vkgraph's own check.
  expect_error([&] { m.session(); }, ErrorKind::ModelFormat, {"'ghost'"});
  m.proto().set_ir_version(9);
  expect_error([&] { m.session(); }, ErrorKind::ModelFormat, {"If node 'choose'", "'ghost'"});
}

TEST_F(ControlFlow, LoopWithANegativeTripCountFailsNamingTheNode) {
  ModelBuilder m(13);
  m.input("y0", kFloat, {2});
  m.output("y", kFloat);
  scalar_init(m.graph(), "trips", onnx::TensorProto::INT64, -1);
  onnx::NodeProto& loop = m.node("Loop", {"trips", "", "y0"}, {"y"});
  loop.set_name("repeat");
  onnx::GraphProto body = graph("body", {{"i", kInt64}, {"c", kBool}, {"y_in", kFloat}},
                                {{"c", kBool}, {"y_out", kFloat}});
  add_node(body, "Neg", {"y_in"}, {"y_out"});
  set_graph(loop, "body", body);
  expect_error([&] { m.session(); }, ErrorKind::ModelFormat,
               {"Loop node 'repeat'", "trip count M is -1"});
}

TEST_F(ControlFlow, IfWhoseBranchesDisagreeInOutputCountFailsNamingTheNode) {
  ModelBuilder m(13);
  m.input("x", kFloat, {2});
  m.output("y", kFloat);
  float_init(m.graph(), "zero", {}, {0.f});
  m.node("ReduceMax", {"x"}, {"top"});
  m.node("Greater", {"top", "zero"}, {"cond"});
  onnx::NodeProto& node = m.node("If", {"cond"}, {"y"});
  node.set_name("choose");
  onnx::GraphProto then_branch = graph("then", {}, {{"a", kFloat}});
  add_node(then_branch, "Neg", {"x"}, {"a"});
  onnx::GraphProto else_branch = graph("else", {}, {{"b", kFloat}, {"c", kFloat}});
  add_node(else_branch, "Neg", {"x"}, {"b"});
  add_node(else_branch, "Abs", {"x"}, {"c"});
  set_graph(node, "then_branch", then_branch);
  set_graph(node, "else_branch", else_branch);
  expect_error([&] { m.session(); }, ErrorKind::ModelFormat,
               {"If node 'choose'", "then_branch has 1 outputs and else_branch 2"});
}

}  // namespace
}  // namespace vkgraph::testing
