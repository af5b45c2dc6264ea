#include "onnx/fuse_qdq.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "onnx/importer.h"

namespace vkgraph::onnx_import::fuse {
namespace {

using onnx::NodeProto;

bool default_domain(const NodeProto& n) {
  return n.domain().empty() || n.domain() == "ai.onnx";
}

// The DequantizeLinear that produces `value`, per tensor or per axis (blocked ones stay float).
const NodeProto* dequantize_of(Pass& p, const std::string& value) {
  const NodeProto* n = p.importer().producer(value);
  if (!n || n->op_type() != "DequantizeLinear" || !default_domain(*n) || n->input_size() < 2 ||
      n->output_size() != 1)
    return nullptr;
  return p.attrs(*n).get_int("block_size", 0) == 0 ? n : nullptr;
}

// `value`, or the input of the Identity that produces it: PyTorch's exporter writes an Identity
// where it merged initializers of equal values (the zero biases of a model's squeeze-excitation
// convolutions, say), so a dequantized bias may come through one.
const std::string& through_identity(Pass& p, const std::string& value) {
  const NodeProto* n = p.importer().producer(value);
  return n && n->op_type() == "Identity" && default_domain(*n) && n->input_size() == 1 ? n->input(0)
                                                                                       : value;
}

const HostTensor* float_constant(const Importer& im, const NodeProto& n, size_t i) {
  const HostTensor* t = im.constant(n, i);
  return t && t->dtype == DType::Float32 ? t : nullptr;
}

// Whether input `i` of `n` is an 8-bit value or will be one: declared int8/uint8, or the
// output of a QuantizeLinear not visited yet.
bool eight_bit(const Pass& p, const NodeProto& n, size_t i) {
  const Importer& im = p.importer();
  if (!im.has_input(n, i)) return false;
  if (im.available(n, i)) return im.input(n, i).int8_type.has_value();
  const NodeProto* q = im.producer(n.input(i));
  return q && q->op_type() == "QuantizeLinear" && default_domain(*q);
}

// A (de)quantize node's zero point (input 2): absent, or an 8-bit constant of `count` values.
bool zero_point_ok(const Importer& im, const NodeProto& n, int64_t count) {
  if (!im.has_input(n, 2)) return true;
  const HostTensor* z = im.constant(n, 2);
  return z && im.input(n, 2).int8_type && z->numel() == count;
}

// Scale and zero point of `n` are scalar constants.
// A per-tensor (de)quantization: its `axis` has no effect (ONNX ignores it for a scalar scale),
// and `saturate` applies only to float8, so both count as read for the attribute check.
bool per_tensor(Pass& p, const NodeProto& n) {
  const HostTensor* s = float_constant(p.importer(), n, 1);
  if (!s || s->numel() != 1 || !zero_point_ok(p.importer(), n, 1)) return false;
  p.attrs(n).ignore("axis");
  p.attrs(n).ignore("saturate");
  return true;
}

// A dequantized bias: int32 constant values, scale per tensor or per channel (along the bias's
// one axis), zero point 0.
bool int32_bias(Pass& p, const NodeProto& db, int64_t channels) {
  const Importer& im = p.importer();
  const HostTensor* b = im.constant(db, 0);
  const HostTensor* s = float_constant(im, db, 1);
  if (!b || b->dtype != DType::Int32 || im.input(db, 0).int8_type || b->numel() != channels || !s ||
      (s->numel() != 1 && s->numel() != channels))
    return false;
  const int64_t axis = p.attrs(db).get_int("axis", 1);  // no effect for a scalar scale
  if (s->numel() != 1 && axis != 0 && axis != -1) return false;
  p.attrs(db).ignore("saturate");
  if (!im.has_input(db, 2)) return true;
  const HostTensor* z = im.constant(db, 2);
  if (!z || z->numel() != s->numel()) return false;
  for (int64_t i = 0; i < z->numel(); ++i)
    if (z->as_int(i) != 0) return false;
  return true;
}

// A residual Add after a QDQ Conv (a ResNet block's end): Conv's QuantizeLinear -> DQ ->
// Add(., DQ(r)) [-> Relu | Clip] -> QuantizeLinear, computed in the Conv's epilogue.
struct ResidualMatch {
  const NodeProto* dq_c = nullptr;  // reads the Conv's quantized output
  const NodeProto* add = nullptr;
  const NodeProto* dq_r = nullptr;  // the other operand's
  const NodeProto* act = nullptr;
  float lo = -std::numeric_limits<float>::infinity(), hi = std::numeric_limits<float>::infinity();
  const NodeProto* q_y = nullptr;
  DType out = DType::UInt8;
  bool conv_second = false;  // the Conv's output is the Add's second input
};

// A QDQ unary op reading a node's QuantizeLinear (match_table_after): its DequantizeLinear, the
// op, its Relu / Clip and QuantizeLinear, as match_unary finds them.
struct TableAfter {
  const NodeProto* dq = nullptr;
  const NodeProto* op = nullptr;
  const NodeProto* act = nullptr;
  const NodeProto* q_y = nullptr;
  Activation table;
  float lo, hi;
  DType out;
};

struct Match {
  std::optional<ResidualMatch> residual;
  std::optional<TableAfter> table_after;  // not with `residual`
  std::optional<Activation> table;        // a unary op evaluated per byte value (match_unary)
  const NodeProto* dq_x = nullptr;
  const NodeProto* dq_w = nullptr;
  const NodeProto* dq_b = nullptr;  // a dequantized int32 bias; null for a float one or none
  const NodeProto* act = nullptr;
  float lo = -std::numeric_limits<float>::infinity(), hi = std::numeric_limits<float>::infinity();
  const NodeProto* q_y = nullptr;
  DType out = DType::UInt8;
};

// The output side: [Relu | Clip(constant bounds)] -> QuantizeLinear per tensor.
bool match_output(const NodeProto& root, Pass& p, Match& m) {
  const Importer& im = p.importer();
  const NodeProto* next = p.sole_consumer(root.output(0));
  if (next && next->input_size() >= 1 && next->input(0) == root.output(0) &&
      (next->op_type() == "Relu" || next->op_type() == "Clip") && default_domain(*next)) {
    auto act = activation_of(*next, p.attrs(*next), im);
    if (!act) return false;
    if (act->first == ops::UnaryOp::Relu) {
      m.lo = 0.f;
    } else if (act->first == ops::UnaryOp::Clip) {
      m.lo = act->second.alpha;
      m.hi = act->second.beta;
      if (std::isnan(m.lo) || std::isnan(m.hi)) return false;
    } else {
      return false;
    }
    m.act = next;
    next = p.sole_consumer(next->output(0));
  }
  const std::string& tail = m.act ? m.act->output(0) : root.output(0);
  if (!next || next->op_type() != "QuantizeLinear" || !default_domain(*next) ||
      next->input_size() < 2 || next->input(0) != tail || !per_tensor(p, *next))
    return false;
  const fold::Attrs& qa = p.attrs(*next);
  if (qa.get_int("block_size", 0) != 0) return false;
  const int64_t wanted = qa.get_int("output_dtype", 0);
  if (im.has_input(*next, 2)) {
    if (im.input(*next, 2).four_bit) return false;  // int4 outputs: QuantizeLinear's own range
    m.out = *im.input(*next, 2).int8_type;
    const int64_t declared =
        m.out == DType::Int8 ? onnx::TensorProto::INT8 : onnx::TensorProto::UINT8;
    if (wanted != 0 && wanted != declared) return false;
  } else if (wanted == onnx::TensorProto::INT8) {
    m.out = DType::Int8;
  } else if (wanted != 0 && wanted != onnx::TensorProto::UINT8) {
    return false;
  }
  m.q_y = next;
  return true;
}

std::optional<Match> match_add(const NodeProto& add, Pass& p);

// The residual Add after a Conv's QuantizeLinear `q`, when every node between has no other
// reader and the other operand is computed already (so the Conv's kernel can read it): in a
// ResNet block, the identity for a block's last Conv, or the last Conv's output for a
// downsampling Conv that comes after it.
std::optional<ResidualMatch> match_residual(const NodeProto& q, Pass& p) {
  const Importer& im = p.importer();
  ResidualMatch r;
  r.dq_c = p.sole_consumer(q.output(0));
  if (!r.dq_c || dequantize_of(p, r.dq_c->output(0)) != r.dq_c || r.dq_c->input(0) != q.output(0))
    return std::nullopt;
  r.add = p.sole_consumer(r.dq_c->output(0));
  if (!r.add || r.add->op_type() != "Add") return std::nullopt;
  std::optional<Match> m = match_add(*r.add, p);
  if (!m) return std::nullopt;
  r.dq_r = m->dq_x == r.dq_c ? m->dq_w : m->dq_x;
  if (r.dq_r == r.dq_c || (m->dq_x != r.dq_c && m->dq_w != r.dq_c) || !im.available(*r.dq_r, 0))
    return std::nullopt;
  r.conv_second = m->dq_w == r.dq_c;
  r.act = m->act;
  r.lo = m->lo;
  r.hi = m->hi;
  r.q_y = m->q_y;
  r.out = m->out;
  return r;
}

std::optional<Match> match_unary(const NodeProto& root, Pass& p);

// The QDQ unary op whose DequantizeLinear is the sole reader of QuantizeLinear `q`, itself the
// op's sole reader (as for a residual Add).
std::optional<TableAfter> match_table_after(const NodeProto& q, Pass& p) {
  const NodeProto* dq = p.sole_consumer(q.output(0));
  if (!dq || dequantize_of(p, dq->output(0)) != dq || dq->input(0) != q.output(0))
    return std::nullopt;
  const NodeProto* op = p.sole_consumer(dq->output(0));
  if (!op) return std::nullopt;
  const std::optional<Match> u = match_unary(*op, p);
  if (!u || u->dq_x != dq) return std::nullopt;
  return TableAfter{dq, op, u->act, u->q_y, *u->table, u->lo, u->hi, u->out};
}

// The whole pattern at `root`, or nullopt. Depends only on the model's structure and its
// constants, so the DequantizeLinear nodes before `root` get the answer `root` will get.
std::optional<Match> match(const NodeProto& root, Pass& p) {
  const Importer& im = p.importer();
  const std::string& op = root.op_type();
  const bool conv = op == "Conv", gemm = op == "Gemm", matmul = op == "MatMul";
  if (!default_domain(root) || !(conv || gemm || matmul) || root.input_size() < 2 ||
      root.input_size() > (matmul ? 2 : 3) || root.output_size() != 1)
    return std::nullopt;
  const fold::Attrs& attrs = p.attrs(root);
  bool trans_b = false;
  if (gemm) {
    auto f = [&](const char* name) {
      auto it = attrs.floats.find(name);
      return it == attrs.floats.end() ? 1.f : it->second;
    };
    if (attrs.get_int("transA", 0) != 0 || f("alpha") != 1.f || f("beta") != 1.f)
      return std::nullopt;
    trans_b = attrs.get_int("transB", 0) != 0;
  }
  Match m;
  m.dq_x = dequantize_of(p, root.input(0));
  m.dq_w = dequantize_of(p, root.input(1));
  if (!m.dq_x || !m.dq_w || !eight_bit(p, *m.dq_x, 0) || !per_tensor(p, *m.dq_x) ||
      !eight_bit(p, *m.dq_w, 0))
    return std::nullopt;
  // The weight: a constant (Conv, Gemm) or, for MatMul, possibly an 8-bit device tensor.
  const HostTensor* w = im.constant(*m.dq_w, 0);
  const HostTensor* ws = float_constant(im, *m.dq_w, 1);
  if (!ws || (!w && !matmul)) return std::nullopt;
  int64_t channels = 0, channel_axis = 0;
  if (w) {
    const Shape& s = w->shape;
    if (conv && s.size() != 3 && s.size() != 4) return std::nullopt;
    if (!conv && s.size() != 2) return std::nullopt;
    channel_axis = conv || trans_b ? 0 : 1;
    channels = s[channel_axis];
  }
  if (ws->numel() != 1) {
    // Per output channel: a 1-D scale along the weight's output-channel axis.
    int64_t axis = p.attrs(*m.dq_w).get_int("axis", 1);
    if (w && axis < 0) axis += static_cast<int64_t>(w->shape.size());
    if (!w || ws->shape.size() != 1 || ws->numel() != channels || axis != channel_axis)
      return std::nullopt;
  }
  if (!zero_point_ok(im, *m.dq_w, ws->numel())) return std::nullopt;
  if (im.has_input(root, 2)) {
    m.dq_b = dequantize_of(p, through_identity(p, root.input(2)));
    if (m.dq_b ? !int32_bias(p, *m.dq_b, channels) : false) return std::nullopt;
    if (!m.dq_b) {
      const HostTensor* b = float_constant(im, root, 2);
      if (!b || b->numel() != channels) return std::nullopt;
    }
  }
  if (!match_output(root, p, m)) return std::nullopt;
  if (conv) m.residual = match_residual(*m.q_y, p);
  if (!m.residual) m.table_after = match_table_after(*m.q_y, p);
  return m;
}

// Add | Mul(DequantizeLinear(a), DequantizeLinear(b)) [-> Relu | Clip] -> QuantizeLinear, all
// per tensor: a residual connection, or a squeeze-excitation gate, of a QDQ model. (dq_x, dq_w
// hold a's and b's dequantize.)
std::optional<Match> match_add(const NodeProto& add, Pass& p) {
  if (!default_domain(add) || (add.op_type() != "Add" && add.op_type() != "Mul") ||
      add.input_size() != 2 || add.output_size() != 1)
    return std::nullopt;
  Match m;
  m.dq_x = dequantize_of(p, add.input(0));
  m.dq_w = dequantize_of(p, add.input(1));
  if (!m.dq_x || !m.dq_w || !eight_bit(p, *m.dq_x, 0) || !eight_bit(p, *m.dq_w, 0) ||
      !per_tensor(p, *m.dq_x) || !per_tensor(p, *m.dq_w) || !match_output(add, p, m))
    return std::nullopt;
  return m;
}

// A per-tensor constant's value (a zero point: 0 when absent).
std::optional<double> param_value(const Importer& im, const NodeProto& n, size_t i) {
  if (!im.has_input(n, i)) return 0.0;
  const HostTensor* t = im.constant(n, i);
  if (!t || t->numel() != 1) return std::nullopt;
  return t->dtype == DType::Float32 ? double(t->data<float>()[0]) : double(t->as_int(0));
}

// DequantizeLinear -> MaxPool | GlobalAveragePool | Flatten -> QuantizeLinear, all per tensor.
// MaxPool (no Indices output) and Flatten only with one scale, zero point and type on both
// sides: then they are the bytes' maximum and the bytes themselves, exactly (quantization is
// monotone). GlobalAveragePool requantizes.
std::optional<Match> match_pool(const NodeProto& pool, Pass& p) {
  const Importer& im = p.importer();
  const bool same_params = pool.op_type() == "MaxPool" || pool.op_type() == "Flatten";
  if (!default_domain(pool) || !(same_params || pool.op_type() == "GlobalAveragePool") ||
      pool.input_size() != 1 || pool.output_size() != 1)
    return std::nullopt;
  Match m;
  m.dq_x = dequantize_of(p, pool.input(0));
  if (!m.dq_x || !eight_bit(p, *m.dq_x, 0) || !per_tensor(p, *m.dq_x) ||
      !match_output(pool, p, m) || m.act)
    return std::nullopt;
  if (same_params) {
    // The input's 8-bit type is its zero point's; quantize_static writes them.
    if (!im.has_input(*m.dq_x, 2) || im.input(*m.dq_x, 2).int8_type != m.out ||
        !im.has_input(*m.q_y, 2))
      return std::nullopt;
    for (size_t i : {1, 2})
      if (param_value(im, *m.dq_x, i) != param_value(im, *m.q_y, i)) return std::nullopt;
  }
  return m;
}

// DequantizeLinear -> f [-> Relu | Clip] -> QuantizeLinear, all per tensor, f a unary op that
// unary_on_host evaluates (HardSwish, HardSigmoid, Sigmoid, ...): y is a function of x's byte
// alone, one table of 256 bytes.
std::optional<Match> match_unary(const NodeProto& root, Pass& p) {
  if (!default_domain(root) || root.input_size() < 1 || root.output_size() != 1)
    return std::nullopt;
  auto act = activation_of(root, p.attrs(root), p.importer());
  if (!act || !unary_on_host(act->first, act->second, 0.f)) return std::nullopt;
  Match m;
  m.dq_x = dequantize_of(p, root.input(0));
  if (!m.dq_x || !eight_bit(p, *m.dq_x, 0) || !per_tensor(p, *m.dq_x) || !match_output(root, p, m))
    return std::nullopt;
  m.table = Activation{act->first, act->second};
  return m;
}

std::optional<Match> match_any(const NodeProto& root, Pass& p) {
  const std::string& op = root.op_type();
  if (op == "MaxPool" || op == "GlobalAveragePool" || op == "Flatten") return match_pool(root, p);
  if (op == "Add" || op == "Mul") return match_add(root, p);
  if (op == "Conv" || op == "MatMul" || op == "Gemm") return match(root, p);
  return match_unary(root, p);
}

NodeProto fused_node(const NodeProto& root, const Match& m) {
  NodeProto n;
  n.set_name(root.name());
  n.set_op_type(m.table ? "QdqTable" : "Qdq" + root.op_type());
  n.set_domain(kDomain);
  if (m.table) {
    // The unary op as the epilogue attributes say it (fuse::activation); its own attributes
    // were read into them.
    set_attr(n, "model_op", root.op_type());
    set_attr(n, "activation", static_cast<int64_t>(m.table->op));
    set_attr(n, "activation_params",
             std::vector<float>{m.table->params.alpha, m.table->params.beta});
  }
  // The root's attributes for the fused lowering, less Gemm's alpha, beta and transA: match()
  // took only their defaults, so they have no effect (transB it applies to the weights).
  for (const onnx::AttributeProto& a : root.attribute())
    if (!m.table && (root.op_type() != "Gemm" ||
                     (a.name() != "alpha" && a.name() != "beta" && a.name() != "transA")))
      *n.add_attribute() = a;
  auto input = [](const NodeProto* node, int i) {
    return node && i < node->input_size() ? node->input(i) : std::string();
  };
  const std::string bias = m.dq_b ? m.dq_b->input(0) : input(&root, 2);
  for (const std::string& name :
       {input(m.dq_x, 0), input(m.dq_x, 1), input(m.dq_x, 2), input(m.dq_w, 0), input(m.dq_w, 1),
        input(m.dq_w, 2), input(m.q_y, 1), input(m.q_y, 2), bias, input(m.dq_b, 1)})
    n.add_input(name);
  auto onnx_type = [](DType d) -> int64_t {
    return d == DType::Int8 ? onnx::TensorProto::INT8 : onnx::TensorProto::UINT8;
  };
  if (m.act) {
    set_attr(n, "act_lo", m.lo);
    set_attr(n, "act_hi", m.hi);
  }
  set_attr(n, "y_dtype", onnx_type(m.out));
  if (const auto& r = m.residual) {
    for (const std::string& name :
         {input(r->dq_r, 0), input(r->dq_r, 1), input(r->dq_r, 2), input(r->dq_c, 1),
          input(r->dq_c, 2), input(r->q_y, 1), input(r->q_y, 2)})
      n.add_input(name);
    if (r->act) {
      set_attr(n, "sum_act_lo", r->lo);
      set_attr(n, "sum_act_hi", r->hi);
    }
    set_attr(n, "sum_dtype", onnx_type(r->out));
    if (r->conv_second) set_attr(n, "sum_conv_second", int64_t{1});
    n.add_output(r->q_y->output(0));
    return n;
  }
  if (const auto& t = m.table_after) {
    while (n.input_size() < kQdqTableXScale) n.add_input("");
    for (const std::string& name :
         {input(t->dq, 1), input(t->dq, 2), input(t->q_y, 1), input(t->q_y, 2)})
      n.add_input(name);
    set_attr(n, "table_op", t->op->op_type());
    set_attr(n, "table_activation", static_cast<int64_t>(t->table.op));
    set_attr(n, "table_activation_params",
             std::vector<float>{t->table.params.alpha, t->table.params.beta});
    if (t->act) {
      set_attr(n, "table_act_lo", t->lo);
      set_attr(n, "table_act_hi", t->hi);
    }
    set_attr(n, "table_dtype", onnx_type(t->out));
    n.add_output(t->q_y->output(0));
    return n;
  }
  n.add_output(m.q_y->output(0));
  return n;
}

}  // namespace

std::optional<Fusion> qdq_linear(const NodeProto& root, Pass& p) {
  std::optional<Match> m = match_any(root, p);
  if (!m) {
    // Its DequantizeLinear inputs were elided only because this node matched then. (A Mul may
    // read values a quantize_dynamic fusion elided: fuse_dynamic_quant.h answers for those.)
    if (root.op_type() == "Mul") return std::nullopt;
    for (const std::string& in : root.input())
      if (p.is_elided_dequantized(in))
        throw Error(ErrorKind::InvalidState,
                    p.importer().where(root) + ": input '" + in +
                        "' was elided for an integer kernel the node no longer matches");
    return std::nullopt;
  }
  Fusion f;
  if (m->act) f.absorbed.push_back(m->act);
  f.absorbed.push_back(m->q_y);
  if (const auto& r = m->residual) {
    for (const NodeProto* n : {r->dq_c, r->add, r->act, r->q_y})
      if (n) f.absorbed.push_back(n);
  }
  if (const auto& t = m->table_after) {
    for (const NodeProto* n : {t->dq, t->op, t->act, t->q_y})
      if (n) f.absorbed.push_back(n);
  }
  f.node = fused_node(root, *m);
  return f;
}

std::optional<float> unary_on_host(ops::UnaryOp op, const ops::UnaryParams& p, float v) {
  using U = ops::UnaryOp;
  auto clamp_nan = [](float x, float lo, float hi) {
    return std::isnan(x) ? x : std::min(std::max(x, lo), hi);
  };
  const double d = v;
  switch (op) {
    // Piecewise linear: float32 arithmetic, as the float kernels compute it (unary.comp).
    case U::Relu:
      return std::isnan(v) ? v : std::max(v, 0.f);
    case U::LeakyRelu:
      return v >= 0.f ? v : p.alpha * v;
    case U::ThresholdedRelu:
      return v > p.alpha ? v : 0.f;
    case U::Clip:
      return clamp_nan(v, p.alpha, p.beta);
    case U::HardSigmoid:
      return clamp_nan(p.alpha * v + p.beta, 0.f, 1.f);
    case U::HardSwish:
      return v * clamp_nan(v * (1.f / 6.f) + 0.5f, 0.f, 1.f);
    case U::Neg:
      return -v;
    case U::Abs:
      return std::fabs(v);
    case U::Softsign:
      return v / (1.f + std::fabs(v));
    // Transcendental: in double, rounded once.
    case U::Sigmoid:
      return static_cast<float>(1.0 / (1.0 + std::exp(-d)));
    case U::Silu:
      return static_cast<float>(d / (1.0 + std::exp(-d)));
    case U::Tanh:
      return static_cast<float>(std::tanh(d));
    case U::Exp:
      return static_cast<float>(std::exp(d));
    case U::Erf:
      return static_cast<float>(std::erf(d));
    case U::Gelu:
      return static_cast<float>(0.5 * d * std::erfc(-d / std::sqrt(2.0)));
    case U::Softplus:
      return static_cast<float>(d > 30 ? d : std::log1p(std::exp(d)));
    case U::Elu:
      return v > 0.f ? v : static_cast<float>(p.alpha * std::expm1(d));
    case U::Selu:
      return static_cast<float>(p.beta * (v > 0.f ? d : p.alpha * std::expm1(d)));
    default:
      return std::nullopt;
  }
}

// An Identity that forwards `dq`'s output (through_identity): one input, not a model output.
bool forwards(const Importer& im, const NodeProto& n, const NodeProto& dq) {
  return n.op_type() == "Identity" && default_domain(n) && n.input_size() == 1 &&
         n.output_size() == 1 && n.input(0) == dq.output(0) && !im.is_model_output(n.output(0));
}

std::optional<Fusion> qdq_dequantize(const NodeProto& dq, Pass& p) {
  const Importer& im = p.importer();
  if (dq.output_size() != 1 || im.is_model_output(dq.output(0))) return std::nullopt;
  // Every reader is an integer kernel that reads dq's input instead, or an Identity through
  // which such kernels read it as their bias (through_identity): elided too
  // (qdq_forwarded_bias), so that neither runs.
  auto fused = [&](const NodeProto& r, bool bias_only) {
    std::optional<Match> m = match_any(r, p);
    return m && (m->dq_b == &dq || (!bias_only && (m->dq_x == &dq || m->dq_w == &dq)));
  };
  const auto& readers = im.consumers(dq.output(0));
  if (readers.empty()) return std::nullopt;
  std::vector<const NodeProto*> identities;
  for (const NodeProto* r : readers) {
    if (!forwards(im, *r, dq)) {
      if (!fused(*r, false)) return std::nullopt;
      continue;
    }
    const auto& biased = im.consumers(r->output(0));
    if (biased.empty()) return std::nullopt;
    for (const NodeProto* b : biased)
      if (!fused(*b, true)) return std::nullopt;
    identities.push_back(r);
  }
  p.elide_dequantized(dq.output(0));
  for (const NodeProto* id : identities) p.elide_dequantized(id->output(0));
  return Fusion{};
}

std::optional<Fusion> qdq_forwarded_bias(const NodeProto& identity, Pass& p) {
  if (identity.output_size() != 1 || !p.is_elided_dequantized(identity.output(0)))
    return std::nullopt;
  return Fusion{};
}

}  // namespace vkgraph::onnx_import::fuse
