// One Session from many threads: every run returns the outputs of its own feeds, checked
// against a host reference, also while other threads' runs change the input shape and so
// rebuild the graph. And one ComputeGraph driven from several threads at once: the overlap is
// an InvalidState error every time, never a crash, a validation message or a broken graph.
#include <onnx/onnx_pb.h>

#include <atomic>
#include <cmath>
#include <iostream>
#include <mutex>
#include <thread>

#include "model_builder.h"
#include "shape_test_util.h"
#include "vkgraph/ops.h"

namespace vkgraph::testing {
namespace {

constexpr int kFloat = onnx::TensorProto::FLOAT;
constexpr int64_t K = 16, N = 8;

// y = relu(x @ w + b) with x of shape [batch, K] (batch dynamic).
struct Mlp {
  std::vector<float> w, b;
  ModelBuilder model{14};
  explicit Mlp(std::mt19937& rng) {
    std::uniform_real_distribution<float> d(-1.f, 1.f);
    for (int64_t i = 0; i < K * N; ++i) w.push_back(d(rng));
    for (int64_t i = 0; i < N; ++i) b.push_back(d(rng));
    model.input("x", kFloat, {-1, K});
    model.output("y", kFloat);
    model.initializer("w", Shape{K, N}, w);
    model.initializer("b", Shape{N}, b);
    model.node("MatMul", {"x", "w"}, {"xw"});
    model.node("Add", {"xw", "b"}, {"z"});
    model.node("Relu", {"z"}, {"y"});
  }
  std::vector<double> reference(const HostTensor& x) const {
    const int64_t batch = x.shape[0];
    std::vector<double> y(batch * N);
    for (int64_t r = 0; r < batch; ++r)
      for (int64_t j = 0; j < N; ++j) {
        double s = b[j];
        for (int64_t k = 0; k < K; ++k) s += double(x.data<float>()[r * K + k]) * w[k * N + j];
        y[r * N + j] = std::max(s, 0.0);
      }
    return y;
  }
};

class Threads : public GpuTest {};

// 6 threads x 40 runs on one Session; threads 0 and 1 alternate batch sizes, so the graph is
// rebuilt while the others run. Every output element is checked.
TEST_F(Threads, OneSessionManyThreadsEveryOutputChecked) {
  Mlp mlp(rng);
  Session session = mlp.model.session();
  constexpr int kThreads = 6, kRuns = 100;
  std::atomic<int> wrong{0}, errors{0}, checked{0};
  std::vector<std::string> first_problem(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 local(100 + t);
      for (int r = 0; r < kRuns; ++r) {
        const int64_t batch = t < 2 ? 1 + (r + t) % 3 : 3;
        HostTensor x = random_tensor(local, DType::Float32, {batch, K});
        try {
          std::vector<HostTensor> out = session.run({{"x", x}});
          std::vector<double> want = mlp.reference(x);
          bool ok = out.size() == 1 && out[0].numel() == static_cast<int64_t>(want.size());
          for (size_t i = 0; ok && i < want.size(); ++i)
            ok = std::abs(out[0].data<float>()[i] - want[i]) <= 1e-4 * (1 + std::abs(want[i]));
          if (!ok && first_problem[t].empty())
            first_problem[t] = "run " + std::to_string(r) + ": wrong output";
          (ok ? checked : wrong)++;
        } catch (const std::exception& e) {
          if (first_problem[t].empty()) first_problem[t] = e.what();
          errors++;
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t)
    EXPECT_TRUE(first_problem[t].empty()) << "thread " << t << ": " << first_problem[t];
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_EQ(errors.load(), 0);
  EXPECT_EQ(checked.load(), kThreads * kRuns);
}

// Several threads call execute() on one graph at once. Each call either runs or throws
// InvalidState naming the misuse; afterwards the graph still gives the right answer. Without
// the check, the threads would submit the same command buffers and reset one fence together.
TEST_F(Threads, ConcurrentExecuteOnOneGraphIsRejectedNotRaced) {
  constexpr int64_t n = 1 << 14;
  ComputeGraph g(context());
  TensorRef x = g.add_input({n}, DType::Float32, "x");
  TensorRef y = x;
  for (int i = 0; i < 8; ++i) y = ops::binary(g, ops::BinaryOp::Add, y, x);
  g.add_output(y, "y");
  g.prepare();
  std::vector<float> in = random_floats(n);
  g.copy_to_input(0, in.data(), in.size() * 4);
  constexpr int kThreads = 4, kCalls = 200;
  std::atomic<int> ran{0}, rejected{0}, other{0};
  std::string other_message;
  std::mutex message_mutex;
  std::atomic<bool> go{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      while (!go) std::this_thread::yield();
      for (int c = 0; c < kCalls; ++c) {
        try {
          g.execute();
          ran++;
        } catch (const Error& e) {
          const std::string msg = e.what();
          if (e.kind() == ErrorKind::InvalidState &&
              (msg.find("another thread") != std::string::npos ||
               msg.find("in flight") != std::string::npos)) {
            rejected++;
          } else {
            std::lock_guard<std::mutex> lock(message_mutex);
            other_message = msg;
            other++;
          }
        }
      }
    });
  }
  go = true;
  for (auto& th : threads) th.join();
  EXPECT_EQ(other.load(), 0) << other_message;
  EXPECT_EQ(ran + rejected, kThreads * kCalls);
  EXPECT_GT(ran.load(), 0);
  std::cout << "[          ] " << ran << " executions ran, " << rejected << " were rejected\n";
  // The graph is intact: one more execution from here gives 9 x.
  g.execute();
  std::vector<float> out(n);
  g.copy_from_output(0, out.data(), out.size() * 4);
  for (int64_t i = 0; i < n; ++i) ASSERT_NEAR(out[i], 9 * in[i], 1e-5f * (1 + std::abs(9 * in[i])));
}

// The guard is per call: a graph handed from one thread to another (one at a time) works.
TEST_F(Threads, GraphHandedBetweenThreadsWorks) {
  ComputeGraph g(context());
  TensorRef x = g.add_input({64}, DType::Float32, "x");
  g.add_output(ops::binary(g, ops::BinaryOp::Mul, x, x), "y");
  std::vector<float> in = random_floats(64), out(64);
  std::thread([&] {
    g.copy_to_input(0, in.data(), 256);
    g.execute();
  }).join();
  std::thread([&] { g.copy_from_output(0, out.data(), 256); }).join();
  for (int i = 0; i < 64; ++i) EXPECT_FLOAT_EQ(out[i], in[i] * in[i]);
}

}  // namespace
}  // namespace vkgraph::testing
