#include "onnx/fuse_rope.h"

#include <algorithm>

#include "core/shape_rules.h"
#include "onnx/fuse_view.h"
#include "onnx/importer.h"

namespace vkgraph::onnx_import::fuse {
namespace {

using onnx::NodeProto;

// The node that alone reads `value`, of type `op` with `inputs` inputs and one output.
const NodeProto* next_of(const Pass& p, const std::string& value, const char* op, int inputs) {
  const NodeProto* n = p.sole_consumer(value);
  return n && n->op_type() == op && n->domain().empty() && n->input_size() == inputs &&
                 n->output_size() == 1
             ? n
             : nullptr;
}

// A rope of x: its nodes, the first in node order, cos and sin.
struct Match {
  const NodeProto* first = nullptr;
  std::vector<const NodeProto*> nodes;  // the Add last
  std::string cos, sin;
};

// The input of binary `n` that is not `value`, when `n` reads `value` once.
std::optional<int> other_of(const NodeProto& n, const std::string& value) {
  if ((n.input(0) == value) == (n.input(1) == value)) return std::nullopt;
  return n.input(0) == value ? 1 : 0;
}

// Whether input `i` of `n` is a float32 tensor (computed, or a host constant folded ahead if
// need be) that broadcasts to `shape` without growing it, and not x.
bool table(Pass& p, const NodeProto& n, int i, const Shape& shape) {
  const Importer& im = p.importer();
  if (!im.available(n, i)) p.fold_ahead(n.input(i));
  if (!im.available(n, i) || p.elided(n.input(i))) return false;
  const Value& t = im.input(n, i);
  return t.dtype == DType::Float32 && !t.int8_type &&
         shapes::broadcast({&t.shape, &shape}) == std::optional<Shape>(shape);
}

std::optional<Match> match(Pass& p, const std::string& x, const Shape& shape) {
  const Importer& im = p.importer();
  if (p.knob("fuse.rope", 1) == 0 || shape.empty() || shape.back() < 2 || shape.back() % 2 ||
      im.is_model_output(x))
    return std::nullopt;
  const int64_t h = shape.back() / 2;
  const int64_t rank = static_cast<int64_t>(shape.size());
  // The two halves of the last dim, as Slices of x.
  const NodeProto *lo = nullptr, *hi = nullptr;
  Shape half = shape;
  half.back() = h;
  for (const NodeProto* r : im.consumers(x)) {
    if (r->op_type() != "Slice" || !r->domain().empty() || r->input(0) != x ||
        r->output_size() != 1)
      continue;
    const std::optional<Pass::View> v = view_of(p, *r, whole(x, shape));
    if (!v || v->shape != half || (h > 1 && v->strides.back() != 1)) continue;
    if (v->offset == 0 && !lo) lo = r;
    if (v->offset == h && !hi) hi = r;
  }
  if (!lo || !hi) return std::nullopt;
  // rotate_half: Concat(-x2, x1) over the last axis, times sin.
  const NodeProto* neg = next_of(p, hi->output(0), "Neg", 1);
  const NodeProto* cat = neg ? next_of(p, neg->output(0), "Concat", 2) : nullptr;
  if (!cat || p.sole_consumer(lo->output(0)) != cat || cat->input(0) != neg->output(0) ||
      cat->input(1) != lo->output(0))
    return std::nullopt;
  const int64_t axis = p.attrs(*cat).get_int("axis", rank);
  if (axis != -1 && axis != rank - 1) return std::nullopt;
  const NodeProto* mul_sin = next_of(p, cat->output(0), "Mul", 2);
  const std::optional<int> sin = mul_sin ? other_of(*mul_sin, cat->output(0)) : std::nullopt;
  const NodeProto* add = sin ? next_of(p, mul_sin->output(0), "Add", 2) : nullptr;
  const std::optional<int> cos_side = add ? other_of(*add, mul_sin->output(0)) : std::nullopt;
  if (!cos_side) return std::nullopt;
  // x * cos: a Mul reading x that the Add alone reads.
  const std::string& xc = add->input(*cos_side);
  const NodeProto* mul_cos = im.producer(xc);
  if (!mul_cos || mul_cos->op_type() != "Mul" || !mul_cos->domain().empty() ||
      mul_cos->input_size() != 2 || mul_cos->output_size() != 1 || p.sole_consumer(xc) != add)
    return std::nullopt;
  const std::optional<int> cos = other_of(*mul_cos, x);
  if (!cos || !table(p, *mul_cos, *cos, shape) || !table(p, *mul_sin, *sin, shape))
    return std::nullopt;
  Match m;
  for (const NodeProto* r : im.consumers(x))
    if (!m.first && (r == mul_cos || r == lo || r == hi)) m.first = r;
  m.nodes = {mul_cos, lo, hi, neg, cat, mul_sin, add};
  m.cos = mul_cos->input(*cos);
  m.sin = mul_sin->input(*sin);
  return m;
}

}  // namespace

bool reads_for_rope(Pass& p, const NodeProto& reader, const std::string& x, const Shape& shape) {
  const std::optional<Match> m = match(p, x, shape);
  return m && std::find(m->nodes.begin(), m->nodes.begin() + 3, &reader) != m->nodes.begin() + 3;
}

std::optional<Fusion> rope(const NodeProto& root, Pass& p) {
  const int candidates = root.op_type() == "Mul" ? 2 : 1;
  if (root.input_size() < candidates) return std::nullopt;
  for (int i = 0; i < candidates; ++i) {
    const std::string& x = root.input(i);
    if (x.empty() || (!p.view(x) && !p.importer().available(root, i))) continue;
    const Pass::View v = p.resolve(root, i);
    if (v.group != 1) continue;
    const std::optional<Match> m = match(p, x, v.shape);
    if (!m || m->first != &root) continue;
    NodeProto n = fused_node(root, "FusedRope");
    n.add_input(v.source);
    n.add_input(m->cos);
    n.add_input(m->sin);
    n.add_output(m->nodes.back()->output(0));
    // The kernel reads any view through strides, a permutation too.
    Pass::View strided = v;
    strided.perm.clear();
    set_view(n, "x", strided);
    Fusion f;
    for (const NodeProto* c : m->nodes)
      if (c != &root) f.absorbed.push_back(c);
    f.node = std::move(n);
    return f;
  }
  return std::nullopt;
}

}  // namespace vkgraph::onnx_import::fuse
