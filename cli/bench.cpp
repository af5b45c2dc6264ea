// `vkgraph bench MODEL` and `vkgraph bench-op`: timing with GPU timestamps, a per-node
// table, and a Chrome trace (chrome://tracing, Perfetto) with one slice per node.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <thread>

#include "cli.h"
#include "vk/parallel_copy.h"
#include "vkgraph/chrome_trace.h"
#include "vkgraph/error.h"
#include "vkgraph/ops.h"
#include "vkgraph/ops/attention.h"
#include "vkgraph/vk/barrier.h"
#include "vkgraph/vk/buffer.h"
#include "vkgraph/vk/command.h"
#include "vkgraph/vk/pipeline.h"

namespace vkgraph::cli {
namespace {

double now_ms() {
  return std::chrono::duration<double, std::milli>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

double percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(q * (v.size() - 1) + 0.5))];
}

// Uniform values in [-1, 1) from an integer hash of the index, spread over every core: the
// 256M-element inputs of `bench-op add` take a fraction of a second instead of a minute.
void fill_random(HostTensor& t, uint32_t seed) {
  const int64_t n = t.numel();
  const bool half = t.dtype == DType::Float16;
  auto fill = [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      uint32_t h = static_cast<uint32_t>(i) * 0x9E3779B1u ^ seed;
      h ^= h >> 16;
      h *= 0x85EBCA6Bu;
      h ^= h >> 13;
      h *= 0xC2B2AE35u;
      h ^= h >> 16;
      float v = static_cast<float>(h >> 8) * (2.f / 16777216.f) - 1.f;
      if (half)
        t.data<uint16_t>()[i] = float_to_half(v);
      else if (t.dtype == DType::Int8 || t.dtype == DType::UInt8)
        t.bytes[i] = static_cast<uint8_t>(h >> 24);
      else
        t.data<float>()[i] = v;
    }
  };
  int64_t workers = std::clamp<int64_t>(std::thread::hardware_concurrency(), 1, 64);
  if (n < (1 << 20)) workers = 1;
  std::vector<std::thread> threads;
  int64_t per = (n + workers - 1) / workers;
  for (int64_t w = 0; w < workers; ++w)
    threads.emplace_back(fill, w * per, std::min(n, (w + 1) * per));
  for (auto& th : threads) th.join();
}

float element(const HostTensor& t, int64_t i) {
  return t.dtype == DType::Float16 ? half_to_float(t.data<uint16_t>()[i]) : t.data<float>()[i];
}

// The [m, n] result in `out` back on the host: compute writes before the copy, the copy
// before host reads (device_to_host_barrier), a fence wait, then the staging read.
HostTensor read_result(vk::Context& ctx, const vk::Buffer& out, DType dtype, int64_t m, int64_t n) {
  size_t bytes = static_cast<size_t>(m * n) * dtype_size(dtype);
  vk::StagingBuffer staging(ctx, bytes, vk::StagingBuffer::Direction::FromDevice, "check");
  vk::OneShot shot(ctx);
  vk::PipelineBarrier after_compute;
  after_compute.add_global(VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT,
                           VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_READ_BIT);
  shot.cmd().record_barrier(after_compute);
  shot.cmd().copy_buffer(out, staging, 0, 0, bytes);
  shot.cmd().record_barrier(vk::device_to_host_barrier());
  shot.submit_and_wait();
  HostTensor c(dtype, {m, n});
  staging.copy_out(c.bytes.data(), bytes);
  return c;
}

// Reads C back and compares 4096 sampled entries with double-precision dot products of the
// host inputs; the bound allows fp16 output rounding (and fp32 accumulation over K).
// `b` is [K, N], or [N, K] when `trans_b`.
bool check_gemm(vk::Context& ctx, const vk::Buffer& out, const HostTensor& a, const HostTensor& b,
                DType dtype, int64_t m, int64_t n, int64_t k, bool trans_b) {
  const HostTensor c = read_result(ctx, out, dtype, m, n);
  double worst = 0;
  bool ok = true;
  for (int64_t s = 0; s < 4096; ++s) {
    int64_t i = (s * 7919) % m, j = (s * 104729) % n;
    double want = 0;
    for (int64_t q = 0; q < k; ++q)
      want += double(element(a, i * k + q)) * element(b, trans_b ? j * k + q : q * n + j);
    double err = std::abs(element(c, i * n + j) - want);
    double tol =
        dtype == DType::Float16 ? 0.05 + 2e-3 * std::abs(want) : 1e-3 + 1e-5 * std::abs(want);
    worst = std::max(worst, err);
    ok &= err <= tol;
  }
  std::printf("check: 4096 sampled entries, max |error| %.3g: %s\n", worst, ok ? "ok" : "WRONG");
  return ok;
}

// The weight-only low-bit matmul's operands: a [m, k] in `dtype`, packed codes b [n, blocks,
// blob] of random bytes, scales [n, blocks] in [0.005, 0.015).
struct NBitsOperands {
  HostTensor a, b, scales;
};
NBitsOperands nbits_operands(int64_t m, int64_t n, int64_t k, int64_t bits, int64_t block,
                             DType dtype) {
  const int64_t blocks = (k + block - 1) / block, blob = block * bits / 8;
  NBitsOperands o{HostTensor(dtype, {m, k}), HostTensor(DType::UInt8, {n, blocks, blob}),
                  HostTensor(dtype, {n, blocks})};
  fill_random(o.a, 11);
  fill_random(o.scales, 12);
  for (int64_t i = 0; i < o.scales.numel(); ++i) {
    const float s = 0.01f + 0.005f * element(o.scales, i);
    if (dtype == DType::Float16)
      o.scales.data<uint16_t>()[i] = float_to_half(s);
    else
      o.scales.data<float>()[i] = s;
  }
  uint32_t h = 0x12345678u;
  for (auto& byte : o.b.bytes) {
    h ^= h << 13, h ^= h >> 17, h ^= h << 5;
    byte = static_cast<uint8_t>(h >> 24);
  }
  return o;
}

// Reads y [m, n] back and compares 256 sampled entries with double-precision sums over the
// dequantized weights (zero point 2^(bits-1)). accuracy_level 4 (a in int8 per block) widens
// the tolerance to the quantization's bound: half a step of 1/127 of the block's max |a|.
bool check_nbits(vk::Context& ctx, const vk::Buffer& out, const NBitsOperands& o, DType dtype,
                 int64_t m, int64_t n, int64_t k, int64_t bits, int64_t block,
                 int64_t accuracy_level) {
  const HostTensor y = read_result(ctx, out, dtype, m, n);
  const int64_t blocks = (k + block - 1) / block, row_bits = blocks * block * bits;
  double worst = 0;
  bool ok = true;
  for (int64_t s = 0; s < 256; ++s) {
    const int64_t i = (s * 7919) % m, j = (s * 104729) % n;
    double want = 0, scale_sum = 0;
    for (int64_t q = 0; q < k; ++q) {
      const int64_t bit = j * row_bits + q * bits;
      const int code = (o.b.bytes[bit / 8] >> (bit % 8)) & ((1 << bits) - 1);
      const double scale = element(o.scales, j * blocks + q / block);
      const double a = element(o.a, i * k + q);
      want += a * (code - (1 << (bits - 1))) * scale;
      scale_sum += std::abs(a) * scale * (1 << bits);
    }
    const double err = std::abs(element(y, i * n + j) - want);
    const double rel = accuracy_level == 4 ? 1.0 / 254 : dtype == DType::Float16 ? 2e-3 : 1e-5;
    const double tol = rel * scale_sum + 1e-4;
    worst = std::max(worst, err);
    ok &= err <= tol;
  }
  std::printf("check: 256 sampled entries, max |error| %.3g: %s\n", worst, ok ? "ok" : "WRONG");
  return ok;
}

}  // namespace

void print_pipeline_cache(vk::Context& context) {
  vk::PipelineCacheStats st = context.pipelines().stats();
  std::printf("pipelines: %zu created in %.1f ms; disk cache %s", st.pipelines, st.create_ms,
              vk::disk_cache_state_name(st.disk));
  if (st.disk == vk::DiskCacheState::Warm)
    std::printf(" (%zu bytes from %s)", st.loaded_bytes, st.path.c_str());
  if (st.disk == vk::DiskCacheState::Cold)
    std::printf(" (%s: %s)", st.cold_reason.c_str(), st.path.c_str());
  std::printf("\n");
}

void print_profile(const std::vector<std::vector<NodeTime>>& runs, size_t top,
                   const std::string& trace_path) {
  if (runs.empty() || runs[0].empty()) return;
  // Mean over runs, per node.
  std::vector<NodeTime> mean = runs[0];
  for (auto& n : mean) n.gpu_ms = 0;
  for (auto& r : runs)
    for (size_t i = 0; i < r.size() && i < mean.size(); ++i)
      mean[i].gpu_ms += r[i].gpu_ms / runs.size();
  double total = 0;
  for (auto& n : mean) total += n.gpu_ms;
  std::vector<size_t> order(mean.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return mean[a].gpu_ms > mean[b].gpu_ms; });
  std::printf("per-node GPU time (mean of %zu runs; %zu nodes, %.3f ms in nodes):\n", runs.size(),
              mean.size(), total);
  std::printf("  %9s %6s  %s\n", "ms", "%", "node");
  for (size_t k = 0; k < std::min(top, order.size()); ++k) {
    const NodeTime& n = mean[order[k]];
    std::printf("  %9.4f %5.1f%%  #%zu %s\n", n.gpu_ms, total > 0 ? 100 * n.gpu_ms / total : 0,
                order[k], n.label.c_str());
  }
  if (!trace_path.empty()) {
    write_chrome_trace(trace_path, {{0, mean}});
    std::printf("trace: %s\n", trace_path.c_str());
  }
}

int run_bench(Session& session, const std::map<std::string, HostTensor>& feeds, int warmup,
              int runs, size_t top, const std::string& trace_path) {
  std::vector<double> host, gpu;
  std::vector<std::vector<NodeTime>> profiles;
  if (runs == 0) {
    // Load time alone: of a model built at load (every input shape known), without runs.
    const LoadTimes& lt = session.load_times();
    std::printf("device: %s\n", session.context().properties().deviceName);
    std::printf("load: parse %.1f ms, build %.1f ms, prepare (plan, upload, pipelines) %.1f ms\n",
                lt.parse_ms, lt.build_ms, lt.prepare_ms);
    print_pipeline_cache(session.context());
    if (session.graph()) {
      GraphStats st = session.graph()->stats();
      std::printf(
          "prepare: activation plan %.1f ms, constants allocated and uploaded %.1f ms "
          "(%.2f MiB), encoder (pipelines, pools) %.1f ms\n",
          st.prepare_plan_ms, st.prepare_upload_ms, st.constant_bytes / 1048576.0,
          st.prepare_encoder_ms);
    }
    return report_validation(session.context());
  }
  // Timed runs without per-node timestamps (each costs GPU time, so times with them are
  // inflated), then up to ten profiled runs for the node table.
  for (int i = 0; i < std::max(warmup, 1); ++i) session.run(feeds);  // the first builds the graph
  session.graph()->set_profile(false);
  for (int i = 0; i < runs; ++i) {
    double t0 = now_ms();
    session.run(feeds);
    host.push_back(now_ms() - t0);
    gpu.push_back(session.graph()->last_gpu_ms());
  }
  session.graph()->set_profile(true);
  std::vector<double> profiled_gpu;
  session.run(feeds);  // records again, with the timestamps
  const int profiled = std::min(runs, 10);
  for (int i = 0; i < profiled; ++i) {
    session.run(feeds);
    profiled_gpu.push_back(session.graph()->last_gpu_ms());
    profiles.push_back(session.graph()->node_times());
  }
  ComputeGraph& g = *session.graph();
  const LoadTimes& lt = session.load_times();
  GraphStats st = g.stats();
  std::printf("device: %s\n", session.context().properties().deviceName);
  std::printf("load: parse %.1f ms, build %.1f ms, prepare (plan, upload, pipelines) %.1f ms\n",
              lt.parse_ms, lt.build_ms, lt.prepare_ms);
  print_pipeline_cache(session.context());
  // More than one graph for one input shape: the Session runs segments (values the model
  // computes from data and the build needs), each replayed before the graph on every run.
  std::printf(
      "graph: %zu nodes in %zu command buffers (%d graphs built); activations %.2f MiB (%.2f MiB "
      "unplanned), constants %.2f MiB; context peak device memory %.2f MiB (all graphs, whole "
      "blocks)\n",
      st.nodes, st.command_buffers, lt.builds, st.activation_bytes / 1048576.0,
      st.unplanned_activation_bytes / 1048576.0, st.constant_bytes / 1048576.0,
      st.context_peak_device_bytes / 1048576.0);
  std::printf("run x%d: host p50 %.3f ms, p90 %.3f ms; GPU p50 %.3f ms, p90 %.3f ms\n", runs,
              percentile(host, 0.5), percentile(host, 0.9), percentile(gpu, 0.5),
              percentile(gpu, 0.9));
  std::printf("profiled x%d (a timestamp after every node): GPU p50 %.3f ms\n", profiled,
              percentile(profiled_gpu, 0.5));
  print_profile(profiles, top, trace_path);
  return report_validation(session.context());
}

// The host halves of a staged run alone, each timed over `runs` calls after one execute():
// upload (copy_to_input), readback into a buffer the caller reuses (copy_from_output), and
// readback into a fresh HostTensor per call, as Session::run returns them (read_output).
bool bench_staged_copies(ComputeGraph& g, const float* x, float* y, size_t bytes, int runs) {
  // Median and best: on a shared machine the best is the copy undisturbed.
  auto gbps = [&](const std::vector<double>& ms) {
    char s[64];
    std::snprintf(s, sizeof s, "%.2f (best %.2f)", bytes / (percentile(ms, 0.5) * 1e-3) / 1e9,
                  bytes / (percentile(ms, 0) * 1e-3) / 1e9);
    return std::string(s);
  };
  std::vector<double> up, reused, fresh, filled;
  bool ok = true;
  g.execute();
  for (int i = 0; i < runs + 2; ++i) {
    double t0 = now_ms();
    g.copy_to_input(0, x, bytes);
    double t1 = now_ms();
    g.copy_from_output(0, y, bytes);
    double t2 = now_ms();
    HostTensor t = g.read_output(0);
    double t3 = now_ms();
    ok &= t.nbytes() == bytes && std::memcmp(t.bytes.data(), y, bytes) == 0;
    if (i < 2) continue;
    up.push_back(t1 - t0);
    reused.push_back(t2 - t1);
    fresh.push_back(t3 - t2);
  }
  // What read_output did before it stopped zero-filling, for comparison: in a loop of its own,
  // so that each loop's heap holds one freed output for the next run to reuse, as a Session
  // loop's does.
  for (int i = 0; i < runs + 2; ++i) {
    double t0 = now_ms();
    HostTensor zeroed(DType::Float32, {static_cast<int64_t>(bytes / 4)});
    g.copy_from_output(0, zeroed.bytes.data(), bytes);
    if (i >= 2) filled.push_back(now_ms() - t0);
  }
  std::printf(
      "bench-op io %zu bytes, staged host copies in GB/s, %u copy threads: upload %s, "
      "readback into a reused buffer %s, into a fresh HostTensor (read_output) %s, into a "
      "fresh zero-filled one %s%s\n",
      bytes, vk::parallel_copy_threads(), gbps(up).c_str(), gbps(reused).c_str(),
      gbps(fresh).c_str(), gbps(filled).c_str(), ok ? "" : "  WRONG RESULT");
  return ok;
}

// Host-to-host y = 2x over n floats: staging copies versus host memory bound to the graph
// (imported where possible). Wall time per run, and bytes the host copies.
int bench_io(std::shared_ptr<vk::Context> ctx, int64_t n, int runs, const GraphOptions& go) {
  // One tensor of n floats: beyond the device's storage range no graph could hold it, so say
  // so before allocating host memory for it.
  const uint64_t range = ctx->limits().maxStorageBufferRange;
  if (n < 1 || static_cast<uint64_t>(n) > range / 4)
    throw Error(ErrorKind::InvalidArgument,
                "bench-op io: N = " + std::to_string(n) + " floats is beyond this device's " +
                    "maxStorageBufferRange of " + std::to_string(range) +
                    " bytes (N <= " + std::to_string(range / 4) + ")");
  size_t bytes = static_cast<size_t>(n) * 4;
  size_t align = std::max<size_t>(ctx->features().min_imported_host_pointer_alignment, 64);
  size_t padded = (bytes + align - 1) / align * align;
  auto alloc = [&] {
    auto* p = static_cast<float*>(std::aligned_alloc(align, padded));
    if (!p)
      throw Error(ErrorKind::OutOfMemory, "bench-op io: cannot allocate " + std::to_string(padded) +
                                              " bytes of host memory");
    return p;
  };
  std::unique_ptr<float, decltype(&std::free)> x(alloc(), &std::free), y(alloc(), &std::free);
  for (int64_t i = 0; i < n; ++i) x.get()[i] = static_cast<float>(i % 1000);
  for (IOMode mode : {IOMode::Staged, IOMode::External}) {
    ComputeGraph g(ctx, go);
    TensorRef in = g.add_input({n}, DType::Float32, "x", mode);
    TensorRef out = ops::binary(g, ops::BinaryOp::Add, in, in);
    g.add_output(out, "y", mode);
    std::string path = "staged copies";
    if (mode == IOMode::External) {
      bool imported = g.bind_host_pointer("x", x.get(), padded) == HostIOPath::Imported;
      imported &= g.bind_host_pointer("y", y.get(), padded) == HostIOPath::Imported;
      path = imported ? "host memory imported (zero-copy)" : "host binding (copied)";
    }
    g.prepare();
    std::vector<double> ms;
    for (int i = 0; i < runs + 2; ++i) {
      double t0 = now_ms();
      if (mode == IOMode::Staged) g.copy_to_input(0, x.get(), bytes);
      g.execute();
      if (mode == IOMode::Staged) g.copy_from_output(0, y.get(), bytes);
      if (i >= 2) ms.push_back(now_ms() - t0);
    }
    bool ok = y.get()[n - 1] == 2 * x.get()[n - 1];
    double p50 = percentile(ms, 0.5);
    std::printf(
        "bench-op io %lld floats, %s: wall p50 %.3f ms, %.1f GB/s host-to-host, GPU %.3f ms, "
        "host copies %zu bytes/run%s\n",
        static_cast<long long>(n), path.c_str(), p50, 2.0 * bytes / (p50 * 1e-3) / 1e9,
        g.last_gpu_ms(), mode == IOMode::Staged ? 2 * bytes : 0, ok ? "" : "  WRONG RESULT");
    if (mode == IOMode::Staged) ok &= bench_staged_copies(g, x.get(), y.get(), bytes, runs);
    if (!ok) return 1;
  }
  return report_validation(*ctx);
}

// Host cost of execute() on a graph whose GPU work is next to nothing: a chain of `nodes`
// adds on 64 floats. execute() is timed as its two halves, submit() and wait(); host minus
// GPU (timestamps) per run is what the runtime and driver add on the host.
int bench_overhead(std::shared_ptr<vk::Context> ctx, int64_t nodes, int runs,
                   const GraphOptions& go) {
  check(nodes > 0, ErrorKind::InvalidArgument, "bench-op overhead: N must be positive");
  constexpr int64_t kElems = 64;
  ComputeGraph g(ctx, go);
  TensorRef x = g.add_input({kElems}, DType::Float32, "x");
  HostTensor step(DType::Float32, {kElems});
  for (int64_t i = 0; i < kElems; ++i) step.data<float>()[i] = 0.5f + 0.25f * (i % 4);
  TensorRef c = g.add_constant(step, "step");
  TensorRef y = x;
  for (int64_t i = 0; i < nodes; ++i) y = ops::binary(g, ops::BinaryOp::Add, y, c);
  g.add_output(y, "y");
  std::vector<float> in(kElems), out(kElems);
  for (int64_t i = 0; i < kElems; ++i) in[i] = static_cast<float>(i);
  g.copy_to_input(0, in.data(), sizeof(float) * kElems);
  for (int i = 0; i < 20; ++i) g.execute();  // the first records; the rest warm up
  std::vector<double> host, gpu, over, submit, wait, readback;
  for (int i = 0; i < runs; ++i) {
    double t0 = now_ms();
    g.submit();
    double t1 = now_ms();
    g.wait();
    double t2 = now_ms();
    g.copy_from_output(0, out.data(), sizeof(float) * kElems);
    double t3 = now_ms();
    double gpu_ms = g.last_gpu_ms();
    host.push_back((t2 - t0) * 1e3);
    gpu.push_back(gpu_ms * 1e3);
    over.push_back((t2 - t0 - gpu_ms) * 1e3);
    submit.push_back((t1 - t0) * 1e3);
    wait.push_back((t2 - t1) * 1e3);
    readback.push_back((t3 - t2) * 1e3);
  }
  bool ok = true;
  for (int64_t i = 0; i < kElems; ++i)
    ok &= std::abs(out[i] - (in[i] + nodes * step.data<float>()[i])) <= 1e-3f * nodes;
  GraphStats st = g.stats();
  std::printf(
      "bench-op overhead %lld nodes (%zu command buffers, fence wait polls %u us), x%d: "
      "execute() host p50 %.1f us, "
      "p90 %.1f us; GPU p50 %.1f us; host - GPU p50 %.1f us, p90 %.1f us (submit p50 %.1f us, "
      "wait p50 %.1f us); readback p50 %.1f us; recorded %zu time(s)%s\n",
      static_cast<long long>(nodes), st.command_buffers, ctx->spin_wait_us(), runs,
      percentile(host, 0.5), percentile(host, 0.9), percentile(gpu, 0.5), percentile(over, 0.5),
      percentile(over, 0.9), percentile(submit, 0.5), percentile(wait, 0.5),
      percentile(readback, 0.5), st.recordings, ok ? "" : "  WRONG RESULT");
  return report_validation(*ctx);
}

// Microbenchmarks of single ops on device-resident data (no host copies in the timing).
// --check (gemm, nbits): compare sampled entries with a host reference. --fp16 (the common
// option): gemm, nbits and attention with fp16 inputs and output.
int run_bench_op(const BenchOpArgs& args, const Common& common) {
  GraphOptions go;
  go.tuning = common.tuning;
  const bool fp16 = common.fp16, check = args.check;
  const int runs = args.runs;
  auto ctx = vk::Context::create(common.context);
  if (args.op == "io") return bench_io(ctx, args.count, runs, go);
  if (args.op == "overhead") {
    // Twice where the fence wait polls: as configured, then sleeping at once, to show the gain.
    int rc = bench_overhead(ctx, args.count, 1000, go);
    if (ctx->spin_wait_us() == 0) return rc;
    vk::ContextOptions sleeping = common.context;
    sleeping.spin_wait_us = 0;
    ctx.reset();
    return rc | bench_overhead(vk::Context::create(sleeping), args.count, 1000, go);
  }
  if (check && args.op != "gemm" && args.op != "nbits")
    throw Error(ErrorKind::InvalidArgument, "bench-op: --check is for gemm and nbits only");
  const int64_t copies = args.op == "nbits" ? args.copies : 1;
  // Per-node timestamps only for one op: between independent copies they would be all that
  // orders them.
  go.profile = copies == 1;
  ComputeGraph g(ctx, go);
  std::vector<TensorRef> extra_outputs;  // the copies' results but the last
  uint32_t seed = 3;
  std::vector<HostTensor> kept;  // inputs kept on the host for --check
  auto random_const = [&](Shape s, DType dtype) {
    HostTensor t(dtype, s);
    fill_random(t, seed++);
    if (check) kept.push_back(t);
    return g.add_constant(std::move(t));
  };
  double flops = 0, bytes = 0;
  const int64_t gm = args.m, gn = args.n, gk = args.k, bits = args.bits, block = args.block;
  std::optional<NBitsOperands> nbits;
  TensorRef y;
  std::string what;
  if (args.op == "gemm") {
    const int64_t m = gm, n = gn, k = gk;
    DType dt = fp16 ? DType::Float16 : DType::Float32;
    TensorRef a = random_const({m, k}, dt);  // before b: --check reads kept[0] as A
    y = args.trans_b ? ops::linear(g, a, random_const({n, k}, dt))
                     : ops::matmul(g, a, random_const({k, n}, dt));
    flops = 2.0 * m * n * k;
    what = "gemm " + std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k) +
           (fp16 ? " fp16" : " fp32") + (args.trans_b ? " (B [N, K])" : "");
  } else if (args.op == "nbits") {
    // com.microsoft MatMulNBits: y[M, N] = a[M, K] @ dequant(b)^T; M = 1 is the decode GEMV.
    // GB/s counts the packed weight bytes alone, which is what bounds the GEMV.
    const DType dt = fp16 ? DType::Float16 : DType::Float32;
    // --copies C: C independent matmuls, each with its own copy of the weights (together past
    // the L2 cache), in one run: the run's GPU time / C is the time per matmul with the
    // dispatch and timestamp overhead of one run spread over C.
    nbits = nbits_operands(gm, gn, gk, bits, block, dt);
    ops::NBitsParams p{gk, gn, bits, block, args.accuracy_level};
    TensorRef a = g.add_constant(nbits->a);
    for (int64_t c = 0; c < copies; ++c) {
      TensorRef yc =
          ops::matmul_nbits(g, a, g.add_constant(nbits->b), g.add_constant(nbits->scales), p);
      if (c + 1 < copies) extra_outputs.push_back(yc);
      y = yc;
    }
    bytes = static_cast<double>(nbits->b.nbytes());
    flops = 2.0 * gm * gn * gk;
    what = "nbits " + std::to_string(gm) + "x" + std::to_string(gn) + "x" + std::to_string(gk) +
           " " + std::to_string(bits) + "-bit block " + std::to_string(block) +
           (fp16 ? " fp16" : " fp32") +
           (args.accuracy_level ? " accuracy_level " + std::to_string(args.accuracy_level) : "") +
           " (" + std::to_string(nbits->b.nbytes()) + " packed weight bytes, " +
           std::to_string(nbits->scales.nbytes()) + " scale bytes)";
    if (copies > 1) what += " x" + std::to_string(copies) + " copies";
  } else if (args.op == "conv" || args.op == "qconv") {
    // A K x K convolution padded K / 2: float (conv2d, --fp16 for float16 tensors) or QDQ-style
    // int8 (qlinear_conv: uint8 x, int8 constant weights with per-channel scales, int32 bias,
    // uint8 output), so the two kernels compare on one layer shape.
    const int64_t n = args.batch, c = args.channels, h = args.height, w = args.width, m = args.n,
                  k = args.k, stride = args.stride, groups = args.groups;
    if (c % groups != 0 || m % groups != 0)
      throw Error(ErrorKind::InvalidArgument,
                  "bench-op " + args.op + ": C and M must be multiples of GROUPS");
    const int64_t pad = k / 2, ho = (h + 2 * pad - k) / stride + 1,
                  wo = (w + 2 * pad - k) / stride + 1;
    flops = 2.0 * n * m * ho * wo * (c / groups) * k * k;
    what = args.op + " " + std::to_string(n) + "x" + std::to_string(c) + "x" + std::to_string(h) +
           "x" + std::to_string(w) + " -> " + std::to_string(m) + " k" + std::to_string(k) + " s" +
           std::to_string(stride) + " g" + std::to_string(groups);
    if (args.op == "conv") {
      const DType dt = fp16 ? DType::Float16 : DType::Float32;
      y = ops::conv2d(g, random_const({n, c, h, w}, dt), random_const({m, c / groups, k, k}, dt),
                      ops::Conv2dParams{{stride, stride}, {pad, pad, pad, pad}, {1, 1}, groups},
                      ops::ConvEpilogue{random_const({m}, dt), ops::UnaryOp::Relu, {}, {}});
      what += fp16 ? " fp16" : " fp32";
    } else {
      auto scalar = [&](DType dt, float v) {
        return g.add_constant(dt == DType::Float32
                                  ? HostTensor::from(dt, {}, std::vector<float>{v})
                                  : HostTensor::from(dt, {}, std::vector<uint8_t>{uint8_t(v)}));
      };
      std::vector<float> scales(static_cast<size_t>(m));
      for (int64_t i = 0; i < m; ++i) scales[i] = 0.001f * static_cast<float>(1 + i % 7);
      ops::QuantizedOperand qx{random_const({n, c, h, w}, DType::UInt8),
                               scalar(DType::Float32, 0.02f), scalar(DType::UInt8, 128)};
      ops::QuantizedOperand qw{random_const({m, c / groups, k, k}, DType::Int8),
                               g.add_constant(HostTensor::from(DType::Float32, {m}, scales)),
                               std::nullopt};
      ops::QuantizedOperand qy{TensorRef{}, scalar(DType::Float32, 0.05f), scalar(DType::UInt8, 0)};
      TensorRef bias = g.add_constant(
          HostTensor::from(DType::Int32, {m}, std::vector<int32_t>(static_cast<size_t>(m), 100)));
      y = ops::qlinear_conv(
          g, qx, qw, qy, bias,
          ops::IntConvParams{{stride, stride}, {pad, pad, pad, pad}, {1, 1}, groups}, DType::UInt8,
          std::array<int32_t, 2>{0, 255});
      what += " int8";
    }
  } else if (args.op == "qgemm") {
    // QLinearMatMul as a QDQ MatMul runs it: uint8 a [M, K], int8 constant b [K, N] with
    // per-column scales, int8 output.
    const int64_t m = gm, n = gn, k = gk;
    std::vector<float> scales(static_cast<size_t>(n), 0.002f);
    auto f32_scalar = [&](float v) {
      return g.add_constant(HostTensor::from(DType::Float32, {}, std::vector<float>{v}));
    };
    ops::QuantizedOperand qa{
        random_const({m, k}, DType::UInt8), f32_scalar(0.02f),
        g.add_constant(HostTensor::from(DType::UInt8, {}, std::vector<uint8_t>{128}))};
    ops::QuantizedOperand qb{random_const({k, n}, DType::Int8),
                             g.add_constant(HostTensor::from(DType::Float32, {n}, scales)),
                             std::nullopt};
    ops::QuantizedOperand qy{TensorRef{}, f32_scalar(0.05f), std::nullopt};
    y = ops::qlinear_matmul(g, qa, qb, qy, DType::Int8);
    flops = 2.0 * m * n * k;
    what =
        "qgemm " + std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k) + " int8";
  } else if (args.op == "qdyn") {
    // DynamicQuantRange + DynamicQuantMatMul as the fusion pass lowers a layer: the range
    // pass, the quantize pass (unless qdyn.prequant=0), the GEMM (and split-K reduce).
    const int64_t m = gm, n = gn, k = gk;
    const TensorRef x = random_const({m, k}, DType::Float32);
    const TensorRef range = ops::dynamic_quant_range(g, x);
    ops::DynamicQuantEpilogue e;
    e.bias = random_const({n}, DType::Float32);
    e.x_packed = ops::dynamic_quantize_packed(g, x, range);
    y = ops::dynamic_quant_matmul(
        g, x, range, random_const({k, n}, DType::Int8), std::nullopt,
        g.add_constant(HostTensor::from(DType::Float32, {}, std::vector<float>{0.002f})), e);
    flops = 2.0 * m * n * k;
    what = "qdyn " + std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k) +
           " int8 dynamic";
  } else if (args.op == "add") {
    const int64_t n = args.count;
    y = ops::binary(g, ops::BinaryOp::Add, random_const({n}, DType::Float32),
                    random_const({n}, DType::Float32));
    bytes = 12.0 * n;
    what = "add " + std::to_string(n) + " fp32";
  } else if (args.op == "layernorm") {
    const int64_t rows = args.m, cols = args.n;
    const DType dt = fp16 ? DType::Float16 : DType::Float32;
    y = ops::layer_norm(g, random_const({rows, cols}, dt), random_const({cols}, dt),
                        random_const({cols}, dt), -1, 1e-5f);
    bytes = 2.0 * rows * cols * dtype_size(dt);
    what = "layernorm " + std::to_string(rows) + "x" + std::to_string(cols) +
           (fp16 ? " fp16" : " fp32");
  } else if (args.op == "attention") {
    // Self-attention of one layer: q, k, v [B, H, S, D] (K read transposed, as exports give it).
    const int64_t b = args.batch, h = args.heads, s = args.seq, d = args.dim;
    DType dt = fp16 ? DType::Float16 : DType::Float32;
    TensorRef q = random_const({b, h, s, d}, dt), k = random_const({b, h, s, d}, dt);
    ops::AttentionParams params;
    params.scale = 1.f / std::sqrt(static_cast<float>(d));
    y = ops::attention(g, {q, {}}, {k, {0, 1, 3, 2}}, {random_const({b, h, s, d}, dt), {}},
                       std::nullopt, params);
    flops = 4.0 * b * h * s * s * d;
    what = "attention B" + std::to_string(b) + " H" + std::to_string(h) + " S" + std::to_string(s) +
           " D" + std::to_string(d) + (fp16 ? " fp16" : " fp32");
  } else {
    throw Error(ErrorKind::InvalidArgument, "bench-op: unknown op '" + args.op + "'");
  }
  // The output stays on the device: bound to a buffer of ours, not read back.
  g.add_output(y, "y", IOMode::External);
  TensorInfo ti = g.info(y);
  vk::Buffer out(*ctx, ti.nbytes(), vk::MemoryUsage::Device,
                 VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT,
                 "bench output");
  g.bind_external("y", {out.handle(), 0, out.size(), VK_BUFFER_USAGE_STORAGE_BUFFER_BIT});
  std::vector<vk::Buffer> extra;
  for (size_t i = 0; i < extra_outputs.size(); ++i) {
    const std::string name = "y" + std::to_string(i);
    g.add_output(extra_outputs[i], name, IOMode::External);
    extra.emplace_back(*ctx, ti.nbytes(), vk::MemoryUsage::Device,
                       VK_BUFFER_USAGE_STORAGE_BUFFER_BIT, "bench output " + name);
    g.bind_external(
        name, {extra.back().handle(), 0, extra.back().size(), VK_BUFFER_USAGE_STORAGE_BUFFER_BIT});
  }
  g.prepare();
  std::vector<double> node_ms;
  for (int i = 0; i < runs + 3; ++i) {
    g.execute();
    if (i >= 3) {
      // GPU time from timestamps: summed over the nodes' intervals, or the whole run's.
      double ms = 0;
      for (auto& n : g.node_times()) ms += n.gpu_ms;
      node_ms.push_back((go.profile ? ms : g.last_gpu_ms()) / static_cast<double>(copies));
    }
  }
  double p50 = percentile(node_ms, 0.5), best = percentile(node_ms, 0);
  std::printf("bench-op %s: GPU p50 %.4f ms (min %.4f, %d runs)%s", what.c_str(), p50, best, runs,
              copies > 1 ? " per copy" : "");
  if (flops)
    std::printf(", %.2f TFLOP/s (best %.2f)", flops / (p50 * 1e-3) / 1e12,
                flops / (best * 1e-3) / 1e12);
  if (bytes)
    std::printf(", %.1f GB/s (best %.1f)", bytes / (p50 * 1e-3) / 1e9, bytes / (best * 1e-3) / 1e9);
  std::printf("\n");
  if (check && nbits) {
    if (!check_nbits(*ctx, out, *nbits, ti.dtype, gm, gn, gk, bits, block, args.accuracy_level))
      return 1;
  } else if (check && gm &&
             !check_gemm(*ctx, out, kept[0], kept[1], ti.dtype, gm, gn, gk, args.trans_b)) {
    return 1;
  }
  return report_validation(*ctx);
}

}  // namespace vkgraph::cli
