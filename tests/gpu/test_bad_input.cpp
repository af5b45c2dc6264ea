// Bad input to the graph and context APIs: each is a vkgraph::Error of the right kind whose
// message names the object and the problem (DESIGN.md, Errors and threads).
#include <functional>

#include "foundation_test.h"
#include "vkgraph/error.h"
#include "vkgraph/ops.h"

namespace vkgraph::testing {
namespace {

class BadInput : public OwnContextTest {
 protected:
  // x [2, 3] + y [3] -> "sum"; small enough to run in a blink.
  void build(ComputeGraph& g) {
    auto x = g.add_input({2, 3}, DType::Float32, "x");
    auto y = g.add_input({3}, DType::Float32, "y");
    g.add_output(ops::binary(g, ops::BinaryOp::Add, x, y), "sum");
  }
  void fill_inputs(ComputeGraph& g) {
    auto x = random_floats(6), y = random_floats(3);
    g.copy_to_input(0, x.data(), 24);
    g.copy_to_input(1, y.data(), 12);
  }
};

TEST_F(BadInput, CopyToInputWithWrongByteCount) {
  ComputeGraph g(context());
  build(g);
  std::vector<float> data(8);
  expect_error([&] { g.copy_to_input(0, data.data(), 20); }, ErrorKind::InvalidArgument,
               {"input 'x'", "[2, 3]", "float32", "takes 24 bytes", "got 20"});
  expect_error([&] { g.copy_to_input(1, data.data(), 32); }, ErrorKind::InvalidArgument,
               {"input 'y'", "takes 12 bytes", "got 32"});
}

TEST_F(BadInput, InputAndOutputIndicesOutOfRange) {
  ComputeGraph g(context());
  build(g);
  std::vector<float> data(6);
  expect_error([&] { g.copy_to_input(2, data.data(), 24); }, ErrorKind::InvalidArgument,
               {"input index 2", "2 inputs"});
  fill_inputs(g);
  g.execute();
  expect_error([&] { g.copy_from_output(1, data.data(), 24); }, ErrorKind::InvalidArgument,
               {"output index 1", "1 outputs"});
  expect_error([&] { g.read_output(7); }, ErrorKind::InvalidArgument, {"output index 7"});
  expect_error([&] { g.copy_from_output(0, data.data(), 20); }, ErrorKind::InvalidArgument,
               {"output 'sum'", "holds 24 bytes", "asked for 20"});
}

TEST_F(BadInput, ReadingOutputsBeforeAnyExecute) {
  ComputeGraph g(context());
  build(g);
  std::vector<float> out(6);
  expect_error([&] { g.copy_from_output(0, out.data(), 24); }, ErrorKind::InvalidState,
               {"copy_from_output", "before any execute"});
  fill_inputs(g);
  g.prepare();
  expect_error([&] { g.read_output(0); }, ErrorKind::InvalidState, {"before any execute"});
}

TEST_F(BadInput, UsingTheGraphWhileAnExecutionIsInFlight) {
  ComputeGraph g(context());
  build(g);
  fill_inputs(g);
  expect_error([&] { g.wait(); }, ErrorKind::InvalidState, {"wait()", "without a submitted"});
  g.submit();
  ASSERT_TRUE(g.in_flight());
  std::vector<float> out(6);
  expect_error([&] { g.copy_from_output(0, out.data(), 24); }, ErrorKind::InvalidState,
               {"copy_from_output", "in flight", "wait()"});
  expect_error([&] { g.read_output(0); }, ErrorKind::InvalidState, {"in flight"});
  expect_error([&] { g.copy_to_input(0, out.data(), 24); }, ErrorKind::InvalidState,
               {"copy_to_input", "in flight"});
  expect_error([&] { g.submit(); }, ErrorKind::InvalidState, {"submit", "in flight"});
  expect_error([&] { g.execute(); }, ErrorKind::InvalidState, {"in flight"});
  g.wait();
  EXPECT_FALSE(g.in_flight());
  HostTensor sum = g.read_output(0);  // now it works
  EXPECT_EQ(sum.shape, (Shape{2, 3}));
}

TEST_F(BadInput, ViewWithWrongElementCount) {
  ComputeGraph g(context());
  auto x = g.add_input({2, 3}, DType::Float32, "x");
  auto sixteen = [&] { g.add_view(x, {4, 4}, "v"); };
  expect_error(sixteen, ErrorKind::InvalidArgument,
               {"view 'v'", "'x'", "[4, 4]", "16 elements", "[2, 3]", "has 6"});
  expect_error([&] { g.add_view(TensorRef{42}, {6}, "w"); }, ErrorKind::InvalidArgument,
               {"invalid tensor reference 42"});
}

TEST_F(BadInput, BinaryWithIncompatibleOperands) {
  ComputeGraph g(context());
  auto a = g.add_input({2, 3}, DType::Float32, "a");
  auto b = g.add_input({4}, DType::Float32, "b");
  auto i = g.add_input({2, 3}, DType::Int32, "i");
  expect_error([&] { ops::binary(g, ops::BinaryOp::Add, a, b); }, ErrorKind::InvalidArgument,
               {"add", "[2, 3]", "[4]", "do not broadcast"});
  expect_error([&] { ops::binary(g, ops::BinaryOp::Mul, b, a); }, ErrorKind::InvalidArgument,
               {"mul", "[4]", "[2, 3]", "do not broadcast"});
  expect_error([&] { ops::binary(g, ops::BinaryOp::Sub, a, i); }, ErrorKind::InvalidArgument,
               {"sub", "float32", "int32"});
}

TEST_F(BadInput, DispatchThatWritesAConstant) {
  ComputeGraph g(context());
  auto x = g.add_input({4}, DType::Float32, "x");
  auto w = g.add_constant(HostTensor::from(DType::Float32, {4}, std::vector<float>{1, 2, 3, 4}),
                          "weights");
  for (Access access : {Access::Write, Access::ReadWrite}) {
    DispatchDesc d;
    d.shader = "binary_add_f32";
    d.bindings = {{x, Access::Read}, {x, Access::Read}, {w, access}};
    d.label = "Add /bad/writer";
    expect_error([&] { g.add_dispatch(d); }, ErrorKind::InvalidArgument,
                 {"Add /bad/writer", "writes constant tensor 'weights'"});
  }
  DispatchDesc unknown;
  unknown.shader = "no_such_shader";
  unknown.bindings = {{x, Access::Read}};
  expect_error([&] { g.add_dispatch(unknown); }, ErrorKind::Unsupported, {"no_such_shader"});
}

TEST_F(BadInput, GraphWithoutOutputs) {
  ComputeGraph g(context());
  auto x = g.add_input({4}, DType::Float32, "x");
  ops::binary(g, ops::BinaryOp::Add, x, x);
  expect_error([&] { g.prepare(); }, ErrorKind::InvalidState, {"no outputs"});
  expect_error([&] { g.execute(); }, ErrorKind::InvalidState, {"no outputs"});
}

TEST_F(BadInput, BuildingAfterPrepare) {
  ComputeGraph g(context());
  build(g);
  g.prepare();
  expect_error([&] { g.add_tensor({4}, DType::Float32, "late"); }, ErrorKind::InvalidState,
               {"add_tensor after prepare()"});
  expect_error([&] { g.add_output(g.input(0), "late"); }, ErrorKind::InvalidState,
               {"add_output after prepare()"});
}

TEST_F(BadInput, DuplicateInputNameAndZeroChunkSize) {
  ComputeGraph g(context());
  g.add_input({4}, DType::Float32, "x");
  expect_error([&] { g.add_input({4}, DType::Float32, "x"); }, ErrorKind::InvalidArgument,
               {"duplicate input name 'x'"});
  GraphOptions o;
  o.nodes_per_command_buffer = 0;
  expect_error([&] { ComputeGraph bad(context(), o); }, ErrorKind::InvalidArgument,
               {"nodes_per_command_buffer"});
}

TEST_F(BadInput, UnknownDevice) {
  for (const char* device : {"99", "no-such-gpu", "99999999999999999999"}) {
    SCOPED_TRACE(device);
    vk::ContextOptions o;
    o.device = device;
    expect_error([&] { make_context(o); }, ErrorKind::InvalidArgument,
                 {"device '" + std::string(device) + "' not found", "Vulkan device(s) available"});
  }
}

TEST_F(BadInput, MemoryBudgetTooSmallForTheGraph) {
  vk::ContextOptions o;
  o.memory_budget = 256 << 10;  // one of the three 256 KiB activations fits
  auto ctx = own_context(o);
  ComputeGraph g(ctx);
  auto x = g.add_input({64 << 10}, DType::Float32, "x");
  auto y = g.add_input({64 << 10}, DType::Float32, "y");
  g.add_output(ops::binary(g, ops::BinaryOp::Add, x, y), "sum");
  expect_error([&] { g.prepare(); }, ErrorKind::OutOfMemory, {"activation", "budget"});
}

// Out of memory is a kind callers can react to: free memory elsewhere and prepare() again.
// The retry must start from scratch, not on top of what the failed attempt allocated.
TEST_F(BadInput, PrepareSucceedsWhenRetriedAfterMemoryIsFreed) {
  vk::ContextOptions o;
  o.memory_budget = 2 << 20;
  auto ctx = own_context(o);
  ComputeGraph g(ctx);
  const int64_t n = 32 << 10;
  auto x = g.add_input({1, n}, DType::Float32, "x");
  auto w = g.add_input({4, 1}, DType::Float32, "w");
  g.add_output(ops::binary(g, ops::BinaryOp::Add, x, w), "z");  // [4, n]: 512 KiB
  {
    // Holds 1.5 MiB, so `g` gets its first two activations but not the third.
    ComputeGraph hog(ctx);
    auto a = hog.add_input({96 << 10}, DType::Float32, "a");
    hog.add_output(ops::binary(hog, ops::BinaryOp::Add, a, a), "b");
    hog.prepare();
    expect_error([&] { g.prepare(); }, ErrorKind::OutOfMemory, {"activation", "budget"});
  }
  g.prepare();
  auto vx = random_floats(n), vw = random_floats(4);
  g.copy_to_input(0, vx.data(), vx.size() * 4);
  g.copy_to_input(1, vw.data(), vw.size() * 4);
  g.execute();
  HostTensor z = g.read_output(0);
  size_t bad = 0;
  for (int64_t i = 0; i < 4 * n; ++i) bad += z.data<float>()[i] != vx[i % n] + vw[i / n];
  EXPECT_EQ(bad, 0u);
  GraphStats s = g.stats();
  EXPECT_EQ(s.activation_buffers, 3u);
  EXPECT_EQ(s.activation_bytes, (n + 4 + 4 * n) * sizeof(float));
  EXPECT_EQ(s.unplanned_activation_bytes, s.activation_bytes);
}

}  // namespace
}  // namespace vkgraph::testing
