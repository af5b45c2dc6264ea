// Host memory bound as graph I/O: imported where possible, else copied, with flush and
// invalidate in the sync trace; and two graphs in flight on one Context.
#include "external_io_app.h"

namespace vkgraph::testing {
namespace {

using ops::BinaryOp;
using vk::SyncEvent;

// --- host memory: imported where possible, else copied ---

struct HostCase {
  const char* name;
  bool aligned_pointer;
  bool padded_size;   // bytes passed rounded up to the import alignment
  bool non_coherent;  // force_non_coherent + sync_trace
};

class HostPointer : public GpuTest, public ::testing::WithParamInterface<HostCase> {};

// Frees aligned_alloc memory.
struct FreeDeleter {
  void operator()(void* p) const { std::free(p); }
};

TEST_P(HostPointer, RoundTripsOverRuns) {
  const HostCase& hc = GetParam();
  vk::ContextOptions co;
  co.force_non_coherent = hc.non_coherent;
  co.sync_trace = hc.non_coherent;
  auto ctx = hc.non_coherent ? make_context(co) : shared_context();
  const VkDeviceSize align =
      std::max<VkDeviceSize>(ctx->features().min_imported_host_pointer_alignment, 64);
  const size_t padded = (kBytes + align - 1) / align * align;
  // One spare alignment unit so the unaligned pointer still has `padded` bytes behind it.
  std::unique_ptr<void, FreeDeleter> x_mem(std::aligned_alloc(align, padded + align));
  std::unique_ptr<void, FreeDeleter> y_mem(std::aligned_alloc(align, padded + align));
  ASSERT_TRUE(x_mem && y_mem);
  const size_t shift = hc.aligned_pointer ? 0 : sizeof(float);
  float* x = reinterpret_cast<float*>(static_cast<uint8_t*>(x_mem.get()) + shift);
  float* y = reinterpret_cast<float*>(static_cast<uint8_t*>(y_mem.get()) + shift);
  const size_t bytes = hc.padded_size ? padded : kBytes;

  auto c = random_floats(kN);
  ComputeGraph g(ctx);
  build_graph(g, c, IOMode::External, "x", "y");
  const bool importable =
      ctx->features().external_memory_host && hc.aligned_pointer && hc.padded_size;
  const HostIOPath want_path = importable ? HostIOPath::Imported : HostIOPath::Copied;
  EXPECT_EQ(g.bind_host_pointer("x", x, bytes), want_path);
  EXPECT_EQ(g.bind_host_pointer("y", y, bytes), want_path);
  g.prepare();
  vk::SyncTrace* trace = ctx->trace();
  if (trace) trace->clear();  // only the runs, not the constant upload

  constexpr int kRuns = 3;
  for (int run = 0; run < kRuns; ++run) {
    auto in = random_floats(kN);
    std::memcpy(x, in.data(), kBytes);
    // Host writes to imported non-coherent output memory could be evicted over device results.
    if (!(importable && hc.non_coherent)) std::fill(y, y + kN, std::nanf(""));
    g.execute();
    EXPECT_EQ(mismatches(y, graph_reference(in, c), "run " + std::to_string(run)), 0u);
  }
  if (!trace) return;

  // The rule-3/4 shape of every run: input flushed before its submit, output invalidated after
  // the fence wait, both on the right buffers.
  auto timeline = trace->timeline();
  std::set<uint64_t> written;  // host-visible buffers the recording writes: the output
  for (const SyncEvent& e : timeline)
    if (e.type == SyncEvent::Type::Submit)
      for (uint64_t cb : e.command_buffers)
        for (const SyncEvent& r : trace->recorded(cb))
          if (r.type == SyncEvent::Type::DeviceWrite) written.insert(r.resource);
  ASSERT_EQ(written.size(), 1u);
  int submits = 0;
  bool flushed = false, waited = false, invalidated = false;
  for (const SyncEvent& e : timeline) {
    switch (e.type) {
      case SyncEvent::Type::Flush:
        EXPECT_EQ(written.count(e.resource), 0u) << "flush of the output";
        flushed = true;
        break;
      case SyncEvent::Type::Submit:
        EXPECT_TRUE(flushed) << "submit " << submits << " without a flush of the input";
        if (submits > 0) {
          EXPECT_TRUE(invalidated) << "run " << submits - 1 << " not invalidated";
        }
        flushed = waited = invalidated = false;
        ++submits;
        break;
      case SyncEvent::Type::FenceWait:
        waited = true;
        break;
      case SyncEvent::Type::Invalidate:
        EXPECT_TRUE(waited) << "invalidate before the fence wait";
        EXPECT_EQ(written.count(e.resource), 1u) << "invalidate of another buffer";
        invalidated = true;
        break;
      default:
        break;
    }
  }
  EXPECT_EQ(submits, kRuns);
  EXPECT_TRUE(invalidated) << "last run not invalidated";
  auto problems = trace->audit();
  EXPECT_TRUE(problems.empty()) << problems[0];
}

INSTANTIATE_TEST_SUITE_P(
    Paths, HostPointer,
    ::testing::Values(HostCase{"Imported", true, true, false},
                      HostCase{"CopiedUnalignedPointer", false, true, false},
                      HostCase{"CopiedUnpaddedSize", true, false, false},
                      HostCase{"ImportedNonCoherentTraced", true, true, true},
                      HostCase{"CopiedUnalignedPointerNonCoherentTraced", false, true, true},
                      HostCase{"CopiedUnpaddedSizeNonCoherentTraced", true, false, true}),
    [](const auto& info) { return std::string(info.param.name); });

class HostPointerRebinding : public GpuTest {};

// Switching each binding between the imported and the copied path after a run records again;
// results land in the newly bound memory.
TEST_F(HostPointerRebinding, SwitchingPathsAfterARunRecordsAgain) {
  auto ctx = shared_context();
  if (!ctx->features().external_memory_host) GTEST_SKIP() << "no VK_EXT_external_memory_host";
  const VkDeviceSize align = ctx->features().min_imported_host_pointer_alignment;
  const size_t padded = (kBytes + align - 1) / align * align;
  std::vector<std::unique_ptr<void, FreeDeleter>> memory;
  auto allocate = [&](bool importable) {
    memory.emplace_back(std::aligned_alloc(align, padded + align));
    uint8_t* base = static_cast<uint8_t*>(memory.back().get());
    return reinterpret_cast<float*>(importable ? base : base + sizeof(float));
  };
  auto c = random_floats(kN);
  ComputeGraph g(ctx);
  build_graph(g, c, IOMode::External, "x", "y");
  for (bool x_imported : {true, false}) {
    float* x = allocate(x_imported);
    float* y = allocate(!x_imported);
    EXPECT_EQ(g.bind_host_pointer("x", x, padded),
              x_imported ? HostIOPath::Imported : HostIOPath::Copied);
    EXPECT_EQ(g.bind_host_pointer("y", y, padded),
              x_imported ? HostIOPath::Copied : HostIOPath::Imported);
    for (int run = 0; run < 2; ++run) {
      auto in = random_floats(kN);
      std::memcpy(x, in.data(), kBytes);
      std::fill(y, y + kN, std::nanf(""));
      g.execute();
      EXPECT_EQ(mismatches(y, graph_reference(in, c), x_imported ? "x imported" : "y imported"),
                0u);
    }
  }
}

// --- asynchronous execution ---

class AsyncGraphs : public GpuTest {};

TEST_F(AsyncGraphs, TwoGraphsInFlightOnOneContextGiveTheirOwnResults) {
  auto ctx = shared_context();
  auto ca = random_floats(kN);
  ComputeGraph a(ctx), b(ctx);
  build_graph(a, ca, IOMode::Staged, "x", "y");
  // b: x * x - d over [37, 11], d broadcast along rows.
  TensorRef bx = b.add_input({37, 11}, DType::Float32, "x");
  auto d = random_floats(11);
  TensorRef bd = b.add_constant(HostTensor::from(DType::Float32, {11}, d), "d");
  b.add_output(ops::binary(b, BinaryOp::Sub, ops::binary(b, BinaryOp::Mul, bx, bx), bd), "y");
  for (int round = 0; round < 2; ++round) {
    auto va = random_floats(kN), vb = random_floats(37 * 11);
    a.copy_to_input(0, va.data(), kBytes);
    a.submit();
    b.copy_to_input(0, vb.data(), vb.size() * sizeof(float));
    b.submit();
    EXPECT_TRUE(a.in_flight() && b.in_flight());
    b.wait();
    a.wait();
    std::vector<float> want_b(vb.size());
    for (size_t i = 0; i < vb.size(); ++i) want_b[i] = vb[i] * vb[i] - d[i % 11];
    auto ya = a.read_output(0), yb = b.read_output(0);
    EXPECT_EQ(mismatches(ya.data<float>(), graph_reference(va, ca), "a"), 0u);
    EXPECT_EQ(mismatches(yb.data<float>(), want_b, "b"), 0u);
  }
}

TEST_F(AsyncGraphs, MisuseWhileInFlightIsInvalidState) {
  auto ctx = shared_context();
  auto c = random_floats(kN);
  ComputeGraph g(ctx);
  build_graph(g, c, IOMode::Staged, "x", "y");
  expect_error([&] { g.wait(); }, ErrorKind::InvalidState, "without a submitted execution");
  auto in = random_floats(kN);
  g.copy_to_input(0, in.data(), kBytes);
  g.submit();
  std::vector<float> out(kN);
  expect_error([&] { g.copy_from_output(0, out.data(), kBytes); }, ErrorKind::InvalidState,
               "in flight");
  expect_error([&] { g.submit(); }, ErrorKind::InvalidState, "in flight");
  expect_error([&] { g.copy_to_input(0, in.data(), kBytes); }, ErrorKind::InvalidState,
               "in flight");
  EXPECT_TRUE(g.in_flight());
  g.wait();
  EXPECT_FALSE(g.in_flight());
  g.copy_from_output(0, out.data(), kBytes);
  EXPECT_EQ(mismatches(out.data(), graph_reference(in, c), "y"), 0u);
  expect_error([&] { g.wait(); }, ErrorKind::InvalidState, "without a submitted execution");
}

TEST_F(AsyncGraphs, RebindingWhileInFlightIsInvalidState) {
  auto ctx = shared_context();
  auto c = random_floats(kN);
  ComputeGraph g(ctx);
  build_graph(g, c, IOMode::External, "x", "y");
  AppBuffer x(*ctx, kBytes, kAppUsage, kHostMemory), y(*ctx, kBytes, kAppUsage, kHostMemory);
  g.bind_external("x", x.external());
  g.bind_external("y", y.external());
  auto in = random_floats(kN);
  std::memcpy(x.floats(), in.data(), kBytes);
  g.submit();
  expect_error([&] { g.bind_external("y", x.external()); }, ErrorKind::InvalidState, "in flight");
  std::vector<float> spare(kN);
  expect_error([&] { g.bind_host_pointer("y", spare.data(), kBytes); }, ErrorKind::InvalidState,
               "in flight");
  g.wait();
  EXPECT_EQ(mismatches(y.floats(), graph_reference(in, c), "y"), 0u);
}

}  // namespace
}  // namespace vkgraph::testing
