// `vkgraph demo`: a small built-in graph, run on the chosen device and checked against a CPU
// reference, replayed a few times with new inputs.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>

#include "cli.h"
#include "vkgraph/ops.h"

namespace vkgraph::cli {

int run_demo(const Common& common) {
  auto context = vk::Context::create(common.context);
  // y = max((x + b) * x, x - b), over a [256, 64] batch with b broadcast per column.
  const int64_t rows = 256, cols = 64;
  ComputeGraph g(context);
  TensorRef x = g.add_input({rows, cols}, DType::Float32, "x");
  TensorRef b = g.add_input({cols}, DType::Float32, "b");
  TensorRef sum = ops::binary(g, ops::BinaryOp::Add, x, b);
  TensorRef prod = ops::binary(g, ops::BinaryOp::Mul, sum, x);
  TensorRef diff = ops::binary(g, ops::BinaryOp::Sub, x, b);
  g.add_output(ops::binary(g, ops::BinaryOp::Max, prod, diff), "y");
  g.prepare();

  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-2.f, 2.f);
  std::vector<float> xs(rows * cols), bs(cols), ys(rows * cols);
  double worst = 0, total_ms = 0;
  const int runs = 5;
  for (int run = 0; run < runs; ++run) {
    for (auto& v : xs) v = dist(rng);
    for (auto& v : bs) v = dist(rng);
    g.copy_to_input(0, xs.data(), xs.size() * 4);
    g.copy_to_input(1, bs.data(), bs.size() * 4);
    auto t0 = std::chrono::steady_clock::now();
    g.execute();
    total_ms +=
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    g.copy_from_output(0, ys.data(), ys.size() * 4);
    for (int64_t i = 0; i < rows * cols; ++i) {
      float xv = xs[i], bv = bs[i % cols];
      float want = std::max((xv + bv) * xv, xv - bv);
      worst = std::max(worst, static_cast<double>(std::fabs(want - ys[i])));
    }
  }
  bool ok = worst <= 1e-5;
  std::printf("demo: %zu nodes, %d runs on %s: max |error| vs CPU = %.2e -> %s\n", g.stats().nodes,
              runs, context->properties().deviceName, worst, ok ? "OK" : "FAILED");
  std::printf("demo: host time per execute %.3f ms, GPU time %.3f ms\n", total_ms / runs,
              g.last_gpu_ms());
  return report_validation(*context) || !ok;
}

int report_validation(vk::Context& context) {
  auto messages = context.validation_messages();
  for (auto& m : messages) std::fprintf(stderr, "validation: %s\n", m.c_str());
  return messages.empty() ? 0 : 1;
}

}  // namespace vkgraph::cli
