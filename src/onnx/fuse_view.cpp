#include "onnx/fuse_view.h"

#include <algorithm>

#include "core/shape_rules.h"
#include "onnx/fuse_rope.h"
#include "onnx/importer.h"

namespace vkgraph::onnx_import::fuse {
namespace {

using onnx::NodeProto;

// The integers of input `i` (a host constant, folded ahead if need be) or, where the node has
// no such input, of attribute `attr` (older opsets); nullopt when neither is known.
std::optional<std::vector<int64_t>> ints_of(Pass& p, const NodeProto& n, int i, const char* attr) {
  const Importer& im = p.importer();
  if (im.has_input(n, i)) {
    if (!im.available(n, i)) p.fold_ahead(n.input(i));
    const HostTensor* t = im.constant(n, i);
    if (!t || (t->dtype != DType::Int64 && t->dtype != DType::Int32)) return std::nullopt;
    std::vector<int64_t> v(t->numel());
    for (int64_t k = 0; k < t->numel(); ++k) v[k] = t->as_int(k);
    return v;
  }
  if (!attr) return std::vector<int64_t>{};
  const std::vector<int64_t>* a = p.attrs(n).find_ints(attr);
  return a ? *a : std::vector<int64_t>{};
}

// Axes normalised to [0, rank), or nullopt when one is out of range or repeated.
std::optional<std::vector<int64_t>> axes_in(std::vector<int64_t> axes, int64_t rank) {
  for (int64_t& a : axes) {
    if (a < -rank || a >= rank) return std::nullopt;
    if (a < 0) a += rank;
  }
  std::vector<int64_t> sorted = axes;
  std::sort(sorted.begin(), sorted.end());
  if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end()) return std::nullopt;
  return axes;
}

// What `n` reads as a view: its input's, or the computed input whole.
Pass::View input_view(const Pass& p, const NodeProto& n) {
  const Pass::View in = p.resolve(n, 0);
  return in.strides.empty() ? whole(in.source, in.shape) : in;
}

std::optional<Pass::View> squeezed(Pass& p, const NodeProto& n, const Pass::View& in) {
  const auto given = ints_of(p, n, 1, "axes");
  if (!given) return std::nullopt;
  const auto axes = axes_in(*given, static_cast<int64_t>(in.shape.size()));
  if (!axes) return std::nullopt;
  Pass::View v{in.source, {}, {}, in.offset, {}};
  for (size_t d = 0; d < in.shape.size(); ++d) {
    const bool listed = std::count(axes->begin(), axes->end(), static_cast<int64_t>(d)) > 0;
    if (listed && in.shape[d] != 1) return std::nullopt;  // the lowering reports it
    if (listed || (axes->empty() && in.shape[d] == 1)) continue;
    v.shape.push_back(in.shape[d]);
    v.strides.push_back(in.strides[d]);
  }
  return v;
}

std::optional<Pass::View> unsqueezed(Pass& p, const NodeProto& n, const Pass::View& in) {
  const auto given = ints_of(p, n, 1, "axes");
  if (!given || given->empty()) return std::nullopt;
  const int64_t rank = static_cast<int64_t>(in.shape.size() + given->size());
  const auto axes = axes_in(*given, rank);
  if (!axes) return std::nullopt;
  Pass::View v{in.source, {}, {}, in.offset, {}};
  size_t from = 0;
  for (int64_t d = 0; d < rank; ++d) {
    if (std::count(axes->begin(), axes->end(), d)) {
      v.shape.push_back(1);
      v.strides.push_back(0);  // never stepped
    } else {
      v.shape.push_back(in.shape[from]);
      v.strides.push_back(in.strides[from++]);
    }
  }
  return v;
}

std::optional<Pass::View> gathered_of(Pass& p, const NodeProto& n, const Pass::View& in) {
  const Importer& im = p.importer();
  if (n.input_size() != 2 || n.input(1) == n.input(0)) return std::nullopt;
  const HostTensor* index = im.constant(n, 1);
  if (!index || index->numel() != 1 || index->shape.size() > 1 ||
      (index->dtype != DType::Int64 && index->dtype != DType::Int32))
    return std::nullopt;
  const int64_t rank = static_cast<int64_t>(in.shape.size());
  int64_t axis = p.attrs(n).get_int("axis", 0);
  if (axis < -rank || axis >= rank) return std::nullopt;
  if (axis < 0) axis += rank;
  int64_t i = index->as_int(0);
  const int64_t dim = in.shape[axis];
  if (i < -dim || i >= dim) return std::nullopt;  // the lowering reports it
  if (i < 0) i += dim;
  return gathered(in, static_cast<size_t>(axis), i, index->shape.size() == 1);
}

std::optional<Pass::View> sliced(Pass& p, const NodeProto& n, const Pass::View& in) {
  const bool inputs = p.importer().opset() >= 10;
  if (inputs && (n.input_size() < 3 || n.input(1).empty() || n.input(2).empty()))
    return std::nullopt;  // the lowering reports it
  const auto starts = ints_of(p, n, 1, inputs ? nullptr : "starts");
  const auto ends = ints_of(p, n, 2, inputs ? nullptr : "ends");
  const auto axes = ints_of(p, n, 3, inputs ? nullptr : "axes");
  const auto steps = ints_of(p, n, 4, nullptr);
  if (!starts || !ends || !axes || !steps || starts->size() != ends->size() ||
      (!axes->empty() && axes->size() != starts->size()) ||
      (!steps->empty() && steps->size() != starts->size()))
    return std::nullopt;
  const int64_t rank = static_cast<int64_t>(in.shape.size());
  std::vector<int64_t> dims = *axes;
  if (dims.empty())
    for (size_t i = 0; i < starts->size(); ++i) dims.push_back(static_cast<int64_t>(i));
  const auto normal = axes_in(dims, rank);
  if (!normal) return std::nullopt;
  Pass::View v = in;
  v.perm.clear();
  for (size_t i = 0; i < normal->size(); ++i) {
    const int64_t step = steps->empty() ? 1 : (*steps)[i];
    if (step <= 0) return std::nullopt;  // a reversal has negative strides: copied
    const size_t a = static_cast<size_t>((*normal)[i]);
    const shapes::SliceRange r = shapes::resolve_slice(in.shape[a], (*starts)[i], (*ends)[i], step);
    v.offset += r.count > 0 ? r.first * in.strides[a] : 0;
    v.shape[a] = r.count;
    v.strides[a] = r.count > 1 ? in.strides[a] * r.step : 0;
  }
  return v;
}

// Expand (numpy broadcasting, both ways) to a constant shape: the dims it grows from 1 never
// step.
std::optional<Pass::View> expanded(Pass& p, const NodeProto& n, const Pass::View& in) {
  if (n.input_size() != 2) return std::nullopt;
  const auto target = ints_of(p, n, 1, nullptr);
  if (!target) return std::nullopt;
  const size_t rank = std::max(in.shape.size(), target->size());
  Pass::View v{in.source, {}, Shape(rank, 1), in.offset, std::vector<int64_t>(rank, 0)};
  for (size_t d = 0; d < rank; ++d) {
    const size_t from_end = rank - d;
    const int64_t want = from_end <= target->size() ? (*target)[target->size() - from_end] : 1;
    const bool has = from_end <= in.shape.size();
    const int64_t dim = has ? in.shape[in.shape.size() - from_end] : 1;
    if (dim != want && dim != 1 && want != 1) return std::nullopt;  // the lowering reports it
    v.shape[d] = dim == 1 ? want : dim;
    v.strides[d] = has && dim != 1 ? in.strides[in.shape.size() - from_end] : 0;
  }
  return v;
}

// The dims of more than one element of `shape` (their indices).
std::vector<size_t> real_dims(const Shape& shape) {
  std::vector<size_t> d;
  for (size_t i = 0; i < shape.size(); ++i)
    if (shape[i] != 1) d.push_back(i);
  return d;
}

// Whether Expands are views and repeat_kv's Reshape a grouped one (VKGRAPH_TUNE=fuse.repeat_kv=0
// keeps the Expands as dispatches, fuse_view.h).
bool repeat_kv_views(const Pass& p) {
  return p.knob("fuse.repeat_kv", 1) != 0;
}

// A Reshape that merges a dim with the stride-0 dim after it (an Expand's repeat; dims of one
// element aside) and keeps every other dim: the grouped-heads view of Pass::View. Also a
// Reshape of a grouped view that only adds or drops dims of one element (its grouped dim, of
// at least `group` elements, is one of `from`).
std::optional<Pass::View> grouped(const Pass::View& in, const Shape& shape) {
  const std::vector<size_t> from = real_dims(in.shape), to = real_dims(shape);
  Pass::View v{in.source, {}, shape, in.offset, std::vector<int64_t>(shape.size(), 0)};
  if (in.group != 1) {
    if (from.size() != to.size()) return std::nullopt;
    for (size_t k = 0; k < to.size(); ++k) {
      if (in.shape[from[k]] != shape[to[k]]) return std::nullopt;
      v.strides[to[k]] = in.strides[from[k]];
      if (from[k] == in.group_dim) v.group_dim = to[k];
    }
    v.group = in.group;
    return v;
  }
  if (from.size() != to.size() + 1) return std::nullopt;
  for (size_t a = 0; a + 1 < from.size(); ++a) {
    const size_t heads = from[a], repeat = from[a + 1];
    if (in.strides[repeat] != 0 || shape[to[a]] != in.shape[heads] * in.shape[repeat]) continue;
    for (size_t k = 0; k < to.size(); ++k) {
      const size_t d = from[k < a + 1 ? k : k + 1];
      if (k != a && in.shape[d] != shape[to[k]]) return std::nullopt;
      v.strides[to[k]] = in.strides[d];
    }
    v.group = in.shape[repeat];
    v.group_dim = to[a];
    return v;
  }
  return std::nullopt;
}

// Whether a Mul or Div reading `value` scales it by a scalar constant (known or folded ahead)
// for a MatMul, its only reader: the attention's scale, which the attention patterns take.
bool scale_for_matmul(Pass& p, const NodeProto& r, const std::string& value) {
  if ((r.op_type() != "Mul" && r.op_type() != "Div") || r.input_size() != 2 ||
      r.input(0) == r.input(1))
    return false;
  const int other = r.input(0) == value ? 1 : 0;
  if (r.op_type() == "Div" && other == 0) return false;
  const Importer& im = p.importer();
  if (!im.available(r, other)) p.fold_ahead(r.input(other));
  const HostTensor* c = im.constant(r, other);
  if (!c || c->dtype != DType::Float32 || c->numel() != 1) return false;
  const NodeProto* next = p.sole_consumer(r.output(0));
  return next && next->op_type() == "MatMul";
}

// Whether every reader of `value` (of `shape`) reads views, and `value` is not a model output.
bool reads_views(Pass& p, const std::string& value, const Shape& shape) {
  const Importer& im = p.importer();
  if (im.is_model_output(value)) return false;
  const auto& readers = im.consumers(value);
  if (readers.empty()) return false;
  for (const NodeProto* r : readers) {
    const bool data_only = r->input_size() >= 1 && r->input(0) == value &&
                           std::count(r->input().begin(), r->input().end(), value) == 1 &&
                           r->domain().empty();
    if (r->op_type() == "MatMul" && r->domain().empty()) continue;
    // concat_of_views copies each view into its place.
    if (r->op_type() == "Concat" && r->domain().empty() && p.knob("fuse.concat_views", 1) != 0)
      continue;
    if (data_only && (is_view_op(r->op_type()) || r->op_type() == "Shape")) continue;
    if (r->domain().empty() && scale_for_matmul(p, *r, value)) continue;
    if (r->domain().empty() && reads_for_rope(p, *r, value, shape)) continue;
    return false;
  }
  return true;
}

}  // namespace

bool is_view_op(const std::string& op) {
  return op == "Transpose" || op == "Reshape" || op == "Squeeze" || op == "Unsqueeze" ||
         op == "Gather" || op == "Slice" || op == "Split" || op == "Expand";
}

std::optional<Pass::View> view_of(Pass& p, const NodeProto& n, const Pass::View& in) {
  const std::string& op = n.op_type();
  // A grouped view goes on only permuted or reshaped by dims of one (the attention's kᵀ); else
  // it is copied out.
  if (in.group != 1 && op != "Transpose" && op != "Reshape") return std::nullopt;
  if (op == "Transpose") {
    const std::vector<int64_t>* given = p.attrs(n).find_ints("perm");
    return transposed(in, ops::resolve_perm(in.shape, given ? *given : std::vector<int64_t>{},
                                            p.importer().where(n)));
  }
  if (op == "Reshape") {
    if (n.input_size() != 2) return std::nullopt;
    const auto target = ints_of(p, n, 1, nullptr);
    if (!target) return std::nullopt;
    try {
      const Shape shape = shapes::resolve_reshape(
          in.shape, *target, p.attrs(n).get_int("allowzero", 0) != 0, "Reshape");
      if (in.group == 1)
        if (std::optional<Pass::View> v = reshaped(in, shape)) return v;
      return repeat_kv_views(p) ? grouped(in, shape) : std::nullopt;
    } catch (const Error&) {
      return std::nullopt;  // the Reshape, lowered alone, reports it
    }
  }
  if (op == "Squeeze") return squeezed(p, n, in);
  if (op == "Unsqueeze") return unsqueezed(p, n, in);
  if (op == "Gather") return gathered_of(p, n, in);
  if (op == "Slice") return sliced(p, n, in);
  if (op == "Expand" && repeat_kv_views(p)) return expanded(p, n, in);
  return std::nullopt;
}

Pass::View whole(const std::string& value, const Shape& shape) {
  Pass::View v{value, {}, shape, 0, shapes::contiguous_strides(shape)};
  for (size_t d = 0; d < shape.size(); ++d) v.perm.push_back(static_cast<int64_t>(d));
  return v;
}

Pass::View transposed(const Pass::View& in, const std::vector<int64_t>& perm) {
  Pass::View v{in.source, {}, {}, in.offset, {}};
  v.group = in.group;
  for (int64_t d : perm) {
    if (static_cast<size_t>(d) == in.group_dim) v.group_dim = v.shape.size();
    if (!in.perm.empty()) v.perm.push_back(in.perm[d]);
    v.shape.push_back(in.shape[d]);
    v.strides.push_back(in.strides[d]);
  }
  return v;
}

std::optional<Pass::View> reshaped(const Pass::View& in, const Shape& shape) {
  Pass::View v{in.source, {}, shape, in.offset, std::vector<int64_t>(shape.size(), 0)};
  if (numel(in.shape) != numel(shape)) return std::nullopt;
  if (numel(shape) == 0) {
    v.strides = shapes::contiguous_strides(shape);
    return v;
  }
  // The input's dims of more than one element, outermost first, fall into runs that are
  // contiguous with each other (a dim's stride is the next one's times its size); each run must
  // be the product of consecutive output dims of more than one element, which then step through
  // the run. Output dims of one element never step.
  const std::vector<size_t> dims = real_dims(in.shape), outs = real_dims(shape);
  size_t o = 0;  // the next output dim to step
  for (size_t k = 0; k < dims.size();) {
    size_t end = k + 1;  // the run is dims[k, end)
    while (end < dims.size() &&
           in.strides[dims[end - 1]] == in.strides[dims[end]] * in.shape[dims[end]])
      ++end;
    int64_t run = 1;
    for (size_t j = k; j < end; ++j) run *= in.shape[dims[j]];
    const size_t first = o;
    int64_t got = 1;
    while (o < outs.size() && got < run) got *= shape[outs[o++]];
    if (got != run) return std::nullopt;
    int64_t stride = in.strides[dims[end - 1]];
    for (size_t j = o; j-- > first;) {
      v.strides[outs[j]] = stride;
      stride *= shape[outs[j]];
    }
    k = end;
  }
  if (o != outs.size()) return std::nullopt;
  return v;
}

Pass::View gathered(const Pass::View& in, size_t axis, int64_t index, bool keep) {
  Pass::View v{in.source, {}, {}, in.offset + index * in.strides[axis], {}};
  for (size_t d = 0; d < in.shape.size(); ++d) {
    if (d == axis && !keep) continue;
    v.shape.push_back(d == axis ? 1 : in.shape[d]);
    v.strides.push_back(d == axis ? 0 : in.strides[d]);
  }
  return v;
}

std::optional<Pass::View> elided_view(const NodeProto& n, Pass& p) {
  const Importer& im = p.importer();
  if (!is_view_op(n.op_type()) || !n.domain().empty() || n.input_size() < 1 || n.input(0).empty() ||
      n.output_size() != 1 || n.output(0).empty())
    return std::nullopt;
  const bool of_view = p.view(n.input(0)) != nullptr;
  if ((!of_view && !im.available(n, 0)) || im.is_model_output(n.output(0))) return std::nullopt;
  if (!of_view) {
    const std::string& op = n.op_type();
    if (op == "Reshape" || op == "Squeeze" || op == "Unsqueeze") return std::nullopt;
    const Value& in = im.input(n, 0);
    // Transposes of any type, as before views took strides; the new views float32 only.
    if (op != "Transpose" && (in.dtype != DType::Float32 || in.int8_type)) return std::nullopt;
  }
  // An Expand read by two nodes would be copied out for each reader that takes no strides.
  if (n.op_type() == "Expand" && !p.sole_consumer(n.output(0))) return std::nullopt;
  std::optional<Pass::View> v = view_of(p, n, input_view(p, n));
  if (!of_view && v && !reads_views(p, n.output(0), v->shape)) return std::nullopt;
  return v;
}

namespace {

// Split along one axis: each output the input's view at an offset (GPT-2's Q, K, V split from
// the packed c_attn projection, read in place by the attention). Elided where every output is
// read as a view (or by nothing) and none is a model output; VKGRAPH_TUNE=fuse.split_view=0
// keeps the copies.
std::optional<Fusion> split_node(const NodeProto& n, Pass& p) {
  const Importer& im = p.importer();
  if (!n.domain().empty() || n.input_size() < 1 || n.input_size() > 2 || n.input(0).empty() ||
      n.output_size() < 1 || p.knob("fuse.split_view", 1) == 0)
    return std::nullopt;
  const bool of_view = p.view(n.input(0)) != nullptr;
  if (!of_view && !im.available(n, 0)) return std::nullopt;
  if (!of_view && (im.input(n, 0).dtype != DType::Float32 || im.input(n, 0).int8_type))
    return std::nullopt;
  const Pass::View in = input_view(p, n);
  if (in.group != 1) return std::nullopt;
  const int64_t rank = static_cast<int64_t>(in.shape.size());
  int64_t axis = p.attrs(n).get_int("axis", 0);
  if (axis < -rank || axis >= rank) return std::nullopt;  // the lowering reports it
  if (axis < 0) axis += rank;
  std::optional<std::vector<int64_t>> sizes = ints_of(p, n, 1, "split");
  if (!sizes) return std::nullopt;
  if (sizes->empty()) {
    const int64_t parts = p.attrs(n).get_int("num_outputs", n.output_size());
    if (parts != n.output_size()) return std::nullopt;
    sizes = shapes::split_evenly(in.shape[axis], parts);
  }
  if (static_cast<int>(sizes->size()) != n.output_size()) return std::nullopt;
  int64_t start = 0;
  std::vector<Pass::View> views;
  for (int i = 0; i < n.output_size(); ++i) {
    const int64_t size = (*sizes)[i];
    if (size < 0 || start + size > in.shape[axis]) return std::nullopt;
    Pass::View v = in;
    v.perm.clear();
    v.offset += size > 0 ? start * in.strides[axis] : 0;
    v.shape[axis] = size;
    const std::string& out = n.output(i);
    if (!out.empty() &&
        (im.is_model_output(out) || (!im.consumers(out).empty() && !reads_views(p, out, v.shape))))
      return std::nullopt;
    views.push_back(std::move(v));
    start += size;
  }
  if (start != in.shape[axis]) return std::nullopt;
  for (int i = 0; i < n.output_size(); ++i)
    if (!n.output(i).empty()) p.elide(n.output(i), std::move(views[i]));
  return Fusion{};
}

}  // namespace

std::optional<Fusion> view_node(const NodeProto& n, Pass& p) {
  if (n.op_type() == "Split") return split_node(n, p);
  std::optional<Pass::View> v = elided_view(n, p);
  if (!v) return std::nullopt;
  p.elide(n.output(0), std::move(*v));
  return Fusion{};
}

std::optional<Fusion> concat_of_views(const NodeProto& cat, Pass& p) {
  if (!cat.domain().empty() || cat.input_size() < 1 || p.knob("fuse.concat_views", 1) == 0)
    return std::nullopt;
  bool any = false;
  for (const std::string& in : cat.input()) {
    const Pass::View* v = in.empty() ? nullptr : p.view(in);
    if (v && v->group != 1) return std::nullopt;  // only the attention reads grouped views
    any |= v != nullptr;
  }
  if (!any) return std::nullopt;
  NodeProto n = fused_node(cat, "ViewConcat");
  set_attr(n, "axis", p.attrs(cat).get_int("axis", 0));
  for (int i = 0; i < cat.input_size(); ++i) {
    const Pass::View v = p.resolve(cat, i);
    n.add_input(v.source);
    set_view(n, "x" + std::to_string(i), v);
  }
  n.add_output(cat.output(0));
  return Fusion{std::move(n), {}};
}

}  // namespace vkgraph::onnx_import::fuse
