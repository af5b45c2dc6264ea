#pragma once
// Shared fixture for GPU tests: one Context per test process, with validation and
// synchronization validation on (lavapipe in CI). After each test, any message from the
// validation layer fails that test.
#include <gtest/gtest.h>

#include <memory>
#include <random>

#include "../expect_error.h"
#include "vkgraph/graph/compute_graph.h"
#include "vkgraph/vk/context.h"

namespace vkgraph::testing {

// The shared validated context (created on first use).
std::shared_ptr<vk::Context> context();
// A fresh context with options on top of validation (for trace, budget, non-coherent tests).
std::shared_ptr<vk::Context> make_context(vk::ContextOptions options);

class GpuTest : public ::testing::Test {
 protected:
  void SetUp() override;
  void TearDown() override;
  // Fails the test if `ctx` collected validation messages; clears them.
  static void expect_no_validation_messages(vk::Context& ctx);
  std::mt19937 rng{1234};
  std::vector<float> random_floats(size_t n, float lo = -1.f, float hi = 1.f);
};

// Fixture for ops' argument checks: a graph to build in, fresh float32 inputs, and errors that
// must name the op ("conv2d: ...") and say what is wrong.
class OpErrorTest : public GpuTest {
 protected:
  template <typename F>
  void expect_error(ErrorKind kind, const std::string& op, const std::string& text, F build) {
    testing::expect_error(build, kind, {op + ":", text});
  }
  TensorRef input(Shape s) {
    return g.add_input(std::move(s), DType::Float32, "x" + std::to_string(n_++));
  }
  ComputeGraph g{context()};

 private:
  int n_ = 0;
};

}  // namespace vkgraph::testing
