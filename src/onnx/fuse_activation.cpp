#include "onnx/fuse_activation.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "onnx/importer.h"

namespace vkgraph::onnx_import::fuse {
namespace {

using onnx::NodeProto;

// The exporters write these constants as float32; a relative tolerance of 1e-5 accepts them
// rounded either way and nothing that would change the function.
bool near(float v, double want) {
  return std::abs(v - want) <= 1e-5 * std::abs(want);
}

// Matches one chain ending at a given node, collecting the nodes it walks through.
class ChainMatcher {
 public:
  ChainMatcher(const Pass& p, const std::string& x, size_t rank)
      : im_(p.importer()), x_(x), rank_(rank) {}

  std::vector<const NodeProto*> nodes;

  // An operand of a chain node: input `index` of `reader`.
  struct Leaf {
    const NodeProto* reader;
    int index;
    const std::string& value() const { return reader->input(index); }
  };

  // The float32 scalar constant a leaf reads, if it is one that does not broadcast x up.
  std::optional<float> scalar(const Leaf& l) const {
    const HostTensor* c = im_.constant(*l.reader, l.index);
    if (!c || c->dtype != DType::Float32 || c->numel() != 1 || c->shape.size() > rank_)
      return std::nullopt;
    return c->data<float>()[0];
  }

  // The node computing `value` when the chain may absorb it: one reader, not a model output,
  // of type `op` with `inputs` inputs.
  const NodeProto* interior(const std::string& value, const char* op, int inputs) const {
    if (value == x_ || im_.is_model_output(value) || im_.consumers(value).size() != 1)
      return nullptr;
    const NodeProto* n = im_.producer(value);
    if (!n || n->op_type() != op || n->input_size() != inputs || n->output_size() != 1)
      return nullptr;
    // A node already absorbed means a cycle (a malformed graph whose node reads its own output).
    if (std::find(nodes.begin(), nodes.end(), n) != nodes.end()) return nullptr;
    return n;
  }

  // The operands of the product that `mul` computes, looking through the Muls among them that
  // the chain may absorb.
  void factors(const NodeProto& mul, std::vector<Leaf>& out) {
    nodes.push_back(&mul);
    for (int i = 0; i < 2; ++i) {
      if (const NodeProto* inner = interior(mul.input(i), "Mul", 2))
        factors(*inner, out);
      else
        out.push_back({&mul, i});
    }
  }

  // A product as its operands: how often x, the product of the scalar constants, and the rest.
  struct Product {
    int xs = 0;
    double constant = 1.0;
    std::vector<Leaf> others;
  };
  Product product(const NodeProto& mul) {
    std::vector<Leaf> leaves;
    factors(mul, leaves);
    Product p;
    for (const Leaf& l : leaves) {
      if (l.value() == x_)
        ++p.xs;
      else if (auto v = scalar(l))
        p.constant *= *v;
      else
        p.others.push_back(l);
    }
    return p;
  }
  // `mul` computes x^xs * constant * (one other operand, returned).
  std::optional<Leaf> product_with(const NodeProto& mul, int xs, double constant) {
    Product p = product(mul);
    if (p.xs != xs || !near(static_cast<float>(p.constant), constant) || p.others.size() != 1)
      return std::nullopt;
    return p.others[0];
  }

  // The node of `op` that a leaf reads, absorbed.
  const NodeProto* unary(const Leaf& l, const char* op) {
    const NodeProto* n = interior(l.value(), op, 1);
    if (n) nodes.push_back(n);
    return n;
  }
  // The Add of a scalar near `constant` that a leaf reads, absorbed; its other operand.
  std::optional<Leaf> add_constant(const Leaf& l, double constant) {
    const NodeProto* add = interior(l.value(), "Add", 2);
    if (!add) return std::nullopt;
    nodes.push_back(add);
    for (int i = 0; i < 2; ++i)
      if (auto v = scalar({add, i}); v && near(*v, constant)) return Leaf{add, 1 - i};
    return std::nullopt;
  }

  // x / sqrt(2) or x * (1 / sqrt(2)), ending at the value `l` reads.
  bool erf_argument(const Leaf& l) {
    if (const NodeProto* div = interior(l.value(), "Div", 2)) {
      nodes.push_back(div);
      auto c = scalar({div, 1});
      return div->input(0) == x_ && c && near(*c, std::sqrt(2.0));
    }
    const NodeProto* mul = interior(l.value(), "Mul", 2);
    if (!mul) return false;
    Product p = product(*mul);
    return p.xs == 1 && p.others.empty() &&
           near(static_cast<float>(p.constant), 1 / std::sqrt(2.0));
  }

  // 0.5 * x * (1 + Erf(x / sqrt(2))), ending at `end`.
  bool gelu_erf(const NodeProto& end) {
    auto bracket = product_with(end, 1, 0.5);
    if (!bracket) return false;
    auto erf_out = add_constant(*bracket, 1.0);
    if (!erf_out) return false;
    const NodeProto* erf = unary(*erf_out, "Erf");
    return erf && erf_argument({erf, 0});
  }

  // Pow(x, 3), read by a leaf.
  bool pow3(const Leaf& l) {
    const NodeProto* pow = interior(l.value(), "Pow", 2);
    if (!pow) return false;
    nodes.push_back(pow);
    auto e = scalar({pow, 1});
    return pow->input(0) == x_ && e && *e == 3.f;
  }

  // x * Sigmoid(x), ending at `end`.
  bool silu(const NodeProto& end) {
    auto s = product_with(end, 1, 1.0);
    const NodeProto* sigmoid = s ? unary(*s, "Sigmoid") : nullptr;
    return sigmoid && sigmoid->input(0) == x_;
  }

  // 0.5 * x * (1 + Tanh(sqrt(2 / pi) * (x + 0.044715 * x^3))), ending at `end`.
  bool gelu_tanh(const NodeProto& end) {
    auto bracket = product_with(end, 1, 0.5);
    if (!bracket) return false;
    auto tanh_out = add_constant(*bracket, 1.0);
    if (!tanh_out) return false;
    const NodeProto* tanh = unary(*tanh_out, "Tanh");
    const NodeProto* scaled = tanh ? interior(tanh->input(0), "Mul", 2) : nullptr;
    if (!scaled) return false;
    auto sum_out = product_with(*scaled, 0, std::sqrt(2.0 / std::numbers::pi));
    const NodeProto* sum = sum_out ? interior(sum_out->value(), "Add", 2) : nullptr;
    if (!sum) return false;
    nodes.push_back(sum);
    const int x_side = sum->input(0) == x_ ? 0 : sum->input(1) == x_ ? 1 : -1;
    const NodeProto* term = x_side < 0 ? nullptr : interior(sum->input(1 - x_side), "Mul", 2);
    if (!term) return false;
    // 0.044715 * x^3: x * x * x, or Pow(x, 3).
    Product cubed = product(*term);
    if (!near(static_cast<float>(cubed.constant), 0.044715)) return false;
    if (cubed.xs == 3) return cubed.others.empty();
    return cubed.xs == 0 && cubed.others.size() == 1 && pow3(cubed.others[0]);
  }

 private:
  const Importer& im_;
  const std::string& x_;
  size_t rank_;
};

}  // namespace

std::optional<DecomposedActivation> decomposed_activation(const Pass& pass, const std::string& x,
                                                          size_t rank) {
  const Importer& im = pass.importer();
  // The chain ends at a Mul a few single-reader steps after a reader of x.
  std::vector<const NodeProto*> ends;
  for (const NodeProto* reader : im.consumers(x)) {
    const NodeProto* n = reader;
    for (int step = 0; n && step < 8; ++step) {
      if (n->op_type() == "Mul" && n->input_size() == 2 && n->output_size() == 1 &&
          std::find(ends.begin(), ends.end(), n) == ends.end())
        ends.push_back(n);
      n = n->output_size() == 1 ? pass.sole_consumer(n->output(0)) : nullptr;
    }
  }
  for (const NodeProto* end : ends) {
    for (ops::UnaryOp op : {ops::UnaryOp::Gelu, ops::UnaryOp::GeluTanh, ops::UnaryOp::Silu}) {
      ChainMatcher m(pass, x, rank);
      const bool found = op == ops::UnaryOp::Gelu       ? m.gelu_erf(*end)
                         : op == ops::UnaryOp::GeluTanh ? m.gelu_tanh(*end)
                                                        : m.silu(*end);
      if (!found) continue;
      // The end first in `nodes`: put it last, where a Fusion keeps its output node.
      std::rotate(m.nodes.begin(), m.nodes.begin() + 1, m.nodes.end());
      return DecomposedActivation{op, std::move(m.nodes)};
    }
  }
  return std::nullopt;
}

bool reads_all_of(const DecomposedActivation& chain, const Pass& pass, const std::string& x) {
  if (pass.importer().is_model_output(x)) return false;
  for (const NodeProto* r : pass.importer().consumers(x))
    if (std::find(chain.nodes.begin(), chain.nodes.end(), r) == chain.nodes.end()) return false;
  return true;
}

std::optional<Fusion> activation_chain(const NodeProto& root, Pass& p) {
  const Importer& im = p.importer();
  for (int i = 0; i < root.input_size(); ++i) {
    if (!im.available(root, i) || im.constant(root, i)) continue;
    const Value& x = im.input(root, i);
    if (x.dtype != DType::Float32) continue;
    auto chain = decomposed_activation(p, root.input(i), x.shape.size());
    // SiLU has no ONNX op to become; alone it stays Sigmoid and Mul.
    if (!chain || chain->op == ops::UnaryOp::Silu) continue;
    // Only from the chain's first node in model order: the first of x's readers in it.
    const NodeProto* first = nullptr;
    for (const NodeProto* r : im.consumers(root.input(i)))
      if (!first && std::find(chain->nodes.begin(), chain->nodes.end(), r) != chain->nodes.end())
        first = r;
    if (first != &root) continue;
    NodeProto n;
    n.set_name(root.name());
    n.set_op_type("Gelu");
    n.add_input(root.input(i));
    n.add_output(chain->nodes.back()->output(0));
    if (chain->op == ops::UnaryOp::GeluTanh) set_attr(n, "approximate", std::string("tanh"));
    Fusion f;
    for (const NodeProto* c : chain->nodes)
      if (c != &root) f.absorbed.push_back(c);
    f.node = std::move(n);
    return f;
  }
  return std::nullopt;
}

}  // namespace vkgraph::onnx_import::fuse
