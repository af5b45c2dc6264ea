// `vkgraph run MODEL` and `vkgraph bench MODEL`: feeds from files or random, outputs
// summarised or written as .npy, timing, accuracy against labels.
#include <algorithm>
#include <cctype>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <random>
#include <sstream>

#include "cli.h"
#include "vkgraph/error.h"
#include "vkgraph/onnx_tensor.h"
#include "vkgraph/tensor_io.h"

namespace fs = std::filesystem;

namespace vkgraph::cli {
namespace {

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

Shape parse_dims(const std::string& s) {
  Shape dims;
  std::stringstream ss(s);
  for (std::string part; std::getline(ss, part, ',');) {
    int64_t v = -1;
    const char* end = part.data() + part.size();
    if (std::from_chars(part.data(), end, v).ptr != end || v < 0)
      throw Error(ErrorKind::InvalidArgument, "bad dimension '" + part + "' in --shape " + s);
    dims.push_back(v);
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

}  // namespace

int run_model(const RunArgs& args, const Common& common, bool bench) {
  SessionOptions so;
  so.context_options = common.context;
  so.fp16 = common.fp16;
  so.graph.tuning = common.tuning;
  std::map<std::string, std::string> input_files;
  for (const std::string& arg : args.inputs) {
    auto [name, file] = split_eq(arg, "--input");
    if (!input_files.emplace(name, file).second)
      throw Error(ErrorKind::InvalidArgument, "--input given twice for '" + name + "'");
  }
  for (const std::string& arg : args.shapes) {
    auto [name, dims] = split_eq(arg, "--shape");
    if (!so.input_shapes.emplace(name, parse_dims(dims)).second)
      throw Error(ErrorKind::InvalidArgument, "--shape given twice for '" + name + "'");
  }
  so.graph.profile = bench;
  auto t0 = std::chrono::steady_clock::now();
  Session session(args.model, so);
  if (bench && args.runs == 0)
    std::printf(
        "load wall (file, context, parse, build, prepare): %.1f ms\n",
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
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
  if (bench) return run_bench(session, feeds, args.warmup, args.runs, args.top, args.trace);
  std::vector<HostTensor> outputs = session.run(feeds);
  double first_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  std::vector<double> host_ms, gpu_ms;
  for (int r = 1; r < args.repeat; ++r) {
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
    if (!args.output_dir.empty()) {
      fs::create_directories(args.output_dir);
      std::string safe = name;
      for (char& c : safe)
        if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-' && c != '.')
          c = '_';
      write_npy((fs::path(args.output_dir) / (safe + ".npy")).string(), outputs[i]);
    }
  }
  if (!args.labels.empty()) {
    HostTensor labels = read_npy(args.labels);
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
  print_pipeline_cache(session.context());
  if (!host_ms.empty())
    std::printf("run x%zu: host p50 %.3f ms, p90 %.3f ms; GPU p50 %.3f ms\n", host_ms.size(),
                percentile(host_ms, 0.5), percentile(host_ms, 0.9), percentile(gpu_ms, 0.5));
  return report_validation(session.context());
}

}  // namespace vkgraph::cli
