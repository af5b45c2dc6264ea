// Loader robustness: malformed models (corrupted bytes, broken structure). The only acceptable
// outcomes are success or a vkgraph::Error with a message; any other exception, a crash or a
// hang is a bug. Most variants run the host-only stage (parse + import, no
// ComputeGraph::prepare), a subset go through prepare and one run on the shared context, under
// validation. What these found: test_load_regressions.cpp; Session misuse:
// test_session_misuse.cpp.
#include "load_test_util.h"

namespace vkgraph::testing {
namespace {

// ---- mutations ----

// Offsets and lengths inside `bytes` (non-empty).
size_t pick(Rng& rng, size_t n) {
  return n == 0 ? 0 : static_cast<size_t>(rng() % n);
}

std::string mutate_bytes(std::string& b, Rng& rng) {
  if (b.empty()) return "empty";
  const size_t pos = pick(rng, b.size());
  const size_t len = std::min<size_t>(1 + pick(rng, 64), b.size() - pos);
  switch (rng() % 9) {
    case 0: {
      const int bits = 1 + static_cast<int>(rng() % 4);
      for (int k = 0; k < bits; ++k) b[pick(rng, b.size())] ^= static_cast<char>(1 << (rng() % 8));
      return "flip " + std::to_string(bits) + " bits";
    }
    case 1: {
      const int n = 1 + static_cast<int>(rng() % 8);
      for (int k = 0; k < n; ++k) b[pick(rng, b.size())] = static_cast<char>(rng());
      return "set " + std::to_string(n) + " random bytes";
    }
    case 2:
      b.resize(pos);
      return "truncate at " + std::to_string(pos);
    case 3: {
      const int times = 1 + static_cast<int>(rng() % 3);
      const std::string chunk = b.substr(pos, len);
      for (int k = 0; k < times; ++k) b.insert(pos + len, chunk);
      return "repeat " + std::to_string(len) + " bytes at " + std::to_string(pos);
    }
    case 4: {
      std::string junk(1 + pick(rng, 16), '\0');
      for (auto& c : junk) c = static_cast<char>(rng());
      b.insert(pos, junk);
      return "insert " + std::to_string(junk.size()) + " bytes at " + std::to_string(pos);
    }
    case 5: {
      const char fill = "\x00\xff\x80"[rng() % 3];
      std::fill_n(b.begin() + pos, len, fill);
      return "fill " + std::to_string(len) + " bytes at " + std::to_string(pos);
    }
    case 6: {
      const size_t other = pick(rng, b.size() - len + 1);
      const size_t n = std::min(len, other > pos ? other - pos : pos - other);
      for (size_t k = 0; k < n; ++k) std::swap(b[pos + k], b[other + k]);
      return "swap " + std::to_string(n) + " bytes at " + std::to_string(pos) + " and " +
             std::to_string(other);
    }
    case 7: {
      // A huge varint where a length or a dim may be: the parser must not trust it.
      const std::string varint = "\xff\xff\xff\xff\xff\xff\xff\xff\x7f";
      b.replace(pos, std::min(varint.size(), b.size() - pos), varint);
      return "huge varint at " + std::to_string(pos);
    }
    default:
      b.erase(pos, len);
      return "erase " + std::to_string(len) + " bytes at " + std::to_string(pos);
  }
}

constexpr int64_t kBadInts[] = {0,   -1,        -2,        2,         7,         -100,
                                100, 1LL << 31, 1LL << 40, INT64_MAX, INT64_MIN, -(1LL << 33)};

int64_t bad_int(Rng& rng) {
  return kBadInts[rng() % std::size(kBadInts)];
}

// Op types a node may become: supported ones (whose inputs and attributes then mismatch) and
// one that does not exist.
const std::vector<std::string>& op_types() {
  static const std::vector<std::string> types = [] {
    std::istringstream words(
        "Conv Gemm MatMul Reshape Slice Gather Softmax Resize Concat Transpose Split Expand "
        "Where ReduceMean Tile Unsqueeze Squeeze Pad Clip Add Relu MaxPool AveragePool "
        "Flatten Constant Shape Cast TopK ArgMax ConstantOfShape Range BatchNormalization "
        "LayerNormalization GatherElements ScatterElements DepthToSpace CumSum Trilu "
        "Identity ConvTranspose GlobalAveragePool InstanceNormalization GroupNormalization "
        "Upsample SpaceToDepth ReduceSum Mod Pow Dropout Scatter NoSuchOp");
    return std::vector<std::string>(std::istream_iterator<std::string>(words), {});
  }();
  return types;
}

onnx::TensorShapeProto* some_shape(onnx::GraphProto& g, Rng& rng) {
  std::vector<onnx::ValueInfoProto*> infos;
  for (auto& v : *g.mutable_input()) infos.push_back(&v);
  for (auto& v : *g.mutable_output()) infos.push_back(&v);
  if (infos.empty()) return nullptr;
  return infos[pick(rng, infos.size())]->mutable_type()->mutable_tensor_type()->mutable_shape();
}

// One structural change through the protobuf API; returns what it did (or "" if it could not
// apply to this model).
std::string mutate_structure(onnx::ModelProto& m, Rng& rng) {
  onnx::GraphProto& g = *m.mutable_graph();
  const int nodes = g.node_size(), inits = g.initializer_size();
  const int node_index = static_cast<int>(pick(rng, nodes));
  const int init_index = static_cast<int>(pick(rng, inits));
  onnx::NodeProto* node = nodes ? g.mutable_node(node_index) : nullptr;
  onnx::TensorProto* init = inits ? g.mutable_initializer(init_index) : nullptr;
  switch (rng() % 18) {
    case 0: {
      onnx::TensorShapeProto* shape = some_shape(g, rng);
      if (!shape) return "";
      if (shape->dim_size() == 0 || rng() % 4 == 0) {
        shape->add_dim()->set_dim_value(bad_int(rng));
        return "add a value dim";
      }
      const int64_t v = bad_int(rng);
      shape->mutable_dim(static_cast<int>(pick(rng, shape->dim_size())))->set_dim_value(v);
      return "value dim := " + std::to_string(v);
    }
    case 1: {
      if (!init) return "";
      const int64_t v = bad_int(rng);
      if (init->dims_size() == 0 || rng() % 4 == 0)
        init->add_dims(v);
      else
        init->set_dims(static_cast<int>(pick(rng, init->dims_size())), v);
      return "initializer dim := " + std::to_string(v);
    }
    case 2:
      if (!init) return "";
      g.mutable_initializer()->DeleteSubrange(init_index, 1);
      return "drop an initializer";
    case 3: {
      const int type = static_cast<int>(rng() % 27) - 1;
      if (init && rng() % 2) {
        init->set_data_type(type);
        return "initializer data_type := " + std::to_string(type);
      }
      if (g.input_size() == 0) return "";
      g.mutable_input(static_cast<int>(pick(rng, g.input_size())))
          ->mutable_type()
          ->mutable_tensor_type()
          ->set_elem_type(type);
      return "input elem_type := " + std::to_string(type);
    }
    case 4: {
      if (!init) return "";
      std::string& raw = *init->mutable_raw_data();
      if (!raw.empty() && rng() % 2) {
        raw.resize(pick(rng, raw.size()));
        return "cut raw_data";
      }
      raw.append(1 + pick(rng, 9), '\x01');
      return "grow raw_data";
    }
    case 5:
      if (g.input_size() == 0) return "";
      g.mutable_input()->DeleteSubrange(static_cast<int>(pick(rng, g.input_size())), 1);
      return "remove a graph input";
    case 6:
      if (!node || node->input_size() == 0) return "";
      if (rng() % 2) {
        node->mutable_input()->RemoveLast();
        return "remove a node input";
      }
      node->set_input(static_cast<int>(pick(rng, node->input_size())), "");
      return "empty a node input";
    case 7: {
      if (!node) return "";
      const onnx::NodeProto& other = g.node(static_cast<int>(pick(rng, nodes)));
      if (other.output_size() == 0) return "";
      if (node->output_size() == 0 || rng() % 2)
        node->add_output(other.output(0));
      else
        node->set_output(0, other.output(0));
      return "duplicate a node output";
    }
    case 8: {
      // Reads an output of itself or a later node: a cycle or a forward reference.
      if (!node) return "";
      const onnx::NodeProto& later =
          g.node(node_index + static_cast<int>(pick(rng, nodes - node_index)));
      if (later.output_size() == 0) return "";
      if (node->input_size() == 0)
        node->add_input(later.output(0));
      else
        node->set_input(static_cast<int>(pick(rng, node->input_size())), later.output(0));
      return "cycle";
    }
    case 9: {
      if (!node || node->attribute_size() == 0) return "";
      auto& a = *node->mutable_attribute(static_cast<int>(pick(rng, node->attribute_size())));
      const int type = static_cast<int>(rng() % 16);
      a.set_type(static_cast<onnx::AttributeProto::AttributeType>(type));
      if (rng() % 2) {
        const std::string name = a.name();
        a.Clear();
        a.set_name(name);
        a.set_type(static_cast<onnx::AttributeProto::AttributeType>(type));
      }
      return "attribute '" + a.name() + "' type := " + std::to_string(type);
    }
    case 10: {
      // Out-of-range axis, perm, pads, strides, kernel...: ints become bad values.
      if (!node) return "";
      static const char* const names[] = {
          "axis",         "axes",      "perm",  "pads",     "strides", "dilations",
          "kernel_shape", "group",     "split", "keepdims", "transA",  "to",
          "mode",         "blocksize", "k",     "upper"};
      // Half the time one the node already has, so the op's own attributes are hit.
      std::string name = names[rng() % std::size(names)];
      if (node->attribute_size() > 0 && rng() % 2)
        name = node->attribute(static_cast<int>(pick(rng, node->attribute_size()))).name();
      onnx::AttributeProto* a = nullptr;
      for (auto& existing : *node->mutable_attribute())
        if (existing.name() == name) a = &existing;
      if (!a) a = node->add_attribute();
      a->set_name(name);
      if (rng() % 2) {
        a->set_type(onnx::AttributeProto::INT);
        a->set_i(bad_int(rng));
      } else {
        a->set_type(onnx::AttributeProto::INTS);
        a->clear_ints();
        const int n = static_cast<int>(rng() % 7);
        for (int k = 0; k < n; ++k) a->add_ints(bad_int(rng));
      }
      return "attribute '" + name + "' := bad ints";
    }
    case 11: {
      if (!node || node->attribute_size() == 0) return "";
      auto& a = *node->mutable_attribute(static_cast<int>(pick(rng, node->attribute_size())));
      const float values[] = {NAN, INFINITY, -INFINITY, 0.f, -1.f, 1e30f};
      a.set_f(values[rng() % std::size(values)]);
      for (auto& f : *a.mutable_floats()) f = values[rng() % std::size(values)];
      return "attribute '" + a.name() + "' floats := non-finite/bad";
    }
    case 12: {
      if (!node) return "";
      const std::string& op = op_types()[rng() % op_types().size()];
      node->set_op_type(op);
      return "op_type := " + op;
    }
    case 13: {
      const int64_t versions[] = {0, 1, 6, 7, 11, 13, 17, 21, 22, 1000, -1};
      const int64_t v = versions[rng() % std::size(versions)];
      if (m.opset_import_size() == 0 || rng() % 4 == 0) {
        auto* op = m.add_opset_import();
        op->set_domain(rng() % 2 ? "" : "com.microsoft");
        op->set_version(v);
      } else {
        m.mutable_opset_import(0)->set_version(v);
      }
      return "opset := " + std::to_string(v);
    }
    case 14: {
      if (rng() % 2 && g.output_size() > 0) {
        g.mutable_output(static_cast<int>(pick(rng, g.output_size())))
            ->set_name(rng() % 2 ? "" : "nowhere");
        return "rename a graph output";
      }
      if (!node || node->output_size() == 0) return "";
      if (rng() % 2)
        node->clear_output();
      else
        node->set_output(0, "");
      return "remove a node's outputs";
    }
    case 16: {
      if (!init) return "";
      if (rng() % 2) {
        // The loader must refuse external data, not open a path named by the model.
        init->set_data_location(onnx::TensorProto::EXTERNAL);
        auto* entry = init->add_external_data();
        entry->set_key("location");
        entry->set_value("/etc/passwd");
        return "initializer in an external file";
      }
      init->add_float_data(1.f);
      init->add_int64_data(7);
      init->add_int32_data(-1);
      return "initializer gets typed data too";
    }
    case 17: {
      if (g.input_size() == 0) return "";
      g.mutable_input(static_cast<int>(pick(rng, g.input_size())))
          ->mutable_type()
          ->mutable_sequence_type();
      return "input becomes a sequence";
    }
    default: {
      if (!node) return "";
      if (rng() % 2) {
        *g.add_node() = *node;
        return "duplicate a node";
      }
      g.mutable_node()->DeleteSubrange(node_index, 1);
      return "remove a node";
    }
  }
}

// ---- running a variant ----

struct Tally {
  int variants = 0, loaded = 0, rejected = 0, ran_on_gpu = 0;
  double slowest_ms = 0;
  std::string slowest;
};

constexpr double kHangMs = 5000;

// The whole path: a Session prepares the graph, then runs it once with random inputs unless
// they would be large. Every other variant runs in float16 mode (from the variant's seed).
// Returns whether it ran.
bool load_and_run(const std::string& bytes, const std::string& label,
                  std::shared_ptr<vk::Context> ctx, Rng& rng) {
  SessionOptions options;
  options.fp16 = rng() % 2 == 0 && ctx->features().storage_buffer_16bit;
  options.context = std::move(ctx);
  options.input_shapes =
      concrete_shapes(onnx_import::parse_model(bytes.data(), bytes.size(), label).inputs);
  Session session(bytes.data(), bytes.size(), options);
  constexpr int64_t kMaxElements = 1 << 20;
  for (auto& [name, shape] : options.input_shapes)
    if (numel(shape) > kMaxElements) return false;
  std::map<std::string, HostTensor> feeds;
  for (auto& in : session.inputs())
    feeds[in.name] = random_input(in, options.input_shapes.at(in.name), rng);
  session.run(feeds);
  return true;
}

// Loads `bytes` on the host only or, with `on_gpu`, through load_and_run. Returns whether it
// loaded; records anything other than success or a vkgraph::Error, and slow variants.
bool try_variant(const std::string& bytes, const std::string& label, bool on_gpu,
                 std::shared_ptr<vk::Context> ctx, Rng& rng, Tally& tally) {
  ++tally.variants;
  const auto t0 = std::chrono::steady_clock::now();
  bool loaded = false;
  try {
    if (on_gpu)
      tally.ran_on_gpu += load_and_run(bytes, label, ctx, rng);
    else
      load_on_host(bytes, label, ctx);
    loaded = true;
    ++tally.loaded;
  } catch (const Error& e) {
    ++tally.rejected;
    EXPECT_FALSE(e.message().empty()) << label << ": vkgraph::Error without a message";
  } catch (const std::exception& e) {
    ADD_FAILURE() << label << ": " << typeid(e).name() << ": " << e.what();
  } catch (...) {
    ADD_FAILURE() << label << ": unknown exception";
  }
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_LT(ms, kHangMs) << label << " took " << ms << " ms";
  if (ms > tally.slowest_ms) tally.slowest_ms = ms, tally.slowest = label;
  return loaded;
}

void report(const char* what, const Tally& t) {
  std::printf(
      "%s: %d variants, %d loaded, %d rejected with vkgraph::Error, %d ran on the GPU; "
      "slowest %.1f ms (%s)\n",
      what, t.variants, t.loaded, t.rejected, t.ran_on_gpu, t.slowest_ms, t.slowest.c_str());
}

// The mutations start from models that load and run.
TEST_F(LoadRobustness, SeedModelsLoadAndRun) {
  Tally tally;
  Rng rng(1);
  for (const SeedModel& seed : seed_models())
    EXPECT_TRUE(try_variant(seed.bytes, seed.name, true, context(), rng, tally)) << seed.name;
  report("seeds", tally);
}

// Every 4th variant that loads on the host also goes through prepare and a run.
constexpr int kGpuEvery = 4;
constexpr int kVariantsPerSeed = 400;

// VKGRAPH_MUTATION_SEED picks other variants than the default 0, to search further locally.
uint64_t base_seed() {
  const char* s = std::getenv("VKGRAPH_MUTATION_SEED");
  return s ? std::strtoull(s, nullptr, 10) * 1000003 : 0;
}

TEST_F(LoadRobustness, CorruptedBytesLoadOrFailCleanly) {
  Tally tally;
  int loaded = 0;
  const auto& seeds = seed_models();
  for (size_t s = 0; s < seeds.size(); ++s) {
    for (int v = 0; v < kVariantsPerSeed; ++v) {
      Rng rng(base_seed() + s * 100003 + v);
      std::string bytes = seeds[s].bytes;
      std::string label = seeds[s].name + " #" + std::to_string(v) + ":";
      const int edits = 1 + static_cast<int>(rng() % 3);
      for (int k = 0; k < edits; ++k) label += " " + mutate_bytes(bytes, rng);
      if (try_variant(bytes, label, false, context(), rng, tally) && ++loaded % kGpuEvery == 0)
        try_variant(bytes, label + " (GPU)", true, context(), rng, tally);
    }
  }
  report("corrupted bytes", tally);
}

TEST_F(LoadRobustness, BrokenStructureLoadsOrFailsCleanly) {
  Tally tally;
  int loaded = 0;
  const auto& seeds = seed_models();
  for (size_t s = 0; s < seeds.size(); ++s) {
    onnx::ModelProto seed;
    ASSERT_TRUE(seed.ParseFromString(seeds[s].bytes));
    for (int v = 0; v < kVariantsPerSeed; ++v) {
      Rng rng(base_seed() + s * 100019 + v);
      onnx::ModelProto m = seed;
      std::string label = seeds[s].name + " #" + std::to_string(v) + ":";
      const int edits = 1 + static_cast<int>(rng() % 3);
      for (int k = 0; k < edits; ++k) {
        std::string what = mutate_structure(m, rng);
        if (!what.empty()) label += " " + what + ";";
      }
      // ONNX's checker rejects most broken structure up front; every other variant gets an IR
      // version beyond the checker's, so that the importer's own checks meet them too.
      if (v % 2 && m.ir_version() <= 8) {
        m.set_ir_version(9);
        label += " ir_version := 9 (unchecked);";
      }
      const std::string bytes = m.SerializeAsString();
      if (try_variant(bytes, label, false, context(), rng, tally) && ++loaded % kGpuEvery == 0)
        try_variant(bytes, label + " (GPU)", true, context(), rng, tally);
    }
  }
  report("broken structure", tally);
}

}  // namespace
}  // namespace vkgraph::testing
