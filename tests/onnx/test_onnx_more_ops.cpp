// Errors of the issue-13 op lowerings through a Session: an op's complaint names the node.
#include <onnx/onnx_pb.h>

#include "model_builder.h"
#include "shape_test_util.h"

namespace vkgraph::testing {
namespace {

class OnnxMoreOps : public GpuTest {};

TEST_F(OnnxMoreOps, NllConstantTargetOutOfRangeNamesTheNode) {
  ModelBuilder m(13);
  m.input("x", onnx::TensorProto::FLOAT, {2, 3});
  m.initializer("t", std::vector<int64_t>{0, 7});
  m.node("NegativeLogLikelihoodLoss", {"x", "t"}, {"y"});
  m.output("y", onnx::TensorProto::FLOAT);
  auto x = random_tensor(rng, DType::Float32, {2, 3});
  expect_error(
      [&] {
        m.session().run({{"x", x}});
      },
      ErrorKind::InvalidArgument, {"NegativeLogLikelihoodLoss node", "target 7 out of range"});
}

TEST_F(OnnxMoreOps, GatherNdConstantIndexOutOfRangeNamesTheNode) {
  ModelBuilder m(13);
  m.input("x", onnx::TensorProto::FLOAT, {3, 4});
  m.initializer("i", std::vector<int64_t>{5});
  m.node("GatherND", {"x", "i"}, {"y"});
  m.output("y", onnx::TensorProto::FLOAT);
  auto x = random_tensor(rng, DType::Float32, {3, 4});
  expect_error(
      [&] {
        m.session().run({{"x", x}});
      },
      ErrorKind::InvalidArgument, {"GatherND node", "index 5 out of range for dim 0 of size 3"});
}

}  // namespace
}  // namespace vkgraph::testing
