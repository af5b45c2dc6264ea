#include "onnx/fuse_attention.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/shape_rules.h"
#include "onnx/importer.h"

namespace vkgraph::onnx_import::fuse {
namespace {

using onnx::NodeProto;

// The value of a float32 scalar constant input (one element, of a rank that does not broadcast
// the other operand, of rank `max_rank`, up), if it is one.
std::optional<float> scalar(const Importer& im, const NodeProto& node, int i, size_t max_rank) {
  const HostTensor* c = im.constant(node, i);
  if (!c || c->dtype != DType::Float32 || c->numel() != 1 || c->shape.size() > max_rank)
    return std::nullopt;
  return c->data<float>()[0];
}

// Whether the operand `i` of `node` is computed already (itself or, for an elided Transpose's
// view, its source).
bool computed(const Pass& p, const NodeProto& node, int i) {
  return p.view(node.input(i)) || p.importer().available(node, i);
}

// Whether the computed value `name` (an elided view's source, say) is float32.
bool is_float32(const Importer& im, const std::string& name) {
  const Value* v = im.computed(name);
  return v && v->dtype == DType::Float32;
}

// numpy broadcasting of `from` to `to` without growing it.
bool broadcasts_to(const Shape& from, const Shape& to) {
  if (from.size() > to.size()) return false;
  for (size_t i = 0; i < from.size(); ++i) {
    int64_t f = from[i], t = to[to.size() - from.size() + i];
    if (f != 1 && f != t) return false;
  }
  return true;
}

// The stored shape of the computed value `name`.
Shape stored_shape(const Importer& im, const std::string& name) {
  return im.computed(name)->shape;
}

// What the pattern has learnt about the scores' MatMul and its operands.
struct Scores {
  Pass::View q, kt;
  // The value kt is read from, where a grouped view is read copied out; empty for a view read
  // ahead of its node (attention_scaled_q), which has no value yet.
  std::string kt_value;
  float scale = 1.f;
  std::vector<const NodeProto*> absorbed;  // before the MatMul's own consumers (prescaled form)
};

// A Where that masks the scores out with -inf (or a fill at least as low as -1e30 where the
// condition is a host constant that keeps an entry of every row: then each row's softmax
// gives those entries exactly 0 either way): the mask kind, or nullopt.
std::optional<AttentionMask> where_mask(const Pass& p, const NodeProto& where,
                                        const std::string& scores, const Shape& score_shape) {
  const Importer& im = p.importer();
  if (where.input_size() != 3 || where.input(0) == scores) return std::nullopt;
  const bool scores_when_true = where.input(1) == scores;
  if (!scores_when_true && where.input(2) != scores) return std::nullopt;
  if (where.input(1) == where.input(2)) return std::nullopt;
  const int fill_at = scores_when_true ? 2 : 1;
  std::optional<float> fill = scalar(im, where, fill_at, score_shape.size());
  if (!fill || !im.available(where, 0) || im.input(where, 0).dtype != DType::Bool)
    return std::nullopt;
  if (!broadcasts_to(im.input(where, 0).shape, score_shape)) return std::nullopt;
  const AttentionMask kind = scores_when_true ? kMaskWhereFalse : kMaskWhereTrue;
  if (std::isinf(*fill) && *fill < 0) return kind;
  const HostTensor* cond = im.constant(where, 0);
  if (!cond || !(*fill <= -1e30f) || cond->shape.empty()) return std::nullopt;
  // Every row (the last dim) keeps an entry, and the condition covers every row it masks.
  const int64_t cols = cond->shape.back();
  if (cols != score_shape.back()) return std::nullopt;
  for (int64_t r = 0; r < cond->numel() / cols; ++r) {
    bool kept = false;
    for (int64_t c = 0; c < cols && !kept; ++c)
      kept = (cond->data<uint8_t>()[r * cols + c] != 0) == scores_when_true;
    if (!kept) return std::nullopt;
  }
  return kind;
}

// A Dropout that alone reads `value` and drops nothing, on the terms its own lowering
// (lower_dropout, lower_pointwise.cpp) accepts: training_mode a constant 0, or a constant 1
// with a ratio of constant 0 (torch 1.13 exports Swin's attention dropout so); its mask output,
// if named, read by nothing.
const NodeProto* identity_dropout(const Pass& p, const std::string& value) {
  const Importer& im = p.importer();
  const NodeProto* d = p.sole_consumer(value);
  if (!d || d->op_type() != "Dropout" || d->input(0) != value) return nullptr;
  if (d->output_size() > 1 && !d->output(1).empty() &&
      (im.is_model_output(d->output(1)) || !im.consumers(d->output(1)).empty()))
    return nullptr;
  if (d->input_size() > 2 && !d->input(2).empty()) {
    const HostTensor* training = im.constant(*d, 2);
    if (!training || training->numel() != 1) return nullptr;
    if (training->as_int(0) != 0) {
      const HostTensor* ratio =
          d->input_size() > 1 && !d->input(1).empty() ? im.constant(*d, 1) : nullptr;
      if (!ratio || ratio->numel() != 1 || ratio->as_double(0) != 0.0) return nullptr;
    }
  }
  return d;
}

// torch's _safe_softmax guard on the probabilities `probs`: IsNaN(probs) read by nothing but a
// Where(·, 0, probs), the two being all that read `probs`. Returns {IsNaN, Where}.
std::optional<std::pair<const NodeProto*, const NodeProto*>> nan_guard(const Pass& p,
                                                                       const std::string& probs) {
  const Importer& im = p.importer();
  const auto& readers = im.consumers(probs);
  if (readers.size() != 2 || im.is_model_output(probs)) return std::nullopt;
  const NodeProto* is_nan = readers[0]->op_type() == "IsNaN" ? readers[0] : readers[1];
  const NodeProto* where = is_nan == readers[0] ? readers[1] : readers[0];
  if (is_nan->op_type() != "IsNaN" || !is_nan->domain().empty() || is_nan->input_size() != 1 ||
      is_nan->output_size() != 1 || where->op_type() != "Where" || !where->domain().empty() ||
      where->input_size() != 3 || p.sole_consumer(is_nan->output(0)) != where ||
      where->input(0) != is_nan->output(0) || where->input(2) != probs || where->input(1) == probs)
    return std::nullopt;
  const HostTensor* zero = im.constant(*where, 1);
  if (!zero || zero->numel() != 1 || zero->shape.size() > 1 || zero->as_double(0) != 0.0)
    return std::nullopt;
  return std::make_pair(is_nan, where);
}

// Whether input `i` of `node` is computed or, folded ahead of model order, a host constant.
bool available_or_folded(const Pass& p, const NodeProto& node, int i) {
  return p.importer().available(node, i) || p.fold_ahead(node.input(i));
}

// Swin's shifted-window mask: the scores viewed as [B, windows, H, N, N] (a Reshape), a
// constant mask added, the view undone (a Reshape back to the scores' shape).
struct WindowMask {
  const NodeProto *view, *add, *back;
  std::string mask;
  Shape shape;  // of the view
};
std::optional<WindowMask> window_mask(Pass& p, const std::string& scores,
                                      const Shape& score_shape) {
  const Importer& im = p.importer();
  WindowMask w;
  w.view = p.sole_consumer(scores);
  if (!w.view || w.view->input(0) != scores) return std::nullopt;
  std::optional<Shape> shape = reshape_target(p, *w.view, score_shape);
  if (!shape || shape->size() > 6) return std::nullopt;
  w.shape = *shape;
  w.add = p.sole_consumer(w.view->output(0));
  if (!w.add || w.add->op_type() != "Add" || w.add->input_size() != 2) return std::nullopt;
  const int other = other_input(*w.add, w.view->output(0));
  if (w.add->input(other) == w.view->output(0) || !available_or_folded(p, *w.add, other))
    return std::nullopt;
  const HostTensor* m = im.constant(*w.add, other);
  if (!m || m->dtype != DType::Float32 || !broadcasts_to(m->shape, w.shape)) return std::nullopt;
  w.mask = w.add->input(other);
  w.back = p.sole_consumer(w.add->output(0));
  if (!w.back || w.back->input(0) != w.add->output(0)) return std::nullopt;
  if (reshape_target(p, *w.back, w.shape) != score_shape) return std::nullopt;
  return w;
}

// Kᵀ and V as the kernel reads them. Grouped views (repeat_kv, fuse.h) of one group over the
// heads' dim (1 of rank 4) are read with their stored KV heads, each shared by `group` query
// heads; any other grouped view is read as its value, which the importer copies out (false
// where that value does not exist yet: a view read ahead).
bool kv_heads(Pass::View& kt, const std::string& kt_value, Pass::View& v,
              const std::string& v_value) {
  if (kt.group == 1 && v.group == 1) return true;
  if (kt.group == v.group && kt.shape.size() == 4 && kt.group_dim == 1 && v.group_dim == 1) {
    for (Pass::View* x : {&kt, &v}) {
      x->shape[1] /= x->group;
      x->group = 1;
    }
    return true;
  }
  if ((kt.group != 1 && kt_value.empty()) || (v.group != 1 && v_value.empty())) return false;
  if (kt.group != 1) kt = Pass::View{kt_value, {}, kt.shape};
  if (v.group != 1) v = Pass::View{v_value, {}, v.shape};
  return true;
}

// From the scores' MatMul on: the rest of the chain, and the fused node.
std::optional<Fusion> match_from_scores(const NodeProto& mm, Scores s, Pass& p) {
  const Importer& im = p.importer();
  if (s.q.group != 1) return std::nullopt;
  // Shapes are the views' own (a grouped view's with the heads repeated) until kv_heads.
  const Shape qs = s.q.shape;
  const Shape ks = s.kt.shape;
  const size_t rank = qs.size();
  if ((rank != 3 && rank != 4) || ks.size() != rank) return std::nullopt;
  if (qs[rank - 1] != ks[rank - 2]) return std::nullopt;
  // K's batch and head dims equal Q's or are 1 (the kernel's broadcasts); Q's are the result's.
  for (size_t i = 0; i + 2 < rank; ++i)
    if (ks[i] != qs[i] && ks[i] != 1) return std::nullopt;
  if (!is_float32(im, s.q.source) || !is_float32(im, s.kt.source)) return std::nullopt;
  // What ops::attention takes (else the unfused ops run): head dim <= 256, at most 65535
  // workgroups a dimension (8 query rows a workgroup at least), 32-bit element indices.
  const int64_t heads = rank == 4 ? qs[0] * qs[1] : qs[0];
  const int64_t kMax32 = std::numeric_limits<uint32_t>::max();
  if (qs.back() < 1 || qs.back() > 256 || heads > 65535 || (qs[rank - 2] + 7) / 8 > 65535 ||
      numel(qs) > kMax32 || numel(ks) > kMax32 || numel(stored_shape(im, s.q.source)) > kMax32 ||
      numel(stored_shape(im, s.kt.source)) > kMax32)
    return std::nullopt;
  Shape score_shape(qs.begin(), qs.end() - 1);
  score_shape.push_back(ks.back());

  Fusion f;
  f.absorbed = s.absorbed;
  const NodeProto* tail = &mm;
  auto next = [&](const NodeProto* n) { f.absorbed.push_back(tail = n); };
  if (const NodeProto* sc = p.sole_consumer(mm.output(0));
      sc && (sc->op_type() == "Mul" || sc->op_type() == "Div") && sc->input_size() == 2) {
    const int other = other_input(*sc, mm.output(0));
    const bool divides = sc->op_type() == "Div";
    std::optional<float> c = scalar(im, *sc, other, rank);
    if (c && (!divides || other == 1)) {
      const float factor = divides ? 1.f / *c : *c;
      // x / c as x * (1 / c) is within an ulp only while 1 / c is a normal number.
      if (std::isnormal(factor)) {
        s.scale *= factor;
        next(sc);
      }
    }
  }
  std::string mask;
  AttentionMask mask_kind = kMaskAdd;
  if (const NodeProto* m = p.sole_consumer(tail->output(0)); m && m->input_size() >= 2) {
    if (m->op_type() == "Add" && m->input_size() == 2) {
      const int other = other_input(*m, tail->output(0));
      if (m->input(other) != tail->output(0) && available_or_folded(p, *m, other) &&
          im.input(*m, other).dtype == DType::Float32 &&
          broadcasts_to(im.input(*m, other).shape, score_shape) &&
          im.input(*m, other).shape.size() <= 4) {
        mask = m->input(other);
        next(m);
      }
    } else if (m->op_type() == "Where") {
      if (auto kind = where_mask(p, *m, tail->output(0), score_shape);
          kind && im.input(*m, 0).shape.size() <= 4) {
        mask = m->input(0);
        mask_kind = *kind;
        next(m);
      }
    }
  }
  // The lowering adds a window mask to the first mask on the host: both must be constants.
  WindowMask window{};
  const bool constant_mask =
      mask.empty() || (mask_kind == kMaskAdd && im.constant(*tail, tail->input(0) == mask ? 0 : 1));
  if (constant_mask)
    if (auto w = window_mask(p, tail->output(0), score_shape)) {
      window = *w;
      for (const NodeProto* n : {w->view, w->add, w->back}) next(n);
    }
  const NodeProto* sm = p.sole_consumer(tail->output(0));
  if (!sm || sm->op_type() != "Softmax" || sm->input(0) != tail->output(0)) return std::nullopt;
  const int64_t axis = p.attrs(*sm).get_int("axis", im.opset() >= 13 ? -1 : 1);
  if (axis != -1 && axis != static_cast<int64_t>(rank) - 1) return std::nullopt;
  next(sm);
  const auto guard = nan_guard(p, tail->output(0));
  if (guard) {
    next(guard->first);
    next(guard->second);
  }
  if (const NodeProto* d = identity_dropout(p, tail->output(0))) next(d);
  const NodeProto* pv = p.sole_consumer(tail->output(0));
  if (!pv || pv->op_type() != "MatMul" || pv->input_size() != 2 ||
      pv->input(0) != tail->output(0) || pv->input(1) == tail->output(0))
    return std::nullopt;
  // V computed, or views not visited yet of a computed value (quantize_dynamic's sorted BERT).
  const bool v_computed = computed(p, *pv, 1);
  std::optional<Pass::View> v_ahead = v_computed ? std::nullopt : p.view_ahead(pv->input(1));
  if (!v_computed && !v_ahead) return std::nullopt;
  Pass::View v = v_computed ? p.resolve(*pv, 1) : *v_ahead;
  if (v.shape.size() != rank || v.shape[rank - 2] != ks[rank - 1] ||
      v.shape[rank - 1] != qs[rank - 1])
    return std::nullopt;
  for (size_t i = 0; i + 2 < rank; ++i)
    if (v.shape[i] != ks[i]) return std::nullopt;
  if (!is_float32(im, v.source) || numel(stored_shape(im, v.source)) > kMax32) return std::nullopt;
  if (!kv_heads(s.kt, s.kt_value, v, v_computed ? pv->input(1) : std::string()))
    return std::nullopt;
  next(pv);
  // The heads merged back (Transpose [B, H, S, D] -> [B, S, H, D] before the Reshape to
  // [B, S, H * D]): the kernel stores that layout itself instead of a copy after it.
  std::vector<int64_t> perm_out;
  if (const NodeProto* t = p.sole_consumer(pv->output(0));
      rank == 4 && t && t->op_type() == "Transpose" && t->input_size() == 1) {
    const std::vector<int64_t>* given = p.attrs(*t).find_ints("perm");
    std::vector<int64_t> sorted = given ? *given : std::vector<int64_t>{};
    std::sort(sorted.begin(), sorted.end());
    if (sorted == std::vector<int64_t>{0, 1, 2, 3}) {
      perm_out = *given;
      next(t);
    }
  }

  NodeProto n;
  n.set_name(mm.name());
  n.set_op_type("FusedAttention");
  n.set_domain(kDomain);
  n.add_input(s.q.source);
  n.add_input(s.kt.source);
  n.add_input(v.source);
  n.add_input(mask);
  n.add_input(window.mask);
  if (!window.mask.empty()) set_attr(n, "window_shape", window.shape);
  set_view(n, "q", s.q);
  set_view(n, "k", s.kt);
  set_view(n, "v", v);
  if (!perm_out.empty()) set_attr(n, "perm_out", perm_out);
  set_attr(n, "scale", s.scale);
  set_attr(n, "mask_kind", static_cast<int64_t>(mask_kind));
  if (guard) set_attr(n, "zero_nan_rows", int64_t{1});
  n.add_output(tail->output(0));
  f.node = std::move(n);
  return f;
}

}  // namespace

std::optional<Fusion> attention(const NodeProto& mm, Pass& p) {
  if (mm.input_size() != 2 || mm.input(0).empty() || mm.input(1).empty()) return std::nullopt;
  if (mm.input(0) == mm.input(1)) return std::nullopt;
  return match_from_scores(mm, Scores{p.resolve(mm, 0), p.resolve(mm, 1), mm.input(1), 1.f, {}}, p);
}

std::optional<Fusion> attention_prescaled(const NodeProto& mul, Pass& p) {
  const Importer& im = p.importer();
  if (mul.input_size() != 2) return std::nullopt;
  // Mul(x, c) with c a scalar constant, in either order, and x computed or (`ahead`) a chain
  // of views not visited yet of a computed value.
  struct Scaled {
    Pass::View x;
    float c;
    std::string value;  // x's value when computed; empty when read ahead (Scores::kt_value)
  };
  auto scaled = [&](const NodeProto& n, bool ahead) -> std::optional<Scaled> {
    if (n.op_type() != "Mul" || n.input_size() != 2) return std::nullopt;
    for (int c : {1, 0}) {
      const std::string& x = n.input(1 - c);
      const bool now = computed(p, n, 1 - c);
      std::optional<Pass::View> view;
      if (now)
        view = im.constant(n, 1 - c) ? std::nullopt : std::optional(p.resolve(n, 1 - c));
      else if (ahead)
        view = p.view_ahead(x);
      if (!view) continue;
      if (auto v = scalar(im, n, c, view->shape.size()))
        return Scaled{*view, *v, now ? x : std::string()};
    }
    return std::nullopt;
  };
  const auto root = scaled(mul, false);
  if (!root) return std::nullopt;
  const NodeProto* mm = p.sole_consumer(mul.output(0));
  if (!mm || mm->op_type() != "MatMul" || mm->input_size() != 2 || mm->input(0) == mm->input(1))
    return std::nullopt;
  const int at = mm->input(0) == mul.output(0) ? 0 : 1;
  // The other operand's Mul is not lowered yet: this pattern, at the first of the two, takes it.
  if (im.available(*mm, 1 - at)) return std::nullopt;
  const NodeProto* other = im.producer(mm->input(1 - at));
  if (!other || other == &mul || p.sole_consumer(other->output(0)) != mm) return std::nullopt;
  // Its scale may come after it in node order (the legacy exporter's Sqrt): folded ahead.
  for (int i = 0; i < other->input_size(); ++i)
    if (!im.available(*other, i)) p.fold_ahead(other->input(i));
  // Its operand may be views not visited yet (quantize_dynamic's topologically sorted BERT: Q's
  // chain and Mul, then K's).
  const auto second = scaled(*other, true);
  if (!second) return std::nullopt;
  // The product of the two scales: each sqrt(scale) in onnxscript; exact enough either way.
  const float scale = root->c * second->c;
  if (!std::isnormal(scale)) return std::nullopt;
  const Scaled& q = at == 0 ? *root : *second;
  const Scaled& k = at == 0 ? *second : *root;
  Scores s;
  s.q = q.x;
  s.kt = k.x;
  s.kt_value = k.value;
  s.scale = scale;
  s.absorbed = {other, mm};  // skipped when the importer gets to them
  return match_from_scores(*mm, s, p);
}

std::optional<Fusion> attention_scaled_q(const NodeProto& n, Pass& p) {
  const Importer& im = p.importer();
  if (n.input_size() != 2 || n.input(0) == n.input(1)) return std::nullopt;
  const bool divides = n.op_type() == "Div";
  int x = -1;
  float scale = 0.f;
  for (int c : {1, 0}) {
    if (divides && c == 0) continue;  // c / q is no scale of q
    if (!computed(p, n, 1 - c) || im.constant(n, 1 - c)) continue;
    if (auto v = scalar(im, n, c, p.resolve(n, 1 - c).shape.size())) {
      x = 1 - c;
      scale = divides ? 1.f / *v : *v;
      break;
    }
  }
  // x / c as x * (1 / c) is within an ulp only while 1 / c is a normal number.
  if (x < 0 || !std::isnormal(scale)) return std::nullopt;
  const NodeProto* mm = p.sole_consumer(n.output(0));
  if (!mm || mm->op_type() != "MatMul" || mm->input_size() != 2 || mm->input(0) != n.output(0) ||
      mm->input(1) == n.output(0))
    return std::nullopt;
  Scores s;
  if (computed(p, *mm, 1)) {
    s.kt = p.resolve(*mm, 1);
    s.kt_value = mm->input(1);
  } else if (std::optional<Pass::View> kt = p.view_ahead(mm->input(1))) {
    s.kt = *kt;
  } else {
    return std::nullopt;
  }
  s.q = p.resolve(n, x);
  s.scale = scale;
  s.absorbed = {mm};
  return match_from_scores(*mm, s, p);
}

}  // namespace vkgraph::onnx_import::fuse
