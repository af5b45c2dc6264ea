#include "onnx/fuse_dynamic_quant.h"

#include <set>

#include "onnx/fuse_siblings.h"
#include "onnx/importer.h"
#include "vkgraph/ops/matmul.h"

namespace vkgraph::onnx_import::fuse {
namespace {

using onnx::NodeProto;

bool default_op(const NodeProto* n, const char* op) {
  return n && n->op_type() == op && (n->domain().empty() || n->domain() == "ai.onnx");
}

// One layer, from its MatMulInteger.
struct Layer {
  const NodeProto* dql = nullptr;
  const NodeProto* mmi = nullptr;
  const NodeProto* cast = nullptr;
  const NodeProto* scale_mul = nullptr;  // Mul(x_scale, w_scale)
  const NodeProto* mul = nullptr;        // Mul(cast, scale product)
  const NodeProto* add = nullptr;        // Add(., bias), optional
  std::string w_scale, bias;
};

// A float32 constant of one value or of `n` values along the last axis ([n]).
bool column_param(const Importer& im, const NodeProto& node, size_t i, int64_t n, bool scalar_ok) {
  const HostTensor* t = im.constant(node, i);
  if (!t || t->dtype != DType::Float32) return false;
  if (scalar_ok && t->numel() == 1 && t->shape.size() <= 1) return true;
  return t->shape == Shape{n};
}

// The layer whose MatMulInteger is `mmi`, from the model's structure and constants only, so
// that its DynamicQuantizeLinear (visited first) gets the answer the layer will get.
std::optional<Layer> match_layer(const NodeProto& mmi, Pass& p) {
  const Importer& im = p.importer();
  if (!default_op(&mmi, "MatMulInteger") || mmi.input_size() < 3 || mmi.input_size() > 4 ||
      mmi.output_size() != 1)
    return std::nullopt;
  Layer l;
  l.mmi = &mmi;
  l.dql = im.producer(mmi.input(0));
  if (!default_op(l.dql, "DynamicQuantizeLinear") || l.dql->output_size() != 3 ||
      l.dql->input_size() != 1 || mmi.input(0) != l.dql->output(0) ||
      mmi.input(2) != l.dql->output(2))
    return std::nullopt;
  // The weight: an 8-bit [K, N] constant; its zero point absent or a constant per tensor or
  // per column.
  const HostTensor* w = im.constant(mmi, 1);
  if (!w || w->shape.size() != 2 || !im.input(mmi, 1).int8_type || im.input(mmi, 1).four_bit)
    return std::nullopt;
  const int64_t n = w->shape[1];
  if (im.has_input(mmi, 3)) {
    const HostTensor* z = im.constant(mmi, 3);
    if (!z || !im.input(mmi, 3).int8_type || (z->numel() != 1 && z->shape != Shape{n}))
      return std::nullopt;
  }
  l.cast = p.sole_consumer(mmi.output(0));
  if (!default_op(l.cast, "Cast") || l.cast->output_size() != 1) return std::nullopt;
  p.attrs(*l.cast).ignore("saturate");  // float8 only
  if (p.attrs(*l.cast).get_int("to", 0) != onnx::TensorProto::FLOAT) return std::nullopt;
  l.mul = p.sole_consumer(l.cast->output(0));
  if (!default_op(l.mul, "Mul") || l.mul->input_size() != 2 || l.mul->input(0) == l.mul->input(1))
    return std::nullopt;
  const std::string& product = l.mul->input(l.mul->input(0) == l.cast->output(0) ? 1 : 0);
  l.scale_mul = im.producer(product);
  if (!default_op(l.scale_mul, "Mul") || l.scale_mul->input_size() != 2 ||
      p.sole_consumer(product) != l.mul)
    return std::nullopt;
  const int x_at = l.scale_mul->input(0) == l.dql->output(1) ? 0 : 1;
  if (l.scale_mul->input(x_at) != l.dql->output(1) ||
      !column_param(im, *l.scale_mul, 1 - x_at, n, true))
    return std::nullopt;
  l.w_scale = l.scale_mul->input(1 - x_at);
  const NodeProto* add = p.sole_consumer(l.mul->output(0));
  if (default_op(add, "Add") && add->input_size() == 2 && add->input(0) != add->input(1)) {
    const int b_at = add->input(0) == l.mul->output(0) ? 1 : 0;
    if (column_param(im, *add, b_at, n, false)) {
      l.add = add;
      l.bias = add->input(b_at);
    }
  }
  return l;
}

// Whether every reader of `dql`'s outputs is a layer that reads it as such.
bool all_readers_are_layers(const NodeProto& dql, Pass& p) {
  const Importer& im = p.importer();
  if (dql.output_size() != 3) return false;
  for (const std::string& out : dql.output())
    if (out.empty() || im.is_model_output(out)) return false;
  std::set<const NodeProto*> mmis, scale_muls;
  for (const NodeProto* r : im.consumers(dql.output(0))) {
    std::optional<Layer> l = match_layer(*r, p);
    if (!l || l->dql != &dql) return false;
    mmis.insert(l->mmi);
    scale_muls.insert(l->scale_mul);
  }
  if (mmis.empty()) return false;
  for (const NodeProto* r : im.consumers(dql.output(2)))
    if (!mmis.count(r)) return false;
  for (const NodeProto* r : im.consumers(dql.output(1)))
    if (!scale_muls.count(r)) return false;
  return true;
}

// Whether `dql` becomes DynamicQuantRange, its x being of `x_dtype`: the rule of
// dynamic_quant_range, and of norm_range, which applies it before x is computed.
bool quantizes_for_layers(const NodeProto& dql, DType x_dtype, Pass& p) {
  return default_op(&dql, "DynamicQuantizeLinear") && dql.input_size() == 1 &&
         x_dtype == DType::Float32 && all_readers_are_layers(dql, p);
}

// ops::dynamic_quant_range's most partials: the consumers' workgroups each reduce them all, so
// a LayerNormRange of more rows would cost them more than the range pass it saves.
constexpr int64_t kMaxRangeRows = 1024;

}  // namespace

std::string dynamic_range_name(const NodeProto& dql) {
  return dql.output(0) + ":range";
}

std::string dynamic_packed_name(const NodeProto& dql) {
  return dql.output(0) + ":packed";
}

std::optional<Fusion> dynamic_quant_range(const NodeProto& dql, Pass& p) {
  const Importer& im = p.importer();
  if (!im.available(dql, 0) || !quantizes_for_layers(dql, im.input(dql, 0).dtype, p))
    return std::nullopt;
  for (const std::string& out : dql.output()) p.elide_dequantized(out);
  NodeProto n;
  n.set_name(dql.name());
  n.set_op_type("DynamicQuantRange");
  n.set_domain(kDomain);
  n.add_input(dql.input(0));
  // x's partials, where the LayerNormRange that computed x wrote them.
  if (im.computed(dynamic_range_name(dql))) n.add_input(dynamic_range_name(dql));
  n.add_output(dynamic_range_name(dql));
  n.add_output(dynamic_packed_name(dql));
  return Fusion{n, {}};
}

std::optional<Fusion> norm_range(const NodeProto& ln, Pass& p) {
  const Importer& im = p.importer();
  if (!default_op(&ln, "LayerNormalization") || ln.input_size() < 2 || ln.input_size() > 3 ||
      ln.output_size() < 1 || ln.output(0).empty() || !im.available(ln, 0) ||
      p.knob("qdyn.norm_range", 1) == 0)
    return std::nullopt;
  // Float16 mode holds y in float16, whose partials ops::layer_norm_with_range does not give.
  if (im.fp16()) return std::nullopt;
  for (int i = 1; i < ln.output_size(); ++i)
    if (!ln.output(i).empty()) return std::nullopt;
  // Rows of x's dims before the axis, the normalized dims not empty.
  const Shape& xs = im.input(ln, 0).shape;
  const int64_t rank = static_cast<int64_t>(xs.size());
  int64_t axis = p.attrs(ln).get_int("axis", -1);
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank || numel(xs) == 0) return std::nullopt;
  int64_t rows = 1;
  for (int64_t d = 0; d < axis; ++d) rows *= xs[d];
  if (rows > kMaxRangeRows) return std::nullopt;
  for (const NodeProto* dql : im.consumers(ln.output(0))) {
    // The DynamicQuantizeLinear's x is y, of x's dtype.
    if (!quantizes_for_layers(*dql, im.input(ln, 0).dtype, p) || dql->input(0) != ln.output(0))
      continue;
    NodeProto n = fused_node(ln, "LayerNormRange");
    *n.mutable_attribute() = ln.attribute();
    *n.mutable_input() = ln.input();
    n.add_output(ln.output(0));
    n.add_output(dynamic_range_name(*dql));
    return Fusion{n, {}};
  }
  return std::nullopt;
}

std::optional<Fusion> dynamic_quant_matmul(const NodeProto& mmi, Pass& p) {
  std::optional<Layer> l = match_layer(mmi, p);
  if (!l || !p.is_elided_dequantized(l->dql->output(0))) return std::nullopt;
  Fusion f;
  // The scale product is absorbed unless the model listed it first (then it was elided).
  if (!p.is_elided_dequantized(l->scale_mul->output(0))) f.absorbed.push_back(l->scale_mul);
  f.absorbed.push_back(l->cast);
  f.absorbed.push_back(l->mul);
  if (l->add) f.absorbed.push_back(l->add);
  NodeProto n;
  n.set_name(mmi.name());
  n.set_op_type("DynamicQuantMatMul");
  n.set_domain(kDomain);
  // The float matmul's epilogue (fuse.cpp matmul_epilogue): a residual Add, then an activation
  // (a transformer's skip connections and GELU).
  Shape y_shape = p.importer().input(*l->dql, 0).shape;
  const HostTensor* w = p.importer().constant(mmi, 1);
  y_shape.back() = w->shape[1];
  std::string residual;
  if (const int other = residual_input(p, *f.absorbed.back(), y_shape); other >= 0) {
    const NodeProto* add = p.sole_consumer(f.absorbed.back()->output(0));
    residual = add->input(other);
    f.absorbed.push_back(add);
  }
  take_activation(p, *f.absorbed.back(), y_shape.size(), ops::matmul_can_fuse, f, n);
  for (const std::string& name : {l->dql->input(0), dynamic_range_name(*l->dql), mmi.input(1),
                                  mmi.input_size() > 3 ? mmi.input(3) : std::string(), l->w_scale,
                                  l->bias, dynamic_packed_name(*l->dql), residual})
    n.add_input(name);
  n.add_output(f.absorbed.back()->output(0));
  f.node = std::move(n);
  return f;
}

std::optional<Fusion> dynamic_quant_siblings(const NodeProto& mmi, Pass& p) {
  const Importer& im = p.importer();
  if (p.knob("fuse.siblings", 1) == 0) return std::nullopt;
  std::optional<Layer> root = match_layer(mmi, p);
  if (!root || !p.is_elided_dequantized(root->dql->output(0))) return std::nullopt;
  const Value& w_root = im.input(mmi, 1);
  std::vector<Layer> members;
  for (const NodeProto* r : im.consumers(root->dql->output(0))) {
    std::optional<Layer> l = match_layer(*r, p);
    if (!l || l->dql != root->dql) continue;
    const std::string& out = (l->add ? l->add : l->mul)->output(0);
    // One weight type (the packed GEMM's signedness), and results only viewed.
    if (im.input(*l->mmi, 1).int8_type != w_root.int8_type || im.is_model_output(out) ||
        !read_in_place(im, out))
      continue;
    members.push_back(*l);
  }
  if (members.size() < 2 || members[0].mmi != &mmi) return std::nullopt;
  const bool biased = members[0].add != nullptr;
  for (const Layer& l : members)
    if ((l.add != nullptr) != biased) return std::nullopt;
  NodeProto n = fused_node(mmi, "DynamicQuantSiblingMatMul");
  n.add_input(root->dql->input(0));
  n.add_input(dynamic_range_name(*root->dql));
  n.add_input(dynamic_packed_name(*root->dql));
  Fusion f;
  Shape packed = im.input(*root->dql, 0).shape;
  packed.back() = 0;
  std::vector<std::pair<std::string, int64_t>> outputs;
  for (const Layer& l : members) {
    for (const std::string& name :
         {l.mmi->input(1), l.mmi->input_size() > 3 ? l.mmi->input(3) : std::string(), l.w_scale,
          l.bias})
      n.add_input(name);
    if (l.mmi != &mmi) f.absorbed.push_back(l.mmi);
    if (!p.is_elided_dequantized(l.scale_mul->output(0))) f.absorbed.push_back(l.scale_mul);
    f.absorbed.push_back(l.cast);
    f.absorbed.push_back(l.mul);
    if (l.add) f.absorbed.push_back(l.add);
    const int64_t width = im.constant(*l.mmi, 1)->shape[1];
    outputs.emplace_back((l.add ? l.add : l.mul)->output(0), width);
    packed.back() += width;
  }
  const std::string out = mmi.output(0) + "/packed";
  n.add_output(out);
  set_attr(n, "members", static_cast<int64_t>(members.size()));
  elide_members(p, out, packed, outputs);
  f.node = std::move(n);
  return f;
}

std::optional<Fusion> dynamic_quant_scale(const NodeProto& mul, Pass& p) {
  const Importer& im = p.importer();
  if (mul.output_size() != 1) return std::nullopt;
  const NodeProto* out_mul = p.sole_consumer(mul.output(0));
  if (!default_op(out_mul, "Mul") || out_mul->input_size() != 2) return std::nullopt;
  const NodeProto* cast = im.producer(out_mul->input(out_mul->input(0) == mul.output(0) ? 1 : 0));
  if (!default_op(cast, "Cast") || cast->input_size() != 1) return std::nullopt;
  const NodeProto* mmi = im.producer(cast->input(0));
  if (!mmi) return std::nullopt;
  std::optional<Layer> l = match_layer(*mmi, p);
  if (!l || l->scale_mul != &mul || !p.is_elided_dequantized(l->dql->output(0)))
    return std::nullopt;
  p.elide_dequantized(mul.output(0));
  return Fusion{};
}

}  // namespace vkgraph::onnx_import::fuse
