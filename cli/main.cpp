// vkgraph: the command-line tool. One clear line on error, non-zero exit code.
#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <random>
#include <sstream>

#include "cli.h"
#include "vkgraph/error.h"
#include "vkgraph/onnx_tensor.h"
#include "vkgraph/tensor_io.h"
#include "vkgraph/vk/pipeline.h"

namespace fs = std::filesystem;
using namespace vkgraph;

namespace {

const char* kUsage = R"(usage: vkgraph COMMAND [options]

commands:
  info                         Vulkan devices, the chosen one, memory, features, limits
  demo                         run a built-in graph and check it against a CPU reference
  run MODEL [options]          run an ONNX model
      --input NAME=FILE        input from .npy or ONNX TensorProto .pb (random if not given)
      --shape NAME=D0,D1,...   fix the shape of a dynamic input
      --output-dir DIR         write each output as DIR/<name>.npy
      --repeat N               run N times and report timing
      --labels FILE            .npy of int64 class labels: report argmax accuracy of output 0
  bench MODEL [run options]    time a model: warm-up, N runs, host and GPU p50/p90,
      --warmup N --runs N      per-node GPU table (--top N), load-time split, peak memory
      --trace FILE.json        Chrome trace with one slice per node (Perfetto)
  bench-op gemm M N K | add N  one op on device-resident data: GPU time, TFLOP/s or GB/s
  bench-op attention B H S D   fused self-attention (VKGRAPH_TUNE=attention.* picks the kernel)
      [--check] [--runs N]     compare with a host reference; timed runs (default 20);
                               VKGRAPH_TUNE=key=value,... overrides kernel tuning knobs
  bench-op nbits M N K [BITS [BLOCK]]  MatMulNBits (4-bit, block 32 by default): GB/s over
                               the packed weight bytes; M = 1 is the decode GEMV
  bench-op io N                host-to-host y = 2x: staged copies vs bound host memory
  bench-op overhead [N]        host time per execute() of a chain of N (100) tiny adds,
                               minus GPU time: what the runtime adds per execution
  soak MODEL_A MODEL_B         the two alternating, dynamic dims cycling (--sizes 1,2,4,3,
      [--runs N] [--sample N]  --shape-every 25 runs), every output checked against the
                               first run's, device and host memory sampled (default 10000)
  check CASE_DIR               run an ONNX test-layout folder and compare with its outputs
  conformance DIR... [--expect FILE] [--write-passes FILE] [--filter S] [-v]
                               run every case folder under each DIR; print a summary

common options:
  --device N|NAME              pick a Vulkan device (default: VKGRAPH_DEVICE or the best)
  --validation                 enable Khronos validation + synchronization validation
  --fp16                       float16 mode: models hold tensors in float16 and compute in
                               float32 (SessionOptions::fp16); bench-op gemm, nbits in fp16
  --pipeline-cache DIR|off     on-disk pipeline cache folder (default: VKGRAPH_PIPELINE_CACHE,
                               else $XDG_CACHE_HOME/vkgraph or ~/.cache/vkgraph)
)";

std::string flags_str(VkMemoryPropertyFlags f) {
  std::string s;
  auto add = [&](VkMemoryPropertyFlags bit, const char* n) {
    if (f & bit) s += (s.empty() ? "" : "|") + std::string(n);
  };
  add(VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, "DEVICE_LOCAL");
  add(VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT, "HOST_VISIBLE");
  add(VK_MEMORY_PROPERTY_HOST_COHERENT_BIT, "HOST_COHERENT");
  add(VK_MEMORY_PROPERTY_HOST_CACHED_BIT, "HOST_CACHED");
  add(VK_MEMORY_PROPERTY_LAZILY_ALLOCATED_BIT, "LAZILY_ALLOCATED");
  return s.empty() ? "0" : s;
}

const char* type_name(VkPhysicalDeviceType t) {
  switch (t) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU:
      return "discrete GPU";
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU:
      return "integrated GPU";
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU:
      return "virtual GPU";
    case VK_PHYSICAL_DEVICE_TYPE_CPU:
      return "CPU";
    default:
      return "other";
  }
}

std::string version_str(uint32_t v) {
  return std::to_string(VK_API_VERSION_MAJOR(v)) + "." + std::to_string(VK_API_VERSION_MINOR(v)) +
         "." + std::to_string(VK_API_VERSION_PATCH(v));
}

// The driver's own name and version string where it reports them (Vulkan 1.2), e.g.
// "NVIDIA 580.159.04" or "llvmpipe Mesa 22.3.6 (LLVM 15.0.6)".
std::string driver_str(VkPhysicalDevice device, const VkPhysicalDeviceProperties& p) {
  if (p.apiVersion < VK_API_VERSION_1_2) return "unknown";
  VkPhysicalDeviceDriverProperties driver{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES};
  VkPhysicalDeviceProperties2 p2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
  p2.pNext = &driver;
  vkGetPhysicalDeviceProperties2(device, &p2);
  return std::string(driver.driverName) + " " + driver.driverInfo;
}

int cmd_info(const vk::ContextOptions& options) {
  auto devices = vk::Context::list_devices();
  std::printf("Vulkan devices:\n");
  for (auto& d : devices)
    std::printf("  [%u] %s (%s, Vulkan %s)\n", d.index, d.name.c_str(), type_name(d.type),
                version_str(d.api_version).c_str());
  auto ctx = vk::Context::create(options);
  const auto& p = ctx->properties();
  const auto& f = ctx->features();
  const auto& l = ctx->limits();
  std::printf("chosen: [%u] %s, queue family %u%s\n", ctx->device_index(), p.deviceName,
              ctx->queue_family(), ctx->validation_enabled() ? ", validation on" : "");
  std::printf("driver: %s (driverVersion 0x%08x, vendor 0x%04x, device 0x%04x)\n",
              driver_str(ctx->physical_device(), p).c_str(), p.driverVersion, p.vendorID,
              p.deviceID);
  cli::print_pipeline_cache(*ctx);
  const auto& mem = ctx->allocator().properties();
  std::printf("memory heaps:\n");
  for (uint32_t i = 0; i < mem.memoryHeapCount; ++i)
    std::printf(
        "  heap %u: %.1f GiB%s\n", i, mem.memoryHeaps[i].size / double(1ull << 30),
        (mem.memoryHeaps[i].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT) ? " device-local" : "");
  std::printf("memory types:\n");
  for (uint32_t i = 0; i < mem.memoryTypeCount; ++i)
    std::printf("  type %u (heap %u): %s\n", i, mem.memoryTypes[i].heapIndex,
                flags_str(mem.memoryTypes[i].propertyFlags).c_str());
  auto yes = [](bool b) { return b ? "yes" : "no"; };
  std::printf("features:\n");
  std::printf("  16-bit storage %s, fp16 arithmetic %s, int64 %s\n", yes(f.storage_buffer_16bit),
              yes(f.shader_float16), yes(f.shader_int64));
  std::printf("  subgroup size %u, subgroup arithmetic %s\n", f.subgroup_size,
              yes(f.subgroup_arithmetic));
  std::printf("  cooperative matrix: NV %s, KHR %s; fp16 16x16x16 NV kernel %s\n",
              yes(f.cooperative_matrix_nv), yes(f.cooperative_matrix_khr),
              yes(f.coopmat_f16_16x16x16));
  std::printf("  integer dot product %s (4x8-bit packed accelerated %s)\n",
              yes(f.integer_dot_product), yes(f.integer_dot_4x8_accelerated));
  std::printf("  external host memory %s (alignment %llu)\n", yes(f.external_memory_host),
              static_cast<unsigned long long>(f.min_imported_host_pointer_alignment));
  std::printf("  timestamps %s (period %.2f ns), timeline semaphores %s\n", yes(f.timestamps),
              f.timestamp_period_ns, yes(f.timeline_semaphores));
  std::printf("limits:\n");
  std::printf("  maxStorageBufferRange %u, nonCoherentAtomSize %llu\n", l.maxStorageBufferRange,
              static_cast<unsigned long long>(l.nonCoherentAtomSize));
  std::printf("  maxComputeSharedMemorySize %u, maxComputeWorkGroupInvocations %u\n",
              l.maxComputeSharedMemorySize, l.maxComputeWorkGroupInvocations);
  std::printf("  maxComputeWorkGroupCount %u x %u x %u, maxPushConstantsSize %u\n",
              l.maxComputeWorkGroupCount[0], l.maxComputeWorkGroupCount[1],
              l.maxComputeWorkGroupCount[2], l.maxPushConstantsSize);
  std::printf("embedded shaders: %zu\n", vk::shader_names().size());
  return 0;
}

HostTensor load_tensor(const std::string& path) {
  if (path.ends_with(".npy")) return read_npy(path);
  if (path.ends_with(".pb")) return onnx_io::read_tensor_pb(path);
  throw Error(ErrorKind::InvalidArgument, "input file '" + path + "' is neither .npy nor .pb");
}

std::pair<std::string, std::string> split_eq(const std::string& arg, const char* flag) {
  size_t eq = arg.find('=');
  if (eq == std::string::npos || eq == 0)
    throw Error(ErrorKind::InvalidArgument,
                std::string(flag) + " expects NAME=VALUE, got '" + arg + "'");
  return {arg.substr(0, eq), arg.substr(eq + 1)};
}

}  // namespace

namespace vkgraph::cli {
int64_t parse_int(const std::string& text, const std::string& what, int64_t lo, int64_t hi) {
  size_t used = 0;
  long long v = 0;
  bool ok = !text.empty() && (std::isdigit(static_cast<unsigned char>(text[0])) || text[0] == '-');
  if (ok) {
    try {
      v = std::stoll(text, &used);
    } catch (const std::exception&) {
      ok = false;
    }
  }
  if (!ok || used != text.size())
    throw Error(ErrorKind::InvalidArgument, what + ": '" + text + "' is not an integer");
  if (v < lo || v > hi)
    throw Error(ErrorKind::InvalidArgument, what + ": " + text + " is out of range [" +
                                                std::to_string(lo) + ", " + std::to_string(hi) +
                                                "]");
  return v;
}
}  // namespace vkgraph::cli

namespace {

Shape parse_dims(const std::string& s) {
  Shape dims;
  std::stringstream ss(s);
  for (std::string part; std::getline(ss, part, ',');) {
    try {
      size_t used = 0;
      long long v = std::stoll(part, &used);
      if (used != part.size() || v < 0) throw std::invalid_argument(part);
      dims.push_back(v);
    } catch (const std::exception&) {
      throw Error(ErrorKind::InvalidArgument, "bad dimension '" + part + "' in --shape " + s);
    }
  }
  return dims;
}

HostTensor random_tensor(const ValueInfo& info, const Shape& shape, std::mt19937& rng) {
  HostTensor t(info.dtype, shape);
  std::uniform_real_distribution<float> f(-1.f, 1.f);
  std::uniform_int_distribution<int> n(0, 9);
  for (int64_t i = 0; i < t.numel(); ++i) {
    switch (info.dtype) {
      case DType::Float32:
        t.data<float>()[i] = f(rng);
        break;
      case DType::Int32:
        t.data<int32_t>()[i] = n(rng);
        break;
      case DType::Int64:
        t.data<int64_t>()[i] = n(rng);
        break;
      case DType::Bool:
        t.data<uint8_t>()[i] = n(rng) & 1;
        break;
      default:
        throw Error(ErrorKind::Unsupported, "random inputs of this dtype");
    }
  }
  return t;
}

std::string summary(const HostTensor& t) {
  std::ostringstream s;
  double lo = INFINITY, hi = -INFINITY, sum = 0;
  for (int64_t i = 0; i < t.numel(); ++i) {
    double v = t.as_double(i);
    lo = std::min(lo, v), hi = std::max(hi, v), sum += v;
  }
  s << shape_str(t.shape) << " " << dtype_name(t.dtype);
  if (t.numel()) s << "  min " << lo << "  max " << hi << "  mean " << sum / t.numel();
  s << "  first [";
  for (int64_t i = 0; i < std::min<int64_t>(t.numel(), 5); ++i)
    s << (i ? ", " : "") << t.as_double(i);
  s << (t.numel() > 5 ? ", ...]" : "]");
  return s.str();
}

double percentile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(q * (v.size() - 1) + 0.5))];
}

int cmd_run(const std::vector<std::string>& args, const vk::ContextOptions& options, bool fp16,
            bool bench, std::shared_ptr<const ops::Tuning> tuning) {
  if (args.empty()) throw Error(ErrorKind::InvalidArgument, "run: missing MODEL");
  int warmup = 10, runs = 100;
  size_t top = 15;
  std::string trace;
  std::string model = args[0], output_dir, labels_path;
  std::map<std::string, std::string> input_files;
  SessionOptions so;
  so.context_options = options;
  so.fp16 = fp16;
  so.graph.tuning = std::move(tuning);
  int repeat = 1;
  for (size_t i = 1; i < args.size(); ++i) {
    auto value = [&]() -> std::string {
      if (i + 1 >= args.size()) throw Error(ErrorKind::InvalidArgument, args[i] + " needs a value");
      return args[++i];
    };
    constexpr int64_t kMaxCount = 1'000'000'000;
    const std::string& flag = args[i];
    if (flag == "--input") {
      auto [name, file] = split_eq(value(), "--input");
      if (!input_files.emplace(name, file).second)
        throw Error(ErrorKind::InvalidArgument, "--input given twice for '" + name + "'");
    } else if (flag == "--shape") {
      auto [name, dims] = split_eq(value(), "--shape");
      if (!so.input_shapes.emplace(name, parse_dims(dims)).second)
        throw Error(ErrorKind::InvalidArgument, "--shape given twice for '" + name + "'");
    } else if (flag == "--output-dir")
      output_dir = value();
    else if (flag == "--repeat")
      repeat = static_cast<int>(cli::parse_int(value(), flag, 1, kMaxCount));
    else if (flag == "--labels")
      labels_path = value();
    else if (bench && flag == "--warmup")
      warmup = static_cast<int>(cli::parse_int(value(), flag, 0, kMaxCount));
    else if (bench && flag == "--runs")
      runs = static_cast<int>(cli::parse_int(value(), flag, 1, kMaxCount));
    else if (bench && flag == "--top")
      top = static_cast<size_t>(cli::parse_int(value(), flag, 1, kMaxCount));
    else if (bench && args[i] == "--trace")
      trace = value();
    else
      throw Error(ErrorKind::InvalidArgument, "run: unknown option '" + args[i] + "'");
  }
  so.graph.profile = bench;
  auto t0 = std::chrono::steady_clock::now();
  Session session(model, so);
  std::map<std::string, HostTensor> feeds;
  std::mt19937 rng(1);
  for (auto& in : session.inputs()) {
    auto it = input_files.find(in.name);
    if (it != input_files.end()) {
      feeds[in.name] = load_tensor(it->second);
      input_files.erase(it);
      continue;
    }
    if (in.needs_value)
      throw Error(ErrorKind::InvalidArgument, "input '" + in.name +
                                                  "' decides shapes in the model, so random "
                                                  "values will not do: give it with --input");
    Shape shape = so.input_shapes.count(in.name) ? so.input_shapes[in.name] : in.shape;
    for (int64_t d : shape)
      if (d < 0)
        throw Error(ErrorKind::InvalidArgument, "input '" + in.name + "' has dynamic shape " +
                                                    shape_str(in.shape) +
                                                    ": give --shape or --input");
    feeds[in.name] = random_tensor(in, shape, rng);
    std::printf("input %s: random %s\n", in.name.c_str(), shape_str(shape).c_str());
  }
  if (!input_files.empty())
    throw Error(ErrorKind::InvalidArgument,
                "--input names unknown input '" + input_files.begin()->first + "'");
  if (bench) return cli::run_bench(session, feeds, warmup, runs, top, trace);
  std::vector<HostTensor> outputs = session.run(feeds);
  double first_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  std::vector<double> host_ms, gpu_ms;
  for (int r = 1; r < repeat; ++r) {
    auto t1 = std::chrono::steady_clock::now();
    outputs = session.run(feeds);
    host_ms.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t1).count());
    gpu_ms.push_back(session.graph()->last_gpu_ms());
  }
  std::printf("device: %s\n", session.context().properties().deviceName);
  for (size_t i = 0; i < outputs.size(); ++i) {
    const std::string& name = session.outputs()[i].name;
    std::printf("output %s: %s\n", name.c_str(), summary(outputs[i]).c_str());
    if (!output_dir.empty()) {
      fs::create_directories(output_dir);
      std::string safe = name;
      for (char& c : safe)
        if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-' && c != '.')
          c = '_';
      write_npy((fs::path(output_dir) / (safe + ".npy")).string(), outputs[i]);
    }
  }
  if (!labels_path.empty()) {
    HostTensor labels = read_npy(labels_path);
    const HostTensor& logits = outputs.at(0);
    if (logits.shape.size() != 2 || labels.numel() != logits.shape[0])
      throw Error(ErrorKind::InvalidArgument,
                  "--labels: need output 0 of shape [N, classes] and N labels; got " +
                      shape_str(logits.shape) + " and " + shape_str(labels.shape));
    int64_t n = logits.shape[0], k = logits.shape[1], correct = 0;
    std::string preds;
    for (int64_t r = 0; r < n; ++r) {
      int64_t best = 0;
      for (int64_t c = 1; c < k; ++c)
        if (logits.as_double(r * k + c) > logits.as_double(r * k + best)) best = c;
      correct += best == labels.as_int(r);
      preds += std::to_string(best);
    }
    std::printf("predictions: %s\n", preds.c_str());
    std::printf("accuracy: %lld/%lld = %.1f%%\n", static_cast<long long>(correct),
                static_cast<long long>(n), 100.0 * correct / n);
  }
  const LoadTimes& lt = session.load_times();
  std::printf(
      "load: parse %.1f ms, build %.1f ms, prepare %.1f ms; first run (incl. load) %.1f ms\n",
      lt.parse_ms, lt.build_ms, lt.prepare_ms, first_ms);
  cli::print_pipeline_cache(session.context());
  if (!host_ms.empty())
    std::printf("run x%zu: host p50 %.3f ms, p90 %.3f ms; GPU p50 %.3f ms\n", host_ms.size(),
                percentile(host_ms, 0.5), percentile(host_ms, 0.9), percentile(gpu_ms, 0.5));
  return cli::report_validation(session.context());
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  vk::ContextOptions options;
  std::vector<std::string> rest;
  bool verbose = false, fp16 = false;
  std::string expect, write_passes, filter;
  try {
    for (size_t i = 0; i < args.size(); ++i) {
      auto value = [&]() -> std::string {
        if (i + 1 >= args.size())
          throw Error(ErrorKind::InvalidArgument, args[i] + " needs a value");
        return args[++i];
      };
      if (args[i] == "--device")
        options.device = value();
      else if (args[i] == "--validation")
        options.validation = true;
      else if (args[i] == "--fp16")
        fp16 = true;
      else if (args[i] == "--pipeline-cache")
        options.pipeline_cache = value();
      else if (args[i] == "--expect")
        expect = value();
      else if (args[i] == "--write-passes")
        write_passes = value();
      else if (args[i] == "--filter")
        filter = value();
      else if (args[i] == "-v")
        verbose = true;
      else if (args[i] == "-h" || args[i] == "--help") {
        std::fputs(kUsage, stdout);
        return 0;
      } else
        rest.push_back(args[i]);
    }
    if (rest.empty()) {
      std::fputs(kUsage, stderr);
      return 2;
    }
    // The one read of VKGRAPH_TUNE: every graph built below gets these knobs explicitly.
    std::shared_ptr<const ops::Tuning> tuning;
    if (const char* spec = std::getenv("VKGRAPH_TUNE"))
      tuning = std::make_shared<ops::Tuning>(ops::Tuning::from_knobs(spec));
    std::string cmd = rest[0];
    std::vector<std::string> cmd_args(rest.begin() + 1, rest.end());
    if (cmd == "info") return cmd_info(options);
    if (cmd == "demo") return cli::run_demo(options);
    if (cmd == "run") return cmd_run(cmd_args, options, fp16, false, tuning);
    if (cmd == "bench") return cmd_run(cmd_args, options, fp16, true, tuning);
    if (cmd == "bench-op") return cli::run_bench_op(cmd_args, options, 20, fp16, tuning);
    if (cmd == "soak") return cli::run_soak(cmd_args, options, fp16);
    if (cmd == "check") {
      if (cmd_args.size() != 1)
        throw Error(ErrorKind::InvalidArgument, "check: expects one CASE_DIR");
      auto r = cli::run_case(cmd_args[0], vk::Context::create(options),
                             fp16 ? cli::kFp16Tolerance : cli::Tolerance{}, fp16, tuning);
      // A pass is the command's output; anything else is its error.
      const bool pass = r.status == cli::CaseResult::Status::Pass;
      std::fprintf(pass ? stdout : stderr, "%s: %s%s%s\n", cmd_args[0].c_str(),
                   cli::status_name(r.status), r.detail.empty() ? "" : ": ", r.detail.c_str());
      return pass ? 0 : 1;
    }
    if (cmd == "conformance") {
      if (cmd_args.empty())
        throw Error(ErrorKind::InvalidArgument, "conformance: give at least one DIR");
      return cli::run_conformance(cmd_args, expect, write_passes, filter, options, verbose, fp16,
                                  tuning);
    }
    throw Error(ErrorKind::InvalidArgument, "unknown command '" + cmd + "' (see vkgraph --help)");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "vkgraph: error: %s\n", e.what());
    return 1;
  }
}
