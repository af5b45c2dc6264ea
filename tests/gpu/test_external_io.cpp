// Zero-copy graph I/O (DESIGN.md rule 6) under synchronization validation. An "app" with its own
// VkBuffers, VkDeviceMemory, command buffers, descriptor sets and dispatches
// (external_io_app.h) produces a graph's external input and consumes its external output on
// the graph's queue, ordered by the graph's entry and exit barriers or by semaphores; the test
// hooks that drop those barriers, and ExternalSync masks that miss the app's work, are
// reported as hazards. Host pointers: test_host_pointer.cpp; an app's own device:
// test_adopted_device.cpp.
#include "external_io_app.h"
#include "graph_testing.h"

namespace vkgraph::testing {
namespace {

using ops::BinaryOp;
using vk::SyncEvent;

// --- producer -> graph -> consumer on one queue, ordered by the graph's barriers ---

class ExternalIOProducers : public ExternalIO, public ::testing::WithParamInterface<Producer> {};

TEST_P(ExternalIOProducers, AppBuffersFlowThroughTheGraphOnOneQueue) {
  auto chain = make_chain(shared_context(), {}, GetParam());
  for (int it = 0; it < 3; ++it) {
    chain->new_data(random_floats(kN));
    chain->run_in_queue_order();
    chain->check("iteration " + std::to_string(it));
  }
}

INSTANTIATE_TEST_SUITE_P(Kinds, ExternalIOProducers,
                         ::testing::Values(Producer::Compute, Producer::Transfer),
                         [](const auto& info) {
                           return info.param == Producer::Compute ? std::string("ComputeProducer")
                                                                  : std::string("TransferProducer");
                         });

// --- semaphores between the submissions ---

// Two chunks (one node each): the first execute's waits gate the first chunk it submits and its
// signals follow the last; replays submit both in one batch with the same semaphores.
TEST_F(ExternalIO, BinarySemaphoresChainProducerGraphConsumer) {
  GraphOptions options;
  options.nodes_per_command_buffer = 1;
  auto chain = make_chain(shared_context(), options, Producer::Compute);
  VkSemaphore produced = chain->app.semaphore(false), computed = chain->app.semaphore(false);
  for (int it = 0; it < 3; ++it) {
    chain->new_data(random_floats(kN));
    chain->app.submit(chain->producer, {{}, {{produced}}});
    chain->graph.submit({{{produced, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT}}, {{computed}}});
    chain->app.submit(chain->consumer, {{{computed, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT}}, {}},
                      chain->done);
    chain->app.wait(chain->done);
    chain->graph.wait();
    chain->check("iteration " + std::to_string(it));
  }
  EXPECT_EQ(chain->graph.stats().command_buffers, 2u);
}

// One timeline semaphore counts the steps; the host waits on its value, not on a fence.
TEST_F(ExternalIO, TimelineSemaphoreChainsProducerGraphConsumer) {
  auto ctx = shared_context();
  if (!ctx->features().timeline_semaphores) GTEST_SKIP() << "no timeline semaphores";
  auto chain = make_chain(ctx, {}, Producer::Compute);
  VkSemaphore timeline = chain->app.semaphore(true);
  for (uint64_t it = 0; it < 3; ++it) {
    const uint64_t base = 3 * it;
    chain->new_data(random_floats(kN));
    chain->app.submit(chain->producer, {{}, {{timeline, base + 1}}});
    chain->graph.submit(
        {{{timeline, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, base + 1}}, {{timeline, base + 2}}});
    chain->app.submit(chain->consumer, {{{timeline, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, base + 2}},
                                        {{timeline, base + 3}}});
    const uint64_t value = base + 3;
    VkSemaphoreWaitInfo wi{VK_STRUCTURE_TYPE_SEMAPHORE_WAIT_INFO};
    wi.semaphoreCount = 1;
    wi.pSemaphores = &timeline;
    wi.pValues = &value;
    ASSERT_EQ(vkWaitSemaphores(ctx->device(), &wi, UINT64_MAX), VK_SUCCESS);
    chain->graph.wait();
    chain->check("iteration " + std::to_string(it));
  }
}

// Semaphore signal and wait operations are full memory dependencies, so with them the graph's
// entry and exit barriers are not needed: dropping both stays clean.
TEST_F(ExternalIO, SemaphoresAloneOrderTheChainWithoutTheGraphsBarriers) {
  auto chain = make_chain(shared_context(), {}, Producer::Transfer);
  inject_sync_faults(chain->graph,
                     {.omit_external_entry_barrier = true, .omit_external_exit_barrier = true});
  VkSemaphore produced = chain->app.semaphore(false), computed = chain->app.semaphore(false);
  for (int it = 0; it < 2; ++it) {
    chain->new_data(random_floats(kN));
    chain->app.submit(chain->producer, {{}, {{produced}}});
    chain->graph.submit({{{produced}}, {{computed}}});
    chain->app.submit(chain->consumer, {{{computed}}, {}}, chain->done);
    chain->app.wait(chain->done);
    chain->graph.wait();
    chain->check("iteration " + std::to_string(it));
  }
}

// --- ExternalSync narrowed to what the app really does ---

TEST_F(ExternalIO, NarrowedExternalSyncMatchingTheAppIsClean) {
  GraphOptions options;
  options.external.before_stage = VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT;
  options.external.before_access = VK_ACCESS_SHADER_WRITE_BIT;
  options.external.after_stage = VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT;
  options.external.after_access = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT;
  auto chain = make_chain(shared_context(), options, Producer::Compute);
  for (int it = 0; it < 3; ++it) {
    chain->new_data(random_floats(kN));
    chain->run_in_queue_order();
    chain->check("iteration " + std::to_string(it));
  }
}

// --- the checks can fail: barriers dropped, or masks that miss the app's work ---

struct HazardCase {
  const char* name;
  Producer producer;
  bool omit_entry, omit_exit;
  ExternalSync sync;
  bool on_p;  // the hazard is the graph's read of P (else the consumer's read of Q)
};

ExternalSync narrowed_before_to_compute() {
  ExternalSync s;
  s.before_stage = VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT;
  s.before_access = VK_ACCESS_SHADER_WRITE_BIT;
  return s;
}

ExternalSync narrowed_after_to_transfer() {
  ExternalSync s;
  s.after_stage = VK_PIPELINE_STAGE_TRANSFER_BIT;
  s.after_access = VK_ACCESS_TRANSFER_READ_BIT;
  return s;
}

class ExternalIOHazards : public ExternalIO, public ::testing::WithParamInterface<HazardCase> {};

// Each case is one iteration on a fresh instance; the hazard must be a read-after-write and
// name the submission that makes it: the graph's (reading P) or the consumer's (reading Q).
TEST_P(ExternalIOHazards, AreReportedBySynchronizationValidation) {
  const HazardCase& hc = GetParam();
  auto ctx = make_context({});
  if (!ctx->validation_enabled()) GTEST_SKIP() << "needs the validation layer";
  GraphOptions options;
  options.external = hc.sync;
  std::string producer, consumer;
  {
    auto chain = make_chain(ctx, options, hc.producer);
    inject_sync_faults(chain->graph, {.omit_external_entry_barrier = hc.omit_entry,
                                      .omit_external_exit_barrier = hc.omit_exit});
    producer = hex_handle(chain->producer);
    consumer = hex_handle(chain->consumer);
    chain->new_data(random_floats(kN));
    chain->run_in_queue_order();
  }
  auto messages = ctx->validation_messages();
  ASSERT_FALSE(messages.empty()) << hc.name << ": no hazard reported";
  for (const std::string& m : messages)
    EXPECT_NE(m.find("SYNC-HAZARD"), std::string::npos) << hc.name << ": not a hazard: " << m;
  // The message names the command buffer that hazards first, the one with the prior access
  // after "command_buffer:". P: the graph's read of the producer's write. Q: the consumer's read.
  const std::string prior = "command_buffer: VkCommandBuffer " + producer;
  bool found = false;
  for (const std::string& m : messages) {
    if (m.find("READ_AFTER_WRITE") == std::string::npos) continue;
    size_t first = m.find("VkCommandBuffer 0x");
    bool in_consumer = first != std::string::npos &&
                       m.compare(first + 16, consumer.size() + 1, consumer + "[") == 0;
    found |= hc.on_p ? !in_consumer && m.find(prior + "[") != std::string::npos : in_consumer;
  }
  EXPECT_TRUE(found) << hc.name << ": first message: " << messages[0];
  ctx->clear_validation_messages();
}

INSTANTIATE_TEST_SUITE_P(
    Cases, ExternalIOHazards,
    ::testing::Values(HazardCase{"OmittedEntryBarrier", Producer::Compute, true, false, {}, true},
                      HazardCase{"OmittedExitBarrier", Producer::Compute, false, true, {}, false},
                      HazardCase{"BeforeMaskMissesTransferProducer", Producer::Transfer, false,
                                 false, narrowed_before_to_compute(), true},
                      HazardCase{"AfterMaskMissesComputeConsumer", Producer::Compute, false, false,
                                 narrowed_after_to_transfer(), false}),
    [](const auto& info) { return std::string(info.param.name); });

// Rebinding after an execute re-records: results land in the new buffer (at an offset into
// it), the old one keeps what the earlier run wrote.
TEST_F(ExternalIO, RebindingAfterExecuteRecordsAgain) {
  auto ctx = shared_context();
  auto c = random_floats(kN);
  ComputeGraph g(ctx);
  build_graph(g, c, IOMode::External, "x", "y");
  AppBuffer x(*ctx, kBytes, kAppUsage, kHostMemory);
  AppBuffer y1(*ctx, kBytes, kAppUsage, kHostMemory), y2(*ctx, 2 * kBytes, kAppUsage, kHostMemory);
  g.bind_external("x", x.external());
  g.bind_external("y", y1.external());
  auto in1 = random_floats(kN);
  std::memcpy(x.floats(), in1.data(), kBytes);
  std::fill(y1.floats(), y1.floats() + kN, std::nanf(""));
  g.execute();  // ends with ALL_COMMANDS -> HOST; the memory is coherent
  const std::vector<float> want1 = graph_reference(in1, c);
  EXPECT_EQ(mismatches(y1.floats(), want1, "y1"), 0u);
  EXPECT_EQ(g.stats().recordings, 1u);

  const VkDeviceSize offset =
      std::max<VkDeviceSize>(ctx->limits().minStorageBufferOffsetAlignment, kBytes / 2 / 256 * 256);
  g.bind_external("y", y2.external(offset));
  auto in2 = random_floats(kN);
  std::memcpy(x.floats(), in2.data(), kBytes);
  std::fill(y2.floats(), y2.floats() + 2 * kN, std::nanf(""));
  g.execute();
  EXPECT_EQ(mismatches(y2.floats() + offset / sizeof(float), graph_reference(in2, c), "y2"), 0u);
  EXPECT_TRUE(std::isnan(y2.floats()[0]));  // nothing written before the offset
  EXPECT_EQ(mismatches(y1.floats(), want1, "y1 after rebinding"), 0u);
  EXPECT_EQ(g.stats().recordings, 2u);
}

// --- errors ---

class ExternalIOErrors : public GpuTest {};

TEST_F(ExternalIOErrors, BindExternalRejectsBadBuffersAndNames) {
  auto ctx = shared_context();
  ComputeGraph g(ctx);
  auto c = random_floats(kN);
  build_graph(g, c, IOMode::External, "x", "y");
  TensorRef z = g.add_input({4}, DType::Float32, "z");  // staged
  g.add_output(z, "z_out");
  AppBuffer good(*ctx, 2 * kBytes, kAppUsage, kHostMemory);
  AppBuffer no_storage(*ctx, kBytes, VK_BUFFER_USAGE_TRANSFER_DST_BIT, kHostMemory);
  expect_error([&] { g.bind_external("x", no_storage.external()); }, ErrorKind::InvalidArgument,
               "VK_BUFFER_USAGE_STORAGE_BUFFER_BIT");
  ExternalBuffer small = good.external();
  small.size = kBytes - 4;
  expect_error([&] { g.bind_external("x", small); }, ErrorKind::InvalidArgument,
               "needs " + std::to_string(kBytes) + " bytes");
  // In range, but the offset leaves too few bytes.
  expect_error([&] { g.bind_external("x", good.external(kBytes + 256)); },
               ErrorKind::InvalidArgument, "needs " + std::to_string(kBytes));
  const VkDeviceSize align =
      std::max<VkDeviceSize>(16, ctx->limits().minStorageBufferOffsetAlignment);
  expect_error([&] { g.bind_external("x", good.external(4)); }, ErrorKind::InvalidArgument,
               "offset 4 is not a multiple of " + std::to_string(align) + " bytes");
  ExternalBuffer null_buffer = good.external();
  null_buffer.buffer = VK_NULL_HANDLE;
  expect_error([&] { g.bind_external("x", null_buffer); }, ErrorKind::InvalidArgument,
               "null VkBuffer");
  expect_error([&] { g.bind_external("nope", good.external()); }, ErrorKind::InvalidArgument,
               "no input or output named 'nope'");
  expect_error([&] { g.bind_external("z", good.external()); }, ErrorKind::InvalidArgument,
               "'z' was not declared IOMode::External");
  expect_error([&] { g.bind_external("z_out", good.external()); }, ErrorKind::InvalidArgument,
               "'z_out' was not declared IOMode::External");
  std::vector<float> host(kN);
  expect_error([&] { g.bind_host_pointer("x", host.data(), kBytes - 4); },
               ErrorKind::InvalidArgument, "'x' needs " + std::to_string(kBytes) + " bytes");
  expect_error([&] { g.bind_host_pointer("z", host.data(), 16); }, ErrorKind::InvalidArgument,
               "not declared IOMode::External");
  // An offset that is a multiple of the alignment works (the graph is not run here).
  g.bind_external("x", good.external(align));
}

TEST_F(ExternalIOErrors, UnboundOrMisusedExternalIOIsInvalidState) {
  auto ctx = shared_context();
  ComputeGraph g(ctx);
  auto c = random_floats(kN);
  build_graph(g, c, IOMode::External, "x", "y");
  AppBuffer x(*ctx, kBytes, kAppUsage, kHostMemory), y(*ctx, kBytes, kAppUsage, kHostMemory);
  expect_error([&] { g.execute(); }, ErrorKind::InvalidState, "'x' has no buffer bound");
  g.bind_external("x", x.external());
  expect_error([&] { g.execute(); }, ErrorKind::InvalidState, "'y' has no buffer bound");
  EXPECT_FALSE(g.in_flight());
  auto in = random_floats(kN);
  expect_error([&] { g.copy_to_input(0, in.data(), kBytes); }, ErrorKind::InvalidState,
               "input 'x' is external");
  // Once bound, the same graph runs.
  g.bind_external("y", y.external());
  std::memcpy(x.floats(), in.data(), kBytes);
  g.execute();
  EXPECT_EQ(mismatches(y.floats(), graph_reference(in, c), "y"), 0u);
  std::vector<float> out(kN);
  expect_error([&] { g.copy_from_output(0, out.data(), kBytes); }, ErrorKind::InvalidState,
               "output 'y' is external");
}

TEST_F(ExternalIOErrors, ExternalOutputMustBeComputedByTheGraph) {
  ComputeGraph g(shared_context());
  TensorRef x = g.add_input({4}, DType::Float32, "x", IOMode::External);
  TensorRef k = g.add_constant(HostTensor::from(DType::Float32, {4}, std::vector<float>(4, 1.f)));
  expect_error([&] { g.add_output(x, "y", IOMode::External); }, ErrorKind::InvalidArgument,
               "external output 'y' must be computed by the graph");
  expect_error([&] { g.add_output(k, "k", IOMode::External); }, ErrorKind::InvalidArgument,
               "external output 'k'");
}

}  // namespace
}  // namespace vkgraph::testing
