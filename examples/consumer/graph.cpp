// Builds y = x * x + x by hand on the core library alone (vkgraph::vkgraph: ComputeGraph, ops,
// Vulkan; no Protobuf or ONNX), runs it and checks every value against the CPU: proof that
// the installed core target is usable on its own.
#include <vkgraph/error.h>
#include <vkgraph/ops.h>
#include <vkgraph/vk/context.h>

#include <cmath>
#include <cstdio>
#include <vector>

int main() {
  try {
    auto context = vkgraph::vk::Context::create();
    vkgraph::ComputeGraph g(context);
    const int64_t n = 1000;
    vkgraph::TensorRef x = g.add_input({n}, vkgraph::DType::Float32, "x");
    using vkgraph::ops::BinaryOp;
    vkgraph::TensorRef square = vkgraph::ops::binary(g, BinaryOp::Mul, x, x);
    g.add_output(vkgraph::ops::binary(g, BinaryOp::Add, square, x), "y");
    g.prepare();
    std::vector<float> in(n), out(n, NAN);
    for (int64_t i = 0; i < n; ++i) in[i] = 0.01f * static_cast<float>(i - n / 2);
    g.copy_to_input(0, in.data(), in.size() * sizeof(float));
    g.execute();
    g.copy_from_output(0, out.data(), out.size() * sizeof(float));
    int64_t wrong = 0;
    for (int64_t i = 0; i < n; ++i) {
      const float want = in[i] * in[i] + in[i];
      wrong += !(std::fabs(out[i] - want) <= 1e-6f * (1.f + std::fabs(want)));
    }
    std::printf("device: %s\ncore graph: %lld/%lld values right\n",
                context->properties().deviceName, static_cast<long long>(n - wrong),
                static_cast<long long>(n));
    return wrong == 0 ? 0 : 1;
  } catch (const vkgraph::Error& e) {
    std::fprintf(stderr, "vkgraph: %s\n", e.what());
    return 1;
  }
}
