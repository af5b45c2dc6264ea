#include "onnx/fuse.h"

#include <algorithm>
#include <cmath>

#include "core/shape_rules.h"
#include "onnx/fuse_activation.h"
#include "onnx/fuse_attention.h"
#include "onnx/fuse_dynamic_quant.h"
#include "onnx/fuse_norm.h"
#include "onnx/fuse_qdq.h"
#include "onnx/fuse_rope.h"
#include "onnx/fuse_siblings.h"
#include "onnx/fuse_view.h"
#include "onnx/fuse_weight_only.h"
#include "onnx/importer.h"
#include "vkgraph/ops/tuning.h"

namespace vkgraph::onnx_import::fuse {

namespace {
onnx::AttributeProto& new_attr(onnx::NodeProto& n, const char* name,
                               onnx::AttributeProto::AttributeType type) {
  onnx::AttributeProto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(type);
  return *a;
}
}  // namespace

void set_attr(onnx::NodeProto& n, const char* name, int64_t value) {
  new_attr(n, name, onnx::AttributeProto::INT).set_i(value);
}
void set_attr(onnx::NodeProto& n, const char* name, float value) {
  new_attr(n, name, onnx::AttributeProto::FLOAT).set_f(value);
}
void set_attr(onnx::NodeProto& n, const char* name, const std::vector<int64_t>& values) {
  onnx::AttributeProto& a = new_attr(n, name, onnx::AttributeProto::INTS);
  for (int64_t v : values) a.add_ints(v);
}
void set_attr(onnx::NodeProto& n, const char* name, const std::vector<float>& values) {
  onnx::AttributeProto& a = new_attr(n, name, onnx::AttributeProto::FLOATS);
  for (float v : values) a.add_floats(v);
}
void set_attr(onnx::NodeProto& n, const char* name, const std::string& value) {
  new_attr(n, name, onnx::AttributeProto::STRING).set_s(value);
}

namespace {

using onnx::NodeProto;

// The fused node's output is the last absorbed node's; before any is absorbed, root's.
void set_output(NodeProto& n, const Fusion& f, const NodeProto& root) {
  n.clear_output();
  n.add_output(f.absorbed.empty() ? root.output(0) : f.absorbed.back()->output(0));
}

void set_activation(NodeProto& n, ops::UnaryOp op, const ops::UnaryParams& params) {
  set_attr(n, "activation", static_cast<int64_t>(op));
  set_attr(n, "activation_params", std::vector<float>{params.alpha, params.beta});
}

}  // namespace

bool moves_channels(const std::vector<int64_t>& perm, bool back) {
  const int64_t r = static_cast<int64_t>(perm.size());
  if (r < 3 || perm[0] != 0) return false;
  for (int64_t d = 1; d < r; ++d)
    if (perm[d] != (back ? (d == 1 ? r - 1 : d - 1) : (d == r - 1 ? 1 : d + 1))) return false;
  return true;
}

NodeProto fused_node(const NodeProto& root, const char* op_type) {
  NodeProto n;
  n.set_name(root.name());
  n.set_op_type(op_type);
  n.set_domain(kDomain);
  return n;
}

void set_view(NodeProto& n, const std::string& x, const Pass::View& view) {
  if (view.group != 1)
    throw Error(ErrorKind::InvalidState,
                "fusion: grouped view of " + view.source + " given to " + n.op_type() + " as " + x);
  if (!view.perm.empty()) set_attr(n, ("perm_" + x).c_str(), view.perm);
  if (!view.strided()) return;
  set_attr(n, ("shape_" + x).c_str(), view.shape);
  set_attr(n, ("strides_" + x).c_str(), view.strides);
  set_attr(n, ("offset_" + x).c_str(), view.offset);
}

void take_activation(Pass& p, const NodeProto& tail, size_t rank, bool (*can_fuse)(ops::UnaryOp),
                     Fusion& f, NodeProto& n) {
  const std::string& y = tail.output(0);
  const NodeProto* next = p.sole_consumer(y);
  if (next && next->input_size() >= 1 && next->input(0) == y) {
    auto act = activation_of(*next, p.attrs(*next), p.importer());
    if (act && can_fuse(act->first)) {
      set_activation(n, act->first, act->second);
      f.absorbed.push_back(next);
      return;
    }
  }
  auto chain = decomposed_activation(p, y, rank);
  if (!chain || !reads_all_of(*chain, p, y) || !can_fuse(chain->op)) return;
  set_activation(n, chain->op, {});
  f.absorbed.insert(f.absorbed.end(), chain->nodes.begin(), chain->nodes.end());
}

int residual_input(Pass& p, const NodeProto& tail, const Shape& shape) {
  const Importer& im = p.importer();
  const NodeProto* residual = p.sole_consumer(tail.output(0));
  if (!residual || residual->op_type() != "Add" || residual->input_size() != 2) return -1;
  const int other = other_input(*residual, tail.output(0));
  if (residual->input(other) == tail.output(0) || !im.available(*residual, other) ||
      im.constant(*residual, other) || im.input(*residual, other).dtype != DType::Float32 ||
      im.input(*residual, other).shape != shape)
    return -1;
  return other;
}

namespace {

// ---- the patterns ----

// A BatchNormalization that alone reads the Conv's output folds into the weights when they,
// the bias and its parameters are float32 host constants of matching size (inference mode).
const NodeProto* foldable_batch_norm(Pass& p, const NodeProto& conv) {
  const Importer& im = p.importer();
  const HostTensor* w = im.constant(conv, 1);
  if (!w || w->dtype != DType::Float32 || w->shape.empty() || w->shape[0] <= 0) return nullptr;
  const HostTensor* b = im.has_input(conv, 2) ? im.constant(conv, 2) : nullptr;
  if (im.has_input(conv, 2) && (!b || b->dtype != DType::Float32 || b->numel() != w->shape[0]))
    return nullptr;
  const NodeProto* bn = p.sole_consumer(conv.output(0));
  if (!bn || bn->op_type() != "BatchNormalization" || bn->input_size() < 5 ||
      bn->input(0) != conv.output(0))
    return nullptr;
  if (bn->output_size() > 1 && !bn->output(1).empty()) return nullptr;
  for (int i = 1; i <= 4; ++i) {
    const HostTensor* t = im.constant(*bn, i);
    if (!t || t->dtype != DType::Float32 || t->numel() != w->shape[0]) return nullptr;
  }
  const fold::Attrs& attrs = p.attrs(*bn);
  if (attrs.get_int("training_mode", 0)) return nullptr;
  // As lower_batch_norm: momentum and is_test say nothing at inference (the training outputs
  // were refused above); spatial=0 is not the per-channel form folded here.
  attrs.ignore("momentum");
  attrs.ignore("is_test");
  if (attrs.get_int("spatial", 1) == 0) return nullptr;
  return bn;
}

// Conv [-> BatchNormalization] [-> Add(residual)] [-> activation] => FusedConv.
std::optional<Fusion> conv_epilogue(const NodeProto& conv, Pass& p) {
  const Importer& im = p.importer();
  if (conv.input_size() < 2 || conv.input_size() > 3) return std::nullopt;
  Fusion f;
  NodeProto n = fused_node(conv, "FusedConv");
  *n.mutable_attribute() = conv.attribute();
  for (int i = 0; i < kConvInputs; ++i) n.add_input(i < conv.input_size() ? conv.input(i) : "");
  const NodeProto* tail = &conv;
  if (const NodeProto* bn = foldable_batch_norm(p, conv)) {
    for (int i = 0; i < 4; ++i) n.set_input(kBnScale + i, bn->input(1 + i));
    const auto& eps = p.attrs(*bn).floats;
    set_attr(n, "bn_epsilon", eps.count("epsilon") ? eps.at("epsilon") : 1e-5f);
    f.absorbed.push_back(tail = bn);
  }
  // A residual block's skip connection: an Add of a tensor computed already.
  const NodeProto* add = p.sole_consumer(tail->output(0));
  if (add && add->op_type() == "Add" && add->input_size() == 2) {
    int other = other_input(*add, tail->output(0));
    if (add->input(other) != tail->output(0) && im.available(*add, other) &&
        !im.constant(*add, other) && im.input(*add, other).dtype == DType::Float32) {
      n.set_input(kConvResidual, add->input(other));
      f.absorbed.push_back(tail = add);
    }
  }
  take_activation(p, *tail, im.input(conv, 0).shape.size(), ops::conv_can_fuse, f, n);
  if (f.absorbed.empty()) return std::nullopt;
  set_output(n, f, conv);
  f.node = std::move(n);
  return f;
}

// The Gemm's sole reader when it is a Reshape of the [M, N] result to a known shape (GPT-2's
// Conv1D and nn.MultiheadAttention's out-projection view [S·B, E] back as [B, S, E]): that
// Reshape and its shape.
std::optional<std::pair<const NodeProto*, Shape>> reshaped_gemm(Pass& p, const NodeProto& gemm) {
  const Importer& im = p.importer();
  if (gemm.input_size() < 2 || !im.available(gemm, 0) || !im.available(gemm, 1))
    return std::nullopt;
  const fold::Attrs& ga = p.attrs(gemm);
  const Shape& a = im.input(gemm, 0).shape;
  const Shape& b = im.input(gemm, 1).shape;
  if (a.size() != 2 || b.size() != 2) return std::nullopt;
  const Shape y{ga.get_int("transA", 0) ? a[1] : a[0], ga.get_int("transB", 0) ? b[0] : b[1]};
  const NodeProto* r = p.sole_consumer(gemm.output(0));
  if (!r || r->input(0) != gemm.output(0)) return std::nullopt;
  std::optional<Shape> shape = reshape_target(p, *r, y);
  if (!shape) return std::nullopt;
  return std::pair{r, *shape};
}

// Gemm [-> Reshape] -> activation => FusedGemm.
std::optional<Fusion> gemm_activation(const NodeProto& gemm, Pass& p) {
  Fusion f;
  NodeProto n = fused_node(gemm, "FusedGemm");
  *n.mutable_attribute() = gemm.attribute();
  *n.mutable_input() = gemm.input();
  take_activation(p, gemm, 2, ops::matmul_can_fuse, f, n);
  if (f.absorbed.empty()) {
    // GPT-2's Conv1D: the Gemm on [S·B, E] viewed back as [B, S, E] before its activation.
    // An elementwise activation does not care about the view, so it joins the epilogue and the
    // fused node's output is the Gemm's viewed as the Reshape's shape.
    const auto reshaped = reshaped_gemm(p, gemm);
    if (!reshaped || !p.knob("fuse.gemm_reshape_act", 1)) return std::nullopt;
    const auto& [r, shape] = *reshaped;
    f.absorbed.push_back(r);
    take_activation(p, *r, shape.size(), ops::matmul_can_fuse, f, n);
    if (f.absorbed.size() == 1) return std::nullopt;
    set_attr(n, "output_shape", shape);
  }
  set_output(n, f, gemm);
  f.node = std::move(n);
  return f;
}

// Whether a Transpose of `shape` by `perm` keeps the elements in memory order: only dims of one
// element move.
bool keeps_order(const Shape& shape, const std::vector<int64_t>& perm) {
  int64_t last = -1;
  for (int64_t d : perm) {
    if (shape[d] == 1) continue;
    if (d < last) return false;
    last = d;
  }
  return true;
}

// Gemm -> Reshape [-> Transpose of dims of one element] -> Add(residual) => FusedGemm with the
// residual in its epilogue: nn.MultiheadAttention's out-projection, a Gemm on [S·B, E] viewed
// back as [S, B, E] (and, in ViT, [B, S, E] with B = 1) before the skip connection. The chain
// keeps the Gemm's elements in order, so the residual, of the Add's shape and contiguous, adds
// element by element; the fused node's output is the Gemm's viewed as the Add's shape.
std::optional<Fusion> gemm_residual(const NodeProto& gemm, Pass& p) {
  const Importer& im = p.importer();
  auto reshaped = reshaped_gemm(p, gemm);
  if (!reshaped) return std::nullopt;
  const NodeProto* r = reshaped->first;
  Shape* shape = &reshaped->second;
  Fusion f;
  f.absorbed.push_back(r);
  const NodeProto* tail = r;
  for (const NodeProto* t = p.sole_consumer(tail->output(0));
       t && t->op_type() == "Transpose" && t->input_size() == 1;
       t = p.sole_consumer(tail->output(0))) {
    const std::vector<int64_t>* given = p.attrs(*t).find_ints("perm");
    if (!given || given->size() != shape->size()) return std::nullopt;
    const std::vector<int64_t> perm = ops::resolve_perm(*shape, *given, im.where(*t));
    if (!keeps_order(*shape, perm)) return std::nullopt;
    Shape permuted;
    for (int64_t d : perm) permuted.push_back((*shape)[d]);
    *shape = permuted;
    f.absorbed.push_back(tail = t);
  }
  const NodeProto* add = p.sole_consumer(tail->output(0));
  if (!add || add->op_type() != "Add" || add->input_size() != 2) return std::nullopt;
  const int other = other_input(*add, tail->output(0));
  if (add->input(other) == tail->output(0) || !im.available(*add, other) ||
      im.constant(*add, other) || im.input(*add, other).dtype != DType::Float32 ||
      im.input(*add, other).shape != *shape)
    return std::nullopt;
  f.absorbed.push_back(add);
  NodeProto n = fused_node(gemm, "FusedGemm");
  *n.mutable_attribute() = gemm.attribute();
  *n.mutable_input() = gemm.input();
  while (n.input_size() < kGemmResidual) n.add_input("");
  n.add_input(add->input(other));
  set_attr(n, "output_shape", *shape);
  set_output(n, f, gemm);
  f.node = std::move(n);
  return f;
}

// numpy.matmul's result shape (empty when the operands do not multiply: nothing then fuses
// that needs it, and the lowering reports the problem).
Shape matmul_shape(const Shape& a, const Shape& b) {
  if (a.empty() || b.empty()) return {};
  Shape x = a, y = b;
  if (x.size() == 1) x.insert(x.begin(), 1);
  if (y.size() == 1) y.push_back(1);
  if (x.back() != y.end()[-2]) return {};
  Shape batch;
  const size_t rank = std::max(x.size(), y.size()) - 2;
  for (size_t i = 0; i < rank; ++i) {
    auto dim = [&](const Shape& s) {
      const size_t lead = s.size() - 2;
      return i + lead >= rank ? s[i + lead - rank] : int64_t{1};
    };
    const int64_t dx = dim(x), dy = dim(y);
    if (dx != dy && dx != 1 && dy != 1) return {};
    batch.push_back(dx == 1 ? dy : dx);
  }
  if (a.size() > 1) batch.push_back(x.end()[-2]);
  if (b.size() > 1) batch.push_back(y.back());
  return batch;
}

// MatMul of elided Transposes' views [-> Add(constant [N] bias)] [-> Mul/Div by a scalar
// constant] [-> Add(residual)] [-> activation] => FusedMatMul. Linear layers export as
// MatMul + Add; attention's 1/sqrt(d) as the Mul or Div; a transformer's skip connection as
// the Add of a tensor computed before, of the product's shape.
std::optional<Fusion> matmul_epilogue(const NodeProto& mm, Pass& p) {
  const Importer& im = p.importer();
  if (mm.input_size() != 2 || mm.input(0).empty() || mm.input(1).empty()) return std::nullopt;
  // FusedMatMul reads permutations; another view it reads copied out (Importer::tensor).
  auto operand = [&](int i) {
    Pass::View v = p.resolve(mm, i);
    return v.strided() ? Pass::View{mm.input(i), {}, v.shape} : v;
  };
  const Pass::View a = operand(0), b = operand(1);
  Fusion f;
  NodeProto n = fused_node(mm, "FusedMatMul");
  n.add_input(a.source);
  n.add_input(b.source);
  n.add_input("");
  n.add_input("");
  if (!a.perm.empty()) set_attr(n, "perm_a", a.perm);
  if (!b.perm.empty()) set_attr(n, "perm_b", b.perm);
  const NodeProto* tail = &mm;
  const NodeProto* add = p.sole_consumer(mm.output(0));
  if (add && add->op_type() == "Add" && add->input_size() == 2 && b.shape.size() >= 2) {
    int other = other_input(*add, mm.output(0));
    const HostTensor* c = im.constant(*add, other);
    if (c && c->dtype == DType::Float32 && c->shape.size() == 1 && c->shape[0] == b.shape.back()) {
      n.set_input(kMatMulBias, add->input(other));
      f.absorbed.push_back(tail = add);
    }
  }
  const NodeProto* scale = p.sole_consumer(tail->output(0));
  if (scale && (scale->op_type() == "Mul" || scale->op_type() == "Div") &&
      scale->input_size() == 2) {
    int other = other_input(*scale, tail->output(0));
    const HostTensor* c = im.constant(*scale, other);
    const bool divides_by_c = scale->op_type() == "Div" && other == 1;
    // A constant of higher rank than the product would broadcast it up.
    if (c && c->dtype == DType::Float32 && c->numel() == 1 &&
        c->shape.size() <= matmul_shape(a.shape, b.shape).size() &&
        (scale->op_type() == "Mul" || divides_by_c)) {
      float v = c->data<float>()[0];
      float alpha = divides_by_c ? 1.f / v : v;
      // x / v as x * (1 / v) is within an ulp only while 1 / v is a normal number.
      if (std::isnormal(alpha) || (!divides_by_c && alpha == 0.f)) {
        set_attr(n, "alpha", alpha);
        f.absorbed.push_back(tail = scale);
      }
    }
  }
  if (const int other = residual_input(p, *tail, matmul_shape(a.shape, b.shape)); other >= 0) {
    const NodeProto* residual = p.sole_consumer(tail->output(0));
    n.set_input(kMatMulResidual, residual->input(other));
    f.absorbed.push_back(tail = residual);
  }
  take_activation(p, *tail, matmul_shape(a.shape, b.shape).size(), ops::matmul_can_fuse, f, n);
  if (f.absorbed.empty() && a.perm.empty() && b.perm.empty()) return std::nullopt;
  set_output(n, f, mm);
  f.node = std::move(n);
  return f;
}

// MatMul(x, constant W [K, N]) [-> Add(constant [N] bias)] -> Transpose moving the last dim to
// dim 1 [-> Mul(a constant per channel)] [-> Add(residual)] => ChannelsFirstMatMul, which
// writes the product channels-first itself. ConvNeXt's block ends so (a Linear on
// channels-last activations, the permute back, the layer scale, the skip connection): four
// nodes, and a copy of the activations, become one GEMM (its lowering: lower_nn.cpp).
std::optional<Fusion> matmul_channels_first(const NodeProto& mm, Pass& p) {
  const Importer& im = p.importer();
  if (mm.input_size() != 2 || mm.input(0).empty() || p.view(mm.input(0)) || !im.available(mm, 0) ||
      p.knob("fuse.channels_first", 1) == 0)
    return std::nullopt;
  const HostTensor* w = im.constant(mm, 1);
  const Shape& x = im.input(mm, 0).shape;
  if (!w || w->dtype != DType::Float32 || w->shape.size() != 2 || x.size() < 3 ||
      im.input(mm, 0).dtype != DType::Float32 || x.back() != w->shape[0])
    return std::nullopt;
  const int64_t channels = w->shape[1];
  NodeProto n = fused_node(mm, "ChannelsFirstMatMul");
  for (int i = 0; i < kChannelsFirstInputs; ++i) n.add_input(i < 2 ? mm.input(i) : "");
  Fusion f;
  const NodeProto* tail = &mm;
  if (const NodeProto* add = p.sole_consumer(mm.output(0));
      add && add->op_type() == "Add" && add->input_size() == 2) {
    const int other = other_input(*add, mm.output(0));
    const HostTensor* c = im.constant(*add, other);
    if (c && c->dtype == DType::Float32 && c->shape == Shape{channels}) {
      n.set_input(kChannelsFirstBias, add->input(other));
      f.absorbed.push_back(tail = add);
    }
  }
  const NodeProto* t = p.sole_consumer(tail->output(0));
  if (!t || t->op_type() != "Transpose" || t->input_size() != 1) return std::nullopt;
  const std::vector<int64_t>* perm = p.attrs(*t).find_ints("perm");
  if (!perm || !moves_channels(*perm, true) || perm->size() != x.size()) return std::nullopt;
  f.absorbed.push_back(tail = t);
  Shape y{x[0], channels};
  y.insert(y.end(), x.begin() + 1, x.end() - 1);
  // A constant of one value per channel (shaped [N, 1, ...] or [1, N, 1, ...]) or one value.
  if (const NodeProto* mul = p.sole_consumer(tail->output(0));
      mul && mul->op_type() == "Mul" && mul->input_size() == 2) {
    const int other = other_input(*mul, tail->output(0));
    const HostTensor* c = im.constant(*mul, other);
    auto per_channel = [&](const Shape& s) {
      if (s.size() > y.size()) return false;
      for (size_t i = 0; i < s.size(); ++i) {
        const size_t dim = y.size() - s.size() + i;
        if (s[i] != 1 && !(dim == 1 && s[i] == channels)) return false;
      }
      return true;
    };
    // Finite values only: the scale is folded into the weight, where inf times a zero
    // weight would be NaN instead of the unfused product's +-inf.
    auto finite = [](const HostTensor& t) {
      const float* v = t.data<float>();
      return std::all_of(v, v + t.numel(), [](float e) { return std::isfinite(e); });
    };
    if (c && c->dtype == DType::Float32 && per_channel(c->shape) && finite(*c)) {
      n.set_input(kChannelsFirstScale, mul->input(other));
      f.absorbed.push_back(tail = mul);
    }
  }
  if (const int other = residual_input(p, *tail, y); other >= 0) {
    const NodeProto* residual = p.sole_consumer(tail->output(0));
    n.set_input(kChannelsFirstResidual, residual->input(other));
    f.absorbed.push_back(tail = residual);
  }
  set_output(n, f, mm);
  f.node = std::move(n);
  return f;
}

// The patterns, by the op type of the node they start at, tried in order; the first that
// matches rewrites the node.
struct Pattern {
  const char* root;
  std::optional<Fusion> (*match)(const NodeProto& root, Pass& pass);
};
constexpr Pattern kPatterns[] = {
    // QDQ: DequantizeLinear(x, w[, b]) -> Conv/MatMul/Gemm/Add [-> Relu/Clip] -> QuantizeLinear
    // => QdqConv/QdqMatMul/QdqGemm/QdqAdd, one integer kernel; their DequantizeLinears elided
    {"DequantizeLinear", qdq_dequantize},
    {"Identity", qdq_forwarded_bias},
    // DequantizeLinear(blocked low-bit constant w) -> MatMul(x, .) => WeightOnlyMatMul, the
    // DequantizeLinear elided (ahead of qdq_linear, which refuses elided inputs it cannot read)
    {"DequantizeLinear", weight_only_dequantize},
    {"MatMul", weight_only_matmul},
    {"Conv", qdq_linear},
    {"MatMul", qdq_linear},
    {"Gemm", qdq_linear},
    {"Add", qdq_linear},
    {"MaxPool", qdq_linear},
    {"GlobalAveragePool", qdq_linear},
    {"Flatten", qdq_linear},
    // DequantizeLinear -> unary op [-> Relu/Clip] -> QuantizeLinear => QdqTable, a byte lookup
    {"HardSwish", qdq_linear},
    {"HardSigmoid", qdq_linear},
    {"Sigmoid", qdq_linear},
    {"Tanh", qdq_linear},
    {"LeakyRelu", qdq_linear},
    {"Relu", qdq_linear},
    {"Clip", qdq_linear},
    {"Elu", qdq_linear},
    {"Selu", qdq_linear},
    {"Gelu", qdq_linear},
    {"Erf", qdq_linear},
    {"Exp", qdq_linear},
    {"Softplus", qdq_linear},
    {"Softsign", qdq_linear},
    {"ThresholdedRelu", qdq_linear},
    {"Neg", qdq_linear},
    {"Abs", qdq_linear},
    // quantize_dynamic: DynamicQuantizeLinear -> MatMulInteger -> Cast -> Mul(Mul(x_scale,
    // w_scale)) [-> Add(bias)] => DynamicQuantRange + DynamicQuantMatMul per layer (layers of
    // one x whose results are only viewed: one DynamicQuantSiblingMatMul); a LayerNormalization
    // x => LayerNormRange, which writes the range partials in place of DynamicQuantRange's pass
    {"LayerNormalization", norm_range},
    {"DynamicQuantizeLinear", dynamic_quant_range},
    {"MatMulInteger", dynamic_quant_siblings},
    {"MatMulInteger", dynamic_quant_matmul},
    {"Mul", dynamic_quant_scale},
    // DequantizeLinear(a) * DequantizeLinear(b) [-> Relu/Clip] -> QuantizeLinear => QdqMul
    {"Mul", qdq_linear},
    // Mul(x, cos) + Concat(-x[.., d/2:], x[.., :d/2]) * sin => FusedRope (rooted at x's first
    // reader of the three)
    {"Mul", rope},
    {"Slice", rope},
    // Conv [-> BatchNormalization] [-> Add(residual)] [-> activation] => FusedConv
    {"Conv", conv_epilogue},
    // Gemm [-> Reshape] -> activation => FusedGemm
    {"Gemm", gemm_activation},
    // Gemm -> Reshape [-> Transpose of dims of 1] -> Add(residual) => FusedGemm
    {"Gemm", gemm_residual},
    // Mul(q, c) / Mul(kᵀ, c) -> MatMul -> ... -> MatMul(·, v) => FusedAttention (dynamo form)
    {"Mul", attention_prescaled},
    // Mul/Div(q, c) -> MatMul(·, kᵀ) -> ... => FusedAttention (only q scaled: Swin, torch 1.13)
    {"Mul", attention_scaled_q},
    {"Div", attention_scaled_q},
    // MatMul(q, kᵀ) [-> scale] [-> mask] -> Softmax [-> Dropout] -> MatMul(·, v) => FusedAttention
    {"MatMul", attention},
    // MatMuls of one x by constant weights [-> Add(bias)] => SiblingMatMul, their results
    // views of its output (off unless fuse.siblings=1)
    {"MatMul", sibling_matmuls},
    // MatMul(x, constant) [-> Add(bias)] -> Transpose(last dim to 1) [-> Mul(per channel)]
    // [-> Add(residual)] => ChannelsFirstMatMul
    {"MatMul", matmul_channels_first},
    // MatMul(views) [-> Add(bias)] [-> Mul/Div(scalar)] [-> Add(residual)] [-> activation]
    // => FusedMatMul
    {"MatMul", matmul_epilogue},
    // Pow(x, 2) -> ReduceMean -> Add(eps) -> Sqrt -> ... -> Mul(weight) => FusedRmsNorm
    {"Pow", rms_norm},
    {"Mul", rms_norm},
    // GELU written out as arithmetic (fuse_activation.h), rooted at its first node => Gelu
    {"Div", activation_chain},
    {"Mul", activation_chain},
    {"Pow", activation_chain},
    {"Add", activation_chain},
    // Concat of elided views => ViewConcat (fuse_view.h)
    {"Concat", concat_of_views},
    // Transpose(x, channels-last) -> LayerNormalization(last axis) [-> Transpose back]
    // => ChannelLayerNorm
    {"Transpose", channel_layer_norm},
    // Transpose/Reshape/Squeeze/Unsqueeze/Gather/Slice/Split/Expand read as a view
    // (fuse_view.h) => elided
    {"Transpose", view_node},
    {"Reshape", view_node},
    {"Squeeze", view_node},
    {"Unsqueeze", view_node},
    {"Gather", view_node},
    {"Slice", view_node},
    {"Split", view_node},
    {"Expand", view_node},
};

const std::map<std::string, std::string>& model_op_types() {
  static const std::map<std::string, std::string> types = {
      {"FusedConv", "Conv"},
      {"FusedGemm", "Gemm"},
      {"FusedMatMul", "MatMul"},
      {"ChannelsFirstMatMul", "MatMul"},
      {"ChannelLayerNorm", "LayerNormalization"},
      {"ViewConcat", "Concat"},
      {"FusedAttention", "MatMul"},
      {"FusedRope", "Mul"},
      {"SiblingMatMul", "MatMul"},
      {"QdqConv", "Conv"},
      {"QdqMatMul", "MatMul"},
      {"QdqGemm", "Gemm"},
      {"QdqAdd", "Add"},
      {"QdqMul", "Mul"},
      {"FusedRmsNorm", "RMSNormalization"},
      {"WeightOnlyMatMul", "MatMul"},
      {"QdqMaxPool", "MaxPool"},
      {"QdqGlobalAveragePool", "GlobalAveragePool"},
      {"QdqFlatten", "Flatten"},
      {"DynamicQuantRange", "DynamicQuantizeLinear"},
      {"LayerNormRange", "LayerNormalization"},
      {"DynamicQuantMatMul", "MatMulInteger"},
      {"DynamicQuantSiblingMatMul", "MatMulInteger"}};
  return types;
}

}  // namespace

std::optional<Shape> reshape_target(Pass& p, const NodeProto& r, const Shape& in) {
  if (r.op_type() != "Reshape" || r.input_size() != 2) return std::nullopt;
  if (!p.importer().available(r, 1)) p.fold_ahead(r.input(1));
  const HostTensor* target = p.importer().constant(r, 1);
  if (!target || (target->dtype != DType::Int64 && target->dtype != DType::Int32))
    return std::nullopt;
  std::vector<int64_t> dims;
  for (int64_t i = 0; i < target->numel(); ++i) dims.push_back(target->as_int(i));
  try {
    return shapes::resolve_reshape(in, dims, p.attrs(r).get_int("allowzero", 0) != 0, "Reshape");
  } catch (const Error&) {
    return std::nullopt;  // the Reshape, lowered alone, reports it
  }
}

std::optional<Fusion> Pass::rewrite(const NodeProto& node) {
  if (!node.domain().empty() && node.domain() != "ai.onnx") return std::nullopt;
  // Folding goes first where it may: a foldable op of host constants is computed on the host.
  bool on_device = false;
  // Asks whether each input is a constant without reading it (constant() would read a weight
  // from the model's proto).
  for (int i = 0; i < node.input_size(); ++i)
    on_device |= !node.input(i).empty() && !(im_.available(node, i) && im_.input(node, i).constant);
  // Except a Transpose of a weight larger than folding would make of a small input (GPT-2's
  // tied 50257 x 768 embedding, for its LM head): when only MatMuls read it, they read the
  // weight in place as B stored [N, K] (view_node), rather than the loader holding and
  // uploading a transposed copy of it.
  const bool large_transpose = node.op_type() == "Transpose" && node.input_size() == 1 &&
                               im_.available(node, 0) &&
                               numel(im_.input(node, 0).shape) > fold::kMaxFoldElements;
  if (!on_device && !large_transpose && fold::can_fold(node.op_type())) return std::nullopt;
  for (const Pattern& pattern : kPatterns) {
    if (node.op_type() != pattern.root) continue;
    attrs_.clear();  // each pattern's reads are its own
    std::optional<Fusion> f = pattern.match(node, *this);
    if (f && reads_all_attributes(node, *f)) return f;
  }
  return std::nullopt;
}

const fold::Attrs& Pass::attrs(const NodeProto& node) {
  auto it = attrs_.find(&node);
  if (it == attrs_.end()) it = attrs_.emplace(&node, fold::attrs_from_node(node)).first;
  return it->second;
}

// A fusion computes the nodes it absorbs, so an attribute of theirs that the pattern did not
// read would be ignored: such a fusion is declined, and the node, lowered alone, meets the
// importer's attribute check. The root's attributes count as read where the fused node carries
// them all (FusedConv, FusedGemm), since its lowering reads them.
bool Pass::reads_all_attributes(const NodeProto& root, const Fusion& f) {
  auto read = [&](const NodeProto& n) {
    return n.attribute_size() == 0 || attrs(n).unread().empty();
  };
  bool carried = f.node.has_value();
  for (const onnx::AttributeProto& a : root.attribute()) {
    bool found = false;
    if (f.node)
      for (const onnx::AttributeProto& b : f.node->attribute()) found |= b.name() == a.name();
    carried &= found;
  }
  if (!carried && !read(root)) return false;
  for (const NodeProto* n : f.absorbed)
    if (!read(*n)) return false;
  return true;
}

std::optional<Pass::View> Pass::view_ahead(const std::string& value) {
  const NodeProto* t = im_.producer(value);
  if (!t || view(value)) return std::nullopt;  // visited already: elided or lowered
  // A chain of views none visited yet (BERT's Reshape then Transpose of a projection): the
  // inner node's view stands for its value while the outer one is read, then goes.
  if (t->input_size() >= 1 && is_view_op(t->op_type()) && !t->input(0).empty() &&
      !view(t->input(0)) && !im_.available(*t, 0)) {
    const std::string& in = t->input(0);
    std::optional<View> inner = view_ahead(in);
    if (!inner) return std::nullopt;
    views_[in] = std::move(*inner);
    std::optional<View> v = elided_view(*t, *this);
    views_.erase(in);
    return v;
  }
  return elided_view(*t, *this);
}

uint32_t Pass::knob(const std::string& key, uint32_t fallback) const {
  const ops::Tuning* tuning = im_.graph().options().tuning.get();
  return tuning ? tuning->knob(key, fallback) : fallback;
}

bool Pass::fold_ahead(const std::string& value) const {
  return im_.fold_ahead(value);
}

const Pass::View* Pass::view(const std::string& value) const {
  auto it = views_.find(value);
  return it == views_.end() ? nullptr : &it->second;
}

Pass::View Pass::resolve(const NodeProto& node, size_t i) const {
  if (const View* v = view(node.input(i))) return *v;
  return {node.input(i), {}, im_.input(node, i).shape};
}

const NodeProto* Pass::sole_consumer(const std::string& value) const {
  if (im_.is_model_output(value)) return nullptr;
  const auto& readers = im_.consumers(value);
  return readers.size() == 1 ? readers[0] : nullptr;
}

bool is_fused(const NodeProto& node) {
  return node.domain() == kDomain;
}

const std::string& model_op_type(const NodeProto& node) {
  if (!is_fused(node)) return node.op_type();
  // A fused op that stands for several model ops (QdqTable) names the one it replaced.
  for (const onnx::AttributeProto& a : node.attribute())
    if (a.name() == "model_op") return a.s();
  auto it = model_op_types().find(node.op_type());
  return it == model_op_types().end() ? node.op_type() : it->second;
}

std::string lowering_key(const NodeProto& node) {
  // Fused nodes get fused_key(op); other domains' ops (com.microsoft) the same "domain.Op".
  if (node.domain().empty() || node.domain() == "ai.onnx") return node.op_type();
  return node.domain() + "." + node.op_type();
}

std::optional<Activation> activation(const NodeProto& node, const fold::Attrs& attrs) {
  auto it = attrs.ints.find("activation");
  if (!is_fused(node) || it == attrs.ints.end()) return std::nullopt;
  Activation act{static_cast<ops::UnaryOp>(it->second), {}};
  if (auto p = attrs.float_lists.find("activation_params");
      p != attrs.float_lists.end() && p->second.size() == 2)
    act.params = {p->second[0], p->second[1]};
  return act;
}

float alpha(const NodeProto& node, const fold::Attrs& attrs) {
  auto it = attrs.floats.find("alpha");
  return is_fused(node) && it != attrs.floats.end() ? it->second : 1.f;
}

std::vector<int64_t> perm(const NodeProto& node, const fold::Attrs& attrs, size_t input) {
  const std::vector<int64_t>* p =
      is_fused(node) ? attrs.find_ints(input ? "perm_b" : "perm_a") : nullptr;
  return p ? *p : std::vector<int64_t>{};
}

}  // namespace vkgraph::onnx_import::fuse
