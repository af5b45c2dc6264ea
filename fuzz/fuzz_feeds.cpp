// libFuzzer target for Session::run, prepare_bound and run_bound: one Session on a small fixed
// model, called with feeds and bindings the fuzzer chooses (names, dtypes, shapes, byte
// counts, pointers into an arena, null or misaligned ones, outputs overlapping inputs). Every
// call must return or throw a vkgraph::Error; a run that returns must return the right values
// (checked on the host), so a wrong answer is a finding as much as a crash is.
//
// The model is  sum = Add(x, y); out = Reshape(Relu(sum), shape)  with x float32 [n, 4],
// y float32 [m] (m must broadcast: 1 or 4) and shape int64 [2], whose values the Session
// specialises the graph to. Most inputs fail in the Session's feed checks before any GPU
// work; the ones that pass run on whatever Vulkan device is there (lavapipe in CI), on graphs
// of at most a few thousand elements. With VKGRAPH_VALIDATION=1 a validation message is a
// finding too. See fuzz/README.md.
#include <fuzzer/FuzzedDataProvider.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "vkgraph/error.h"
#include "vkgraph/session.h"

namespace {

using namespace vkgraph;

constexpr size_t kArenaBytes = 1 << 16;
// Bindings point into this, so that every pointer the fuzzer makes is memory the process owns;
// page-aligned so that the device can import it where the offset allows.
alignas(4096) uint8_t g_arena[kArenaBytes];

void describe(onnx::ValueInfoProto* v, const std::string& name, int elem_type,
              const std::vector<std::string>& dims) {
  v->set_name(name);
  onnx::TypeProto::Tensor* t = v->mutable_type()->mutable_tensor_type();
  t->set_elem_type(elem_type);
  for (const std::string& d : dims) {
    onnx::TensorShapeProto::Dimension* dim = t->mutable_shape()->add_dim();
    if (d[0] >= '0' && d[0] <= '9')
      dim->set_dim_value(std::stoll(d));
    else
      dim->set_dim_param(d);
  }
}

std::string model_bytes() {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(13);
  onnx::GraphProto* g = m.mutable_graph();
  g->set_name("fuzz_feeds");
  describe(g->add_input(), "x", onnx::TensorProto::FLOAT, {"n", "4"});
  describe(g->add_input(), "y", onnx::TensorProto::FLOAT, {"m"});
  describe(g->add_input(), "shape", onnx::TensorProto::INT64, {"2"});
  auto node = [&](const char* op, std::vector<std::string> in, const char* out) {
    onnx::NodeProto* n = g->add_node();
    n->set_op_type(op);
    n->set_name(out);
    for (const std::string& i : in) n->add_input(i);
    n->add_output(out);
  };
  node("Add", {"x", "y"}, "sum");
  node("Relu", {"sum"}, "act");
  node("Reshape", {"act", "shape"}, "out");
  for (const char* out : {"sum", "out"}) {
    onnx::ValueInfoProto* v = g->add_output();
    v->set_name(out);
    v->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  }
  return m.SerializeAsString();
}

Session& session() {
  // Never destroyed, for the reason fuzz_load.cpp gives (LeakSanitizer and the driver).
  static Session* s = [] {
    const std::string bytes = model_bytes();
    return new Session(bytes.data(), bytes.size());
  }();
  return *s;
}

[[noreturn]] void finding(const std::string& what) {
  std::fprintf(stderr, "fuzz_feeds: %s\n", what.c_str());
  std::abort();
}

// What one run was given, as the host reference needs it (absent where not well-formed).
struct Reference {
  std::vector<float> x, y;
  int64_t n = -1, m = -1;
  std::vector<int64_t> shape;
};

// The feed as the Session saw it, if it is a well-formed float32/int64 tensor of the model's.
void remember(Reference& ref, const std::string& name, DType dtype, const Shape& shape,
              const void* data, size_t bytes) {
  // memcpy wants a pointer even for no bytes; a null one with bytes to read is no feed.
  auto copy = [&](void* to, size_t n) {
    if (n) std::memcpy(to, data, n);
  };
  if (!data && bytes > 0) return;
  if (name == "x" && dtype == DType::Float32 && shape.size() == 2 && shape[1] == 4 &&
      shape[0] >= 0 && bytes >= static_cast<size_t>(shape[0]) * 16) {
    ref.n = shape[0];
    ref.x.resize(static_cast<size_t>(ref.n) * 4);
    copy(ref.x.data(), ref.x.size() * 4);
  } else if (name == "y" && dtype == DType::Float32 && shape.size() == 1 && shape[0] >= 0 &&
             shape[0] <= 4 && bytes >= static_cast<size_t>(shape[0]) * 4) {
    ref.m = shape[0];
    ref.y.resize(static_cast<size_t>(ref.m));
    copy(ref.y.data(), ref.y.size() * 4);
  } else if (name == "shape" && dtype == DType::Int64 && shape == Shape{2} && bytes >= 16) {
    ref.shape.resize(2);
    copy(ref.shape.data(), 16);
  }
}

// lavapipe may flush denormals to zero, in the inputs and in the sum.
bool same_float(float want, float got) {
  if (std::isnan(want) || std::isnan(got)) return std::isnan(want) && std::isnan(got);
  if (want == got) return true;
  return std::fabs(want - got) <= 3e-38f + 1e-6f * std::fabs(want);
}

// Checks a returned `sum` or `out` against the host's answer.
void check_output(const Reference& ref, const std::string& name, const Shape& shape,
                  const void* values) {
  if (ref.n < 0 || ref.m < 0 || ref.shape.size() != 2)
    finding("a run with malformed feeds returned output '" + name + "'");
  if (ref.m != 1 && ref.m != 4)
    finding("y of " + std::to_string(ref.m) + " elements broadcast against [n, 4]");
  const int64_t count = ref.n * 4;
  if (name == "sum") {
    if (shape != Shape{ref.n, 4}) finding("sum has shape " + shape_str(shape));
  } else {
    Shape want(2);
    for (size_t d = 0; d < 2; ++d)
      want[d] = ref.shape[d] == 0 ? (d == 0 ? ref.n : 4) : ref.shape[d];
    if (want[0] == -1 && want[1] > 0) want[0] = count / want[1];
    if (want[1] == -1 && want[0] > 0) want[1] = count / want[0];
    if (shape != want)
      finding("out has shape " + shape_str(shape) + ", expected " + shape_str(want));
  }
  for (int64_t i = 0; i < count; ++i) {
    float want = ref.x[static_cast<size_t>(i)] + ref.y[static_cast<size_t>(ref.m == 1 ? 0 : i % 4)];
    if (name == "out") want = std::isnan(want) ? want : (want > 0 ? want : 0.0f);
    float got;  // a binding may be misaligned
    std::memcpy(&got, static_cast<const uint8_t*>(values) + 4 * i, 4);
    if (!same_float(want, got))
      finding(name + "[" + std::to_string(i) + "] = " + std::to_string(got) + ", expected " +
              std::to_string(want));
  }
}

std::string pick_name(FuzzedDataProvider& fdp, std::initializer_list<const char*> known) {
  const size_t i = fdp.ConsumeIntegralInRange<size_t>(0, known.size());
  return i < known.size() ? known.begin()[i] : fdp.ConsumeRandomLengthString(8);
}

// A dtype, sometimes one outside the enum (the API must refuse it, not index with it).
DType pick_dtype(FuzzedDataProvider& fdp) {
  return static_cast<DType>(fdp.ConsumeIntegralInRange<uint8_t>(0, 7));
}

Shape pick_shape(FuzzedDataProvider& fdp) {
  Shape shape(fdp.ConsumeIntegralInRange<size_t>(0, 4));
  for (int64_t& d : shape)
    d = fdp.ConsumeBool() ? fdp.ConsumeIntegralInRange<int64_t>(-1, 12)
                          : fdp.ConsumeIntegral<int64_t>();
  return shape;
}

// The bytes a well-formed tensor of dtype and shape needs, if that is small.
std::optional<size_t> exact_bytes(DType dtype, const Shape& shape) {
  if (static_cast<uint8_t>(dtype) > static_cast<uint8_t>(DType::UInt8)) return std::nullopt;
  size_t count = 1;
  for (int64_t d : shape) {
    if (d < 0 || d > 4096) return std::nullopt;
    count *= static_cast<size_t>(d);
    if (count > kArenaBytes) return std::nullopt;
  }
  const size_t bytes = count * dtype_size(dtype);
  if (bytes > kArenaBytes) return std::nullopt;
  return bytes;
}

// A byte count: usually the exact one for the shape (so that runs get past the size checks),
// sometimes any other.
size_t pick_bytes(FuzzedDataProvider& fdp, DType dtype, const Shape& shape, size_t most) {
  const std::optional<size_t> exact = exact_bytes(dtype, shape);
  if (exact && *exact <= most && fdp.ConsumeBool()) return *exact;
  return fdp.ConsumeIntegralInRange<size_t>(0, most);
}

void fill_arena(uint32_t seed) {
  uint32_t state = seed | 1;
  for (size_t i = 0; i < kArenaBytes; i += 4) {
    state ^= state << 13;
    state ^= state >> 17;
    state ^= state << 5;
    // Mostly small floats, some raw bit patterns (NaN, infinities, denormals, huge values).
    const float value = static_cast<float>(static_cast<int32_t>(state % 2001) - 1000) / 64.0f;
    const uint32_t bits = (state >> 24) < 8 ? state : std::bit_cast<uint32_t>(value);
    std::memcpy(g_arena + i, &bits, 4);
  }
}

void run_staged(FuzzedDataProvider& fdp, Session& s) {
  std::map<std::string, HostTensor> feeds;
  const size_t count = fdp.ConsumeIntegralInRange<size_t>(0, 4);
  for (size_t i = 0; i < count; ++i) {
    HostTensor t;
    const std::string name = pick_name(fdp, {"x", "y", "shape"});
    t.dtype = pick_dtype(fdp);
    t.shape = pick_shape(fdp);
    const size_t bytes = pick_bytes(fdp, t.dtype, t.shape, 4096);
    const std::vector<uint8_t> data = fdp.ConsumeBytes<uint8_t>(bytes);
    t.bytes.assign(data.begin(), data.end());
    t.bytes.resize(bytes, 0x3c);
    feeds[name] = std::move(t);
  }
  std::vector<std::string> names(fdp.ConsumeIntegralInRange<size_t>(0, 2));
  for (std::string& n : names) n = pick_name(fdp, {"sum", "out"});

  Reference ref;
  for (auto& [name, t] : feeds) {
    if (t.dtype <= DType::UInt8 && t.nbytes() == exact_bytes(t.dtype, t.shape))
      remember(ref, name, t.dtype, t.shape, t.bytes.data(), t.nbytes());
  }
  const std::vector<HostTensor> results = s.run(feeds, names);
  if (names.empty()) names = {"sum", "out"};
  if (results.size() != names.size()) finding("run returned the wrong number of outputs");
  for (size_t i = 0; i < names.size(); ++i) {
    const HostTensor& r = results[i];
    if (r.dtype != DType::Float32 || r.nbytes() != static_cast<size_t>(r.numel()) * 4)
      finding("output '" + names[i] + "' is not a float32 tensor of its shape");
    check_output(ref, names[i], r.shape, r.bytes.data());
  }
}

struct Binding {
  std::string name;
  HostBinding b;
  size_t offset = 0;
};

Binding pick_binding(FuzzedDataProvider& fdp, std::initializer_list<const char*> names) {
  Binding bd;
  bd.name = pick_name(fdp, names);
  bd.b.dtype = pick_dtype(fdp);
  bd.b.shape = pick_shape(fdp);
  // Page-aligned (importable), element-aligned or anywhere.
  switch (fdp.ConsumeIntegralInRange<int>(0, 2)) {
    case 0:
      bd.offset = 4096 * fdp.ConsumeIntegralInRange<size_t>(0, kArenaBytes / 4096 - 1);
      break;
    case 1:
      bd.offset = 4 * fdp.ConsumeIntegralInRange<size_t>(0, kArenaBytes / 4 - 1);
      break;
    default:
      bd.offset = fdp.ConsumeIntegralInRange<size_t>(0, kArenaBytes - 1);
  }
  bd.b.bytes = pick_bytes(fdp, bd.b.dtype, bd.b.shape, kArenaBytes - bd.offset);
  bd.b.data = fdp.ConsumeIntegralInRange<int>(0, 15) == 0 ? nullptr : g_arena + bd.offset;
  // The fuzzer's own values at the start (the shape input's values, say).
  const std::vector<uint8_t> head =
      fdp.ConsumeBytes<uint8_t>(fdp.ConsumeIntegralInRange<size_t>(0, 32));
  if (!head.empty())
    std::memcpy(g_arena + bd.offset, head.data(), std::min(head.size(), kArenaBytes - bd.offset));
  return bd;
}

bool overlap(const Binding& a, const Binding& b) {
  return a.offset < b.offset + b.b.bytes && b.offset < a.offset + a.b.bytes;
}

void run_bound(FuzzedDataProvider& fdp, Session& s, bool prepare_only) {
  fill_arena(fdp.ConsumeIntegral<uint32_t>());
  std::vector<Binding> ins(fdp.ConsumeIntegralInRange<size_t>(0, 4));
  for (Binding& bd : ins) bd = pick_binding(fdp, {"x", "y", "shape"});
  std::map<std::string, HostBinding> inputs;
  for (const Binding& bd : ins) inputs[bd.name] = bd.b;
  if (prepare_only) {
    Reference ref;
    for (auto& [name, b] : inputs) remember(ref, name, b.dtype, b.shape, b.data, b.bytes);
    const std::vector<ValueInfo> outs = s.prepare_bound(inputs);
    if (outs.size() != 2 || outs[0].shape != Shape{ref.n, 4} || outs[0].dtype != DType::Float32)
      finding("prepare_bound described the outputs wrongly");
    return;
  }
  std::vector<Binding> outs(fdp.ConsumeIntegralInRange<size_t>(0, 3));
  for (Binding& bd : outs) bd = pick_binding(fdp, {"sum", "out"});
  std::map<std::string, HostBinding> outputs;
  for (const Binding& bd : outs) outputs[bd.name] = bd.b;

  // The reference reads the inputs now, before an output written over them changes them.
  Reference ref;
  for (auto& [name, b] : inputs) remember(ref, name, b.dtype, b.shape, b.data, b.bytes);
  const std::map<std::string, HostIOPath> paths = s.run_bound(inputs, outputs);
  for (auto& [name, b] : outputs) {
    if (!paths.count(name)) finding("run_bound did not say how it wrote '" + name + "'");
    // Only outputs that share no memory with another binding have a defined value.
    if (!b.data) {
      if (numel(b.shape) > 0)
        finding("run_bound wrote output '" + name + "' through a null pointer");
      continue;
    }
    // Only an output that shares no memory with another binding has a defined value.
    const Binding self{name, b, static_cast<size_t>(static_cast<uint8_t*>(b.data) - g_arena)};
    bool alone = true;
    for (const Binding& other : ins) alone &= !overlap(self, other);
    for (const Binding& other : outs) alone &= other.name == name || !overlap(self, other);
    if (alone) check_output(ref, name, b.shape, b.data);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider fdp(data, size);
  Session& s = session();
  try {
    switch (fdp.ConsumeIntegralInRange<int>(0, 2)) {
      case 0:
        run_staged(fdp, s);
        break;
      case 1:
        run_bound(fdp, s, true);
        break;
      default:
        run_bound(fdp, s, false);
    }
  } catch (const Error& e) {
    if (e.message().empty()) std::abort();
  }
  // With VKGRAPH_VALIDATION=1, a run or a refusal that misused Vulkan is a finding too.
  const std::vector<std::string> messages = s.context().validation_messages();
  if (!messages.empty()) finding("validation: " + messages.front());
  return 0;
}
