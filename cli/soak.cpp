// `vkgraph soak MODEL_A MODEL_B`: many runs of two models on one device, alternating, with
// shape changes; every output is checked against the first run's for that model and shape, and
// device and host memory are sampled, so a leak, a stale buffer or a wrong replay shows.
#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <random>

#include "cli.h"
#include "vkgraph/error.h"

namespace vkgraph::cli {

namespace {

// The shapes a model runs with: the batch dim (dim 0 of every input, static or not) takes the
// values of `sizes` in turn; other dynamic dims are 1.
std::vector<std::map<std::string, Shape>> shape_cycle(const Session& s,
                                                      const std::vector<int64_t>& sizes) {
  std::vector<std::map<std::string, Shape>> cycle;
  for (int64_t size : sizes) {
    std::map<std::string, Shape> shapes;
    for (const ValueInfo& in : s.inputs()) {
      Shape shape = in.shape;
      for (size_t d = 0; d < shape.size(); ++d)
        if (d == 0 || shape[d] < 0) shape[d] = d == 0 ? size : 1;
      shapes[in.name] = shape;
    }
    cycle.push_back(std::move(shapes));
  }
  return cycle;
}

// Random feeds (never all zeros): floats in [-1, 1], integers in [0, 4) (indices, lengths).
std::map<std::string, HostTensor> random_feeds(const std::vector<ValueInfo>& inputs,
                                               const std::map<std::string, Shape>& shapes,
                                               uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::map<std::string, HostTensor> feeds;
  for (const ValueInfo& in : inputs) {
    HostTensor t(in.dtype, shapes.at(in.name));
    for (int64_t i = 0; i < t.numel(); ++i) {
      const double u = std::uniform_real_distribution<double>(-1, 1)(rng);
      const int64_t k = static_cast<int64_t>(rng() % 4);
      switch (in.dtype) {
        case DType::Float32:
          t.data<float>()[i] = static_cast<float>(u);
          break;
        case DType::Float16:
          t.data<uint16_t>()[i] = float_to_half(static_cast<float>(u));
          break;
        case DType::Int64:
          t.data<int64_t>()[i] = k;
          break;
        case DType::Int32:
          t.data<int32_t>()[i] = static_cast<int32_t>(k);
          break;
        default:
          t.bytes[static_cast<size_t>(i) * dtype_size(in.dtype)] = static_cast<uint8_t>(k);
      }
    }
    feeds[in.name] = std::move(t);
  }
  return feeds;
}

uint64_t host_rss_bytes() {
  std::ifstream statm("/proc/self/statm");
  uint64_t pages = 0, resident = 0;
  statm >> pages >> resident;
  return resident * 4096;
}

double mib(uint64_t bytes) {
  return static_cast<double>(bytes) / (1 << 20);
}

struct Model {
  std::string path;
  std::unique_ptr<Session> session;  // opened for the shape in use (input_shapes fixes it)
  size_t shape_in_use = 0;
  std::vector<ValueInfo> inputs;
  std::vector<std::map<std::string, Shape>> shapes;
  std::vector<std::map<std::string, HostTensor>> feeds;  // per shape
  std::vector<std::vector<HostTensor>> first;            // first outputs, per shape
};

}  // namespace

int run_soak(const SoakArgs& args, const Common& common) {
  const std::vector<std::string>& paths = args.models;
  const int64_t runs = args.runs, sample_every = args.sample, shape_every = args.shape_every;
  const std::vector<int64_t>& sizes = args.sizes;
  const bool fp16 = common.fp16;
  check(paths.size() == 2, ErrorKind::InvalidArgument, "soak: needs MODEL_A MODEL_B");
  check(!sizes.empty(), ErrorKind::InvalidArgument, "soak: --sizes gives no sizes");
  auto context = vk::Context::create(common.context);
  std::vector<Model> models(2);
  for (size_t m = 0; m < 2; ++m) {
    SessionOptions so;
    so.context = context;
    so.fp16 = fp16;
    models[m].path = paths[m];
    Session probe(paths[m], so);
    models[m].inputs = probe.inputs();
    models[m].shapes = shape_cycle(probe, sizes);
    for (size_t k = 0; k < models[m].shapes.size(); ++k)
      models[m].feeds.push_back(random_feeds(models[m].inputs, models[m].shapes[k], 1000 * m + k));
    models[m].first.resize(models[m].shapes.size());
    std::printf("model %zu: %s, %zu input shape(s)\n", m, paths[m].c_str(),
                models[m].shapes.size());
  }
  std::printf("%10s %14s %14s %12s %10s\n", "run", "device MiB", "device used", "host RSS",
              "ms/run");
  int64_t mismatches = 0, checked = 0;
  uint64_t device_after_warmup = 0, rss_after_warmup = 0, device_max = 0, rss_max = 0;
  // Warm-up: every (model, shape) once, so that first outputs exist and every graph was built.
  const int64_t warmup =
      2 * shape_every *
      static_cast<int64_t>(std::max(models[0].shapes.size(), models[1].shapes.size()));
  auto t0 = std::chrono::steady_clock::now();
  for (int64_t r = 0; r < runs; ++r) {
    Model& model = models[r % 2];
    // Each model keeps a shape for `shape_every` of its runs (replays), then takes the next.
    const size_t k = static_cast<size_t>(r / 2 / shape_every) % model.shapes.size();
    if (!model.session || model.shape_in_use != k) {
      // A shape change opens the model again with that shape: load, build and free over and
      // over, which is where memory would leak.
      model.session.reset();
      SessionOptions so;
      so.context = context;
      so.fp16 = fp16;
      so.input_shapes = model.shapes[k];
      model.session = std::make_unique<Session>(model.path, so);
      model.shape_in_use = k;
    }
    std::vector<HostTensor> out = model.session->run(model.feeds[k]);
    if (model.first[k].empty()) {
      model.first[k] = std::move(out);
    } else {
      ++checked;
      bool same = out.size() == model.first[k].size();
      for (size_t o = 0; same && o < out.size(); ++o)
        same =
            out[o].shape == model.first[k][o].shape &&
            out[o].bytes.size() == model.first[k][o].bytes.size() &&
            std::equal(out[o].bytes.begin(), out[o].bytes.end(), model.first[k][o].bytes.begin());
      if (!same && mismatches++ < 10)
        std::printf("MISMATCH: run %" PRId64 ", %s, shape #%zu differs from its first run\n", r,
                    model.path.c_str(), k);
    }
    const vk::MemoryStats mem = context->allocator().stats();
    const uint64_t rss = host_rss_bytes();
    if (r + 1 == warmup) device_after_warmup = mem.block_bytes, rss_after_warmup = rss;
    if (r + 1 > warmup)
      device_max = std::max(device_max, mem.block_bytes), rss_max = std::max(rss_max, rss);
    if ((r + 1) % sample_every == 0 || r + 1 == runs) {
      const double ms =
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      std::printf("%10" PRId64 " %14.1f %14.1f %12.1f %10.3f\n", r + 1, mib(mem.block_bytes),
                  mib(mem.used_bytes), mib(rss), ms / sample_every);
      t0 = std::chrono::steady_clock::now();
    }
  }
  std::printf("outputs checked against the first run: %" PRId64 ", mismatches: %" PRId64 "\n",
              checked, mismatches);
  std::printf("after warm-up (%" PRId64
              " runs): device %.1f MiB, host RSS %.1f MiB; "
              "maximum after: device %.1f MiB, host RSS %.1f MiB\n",
              warmup, mib(device_after_warmup), mib(rss_after_warmup), mib(device_max),
              mib(rss_max));
  const bool device_flat = device_max <= device_after_warmup;
  std::printf("device memory %s\n", device_flat ? "flat" : "GREW after warm-up");
  return mismatches == 0 && device_flat && report_validation(*context) == 0 ? 0 : 1;
}

}  // namespace vkgraph::cli
