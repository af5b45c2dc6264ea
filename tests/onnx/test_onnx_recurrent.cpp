// RNN, GRU and LSTM through a Session against a float64 reference written here: directions,
// sequence lengths, initial states, peepholes, layout 1, every activation, clip, GRU's
// linear_before_reset, a 100-step sequence, float16 mode, and bad models. Outputs are bound to
// NaN-filled host memory the device writes in place, so an element the kernel skips shows.
#include <onnx/onnx_pb.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>

#include "model_builder.h"
#include "shape_test_util.h"
#include "vkgraph/ops/tuning.h"
#include "vkgraph/tensor_io.h"

namespace vkgraph::testing {
namespace {

constexpr int kFloat = onnx::TensorProto::FLOAT;

enum class Cell { Rnn, Gru, Lstm };

struct Fn {
  std::string name;
  double alpha = 0, beta = 0;
  bool written = true;  // false: the model gives no alpha/beta, the lowering's defaults apply
};

double apply(const Fn& f, double x) {
  const std::string& n = f.name;
  if (n == "Relu") return x > 0 ? x : 0;
  if (n == "Tanh") return std::tanh(x);
  if (n == "Sigmoid") return 1 / (1 + std::exp(-x));
  if (n == "Affine") return f.alpha * x + f.beta;
  if (n == "LeakyRelu") return x >= 0 ? x : f.alpha * x;
  if (n == "ThresholdedRelu") return x > f.alpha ? x : 0;
  if (n == "ScaledTanh") return f.alpha * std::tanh(f.beta * x);
  if (n == "HardSigmoid") return std::min(1.0, std::max(0.0, f.alpha * x + f.beta));
  if (n == "Elu") return x >= 0 ? x : f.alpha * (std::exp(x) - 1);
  if (n == "Softsign") return x / (1 + std::fabs(x));
  if (n == "Softplus") return std::log1p(std::exp(x));
  ADD_FAILURE() << "no reference for " << n;
  return 0;
}
// The ONNX defaults of the functions taking parameters.
Fn with_defaults(const std::string& name) {
  if (name == "Affine") return {name, 1, 0};
  if (name == "LeakyRelu") return {name, 0.01, 0};
  if (name == "ThresholdedRelu" || name == "Elu") return {name, 1, 0};
  if (name == "ScaledTanh") return {name, 1, 1};
  if (name == "HardSigmoid") return {name, 0.2, 0.5};
  return {name};
}
int params_of(const std::string& n) {
  if (n == "Affine" || n == "ScaledTanh" || n == "HardSigmoid") return 2;
  if (n == "LeakyRelu" || n == "ThresholdedRelu" || n == "Elu") return 1;
  return 0;
}

struct Case {
  Cell cell = Cell::Lstm;
  std::string direction = "forward";
  int64_t steps = 4, batch = 3, input = 5, hidden = 6;
  int64_t layout = 0;
  std::vector<Fn> functions;  // empty: defaults; else per direction, forward first
  std::optional<float> clip;
  bool input_forget = false, linear_before_reset = false;
  bool bias = true, lens = false, initial = false, peepholes = false;
  std::vector<int32_t> seq_lens;  // with `lens`

  int64_t dirs() const { return direction == "bidirectional" ? 2 : 1; }
  int64_t gates() const { return cell == Cell::Lstm ? 4 : cell == Cell::Gru ? 3 : 1; }
  size_t per_dir() const { return cell == Cell::Lstm ? 3 : cell == Cell::Gru ? 2 : 1; }
  const char* op() const { return cell == Cell::Lstm ? "LSTM" : cell == Cell::Gru ? "GRU" : "RNN"; }
  Shape x_shape() const { return layout ? Shape{batch, steps, input} : Shape{steps, batch, input}; }
  Shape state_shape() const {
    return layout ? Shape{batch, dirs(), hidden} : Shape{dirs(), batch, hidden};
  }
  Shape y_shape() const {
    return layout ? Shape{batch, steps, dirs(), hidden} : Shape{steps, dirs(), batch, hidden};
  }
  std::vector<Fn> resolved() const {
    if (!functions.empty()) return functions;
    std::vector<Fn> one = cell == Cell::Rnn   ? std::vector<Fn>{{"Tanh"}}
                          : cell == Cell::Gru ? std::vector<Fn>{{"Sigmoid"}, {"Tanh"}}
                                              : std::vector<Fn>{{"Sigmoid"}, {"Tanh"}, {"Tanh"}};
    std::vector<Fn> all;
    for (int64_t d = 0; d < dirs(); ++d) all.insert(all.end(), one.begin(), one.end());
    return all;
  }
};

struct Feeds {
  std::map<std::string, HostTensor> tensors;
  const float* f(const std::string& name) const { return tensors.at(name).data<float>(); }
};

Feeds make_feeds(const Case& c, std::mt19937& rng) {
  Feeds f;
  const int64_t gh = c.gates() * c.hidden;
  auto add = [&](const std::string& name, Shape shape, float scale) {
    HostTensor t = random_tensor(rng, DType::Float32, std::move(shape));
    for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] *= scale;
    f.tensors[name] = std::move(t);
  };
  add("X", c.x_shape(), 1.5f);
  add("W", {c.dirs(), gh, c.input}, 0.6f);
  add("R", {c.dirs(), gh, c.hidden}, 0.5f);
  if (c.bias) add("B", {c.dirs(), 2 * gh}, 0.5f);
  if (c.lens) f.tensors["sequence_lens"] = HostTensor::from(DType::Int32, {c.batch}, c.seq_lens);
  if (c.initial) {
    add("initial_h", c.state_shape(), 1.f);
    if (c.cell == Cell::Lstm) add("initial_c", c.state_shape(), 1.f);
  }
  if (c.peepholes) add("P", {c.dirs(), 3 * c.hidden}, 0.8f);
  return f;
}

// The ONNX equations in float64.
struct Reference {
  std::vector<double> y, y_h, y_c;
};

Reference reference(const Case& c, const Feeds& in) {
  const int64_t T = c.steps, B = c.batch, I = c.input, H = c.hidden, D = c.dirs(), G = c.gates();
  const int64_t GH = G * H;
  Reference r;
  r.y.assign(T * D * B * H, 0.0);
  r.y_h.assign(D * B * H, 0.0);
  r.y_c.assign(D * B * H, 0.0);
  const std::vector<Fn> fns = c.resolved();
  const double clip = c.clip ? *c.clip : INFINITY;
  auto clipped = [&](double x) { return std::min(clip, std::max(-clip, x)); };
  auto x_at = [&](int64_t t, int64_t b, int64_t i) {
    return double(in.f("X")[(c.layout ? b * T + t : t * B + b) * I + i]);
  };
  auto y_at = [&](int64_t t, int64_t d, int64_t b, int64_t j) -> double& {
    return r.y[(c.layout ? (b * T + t) * D + d : (t * D + d) * B + b) * H + j];
  };
  auto st = [&](int64_t d, int64_t b, int64_t j) {
    return (c.layout ? b * D + d : d * B + b) * H + j;
  };
  for (int64_t d = 0; d < D; ++d) {
    const Fn* fn = &fns[d * c.per_dir()];
    const bool backward = d == 1 || c.direction == "reverse";
    const float* W = in.f("W") + d * GH * I;
    const float* R = in.f("R") + d * GH * H;
    auto wb = [&](int64_t g, int64_t j) {
      return c.bias ? double(in.f("B")[d * 2 * GH + g * H + j]) : 0.0;
    };
    auto rb = [&](int64_t g, int64_t j) {
      return c.bias ? double(in.f("B")[d * 2 * GH + GH + g * H + j]) : 0.0;
    };
    auto peep = [&](int64_t g, int64_t j) {
      return c.peepholes ? double(in.f("P")[d * 3 * H + g * H + j]) : 0.0;
    };
    for (int64_t b = 0; b < B; ++b) {
      std::vector<double> h(H, 0.0), cs(H, 0.0);
      if (c.initial)
        for (int64_t j = 0; j < H; ++j) {
          h[j] = in.f("initial_h")[st(d, b, j)];
          if (c.cell == Cell::Lstm) cs[j] = in.f("initial_c")[st(d, b, j)];
        }
      const int64_t len = c.lens ? c.seq_lens[b] : T;
      for (int64_t s = 0; s < len; ++s) {
        const int64_t t = backward ? len - 1 - s : s;
        // xw[g][j] = X_t W_gᵀ + Wb_g; hr[g][j] = H_{t-1} R_gᵀ + Rb_g.
        std::vector<double> xw(GH), hr(GH);
        for (int64_t n = 0; n < GH; ++n) {
          double ax = wb(n / H, n % H), ah = rb(n / H, n % H);
          for (int64_t i = 0; i < I; ++i) ax += x_at(t, b, i) * W[n * I + i];
          for (int64_t k = 0; k < H; ++k) ah += h[k] * R[n * H + k];
          xw[n] = ax;
          hr[n] = ah;
        }
        std::vector<double> next(H);
        for (int64_t j = 0; j < H; ++j) {
          if (c.cell == Cell::Rnn) {
            next[j] = apply(fn[0], clipped(xw[j] + hr[j]));
          } else if (c.cell == Cell::Lstm) {
            double i_g = apply(fn[0], clipped(xw[j] + hr[j] + peep(0, j) * cs[j]));
            double f_g =
                c.input_forget
                    ? 1 - i_g
                    : apply(fn[0], clipped(xw[2 * H + j] + hr[2 * H + j] + peep(2, j) * cs[j]));
            double cell = f_g * cs[j] + i_g * apply(fn[1], clipped(xw[3 * H + j] + hr[3 * H + j]));
            double o_g = apply(fn[0], clipped(xw[H + j] + hr[H + j] + peep(1, j) * cell));
            cs[j] = cell;
            next[j] = o_g * apply(fn[2], cell);
          } else {
            double z = apply(fn[0], clipped(xw[j] + hr[j]));
            double rr = apply(fn[0], clipped(xw[H + j] + hr[H + j]));
            double pre;
            if (c.linear_before_reset) {
              pre = xw[2 * H + j] + rr * hr[2 * H + j];
            } else {
              pre = xw[2 * H + j] + rb(2, j);
              for (int64_t k = 0; k < H; ++k) {
                double rk = apply(fn[0], clipped(xw[H + k] + hr[H + k]));
                pre += rk * h[k] * R[(2 * H + j) * H + k];
              }
            }
            next[j] = (1 - z) * apply(fn[1], clipped(pre)) + z * h[j];
          }
        }
        h = next;
        for (int64_t j = 0; j < H; ++j) y_at(t, d, b, j) = h[j];
      }
      for (int64_t j = 0; j < H; ++j) {
        r.y_h[st(d, b, j)] = h[j];
        r.y_c[st(d, b, j)] = cs[j];
      }
    }
  }
  return r;
}

void set_int(onnx::NodeProto& n, const char* name, int64_t v) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(v);
}
void set_float(onnx::NodeProto& n, const char* name, float v) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::FLOAT);
  a->set_f(v);
}
void set_string(onnx::NodeProto& n, const char* name, const std::string& v) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::STRING);
  a->set_s(v);
}

// The model: every input a graph input, Y, Y_h (and Y_c) its outputs.
ModelBuilder model_of(const Case& c, const Feeds& feeds, int64_t hidden_attr = -1,
                      const std::vector<std::string>& activation_names = {}) {
  ModelBuilder m(14);
  std::vector<std::string> names{"X",         "W",         "R", "B", "sequence_lens",
                                 "initial_h", "initial_c", "P"};
  if (c.cell != Cell::Lstm) names.resize(6);
  while (!feeds.tensors.count(names.back())) names.pop_back();
  onnx::NodeProto& n = m.node(c.op(), {}, {"Y", "Y_h"});
  if (c.cell == Cell::Lstm) n.add_output("Y_c");
  for (const std::string& name : names) {
    auto it = feeds.tensors.find(name);
    n.add_input(it == feeds.tensors.end() ? "" : name);
    if (it == feeds.tensors.end()) continue;
    auto* v = m.proto().mutable_graph()->add_input();
    v->set_name(name);
    auto* tt = v->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(it->second.dtype == DType::Int32 ? onnx::TensorProto::INT32 : kFloat);
    for (int64_t d : it->second.shape) tt->mutable_shape()->add_dim()->set_dim_value(d);
  }
  m.output("Y", kFloat);
  m.output("Y_h", kFloat);
  if (c.cell == Cell::Lstm) m.output("Y_c", kFloat);
  set_int(n, "hidden_size", hidden_attr >= 0 ? hidden_attr : c.hidden);
  if (c.direction != "forward") set_string(n, "direction", c.direction);
  if (c.layout) set_int(n, "layout", c.layout);
  if (c.clip) set_float(n, "clip", *c.clip);
  if (c.input_forget) set_int(n, "input_forget", 1);
  if (c.linear_before_reset) set_int(n, "linear_before_reset", 1);
  std::vector<std::string> fn_names = activation_names;
  std::vector<float> alphas, betas;
  for (const Fn& f : c.functions) {
    fn_names.push_back(f.name);
    if (!f.written) continue;
    if (params_of(f.name) >= 1) alphas.push_back(float(f.alpha));
    if (params_of(f.name) >= 2) betas.push_back(float(f.beta));
  }
  if (!fn_names.empty()) {
    auto* a = n.add_attribute();
    a->set_name("activations");
    a->set_type(onnx::AttributeProto::STRINGS);
    for (const std::string& s : fn_names) a->add_strings(s);
  }
  for (auto [key, list] : {std::pair{"activation_alpha", &alphas}, {"activation_beta", &betas}}) {
    if (list->empty()) continue;
    auto* a = n.add_attribute();
    a->set_name(key);
    a->set_type(onnx::AttributeProto::FLOATS);
    for (float v : *list) a->add_floats(v);
  }
  return m;
}

// Page-aligned host memory filled with NaN, which the device imports and writes in place.
struct Poisoned {
  explicit Poisoned(const Shape& s)
      : shape(s),
        bytes((numel(s) * 4 + 4095) / 4096 * 4096),
        data(static_cast<float*>(std::aligned_alloc(4096, bytes)), std::free) {
    for (size_t i = 0; i < bytes / 4; ++i) data.get()[i] = std::numeric_limits<float>::quiet_NaN();
  }
  HostBinding binding() { return {data.get(), bytes, DType::Float32, shape}; }
  HostTensor tensor() const {
    HostTensor t(DType::Float32, shape);
    std::memcpy(t.data<float>(), data.get(), t.numel() * 4);
    return t;
  }
  Shape shape;
  size_t bytes;
  std::unique_ptr<float, decltype(&std::free)> data;
};

HostTensor as_tensor(const std::vector<double>& v, const Shape& shape) {
  HostTensor t(DType::Float32, shape);
  for (size_t i = 0; i < v.size(); ++i) t.data<float>()[i] = float(v[i]);
  return t;
}

class OnnxRecurrent : public GpuTest {
 protected:
  // Runs the case (bound to poisoned outputs) and checks every output against the reference.
  void check(const Case& c, float tol = 2e-5f, bool fp16 = false) {
    Feeds feeds = make_feeds(c, rng);
    ModelBuilder m = model_of(c, feeds);
    SessionOptions options;
    options.fp16 = fp16;
    if (!knobs.empty()) {
      auto tuning = std::make_shared<ops::Tuning>();
      tuning->knobs = knobs;
      options.graph.tuning = tuning;
    }
    Session s = m.session(options);
    std::map<std::string, HostBinding> ins;
    for (auto& [name, t] : feeds.tensors)
      ins[name] = {t.bytes.data(), t.bytes.size(), t.dtype, t.shape};
    Poisoned y(c.y_shape()), y_h(c.state_shape()), y_c(c.state_shape());
    std::map<std::string, HostBinding> outs{{"Y", y.binding()}, {"Y_h", y_h.binding()}};
    if (c.cell == Cell::Lstm) outs["Y_c"] = y_c.binding();
    s.run_bound(ins, outs);
    Reference want = reference(c, feeds);
    {
      SCOPED_TRACE("Y");
      expect_near(y.tensor(), as_tensor(want.y, c.y_shape()), tol);
    }
    {
      SCOPED_TRACE("Y_h");
      expect_near(y_h.tensor(), as_tensor(want.y_h, c.state_shape()), tol);
    }
    if (c.cell == Cell::Lstm) {
      SCOPED_TRACE("Y_c");
      expect_near(y_c.tensor(), as_tensor(want.y_c, c.state_shape()), tol);
    }
    nodes = s.graph()->stats().nodes;
    command_buffers = s.graph()->stats().command_buffers;
  }
  size_t nodes = 0, command_buffers = 0;
  std::map<std::string, uint32_t> knobs;  // tuning knobs for the next check()s
};

Case everything(Cell cell, int64_t layout) {
  Case c;
  c.cell = cell;
  c.direction = "bidirectional";
  c.layout = layout;
  c.lens = c.initial = true;
  c.peepholes = cell == Cell::Lstm;
  c.seq_lens = {4, 2, 0};
  c.clip = 1.7f;
  if (cell == Cell::Lstm)
    c.functions = {{"HardSigmoid", 0.3, 0.45},
                   {"ScaledTanh", 1.1, 0.8},
                   {"Softsign"},
                   {"Sigmoid"},
                   {"Elu", 0.9},
                   {"Tanh"}};
  else if (cell == Cell::Gru)
    c.functions = {{"Sigmoid"}, {"Affine", 0.7, 0.1}, {"HardSigmoid", 0.25, 0.5}, {"Softplus"}};
  else
    c.functions = {{"LeakyRelu", 0.2}, {"Tanh"}};
  return c;
}

TEST_F(OnnxRecurrent, LstmBidirectionalWithLengthsStatesPeepholesClipAndActivations) {
  for (int64_t layout : {0, 1}) {
    SCOPED_TRACE("layout " + std::to_string(layout));
    check(everything(Cell::Lstm, layout));
  }
}

TEST_F(OnnxRecurrent, GruBidirectionalBothResetOrders) {
  for (int64_t layout : {0, 1})
    for (bool lbr : {false, true}) {
      SCOPED_TRACE("layout " + std::to_string(layout) + (lbr ? " linear_before_reset" : ""));
      Case c = everything(Cell::Gru, layout);
      c.linear_before_reset = lbr;
      check(c);
    }
}

TEST_F(OnnxRecurrent, RnnBidirectionalWithLengths) {
  for (int64_t layout : {0, 1}) {
    SCOPED_TRACE("layout " + std::to_string(layout));
    check(everything(Cell::Rnn, layout));
  }
}

// An LSTM running backwards over lengths 3, 4, 1 from initial states, input_forget on.
Case reverse_with_input_forget() {
  Case c;
  c.direction = "reverse";
  c.lens = c.initial = true;
  c.seq_lens = {3, 4, 1};
  c.input_forget = true;
  return c;
}

TEST_F(OnnxRecurrent, ReverseDirectionAndInputForget) {
  Case c = reverse_with_input_forget();
  check(c);
  c.cell = Cell::Gru;
  c.input_forget = false;
  check(c);
}

TEST_F(OnnxRecurrent, EveryActivation) {
  for (const char* name : {"Relu", "Tanh", "Sigmoid", "Affine", "LeakyRelu", "ThresholdedRelu",
                           "ScaledTanh", "HardSigmoid", "Elu", "Softsign", "Softplus"}) {
    SCOPED_TRACE(name);
    Case c;
    c.cell = Cell::Rnn;
    c.direction = "bidirectional";
    Fn given = with_defaults(name);
    if (params_of(name) >= 1) given.alpha = name == std::string("ThresholdedRelu") ? 0.3 : 0.6;
    if (params_of(name) >= 2) given.beta = 0.3;
    // Forward takes the given parameters; backward gives none (the defaults' values must come
    // from the lowering) and so has to come last.
    Fn defaults = with_defaults(name);
    defaults.written = false;
    c.functions = {given, defaults};
    check(c);
  }
}

// The stepwise recurrence (a dispatch per step spread over units and batch rows, what large
// hidden sizes get), forced on the small cases: every cell, both layouts, lengths 4, 2 and 0,
// initial states, peepholes, clip, both GRU reset orders, reverse with input_forget, fp16;
// with workgroups that split the 6 units (4 per workgroup) and ones that split the 3 rows
// (64-unit workgroups hold 2).
TEST_F(OnnxRecurrent, StepwiseMatchesTheReference) {
  for (uint32_t units : {4u, 64u}) {
    SCOPED_TRACE("units " + std::to_string(units));
    knobs = {{"recurrent.stepwise", 1}, {"recurrent.units", units}};
    for (Cell cell : {Cell::Lstm, Cell::Gru, Cell::Rnn})
      for (int64_t layout : {0, 1}) {
        SCOPED_TRACE("cell " + std::to_string(static_cast<int>(cell)) + " layout " +
                     std::to_string(layout));
        check(everything(cell, layout));
      }
    Case gru = everything(Cell::Gru, 0);
    gru.linear_before_reset = true;
    check(gru);
    check(reverse_with_input_forget());
  }
  // One dispatch per step (two for GRU without linear_before_reset), after the projection
  // and R's transpose.
  check(everything(Cell::Gru, 0));
  EXPECT_EQ(nodes, 2u + 2 * 4);
  if (context()->features().storage_buffer_16bit) check(everything(Cell::Lstm, 1), 2e-2f, true);
}

TEST_F(OnnxRecurrent, HundredStepsAreOneRecurrentDispatch) {
  Case c;
  c.steps = 100;
  c.batch = 2;
  c.hidden = 40;
  c.input = 16;
  c.initial = true;
  check(c, 1e-4f);
  // Projection GEMM, the transpose of R and the recurrence: not one node per step.
  EXPECT_LE(nodes, 3u);
  EXPECT_EQ(command_buffers, 1u);
}

TEST_F(OnnxRecurrent, Float16Mode) {
  if (!context()->features().storage_buffer_16bit) GTEST_SKIP() << "no 16-bit storage";
  for (Cell cell : {Cell::Lstm, Cell::Gru, Cell::Rnn}) {
    SCOPED_TRACE(static_cast<int>(cell));
    check(everything(cell, 1), 2e-2f, true);
  }
}

// PyTorch's nn.LSTM (two layers, bidirectional, batch first) and nn.GRU with linear heads,
// exported by the legacy exporter with PyTorch's outputs (tools/models/make_recurrent.py).
TEST_F(OnnxRecurrent, PyTorchExportsMatchPyTorch) {
  for (const char* name : {"lstm_seq", "gru_seq"})
    for (bool fp16 : {false, true}) {
      if (fp16 && !context()->features().storage_buffer_16bit) continue;
      SCOPED_TRACE(std::string(name) + (fp16 ? " fp16" : ""));
      const std::string base = std::string(VKGRAPH_SOURCE_DIR) + "/tests/models/" + name;
      HostTensor x = read_npy(base + "_input.npy"), want = read_npy(base + "_output.npy");
      SessionOptions options;
      options.context = context();
      options.fp16 = fp16;
      Session s(base + ".onnx", options);
      expect_near(s.run({{"x", x}})[0], want, fp16 ? 2e-2f : 2e-5f);
    }
}

class OnnxRecurrentErrors : public GpuTest {
 protected:
  void expect_build_error(const ModelBuilder& m, const Feeds& f, ErrorKind kind,
                          std::initializer_list<std::string> needles) {
    expect_error([&] { m.session().run(f.tensors); }, kind, needles);
  }
};

TEST_F(OnnxRecurrentErrors, WrongWeightShapeNamesTheNode) {
  Case c;
  Feeds f = make_feeds(c, rng);
  f.tensors["W"] = random_tensor(rng, DType::Float32, {1, 4 * c.hidden, c.input + 1});
  expect_build_error(model_of(c, f), f, ErrorKind::InvalidArgument,
                     {"LSTM node 'LSTM1'", "W [1, 24, 6] must be [1, 24, 5]"});
}

TEST_F(OnnxRecurrentErrors, UnknownActivationNamesTheNode) {
  Case c;
  c.cell = Cell::Gru;
  Feeds f = make_feeds(c, rng);
  expect_build_error(model_of(c, f, -1, {"Sigmoid", "Swish"}), f, ErrorKind::InvalidArgument,
                     {"GRU node 'GRU1'", "unknown activation 'Swish'"});
}

TEST_F(OnnxRecurrentErrors, HiddenSizeMismatchNamesTheNode) {
  Case c;
  c.cell = Cell::Rnn;
  Feeds f = make_feeds(c, rng);
  expect_build_error(model_of(c, f, c.hidden + 1), f, ErrorKind::InvalidArgument,
                     {"RNN node 'RNN1'", "hidden_size 7 does not match R [1, 6, 6]"});
}

TEST_F(OnnxRecurrentErrors, WrongActivationCountNamesTheNode) {
  Case c;
  Feeds f = make_feeds(c, rng);
  expect_build_error(model_of(c, f, -1, {"Sigmoid", "Tanh"}), f, ErrorKind::InvalidArgument,
                     {"LSTM node 'LSTM1'", "2 activations given, 3 expected"});
}

// The op itself, on shapes alone: the shared-memory bound on hidden_size is a clear Unsupported.
TEST_F(OnnxRecurrentErrors, HiddenSizeAboveTheKernelsLimit) {
  ComputeGraph g{context()};
  ops::RecurrentInputs in;
  in.x = g.add_input({5, 1, 4}, DType::Float32, "x");
  in.w = g.add_input({1, 3 * 1366, 4}, DType::Float32, "w");
  in.r = g.add_input({1, 3 * 1366, 1366}, DType::Float32, "r");
  ops::RecurrentParams p;
  p.cell = ops::RecurrentCell::Gru;
  p.hidden_size = 1366;
  expect_error([&] { ops::recurrent(g, in, p); }, ErrorKind::Unsupported,
               {"gru: hidden_size 1366 above the recurrent kernel's 1365"});
}

}  // namespace
}  // namespace vkgraph::testing
