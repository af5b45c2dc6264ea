#include "onnx/fuse_norm.h"

#include <cmath>

#include "onnx/importer.h"

namespace vkgraph::onnx_import::fuse {
namespace {

using onnx::NodeProto;

// The float32 scalar constant input `i` of `n`, if it is one.
std::optional<float> scalar(const Importer& im, const NodeProto& n, int i) {
  const HostTensor* c = im.constant(n, i);
  if (!c || c->dtype != DType::Float32 || c->numel() != 1) return std::nullopt;
  return c->data<float>()[0];
}

// The node that alone reads `value` (not a model output), when it is of type `op`.
const NodeProto* next_of(const Pass& p, const std::string& value, const char* op) {
  const NodeProto* n = p.sole_consumer(value);
  return n && n->op_type() == op && n->output_size() == 1 ? n : nullptr;
}

// Whether a ReduceMean reduces only the last of `rank` axes and keeps it.
bool mean_of_last_axis(Pass& p, const NodeProto& rm, size_t rank) {
  const Importer& im = p.importer();
  const fold::Attrs& a = p.attrs(rm);
  if (a.get_int("keepdims", 1) != 1) return false;
  a.get_int("noop_with_empty_axes", 0);  // read: axes are given either way, below
  std::vector<int64_t> axes;
  if (const std::vector<int64_t>* given = a.find_ints("axes")) {
    axes = *given;
  } else if (rm.input_size() == 2 && !rm.input(1).empty()) {
    const HostTensor* t = im.constant(rm, 1);
    if (!t || t->dtype != DType::Int64) return false;
    axes.assign(t->data<int64_t>(), t->data<int64_t>() + t->numel());
  }
  const int64_t last = static_cast<int64_t>(rank) - 1;
  return axes.size() == 1 && (axes[0] == -1 || axes[0] == last);
}

}  // namespace

std::optional<Fusion> rms_norm(const NodeProto& square, Pass& p) {
  const Importer& im = p.importer();
  if (square.input_size() != 2 || square.output_size() != 1 || !im.available(square, 0))
    return std::nullopt;
  const std::string& x = square.input(0);
  const bool squares = square.op_type() == "Pow"
                           ? scalar(im, square, 1) == std::optional<float>(2.f)
                           : square.op_type() == "Mul" && square.input(1) == x;
  if (!squares || im.input(square, 0).dtype != DType::Float32) return std::nullopt;
  const size_t rank = im.input(square, 0).shape.size();
  if (rank == 0) return std::nullopt;

  Fusion f;
  const NodeProto* tail = &square;
  auto take = [&](const NodeProto* n) { f.absorbed.push_back(tail = n); };
  const NodeProto* rm = next_of(p, tail->output(0), "ReduceMean");
  if (!rm || rm->input(0) != tail->output(0) || !mean_of_last_axis(p, *rm, rank))
    return std::nullopt;
  take(rm);
  const NodeProto* add = next_of(p, tail->output(0), "Add");
  if (!add || add->input_size() != 2) return std::nullopt;
  const std::optional<float> eps = scalar(im, *add, add->input(0) == tail->output(0) ? 1 : 0);
  if (!eps || !(*eps >= 0.f)) return std::nullopt;
  take(add);
  const NodeProto* sqrt = next_of(p, tail->output(0), "Sqrt");
  if (!sqrt) return std::nullopt;
  take(sqrt);
  // 1 / sqrt(...) then x times it, or x / sqrt(...).
  const NodeProto* n = p.sole_consumer(tail->output(0));
  if (!n || n->output_size() != 1) return std::nullopt;
  const bool reciprocal =
      n->op_type() == "Reciprocal" || (n->op_type() == "Div" && n->input_size() == 2 &&
                                       n->input(1) == tail->output(0) && scalar(im, *n, 0) == 1.f);
  if (reciprocal) {
    take(n);
    const NodeProto* mul = next_of(p, tail->output(0), "Mul");
    if (!mul || mul->input_size() != 2 || mul->input(mul->input(0) == tail->output(0) ? 1 : 0) != x)
      return std::nullopt;
    take(mul);
  } else if (n->op_type() == "Div" && n->input_size() == 2 && n->input(0) == x &&
             n->input(1) == tail->output(0)) {
    take(n);
  } else {
    return std::nullopt;
  }
  // The weight: Mul by a float32 constant [D]; LlamaRMSNorm casts back to the input's dtype
  // (float32 here) before it.
  const Shape& xs = im.input(square, 0).shape;
  auto weight_of = [&](const std::string& value) -> const NodeProto* {
    const NodeProto* mul = next_of(p, value, "Mul");
    if (!mul || mul->input_size() != 2) return nullptr;
    const HostTensor* w = im.constant(*mul, mul->input(0) == value ? 1 : 0);
    return w && w->dtype == DType::Float32 && w->shape == Shape{xs.back()} ? mul : nullptr;
  };
  std::string weight;
  const NodeProto* cast = next_of(p, tail->output(0), "Cast");
  if (cast && p.attrs(*cast).get_int("to", 0) != onnx::TensorProto::FLOAT) cast = nullptr;
  if (const NodeProto* mul = weight_of(cast ? cast->output(0) : tail->output(0))) {
    if (cast) take(cast);
    weight = mul->input(mul->input(0) == tail->output(0) ? 1 : 0);
    take(mul);
  }

  NodeProto node;
  node.set_name(square.name());
  node.set_op_type("FusedRmsNorm");
  node.set_domain(kDomain);
  node.add_input(x);
  node.add_input(weight);
  node.add_output(tail->output(0));
  set_attr(node, "epsilon", *eps);
  f.node = std::move(node);
  return f;
}

namespace {

const std::vector<int64_t>* perm_of(Pass& p, const NodeProto* t) {
  return t && t->op_type() == "Transpose" && t->domain().empty() && t->input_size() == 1
             ? p.attrs(*t).find_ints("perm")
             : nullptr;
}

}  // namespace

std::optional<Fusion> channel_layer_norm(const NodeProto& t, Pass& p) {
  const Importer& im = p.importer();
  if (t.input(0).empty() || p.view(t.input(0)) || !im.available(t, 0) ||
      p.knob("fuse.channel_norm", 1) == 0)
    return std::nullopt;
  const std::vector<int64_t>* perm = perm_of(p, &t);
  const Shape& x = im.input(t, 0).shape;
  if (!perm || perm->size() != x.size() || !moves_channels(*perm, false)) return std::nullopt;
  const NodeProto* ln = p.sole_consumer(t.output(0));
  if (!ln || ln->op_type() != "LayerNormalization" || !ln->domain().empty() ||
      ln->input_size() < 2 || ln->input_size() > 3 || ln->input(0) != t.output(0) ||
      ln->input(1) == t.output(0) || (ln->input_size() == 3 && ln->input(2) == t.output(0)))
    return std::nullopt;
  for (int i = 1; i < ln->output_size(); ++i)
    if (!ln->output(i).empty()) return std::nullopt;  // Mean and InvStdDev are not computed
  const fold::Attrs& attrs = p.attrs(*ln);
  const int64_t axis = attrs.get_int("axis", -1);
  // Carried to the fused node, whose lowering reads them as LayerNormalization's does.
  attrs.ignore("epsilon");
  attrs.ignore("stash_type");
  const int64_t rank = static_cast<int64_t>(x.size());
  if (axis != -1 && axis != rank - 1) return std::nullopt;
  for (int i = 1; i < ln->input_size(); ++i)
    if (!ln->input(i).empty() && (!im.available(*ln, i) || im.input(*ln, i).shape != Shape{x[1]}))
      return std::nullopt;
  NodeProto n = fused_node(t, "ChannelLayerNorm");
  *n.mutable_attribute() = ln->attribute();
  n.add_input(t.input(0));
  for (int i = 1; i < ln->input_size(); ++i) n.add_input(ln->input(i));
  Fusion f;
  f.absorbed.push_back(ln);
  const NodeProto* back = p.sole_consumer(ln->output(0));
  const std::vector<int64_t>* back_perm = perm_of(p, back);
  if (back_perm && back->input(0) == ln->output(0) && back_perm->size() == x.size() &&
      moves_channels(*back_perm, true))
    f.absorbed.push_back(back);
  set_attr(n, "channels_last", int64_t{f.absorbed.size() == 1 ? 1 : 0});
  n.add_output(f.absorbed.back()->output(0));
  f.node = std::move(n);
  return f;
}

}  // namespace vkgraph::onnx_import::fuse
