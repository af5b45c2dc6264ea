// Einsum, lowered at load time into ops that exist: ReduceSum for indices only one operand
// has and the output lacks, Transpose to bring indices into (batch, kept, contracted) order,
// Reshape to fold each group into one dim, then MatMul (or a broadcasting Mul when nothing is
// contracted), and a final Reshape + Transpose into the output's order. As everywhere in
// einsum, indices (ellipsis dims included) that the output leaves out are summed. One or two
// operands; three or more are refused. An index repeated within one operand takes the diagonal
// first: the two dims moved last, viewed as one and gathered at the positions k * (n + 1).
#include <algorithm>
#include <cctype>
#include <numeric>
#include <string>

#include "onnx/importer.h"
#include "vkgraph/error.h"

namespace vkgraph::onnx_import {
namespace {

// Indices are letters, named by their character code; the dims that '...' stands for get
// kEllipsis + their position among the broadcast ellipsis dims.
constexpr int kEllipsis = 128;
using Labels = std::vector<int>;

struct Equation {
  std::vector<Labels> inputs;
  Labels output;
};

class EquationParser {
 public:
  EquationParser(Importer& im, const onnx::NodeProto& node, std::string text)
      : im_(im), node_(node), text_(std::move(text)) {}

  Equation parse(const std::vector<size_t>& ranks) {
    std::string eq;
    for (char ch : text_)
      if (ch != ' ') eq += ch;
    size_t arrow = eq.find("->");
    std::string lhs = eq.substr(0, arrow);
    std::vector<std::string> terms{""};
    for (char ch : lhs) {
      if (ch == ',')
        terms.emplace_back();
      else
        terms.back().push_back(ch);
    }
    if (terms.size() != ranks.size())
      bad(std::to_string(terms.size()) + " operand terms for " + std::to_string(ranks.size()) +
          " inputs");
    Equation e;
    std::vector<int> ellipsis_dims, ellipsis_at_of;
    for (size_t i = 0; i < terms.size(); ++i) {
      auto [letters, ellipsis_at] = letters_of(terms[i], "operand " + std::to_string(i));
      int64_t extra = static_cast<int64_t>(ranks[i]) - static_cast<int64_t>(letters.size());
      if (extra < 0 || (ellipsis_at < 0 && extra != 0))
        bad("operand " + std::to_string(i) + " '" + terms[i] + "' does not match its rank " +
            std::to_string(ranks[i]));
      e.inputs.push_back(letters);
      ellipsis_dims.push_back(ellipsis_at < 0 ? -1 : static_cast<int>(extra));
      ellipsis_at_of.push_back(ellipsis_at);
    }
    // Ellipsis dims broadcast right-aligned, as in numpy.
    int ellipsis_rank = std::max(0, *std::max_element(ellipsis_dims.begin(), ellipsis_dims.end()));
    for (size_t i = 0; i < e.inputs.size(); ++i) {
      if (ellipsis_dims[i] < 0) continue;
      Labels dims;
      for (int d = 0; d < ellipsis_dims[i]; ++d)
        dims.push_back(kEllipsis + ellipsis_rank - ellipsis_dims[i] + d);
      e.inputs[i].insert(e.inputs[i].begin() + ellipsis_at_of[i], dims.begin(), dims.end());
    }
    Labels all_ellipsis(ellipsis_rank);
    std::iota(all_ellipsis.begin(), all_ellipsis.end(), kEllipsis);
    if (arrow == std::string::npos) {
      // Implicit output: the ellipsis dims, then the indices used once, alphabetically.
      e.output = all_ellipsis;
      for (int c = 0; c < kEllipsis; ++c) {
        int uses = 0;
        for (const Labels& in : e.inputs)
          uses += static_cast<int>(std::count(in.begin(), in.end(), c));
        if (uses == 1) e.output.push_back(c);
      }
      return e;
    }
    auto [letters, ellipsis_at] = letters_of(eq.substr(arrow + 2), "the output");
    for (size_t a = 0; a < letters.size(); ++a) {
      // A copy for the lambda: clang before 16 cannot capture a structured binding.
      const auto label = letters[a];
      bool known = std::any_of(e.inputs.begin(), e.inputs.end(), [label](const Labels& in) {
        return std::count(in.begin(), in.end(), label) > 0;
      });
      if (!known || std::count(letters.begin(), letters.end(), letters[a]) > 1)
        bad("output index '" + std::string(1, static_cast<char>(letters[a])) +
            "' is repeated or in no operand");
    }
    if (ellipsis_at >= 0)
      letters.insert(letters.begin() + ellipsis_at, all_ellipsis.begin(), all_ellipsis.end());
    e.output = letters;
    return e;
  }

 private:
  // The letters of one term and where its '...' stands among them (-1: none).
  std::pair<Labels, int> letters_of(const std::string& term, const std::string& what) {
    Labels letters;
    int ellipsis_at = -1;
    for (size_t i = 0; i < term.size(); ++i) {
      if (term.compare(i, 3, "...") == 0 && ellipsis_at < 0) {
        ellipsis_at = static_cast<int>(letters.size());
        i += 2;
      } else if (std::isalpha(static_cast<unsigned char>(term[i]))) {
        letters.push_back(term[i]);
      } else {
        bad(what + " '" + term + "' has an unexpected '" + term[i] + "'");
      }
    }
    return {letters, ellipsis_at};
  }
  [[noreturn]] void bad(const std::string& problem) const {
    throw Error(ErrorKind::ModelFormat,
                im_.where(node_) + ": equation '" + text_ + "': " + problem);
  }

  Importer& im_;
  const onnx::NodeProto& node_;
  std::string text_;
};

bool contains(const Labels& labels, int label) {
  return std::find(labels.begin(), labels.end(), label) != labels.end();
}

// A device tensor with the index of each of its dims.
struct Operand {
  TensorRef tensor;
  Labels labels;
};

Shape shape_of(ComputeGraph& g, const Operand& x) {
  return g.info(x.tensor).shape;
}

// Sums `x` over the dims whose labels `drop` selects; `keep_dims` leaves them as size 1.
template <typename Pred>
Operand sum_over(ComputeGraph& g, Operand x, Pred drop, bool keep_dims) {
  std::vector<int64_t> axes;
  Labels kept;
  for (size_t d = 0; d < x.labels.size(); ++d) {
    bool dropped = drop(x.labels[d]);
    if (dropped) axes.push_back(static_cast<int64_t>(d));
    if (!dropped || keep_dims) kept.push_back(x.labels[d]);
  }
  if (axes.empty()) return x;
  return {ops::reduce(g, ops::ReduceOp::Sum, x.tensor, axes, keep_dims), kept};
}

// Replaces each pair of dims of `x` with the same label by their diagonal (one dim, last).
Operand take_diagonals(Importer& im, const onnx::NodeProto& node, Operand x) {
  ComputeGraph& g = im.graph();
  for (;;) {
    size_t p = 0, q = 0;
    for (size_t a = 0; a < x.labels.size() && q == 0; ++a)
      for (size_t b = a + 1; b < x.labels.size() && q == 0; ++b)
        if (x.labels[a] == x.labels[b]) p = a, q = b;
    if (q == 0) return x;
    const Shape shape = shape_of(g, x);
    const int64_t n = shape[p];
    if (shape[q] != n)
      throw Error(ErrorKind::InvalidArgument, im.where(node) + ": index '" +
                                                  std::string(1, static_cast<char>(x.labels[p])) +
                                                  "' has sizes " + std::to_string(n) + " and " +
                                                  std::to_string(shape[q]) + " within one operand");
    std::vector<int64_t> perm;
    Labels labels;
    Shape flat;
    for (size_t d = 0; d < shape.size(); ++d)
      if (d != p && d != q) {
        perm.push_back(static_cast<int64_t>(d));
        labels.push_back(x.labels[d]);
        flat.push_back(shape[d]);
      }
    perm.insert(perm.end(), {static_cast<int64_t>(p), static_cast<int64_t>(q)});
    labels.push_back(x.labels[p]);
    flat.push_back(n * n);
    std::vector<int64_t> diagonal(static_cast<size_t>(n));
    for (int64_t k = 0; k < n; ++k) diagonal[k] = k * (n + 1);
    TensorRef moved = g.add_view(ops::transpose(g, x.tensor, perm), flat);
    TensorRef positions = g.add_constant(HostTensor::from(DType::Int64, {n}, diagonal));
    x = {ops::gather(g, moved, positions, static_cast<int64_t>(flat.size()) - 1), labels};
  }
}

// Reorders `x`'s dims to `order` (a permutation of its labels).
Operand permute(ComputeGraph& g, const Operand& x, const Labels& order) {
  std::vector<int64_t> perm;
  for (int label : order)
    perm.push_back(std::find(x.labels.begin(), x.labels.end(), label) - x.labels.begin());
  bool identity = true;
  for (size_t i = 0; i < perm.size(); ++i) identity &= perm[i] == static_cast<int64_t>(i);
  return {identity ? x.tensor : ops::transpose(g, x.tensor, perm), order};
}

int64_t size_of(ComputeGraph& g, const Operand& x, int label) {
  return shape_of(g, x)[std::find(x.labels.begin(), x.labels.end(), label) - x.labels.begin()];
}

int64_t product(ComputeGraph& g, const Operand& x, const Labels& labels) {
  int64_t p = 1;
  for (int label : labels) p *= size_of(g, x, label);
  return p;
}

// Two operands, each already free of indices that neither the other nor the output has.
Operand contract(Importer& im, const onnx::NodeProto& node, Operand a, Operand b,
                 const Labels& output) {
  ComputeGraph& g = im.graph();
  Labels batch, kept_a, kept_b, summed;
  for (int label : output) {
    bool in_a = contains(a.labels, label), in_b = contains(b.labels, label);
    (in_a && in_b ? batch : in_a ? kept_a : kept_b).push_back(label);
  }
  for (int label : a.labels)
    if (!contains(output, label)) summed.push_back(label);
  // A contracted index of size 1 on one side broadcasts: sum it on the other side first.
  for (int label : summed) {
    int64_t sa = size_of(g, a, label), sb = size_of(g, b, label);
    if (sa == sb) continue;
    if (sa != 1 && sb != 1)
      im.fail(node, "index '" + std::string(1, static_cast<char>(label)) + "' has sizes " +
                        std::to_string(sa) + " and " + std::to_string(sb));
    Operand& wide = sa == 1 ? b : a;
    wide = sum_over(
        g, wide, [&](int l) { return l == label; }, true);
  }
  a = permute(g, a, [&] {
    Labels order = batch;
    order.insert(order.end(), kept_a.begin(), kept_a.end());
    order.insert(order.end(), summed.begin(), summed.end());
    return order;
  }());
  b = permute(g, b, [&] {
    Labels order = batch;
    order.insert(order.end(), summed.begin(), summed.end());
    order.insert(order.end(), kept_b.begin(), kept_b.end());
    return order;
  }());
  Shape sa = shape_of(g, a), sb = shape_of(g, b);
  Shape a2(sa.begin(), sa.begin() + batch.size()), b2(sb.begin(), sb.begin() + batch.size());
  int64_t m = product(g, a, kept_a), n = product(g, b, kept_b), k = product(g, a, summed);
  a2.insert(a2.end(), {m, k});
  b2.insert(b2.end(), {k, n});
  TensorRef ta = g.add_view(a.tensor, a2), tb = g.add_view(b.tensor, b2);
  TensorRef y;
  if (summed.empty()) {
    // An outer product per batch entry: [.., M, 1] * [.., 1, N] broadcasts.
    y = ops::binary(g, ops::BinaryOp::Mul, ta, tb);
  } else {
    if (g.info(ta).dtype != DType::Float32) im.fail(node, "contraction needs float32 operands");
    y = ops::matmul(g, ta, tb);
  }
  Shape ys = g.info(y).shape;
  ys.resize(ys.size() - 2);
  for (int label : kept_a) ys.push_back(size_of(g, a, label));
  for (int label : kept_b) ys.push_back(size_of(g, b, label));
  Labels labels = batch;
  labels.insert(labels.end(), kept_a.begin(), kept_a.end());
  labels.insert(labels.end(), kept_b.begin(), kept_b.end());
  return {g.add_view(y, ys), labels};
}

std::vector<Value> lower_einsum(Importer& im, const onnx::NodeProto& node, const fold::Attrs& a) {
  auto it = a.strings.find("equation");
  if (it == a.strings.end()) im.fail(node, "missing attribute equation");
  const std::string& text = it->second;
  size_t inputs = im.num_inputs(node);
  if (inputs < 1 || inputs > 2)
    im.fail(node, "equation '" + text + "' has " + std::to_string(inputs) +
                      " operands; only one or two are supported");
  std::vector<size_t> ranks;
  for (size_t i = 0; i < inputs; ++i) ranks.push_back(im.input(node, i).shape.size());
  Equation e = EquationParser(im, node, text).parse(ranks);

  ComputeGraph& g = im.graph();
  std::vector<Operand> operands;
  for (size_t i = 0; i < inputs; ++i) {
    // Indices only this operand has, and the output lacks, are summed right away.
    auto alone = [&](int label) {
      if (contains(e.output, label)) return false;
      for (size_t j = 0; j < inputs; ++j)
        if (j != i && contains(e.inputs[j], label)) return false;
      return true;
    };
    operands.push_back(
        sum_over(g, take_diagonals(im, node, {im.tensor(node, i), e.inputs[i]}), alone, false));
  }
  Operand y = inputs == 1 ? operands[0] : contract(im, node, operands[0], operands[1], e.output);
  return {Importer::device_value(g, permute(g, y, e.output).tensor)};
}

}  // namespace

void register_einsum(LoweringTable& t) {
  t["Einsum"] = lower_einsum;
}

}  // namespace vkgraph::onnx_import
