// Loader regressions: each test is a malformed model that the mutations of
// test_load_robustness.cpp or fuzz/fuzz_load once turned into a crash or a wrong error; it must
// now load or fail with a vkgraph::Error naming the problem.
#include "load_test_util.h"

namespace vkgraph::testing {
namespace {

onnx::ModelProto seed_proto(const std::string& name) {
  for (const SeedModel& seed : seed_models()) {
    onnx::ModelProto m;
    if (seed.name == name && m.ParseFromString(seed.bytes)) return m;
  }
  throw std::runtime_error("no seed model " + name);
}

void import_on_host(const onnx::ModelProto& m) {
  load_on_host(m.SerializeAsString(), "model", context());
}

void import_on_host_bytes(const std::string& bytes) {
  load_on_host(bytes, "model", context());
}

onnx::TensorProto& initializer(onnx::ModelProto& m, const std::string& name) {
  for (auto& init : *m.mutable_graph()->mutable_initializer())
    if (init.name() == name) return init;
  throw std::runtime_error("no initializer " + name);
}

// A model of one node: float input X of shape `x` -> op_type (opset `opset`) -> Y.
onnx::ModelProto one_node_model(const std::string& op_type, const Shape& x, int opset) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(opset);
  onnx::GraphProto& g = *m.mutable_graph();
  g.set_name("one_node");
  onnx::ValueInfoProto& in = *g.add_input();
  in.set_name("X");
  in.mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  auto& shape = *in.mutable_type()->mutable_tensor_type()->mutable_shape();
  for (int64_t d : x) shape.add_dim()->set_dim_value(d);
  g.add_output()->set_name("Y");
  g.mutable_output(0)->mutable_type()->mutable_tensor_type()->set_elem_type(
      onnx::TensorProto::FLOAT);
  onnx::NodeProto& node = *g.add_node();
  node.set_op_type(op_type);
  node.set_name("n");
  node.add_input("X");
  node.add_output("Y");
  return m;
}

void add_ints(onnx::NodeProto& node, const std::string& name, const std::vector<int64_t>& v) {
  onnx::AttributeProto& a = *node.add_attribute();
  a.set_name(name);
  a.set_type(onnx::AttributeProto::INTS);
  for (int64_t x : v) a.add_ints(x);
}

// fuzz_load on the H200 (16 jobs, 8.0M inputs, 2026-12-01): a batched Scan (opset 8) whose
// state has no batch axis to take rows from (a vector erase past the end), and a DFT of an
// empty signal (an integer division by zero). The inputs as libFuzzer saved them, with the
// 2026-12-02 runs' four: a Mul of one input that the activation matcher read a second input
// of, a Reshape to 2,097,153 dims that took 23 s (every host element read built an error
// message; shape_str printed every dim), a Mul reading its own output (the matcher recursed
// until the stack overflowed) and auto_pad SAME with a stride of 0 (a division by zero); and
// session 8's local run: a DFT over a dim of about 2^63 (its basis size overflowed int64).
TEST_F(LoadRobustness, FuzzFindingsOfTheH200Run) {
  const fs::path dir = fs::path(VKGRAPH_SOURCE_DIR) / "tests/data/fuzz_findings";
  size_t found = 0;
  for (const auto& entry : fs::directory_iterator(dir)) {
    SCOPED_TRACE(entry.path().filename().string());
    ++found;
    try {
      import_on_host_bytes(file_bytes(entry.path().string()));
    } catch (const Error&) {  // a clear error is the expected end of a malformed model
    }
  }
  EXPECT_EQ(found, 10u);
}

// fuzz_load: axis 0 was accepted for a rank-0 input, and slice indexed its per-axis flags
// with it (out of bounds).
TEST_F(LoadRobustness, SliceOfAScalar) {
  onnx::ModelProto m = one_node_model("Slice", {}, 9);
  onnx::NodeProto& node = *m.mutable_graph()->mutable_node(0);
  add_ints(node, "starts", {0});
  add_ints(node, "ends", {1});
  add_ints(node, "axes", {0});
  expect_error([&] { import_on_host(m); }, ErrorKind::InvalidArgument,
               "axis 0 out of range for rank 0");
}

onnx::TensorProto& add_int64_initializer(onnx::ModelProto& m, const std::string& name,
                                         const std::vector<int64_t>& v) {
  onnx::TensorProto& t = *m.mutable_graph()->add_initializer();
  t = onnx_io::tensor_to_proto(HostTensor::from(DType::Int64, {static_cast<int64_t>(v.size())}, v),
                               name);
  return t;
}

// fuzz_load: the product of Reshape's known dims overflowed int64 before -1 was inferred.
TEST_F(LoadRobustness, ReshapeWithOverflowingDims) {
  onnx::ModelProto m = one_node_model("Reshape", {2, 3}, 13);
  m.mutable_graph()->mutable_node(0)->add_input("shape");
  add_int64_initializer(m, "shape", {int64_t{1} << 40, -1, int64_t{1} << 40});
  expect_error([&] { import_on_host(m); }, ErrorKind::InvalidArgument, "overflows int64");
}

// fuzz_load: Tile's output dims and Pad's padded dims overflowed int64.
TEST_F(LoadRobustness, TileAndPadWithOverflowingSizes) {
  onnx::ModelProto tile = one_node_model("Tile", {2, 3}, 13);
  tile.mutable_graph()->mutable_node(0)->add_input("repeats");
  add_int64_initializer(tile, "repeats", {int64_t{1} << 62, 1});
  expect_error([&] { import_on_host(tile); }, ErrorKind::InvalidArgument, "overflows int64");
  onnx::ModelProto pad = one_node_model("Pad", {2, 3}, 13);
  pad.mutable_graph()->mutable_node(0)->add_input("pads");
  add_int64_initializer(pad, "pads", {INT64_MAX, 0, INT64_MAX, 0});
  expect_error([&] { import_on_host(pad); }, ErrorKind::InvalidArgument, "overflows int64");
}

// Corrupted-bytes test under UBSan: a huge Resize scale was converted to an int64 dim.
TEST_F(LoadRobustness, ResizeWithHugeOrInvalidScales) {
  for (float scale : {1e30f, -2.f, NAN}) {
    onnx::ModelProto m = one_node_model("Resize", {1, 1, 2, 2}, 13);
    m.mutable_graph()->mutable_node(0)->add_input("");
    m.mutable_graph()->mutable_node(0)->add_input("scales");
    *m.mutable_graph()->add_initializer() = onnx_io::tensor_to_proto(
        HostTensor::from(DType::Float32, {4}, std::vector<float>{1, 1, scale, 1}), "scales");
    expect_error([&] { import_on_host(m); }, ErrorKind::InvalidArgument, "scale");
  }
}

// Corrupted-bytes test under UBSan: strides of an empty Expand output with huge dims
// overflowed. Such a model may load (nothing to compute) or be rejected.
TEST_F(LoadRobustness, ExpandToEmptyShapeWithHugeDims) {
  onnx::ModelProto m = one_node_model("Expand", {2}, 13);
  m.mutable_graph()->mutable_node(0)->add_input("shape");
  add_int64_initializer(m, "shape", {0, int64_t{1} << 62, 2});
  try {
    import_on_host(m);
  } catch (const Error& e) {
    EXPECT_FALSE(e.message().empty());
  }
}

// Broken-structure test under UBSan: the sum of Split's sizes overflowed int64.
TEST_F(LoadRobustness, SplitWithOverflowingSizes) {
  onnx::ModelProto m = one_node_model("Split", {100}, 11);
  add_ints(*m.mutable_graph()->mutable_node(0), "split", {100, INT64_MAX});
  expect_error([&] { import_on_host(m); }, ErrorKind::InvalidArgument, "do not split axis");
}

// Broken-structure test under UBSan: a huge num_outputs overflowed Split's part size (and
// would have made that many parts).
TEST_F(LoadRobustness, SplitIntoHugeNumberOfParts) {
  onnx::ModelProto m = one_node_model("Split", {6}, 18);
  onnx::AttributeProto& a = *m.mutable_graph()->mutable_node(0)->add_attribute();
  a.set_name("num_outputs");
  a.set_type(onnx::AttributeProto::INT);
  a.set_i(INT64_MAX);
  expect_error([&] { import_on_host(m); }, ErrorKind::Unsupported, "cannot split into");
}

// Broken-structure test under UBSan: ConvTranspose's output size overflowed with huge strides.
TEST_F(LoadRobustness, ConvTransposeWithHugeStrides) {
  onnx::ModelProto m = one_node_model("ConvTranspose", {1, 1, 3, 3}, 13);
  m.mutable_graph()->mutable_node(0)->add_input("W");
  *m.mutable_graph()->add_initializer() = onnx_io::tensor_to_proto(
      HostTensor::from(DType::Float32, {1, 1, 2, 2}, std::vector<float>{1, 2, 3, 4}), "W");
  add_ints(*m.mutable_graph()->mutable_node(0), "strides", {INT64_MAX, 1});
  expect_error([&] { import_on_host(m); }, ErrorKind::InvalidArgument, "overflow");
}

// Fusion looked at the outputs of a consumer node with none (protobuf CHECK failure).
TEST_F(LoadRobustness, NodeWithoutOutputs) {
  onnx::ModelProto m = seed_proto("models/digits.onnx");
  m.mutable_graph()->mutable_node(1)->clear_output();
  expect_error([&] { import_on_host(m); }, ErrorKind::ModelFormat,
               {"rejected by ONNX's checker", "output size 0"});
  m.set_ir_version(9);  // beyond the checker: the importer's own check
  expect_error([&] { import_on_host(m); }, ErrorKind::ModelFormat, "has no output");
}

// A Conv weight of rank < 2 made the default kernel_shape from w[2:] (std::length_error).
TEST_F(LoadRobustness, ConvWeightOfWrongRank) {
  onnx::ModelProto m = seed_proto("node/test_conv_with_strides_padding");
  onnx::TensorProto& w = initializer(m, "W");
  const int64_t n = w.dims(0) * w.dims(1) * w.dims(2) * w.dims(3);
  w.clear_dims();
  w.add_dims(n);
  auto& attrs = *m.mutable_graph()->mutable_node(0)->mutable_attribute();
  for (int i = attrs.size() - 1; i >= 0; --i)
    if (attrs[i].name() == "kernel_shape") attrs.DeleteSubrange(i, 1);
  expect_error([&] { import_on_host(m); }, ErrorKind::InvalidArgument, "weight [9] does not match");
}

}  // namespace
}  // namespace vkgraph::testing
