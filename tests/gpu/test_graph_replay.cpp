// ComputeGraph's recording, chunked submission and replay against the synchronization
// contract (DESIGN.md rules 1, 4, 5): results checked element by element on every run, the
// sync trace checked for the shape of each submission and for the final device->host barrier,
// the wrap-around barrier between replays, the test hooks (graph_testing.h) that break the
// contract, and lifetime-based activation memory planning.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <optional>

#include "foundation_test.h"
#include "graph/hazard_tracker.h"
#include "graph_testing.h"
#include "ops/op_util.h"
#include "vkgraph/ops.h"
#include "vkgraph/vk/buffer.h"
#include "vkgraph/vk/sync_trace.h"

namespace vkgraph::testing {
namespace {

using ops::BinaryOp;
using vk::SyncEvent;

std::vector<SyncEvent> of_type(const std::vector<SyncEvent>& events, SyncEvent::Type type) {
  std::vector<SyncEvent> out;
  for (const SyncEvent& e : events)
    if (e.type == type) out.push_back(e);
  return out;
}

bool is_final_barrier(const SyncEvent& e) {
  return e.type == SyncEvent::Type::Barrier && e.src_stage == VK_PIPELINE_STAGE_ALL_COMMANDS_BIT &&
         e.dst_stage == VK_PIPELINE_STAGE_HOST_BIT && e.src_access == VK_ACCESS_MEMORY_WRITE_BIT &&
         e.dst_access == VK_ACCESS_HOST_READ_BIT && e.buffers.empty();
}

bool has_validation_messages_containing(vk::Context& ctx, const std::string& needle) {
  for (const std::string& m : ctx.validation_messages())
    if (m.find(needle) != std::string::npos) return true;
  return false;
}

// Host-side reference for the binary ops used here, with the broadcasts the tests build:
// `b` has as many elements as `a`, or as a's last dimension, or one.
std::vector<float> reference(BinaryOp op, const std::vector<float>& a,
                             const std::vector<float>& b) {
  std::vector<float> out(a.size());
  for (size_t i = 0; i < a.size(); ++i) {
    float x = a[i], y = b[b.size() == a.size() ? i : i % b.size()];
    switch (op) {
      case BinaryOp::Add:
        out[i] = x + y;
        break;
      case BinaryOp::Sub:
        out[i] = x - y;
        break;
      case BinaryOp::Mul:
        out[i] = x * y;
        break;
      case BinaryOp::Max:
        out[i] = std::max(x, y);
        break;
      case BinaryOp::Min:
        out[i] = std::min(x, y);
        break;
      default:
        ADD_FAILURE() << "no reference for this op";
    }
  }
  return out;
}

// Counts elements of `got` that differ from `want` beyond float rounding, reporting the first.
size_t mismatches(const std::vector<float>& got, const std::vector<float>& want,
                  const std::string& what) {
  EXPECT_EQ(got.size(), want.size()) << what;
  size_t bad = 0;
  for (size_t i = 0; i < std::min(got.size(), want.size()); ++i) {
    if (std::abs(got[i] - want[i]) <= 1e-5f * std::max(1.f, std::abs(want[i]))) continue;
    if (bad++ == 0)
      ADD_FAILURE() << what << "[" << i << "] = " << got[i] << ", expected " << want[i];
  }
  return bad;
}

// Outputs are read into memory poisoned with NaN, so a read that copies nothing is caught.
std::vector<float> read_poisoned(ComputeGraph& g, size_t output, size_t n) {
  std::vector<float> out(n, std::nanf("0x5a5a"));
  g.copy_from_output(output, out.data(), n * sizeof(float));
  return out;
}

// A DAG of `nodes` binary ops over [7, 19] tensors: chain edges, skip edges three nodes back,
// and broadcasts of [19] and [1]; each group of five ends with a clamp to [lo, hi], so values
// stay bounded. Outputs: "final" (the last node) and "mid" (a node halfway). `compute` mirrors
// it on the host.
struct DagGraph {
  static constexpr int64_t kRows = 7, kCols = 19, kN = kRows * kCols;
  explicit DagGraph(ComputeGraph& g, int nodes) : nodes(nodes) {
    inputs = {g.add_input({kRows, kCols}, DType::Float32, "a"),
              g.add_input({kRows, kCols}, DType::Float32, "b"),
              g.add_input({kCols}, DType::Float32, "c"), g.add_input({1}, DType::Float32, "lo"),
              g.add_input({1}, DType::Float32, "hi")};
    std::vector<TensorRef> history;
    TensorRef t = inputs[0];
    for (int i = 0; i < nodes; ++i) {
      auto [op, other] = step(i);
      t = ops::binary(g, op, t, other < 0 ? inputs[-other - 1] : history[other]);
      history.push_back(t);
    }
    g.add_output(t, "final");
    g.add_output(history[nodes / 2], "mid");
  }
  // Node i applies `op` to the previous result and `other`: a node index, or -1 - input index.
  static std::pair<BinaryOp, int> step(int i) {
    switch (i % 5) {
      case 0:
        return {BinaryOp::Add, -2};
      case 1:
        return {BinaryOp::Mul, -3};
      case 2:
        return {BinaryOp::Sub, i >= 3 ? i - 3 : -1};
      case 3:
        return {BinaryOp::Max, -4};
      default:
        return {BinaryOp::Min, -5};
    }
  }
  std::vector<std::vector<float>> random_inputs(std::mt19937& rng) const {
    std::uniform_real_distribution<float> u(-1.f, 1.f), bound(1.5f, 2.f);
    auto fill = [&](size_t n, auto& dist) {
      std::vector<float> v(n);
      for (auto& x : v) x = dist(rng);
      return v;
    };
    return {fill(kN, u), fill(kN, u), fill(kCols, u), {-bound(rng)}, {bound(rng)}};
  }
  // Host results for "final" and "mid".
  std::pair<std::vector<float>, std::vector<float>> compute(
      const std::vector<std::vector<float>>& in) const {
    std::vector<std::vector<float>> history;
    std::vector<float> t = in[0];
    for (int i = 0; i < nodes; ++i) {
      auto [op, other] = step(i);
      t = reference(op, t, other < 0 ? in[-other - 1] : history[other]);
      history.push_back(t);
    }
    return {t, history[nodes / 2]};
  }
  void upload(ComputeGraph& g, const std::vector<std::vector<float>>& in) const {
    for (size_t i = 0; i < in.size(); ++i)
      g.copy_to_input(i, in[i].data(), in[i].size() * sizeof(float));
  }
  // Runs once with fresh inputs and checks both outputs element by element.
  void run_and_check(ComputeGraph& g, std::mt19937& rng) const {
    auto in = random_inputs(rng);
    upload(g, in);
    g.execute();
    auto [final_want, mid_want] = compute(in);
    EXPECT_EQ(mismatches(read_poisoned(g, 0, kN), final_want, "final"), 0u);
    EXPECT_EQ(mismatches(read_poisoned(g, 1, kN), mid_want, "mid"), 0u);
  }
  int nodes;
  std::vector<TensorRef> inputs;
};

class GraphReplay : public OwnContextTest {};

// 300 nodes in command buffers of 32: the first execute submits chunks as it records them,
// only the last with the fence; the replay submits all of them at once with the fence; the
// last recorded command is the device->host barrier; the trace audits clean.
TEST_F(GraphReplay, ChunkedGraphSubmitsEarlyChunksWithoutFenceAndReplaysInOneSubmit) {
  vk::ContextOptions options;
  options.sync_trace = true;
  auto ctx = own_context(options);
  GraphOptions go;
  go.nodes_per_command_buffer = 32;
  ComputeGraph g(ctx, go);
  constexpr int kNodes = 300;
  constexpr size_t kChunks = (kNodes + 31) / 32;
  DagGraph dag(g, kNodes);
  vk::SyncTrace& trace = *ctx->trace();

  dag.run_and_check(g, rng);
  EXPECT_EQ(g.stats().nodes, static_cast<size_t>(kNodes));
  EXPECT_EQ(g.stats().command_buffers, kChunks);
  auto first = trace.timeline();
  auto submits = of_type(first, SyncEvent::Type::Submit);
  ASSERT_EQ(submits.size(), kChunks);
  std::vector<uint64_t> ids;
  for (size_t c = 0; c < kChunks; ++c) {
    SCOPED_TRACE("chunk " + std::to_string(c));
    ASSERT_EQ(submits[c].command_buffers.size(), 1u);
    ids.push_back(submits[c].command_buffers[0]);
    if (c + 1 < kChunks)
      EXPECT_EQ(submits[c].fence, 0u);
    else
      EXPECT_NE(submits[c].fence, 0u);
    // Only the last chunk carries the device->host barrier, and only once.
    auto barriers = of_type(trace.recorded(ids.back()), SyncEvent::Type::Barrier);
    size_t to_host = std::count_if(barriers.begin(), barriers.end(), [](const SyncEvent& e) {
      return (e.dst_stage & VK_PIPELINE_STAGE_HOST_BIT) != 0;
    });
    EXPECT_EQ(to_host, c + 1 < kChunks ? 0u : 1u);
  }
  const uint64_t fence = submits.back().fence;
  auto waits = of_type(first, SyncEvent::Type::FenceWait);
  ASSERT_EQ(waits.size(), 1u);
  EXPECT_EQ(waits[0].fence, fence);
  auto last = trace.recorded(ids.back());
  ASSERT_FALSE(last.empty());
  EXPECT_TRUE(is_final_barrier(last.back()))
      << "last recorded event: type " << static_cast<int>(last.back().type);

  dag.run_and_check(g, rng);  // replay
  auto all = trace.timeline();
  auto replay = of_type(std::vector<SyncEvent>(all.begin() + first.size(), all.end()),
                        SyncEvent::Type::Submit);
  ASSERT_EQ(replay.size(), 1u);
  EXPECT_EQ(replay[0].command_buffers, ids);
  EXPECT_EQ(replay[0].fence, fence);

  auto problems = trace.audit();
  EXPECT_TRUE(problems.empty()) << problems[0];
}

// execute() is submit and wait: after the first, executions record nothing, whatever happens
// between them (new inputs, output reads), and each is one submission of every chunk.
TEST_F(GraphReplay, ExecuteReplaysWithoutRecordingAgain) {
  vk::ContextOptions options;
  options.sync_trace = true;
  auto ctx = own_context(options);
  GraphOptions go;
  go.nodes_per_command_buffer = 32;
  ComputeGraph g(ctx, go);
  DagGraph dag(g, 100);
  EXPECT_EQ(g.stats().recordings, 0u);
  dag.run_and_check(g, rng);
  EXPECT_EQ(g.stats().recordings, 1u);
  const size_t chunks = g.stats().command_buffers;
  EXPECT_EQ(chunks, 4u);
  const size_t before = ctx->trace()->timeline().size();
  constexpr int kReplays = 5;
  for (int i = 0; i < kReplays; ++i) dag.run_and_check(g, rng);
  EXPECT_EQ(g.stats().recordings, 1u);
  auto all = ctx->trace()->timeline();
  auto submits =
      of_type(std::vector<SyncEvent>(all.begin() + before, all.end()), SyncEvent::Type::Submit);
  ASSERT_EQ(submits.size(), static_cast<size_t>(kReplays));
  for (auto& s : submits) EXPECT_EQ(s.command_buffers.size(), chunks);
}

// Profiling switched after building: each switch records once more, results stay right, node
// times exist only while profiling and only after an execution with the new setting.
TEST_F(GraphReplay, ProfileSwitchesRecordAgainAndKeepResults) {
  auto ctx = own_context();
  GraphOptions go;
  go.profile = true;
  go.nodes_per_command_buffer = 16;
  ComputeGraph g(ctx, go);
  DagGraph dag(g, 40);
  dag.run_and_check(g, rng);
  const bool timestamps = ctx->features().timestamps;
  EXPECT_EQ(g.node_times().size(), timestamps ? 40u : 0u);
  g.set_profile(false);
  EXPECT_TRUE(g.node_times().empty());
  EXPECT_EQ(g.last_gpu_ms(), 0.0);  // no execution timed by the new pool yet
  dag.run_and_check(g, rng);
  dag.run_and_check(g, rng);
  EXPECT_EQ(g.stats().recordings, 2u);
  EXPECT_TRUE(g.node_times().empty());
  if (timestamps) {
    EXPECT_GT(g.last_gpu_ms(), 0.0);
  }
  g.set_profile(false);  // unchanged: nothing records again
  dag.run_and_check(g, rng);
  EXPECT_EQ(g.stats().recordings, 2u);
  g.set_profile(true);
  dag.run_and_check(g, rng);
  EXPECT_EQ(g.stats().recordings, 3u);
  EXPECT_EQ(g.node_times().size(), timestamps ? 40u : 0u);
}

// A fence wait that polls before it blocks (the GPU default) still ends every execution with
// the blocking wait the trace audit and the validation layer rely on: polling through the
// whole run (a 5 ms period, longer than these runs), and sleeping through most of it first (a
// 1 us period, shorter: each run after the first sleeps until about the previous one's time).
TEST_F(GraphReplay, PollingFenceWaitKeepsTheHostVisibilityContract) {
  for (uint32_t spin_us : {5000u, 1u}) {
    SCOPED_TRACE("spin_wait_us " + std::to_string(spin_us));
    vk::ContextOptions options;
    options.sync_trace = true;
    options.spin_wait_us = spin_us;
    auto ctx = own_context(options);
    EXPECT_EQ(ctx->spin_wait_us(), spin_us);
    ComputeGraph g(ctx);
    DagGraph dag(g, 30);
    for (int i = 0; i < 3; ++i) dag.run_and_check(g, rng);
    auto all = ctx->trace()->timeline();
    EXPECT_EQ(of_type(all, SyncEvent::Type::FenceWait).size(),
              of_type(all, SyncEvent::Type::Submit).size());
    auto problems = ctx->trace()->audit();
    EXPECT_TRUE(problems.empty()) << problems[0];
  }
}

// Synchronization validation sees a chunk boundary (the Context enables the layer's
// queue-submit checks): a barrier dropped before the first node of the second chunk is a
// hazard between two submissions. True whether or not the app set layer enables of its own.
TEST_F(GraphReplay, DroppedBarrierAtAChunkBoundaryIsReportedAtSubmit) {
  for (const char* app_enables :
       {"", "VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT"}) {
    SCOPED_TRACE(std::string("VK_LAYER_ENABLES=") + app_enables);
    std::shared_ptr<vk::Context> ctx;
    {
      std::optional<ScopedEnv> env;
      if (*app_enables) env.emplace("VK_LAYER_ENABLES", app_enables);
      ctx = own_context({});
    }
    if (!ctx->validation_enabled()) GTEST_SKIP() << "needs the validation layer";
    GraphOptions go;
    go.nodes_per_command_buffer = 4;
    ComputeGraph g(ctx, go);
    inject_sync_faults(g, {.drop_barrier_before_node = 4});
    DagGraph dag(g, 8);
    dag.upload(g, dag.random_inputs(rng));
    g.execute();
    EXPECT_TRUE(has_validation_messages_containing(*ctx, "SYNC-HAZARD"));
    EXPECT_TRUE(has_validation_messages_containing(*ctx, "vkQueueSubmit"));
    ctx->clear_validation_messages();
  }
}

TEST_F(GraphReplay, DroppedBarrierInsideAChunkIsReported) {
  auto ctx = own_context({});
  if (!ctx->validation_enabled()) GTEST_SKIP() << "needs the validation layer";
  ComputeGraph g(ctx);
  inject_sync_faults(g, {.drop_barrier_before_node = 3});  // node 3 reads node 2's result
  DagGraph dag(g, 6);
  dag.upload(g, dag.random_inputs(rng));
  g.execute();
  EXPECT_TRUE(has_validation_messages_containing(*ctx, "SYNC-HAZARD-READ-AFTER-WRITE"));
  ctx->clear_validation_messages();
}

// The validation layer does not track host access (FACTS.md): without the final barrier only
// the sync trace audit notices.
TEST_F(GraphReplay, OmittedFinalBarrierIsReportedByTheAudit) {
  vk::ContextOptions options;
  options.sync_trace = true;
  auto ctx = own_context(options);
  ComputeGraph g(ctx);
  inject_sync_faults(g, {.omit_final_barrier = true});
  DagGraph dag(g, 5);
  dag.upload(g, dag.random_inputs(rng));
  g.execute();
  read_poisoned(g, 0, DagGraph::kN);
  auto problems = ctx->trace()->audit();
  ASSERT_FALSE(problems.empty());
  EXPECT_NE(problems[0].find("HOST"), std::string::npos) << problems[0];
}

class HundredRuns : public OwnContextTest,
                    public ::testing::WithParamInterface<bool /*force_non_coherent*/> {};

// Every run gets new inputs, so a stale output (an earlier run's, or the staging buffer's
// contents before a missing copy or invalidate) fails the element check; the host destination
// is poisoned before each read.
TEST_P(HundredRuns, FreshInputsEveryRunAndEveryElementChecked) {
  const bool forced = GetParam();
  vk::ContextOptions options;
  options.sync_trace = true;
  options.force_non_coherent = forced;
  auto ctx = own_context(options);
  GraphOptions go;
  go.nodes_per_command_buffer = 2;  // the replay submits two command buffers
  ComputeGraph g(ctx, go);
  const int64_t rows = 3, cols = 37, n = rows * cols;
  auto a = g.add_input({rows, cols}, DType::Float32, "a");
  auto b = g.add_input({cols}, DType::Float32, "b");
  auto s = ops::binary(g, BinaryOp::Add, a, b);
  auto p = ops::binary(g, BinaryOp::Mul, s, a);
  auto q = ops::binary(g, BinaryOp::Sub, p, b);
  auto r = ops::binary(g, BinaryOp::Max, q, a);
  g.add_output(p, "p");
  g.add_output(r, "r");

  constexpr int kRuns = 100;
  for (int run = 0; run < kRuns; ++run) {
    SCOPED_TRACE("run " + std::to_string(run));
    auto va = random_floats(n), vb = random_floats(cols);
    g.copy_to_input(0, va.data(), va.size() * 4);
    g.copy_to_input(1, vb.data(), vb.size() * 4);
    g.execute();
    auto want_p = reference(BinaryOp::Mul, reference(BinaryOp::Add, va, vb), va);
    auto want_r = reference(BinaryOp::Max, reference(BinaryOp::Sub, want_p, vb), va);
    ASSERT_EQ(mismatches(read_poisoned(g, 0, n), want_p, "p"), 0u);
    ASSERT_EQ(mismatches(read_poisoned(g, 1, n), want_r, "r"), 0u);
  }

  vk::SyncTrace& trace = *ctx->trace();
  auto problems = trace.audit();
  EXPECT_TRUE(problems.empty()) << problems[0];
  auto t = trace.timeline();
  EXPECT_EQ(of_type(t, SyncEvent::Type::Submit).size(), kRuns + 1u);  // 2 chunks, then replays
  EXPECT_EQ(of_type(t, SyncEvent::Type::FenceWait).size(), static_cast<size_t>(kRuns));
  EXPECT_EQ(of_type(t, SyncEvent::Type::HostRead).size(), 2u * kRuns);
  if (forced) {
    EXPECT_EQ(of_type(t, SyncEvent::Type::Flush).size(), 2u * kRuns);
    EXPECT_EQ(of_type(t, SyncEvent::Type::Invalidate).size(), 2u * kRuns);
    for (size_t i = 0; i < t.size(); ++i) {
      if (t[i].type == SyncEvent::Type::HostWrite) {
        EXPECT_FALSE(t[i].coherent);
        ASSERT_LT(i + 1, t.size());
        EXPECT_EQ(t[i + 1].type, SyncEvent::Type::Flush);
        EXPECT_EQ(t[i + 1].resource, t[i].resource);
      }
      if (t[i].type == SyncEvent::Type::HostRead) {
        EXPECT_FALSE(t[i].coherent);
        ASSERT_GT(i, 0u);
        EXPECT_EQ(t[i - 1].type, SyncEvent::Type::Invalidate);
        EXPECT_EQ(t[i - 1].resource, t[i].resource);
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Memory, HundredRuns, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return info.param ? "ForcedNonCoherent" : "Default";
                         });

// A raw dispatch of the binary shader over two same-shaped 1-D tensors.
DispatchDesc add_f32(TensorRef a, TensorRef b, TensorRef out, int32_t n, const char* label) {
  std::vector<int32_t> push(2 + 3 * ops::kMaxRank, 0);  // n, rank, shape, strides of a and b
  push[0] = n;
  push[1] = 1;
  push[2] = n;
  push[2 + ops::kMaxRank] = 1;
  push[2 + 2 * ops::kMaxRank] = 1;
  DispatchDesc d;
  d.shader = "binary_add_f32";
  d.bindings = {{a, Access::Read}, {b, Access::Read}, {out, Access::Write}};
  d.groups = {static_cast<uint32_t>((n + 63) / 64), 1, 1};
  d.local = {64, 1, 1};
  d.push.resize(push.size() * sizeof(int32_t));
  std::memcpy(d.push.data(), push.data(), d.push.size());
  d.label = label;
  return d;
}

// Replay wraps around (DESIGN.md rule 1): node 0 reads `acc`, which only the last node writes,
// so each run reads what the previous run wrote. The first command buffer orders that first
// read against the last write, and the values show the data really flows across runs.
TEST_F(GraphReplay, FirstReadIsOrderedAgainstThePreviousRunsLastWrite) {
  vk::ContextOptions options;
  options.sync_trace = true;
  auto ctx = own_context(options);
  ComputeGraph g(ctx);
  const int32_t n = 200;
  auto x = g.add_input({n}, DType::Float32, "x");
  auto acc = g.add_tensor({n}, DType::Float32, "acc");
  auto previous = g.add_tensor({n}, DType::Float32, "previous");
  auto one =
      g.add_constant(HostTensor::from(DType::Float32, {n}, std::vector<float>(n, 1.f)), "one");
  g.add_dispatch(add_f32(acc, one, previous, n, "previous = acc + 1"));
  auto square = ops::binary(g, BinaryOp::Mul, x, x);
  g.add_dispatch(add_f32(square, x, acc, n, "acc = x * x + x"));
  g.add_output(previous, "previous");
  g.add_output(acc, "acc");

  std::vector<float> last_acc;
  for (int run = 0; run < 4; ++run) {
    SCOPED_TRACE("run " + std::to_string(run));
    auto vx = random_floats(n);
    g.copy_to_input(0, vx.data(), n * 4);
    g.execute();
    auto want_acc = reference(BinaryOp::Add, reference(BinaryOp::Mul, vx, vx), vx);
    auto got_acc = read_poisoned(g, 1, n);
    EXPECT_EQ(mismatches(got_acc, want_acc, "acc"), 0u);
    if (run > 0) {  // the first run reads memory nothing wrote yet
      EXPECT_EQ(
          mismatches(read_poisoned(g, 0, n), reference(BinaryOp::Add, last_acc, {1.f}), "previous"),
          0u);
    }
    last_acc = got_acc;
  }

  ASSERT_EQ(g.stats().command_buffers, 1u);
  auto submits = of_type(ctx->trace()->timeline(), SyncEvent::Type::Submit);
  ASSERT_FALSE(submits.empty());
  // The last submission is a replay of the graph's one command buffer (the first is prepack's).
  auto recorded = ctx->trace()->recorded(submits.back().command_buffers.at(0));
  // The first barrier with a compute destination precedes node 0 (input copies go to TRANSFER).
  auto node0 = std::find_if(recorded.begin(), recorded.end(), [](const SyncEvent& e) {
    return e.type == SyncEvent::Type::Barrier &&
           (e.dst_stage & VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT);
  });
  ASSERT_NE(node0, recorded.end());
  EXPECT_TRUE(node0->src_stage & VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT);
  // Two entries: acc (the last node's write -> this read) and `previous` (written by this
  // node, read by the previous run's output copy); the constant needs none.
  ASSERT_EQ(node0->buffers.size(), 2u);
  int read_after_write = 0;
  for (size_t i = 0; i < node0->buffers.size(); ++i)
    read_after_write += node0->buffer_src_access[i] == VK_ACCESS_SHADER_WRITE_BIT &&
                        node0->buffer_dst_access[i] == VK_ACCESS_SHADER_READ_BIT;
  EXPECT_EQ(read_after_write, 1);
  auto problems = ctx->trace()->audit();
  EXPECT_TRUE(problems.empty()) << problems[0];
}

// A state tensor (add_state) keeps what the previous run wrote: each run adds one to it, through
// a planned activation that must not share its memory, and it starts as its initial value. A
// constant stays read-only.
TEST_F(GraphReplay, StateTensorKeepsItsValueAcrossRuns) {
  ComputeGraph g(context());
  const int32_t n = 300;
  std::vector<float> initial = random_floats(n);
  auto state = g.add_state(HostTensor::from(DType::Float32, {n}, initial), "state");
  auto one =
      g.add_constant(HostTensor::from(DType::Float32, {n}, std::vector<float>(n, 1.f)), "one");
  auto zero = g.add_constant(HostTensor(DType::Float32, {n}), "zero");
  EXPECT_FALSE(g.is_constant(state));
  EXPECT_EQ(g.constant_value(state), nullptr);
  auto next = g.add_tensor({n}, DType::Float32, "next");
  auto seen = g.add_tensor({n}, DType::Float32, "seen");
  g.add_dispatch(add_f32(state, one, next, n, "next = state + 1"));
  g.add_dispatch(add_f32(next, zero, state, n, "state = next"));
  g.add_dispatch(add_f32(state, zero, seen, n, "seen = state"));
  g.add_output(seen, "seen");
  EXPECT_THROW(g.add_dispatch(add_f32(state, zero, one, n, "writes a constant")), Error);
  for (int run = 1; run <= 3; ++run) {
    SCOPED_TRACE("run " + std::to_string(run));
    g.execute();
    std::vector<float> want(initial);
    for (float& v : want) v += static_cast<float>(run);
    EXPECT_EQ(mismatches(read_poisoned(g, 0, n), want, "seen"), 0u);
  }
}

// The validation layer retires every access of a batch once the host waits on its fence, so a
// missing wrap-around barrier between two execute() calls goes unreported. Two back-to-back
// replays of one recording in one submission, with no fence between, show what the barrier is
// for: recorded the way encode() records (tracker seeded with the state one pass leaves) they
// are clean; recorded without the seed, run 2 reads X before run 1's write of X is available.
TEST_F(GraphReplay, BackToBackReplaysNeedTheWrapAroundBarrier) {
  auto ctx = own_context({});
  if (!ctx->validation_enabled()) GTEST_SKIP() << "needs the validation layer";
  constexpr VkBufferUsageFlags usage =
      VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
  vk::Buffer x(*ctx, 256, vk::MemoryUsage::Device, usage, "x");
  vk::Buffer y(*ctx, 256, vk::MemoryUsage::Device, usage, "y");
  vk::Buffer z(*ctx, 256, vk::MemoryUsage::Device, usage, "z");
  const ResourceAccess read{VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_READ_BIT};
  const ResourceAccess write{VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT};
  struct Copy {
    const vk::Buffer *src, *dst;
  };
  const std::vector<Copy> run = {{&x, &y}, {&z, &x}};  // reads X first, writes X last
  HazardTracker dry;
  for (const Copy& c : run) {
    vk::PipelineBarrier ignored;
    dry.access(c.src->handle(), read, ignored);
    dry.access(c.dst->handle(), write, ignored);
  }

  for (bool seeded : {true, false}) {
    SCOPED_TRACE(seeded ? "seeded" : "not seeded");
    vk::CommandPool pool(*ctx);
    std::vector<vk::CommandBuffer*> cbs = {&pool.allocate(), &pool.allocate()};
    for (vk::CommandBuffer* cb : cbs) {
      HazardTracker tracker;
      if (seeded) tracker.set_states(dry.states());
      cb->begin();
      for (const Copy& c : run) {
        vk::PipelineBarrier barrier, one, other;
        tracker.access(c.src->handle(), read, one);
        tracker.access(c.dst->handle(), write, other);
        barrier.merge(one);
        barrier.merge(other);
        cb->record_barrier(barrier);
        cb->copy_buffer(*c.src, *c.dst, 0, 0, 256);
      }
      cb->end();
    }
    vk::Fence fence(*ctx);
    ctx->submit({cbs[0]->handle(), cbs[1]->handle()}, {cbs[0]->id(), cbs[1]->id()}, fence.handle());
    for (vk::CommandBuffer* cb : cbs) cb->mark_submitted();
    fence.wait();
    for (vk::CommandBuffer* cb : cbs) cb->mark_completed();
    EXPECT_EQ(has_validation_messages_containing(*ctx, "SYNC-HAZARD"), !seeded);
    ctx->clear_validation_messages();
  }
}

// A chain of 20 same-size ops needs two activation buffers when memory is planned by lifetime
// (each result lives from its node to the next), and one per tensor when it is not.
TEST_F(GraphReplay, MemoryPlanningSharesActivationBuffersInAChain) {
  constexpr int kChain = 20;
  constexpr int64_t n = 1000;
  constexpr uint64_t bytes = n * sizeof(float);
  const BinaryOp cycle[] = {BinaryOp::Add, BinaryOp::Mul, BinaryOp::Sub, BinaryOp::Max};
  std::vector<std::vector<float>> constants;
  for (int i = 0; i < kChain; ++i) constants.push_back(random_floats(n));
  for (bool plan : {true, false}) {
    SCOPED_TRACE(plan ? "planned" : "unplanned");
    GraphOptions go;
    go.plan_memory = plan;
    ComputeGraph g(context(), go);
    TensorRef t = g.add_input({n}, DType::Float32, "x");
    for (int i = 0; i < kChain; ++i)
      t = ops::binary(g, cycle[i % 4], t,
                      g.add_constant(HostTensor::from(DType::Float32, {n}, constants[i])));
    g.add_output(t, "y");
    for (int run = 0; run < 2; ++run) {
      auto vx = random_floats(n);
      g.copy_to_input(0, vx.data(), bytes);
      g.execute();
      std::vector<float> want = vx;
      for (int i = 0; i < kChain; ++i) want = reference(cycle[i % 4], want, constants[i]);
      EXPECT_EQ(mismatches(read_poisoned(g, 0, n), want, "y"), 0u);
    }
    GraphStats s = g.stats();
    EXPECT_EQ(s.unplanned_activation_bytes, (kChain + 1) * bytes);  // input + 20 results
    EXPECT_EQ(s.activation_buffers, plan ? 2u : kChain + 1u);
    EXPECT_EQ(s.activation_bytes, plan ? 2 * bytes : (kChain + 1) * bytes);
    EXPECT_EQ(s.constant_bytes, kChain * bytes);
  }
}

}  // namespace
}  // namespace vkgraph::testing
