// The lowerings of the fusion pass's FusedAttention node (fuse_attention.h) to ops::attention
// and of FusedRope (fuse_rope.h) to ops::rope: both read operands through the pass's views.
#include <limits>

#include "onnx/fuse_attention.h"
#include "onnx/fuse_rope.h"
#include "onnx/importer.h"
#include "onnx/lower_util.h"
#include "vkgraph/ops/attention.h"
#include "vkgraph/ops/rope.h"

namespace vkgraph::onnx_import {

ops::StridedView fused_view(Importer& im, const onnx::NodeProto& node, const fold::Attrs& a,
                            int input, const std::string& x) {
  const TensorRef t = im.tensor(node, input);
  const std::vector<int64_t>* shape = a.find_ints("shape_" + x);
  const std::vector<int64_t>* strides = a.find_ints("strides_" + x);
  if (shape || strides) {
    if (!shape || !strides || shape->size() != strides->size())
      im.fail(node, "shape_" + x + " and strides_" + x + " must come together, of one length");
    return {t, Shape(shape->begin(), shape->end()), *strides, a.get_int("offset_" + x, 0)};
  }
  const std::vector<int64_t>* p = a.find_ints("perm_" + x);
  return ops::strided_view(im.graph(), {t, p ? *p : std::vector<int64_t>{}});
}
namespace {

HostTensor float_scalar(float v) {
  HostTensor t(DType::Float32, {});
  t.data<float>()[0] = v;
  return t;
}

// Whether an additive mask is the causal one (top-left aligned): 0 where key j <= query i, at
// most -1e30 above (finfo.min or -inf: either way exp gives 0, and no row is masked whole),
// the same for every batch and head. The kernel then masks by index and skips the key tiles
// past the diagonal instead of reading a mask.
bool is_causal(const HostTensor& m, int64_t s, int64_t skv) {
  if (m.dtype != DType::Float32 || m.shape.size() < 2 || m.shape[m.shape.size() - 2] != s ||
      m.shape.back() != skv)
    return false;
  for (int64_t at = 0; at < m.numel(); ++at) {
    const int64_t i = (at / skv) % s, j = at % skv;
    const float v = m.data<float>()[at];
    if (j <= i ? v != 0.f : !(v <= -1e30f)) return false;
  }
  return true;
}

HostTensor causal_of_where(const HostTensor& cond, bool masked_when) {
  HostTensor m(DType::Float32, cond.shape);
  for (int64_t i = 0; i < cond.numel(); ++i)
    m.data<float>()[i] = (cond.data<uint8_t>()[i] != 0) == masked_when
                             ? -std::numeric_limits<float>::infinity()
                             : 0.f;
  return m;
}

// The additive mask of a Where that masks scores out where its condition is `masked_when`:
// -inf there, 0 elsewhere. A constant condition becomes a constant; a computed one a Where.
TensorRef additive_mask(Importer& im, const onnx::NodeProto& node, bool masked_when) {
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  if (const HostTensor* cond = im.constant(node, fuse::kAttnMask))
    return im.constant_tensor(causal_of_where(*cond, masked_when),
                              node.input(fuse::kAttnMask) + "/additive");
  TensorRef inf = im.constant_tensor(float_scalar(kNegInf)),
            zero = im.constant_tensor(float_scalar(0.f));
  TensorRef cond = im.tensor(node, fuse::kAttnMask);
  return masked_when ? ops::where(im.graph(), cond, inf, zero)
                     : ops::where(im.graph(), cond, zero, inf);
}

// The shape of input `i` as the kernel reads it: the view's, or the stored shape permuted by
// `perm`.
Shape viewed_shape(Importer& im, const onnx::NodeProto& node, const fold::Attrs& a, int input,
                   const char* perm, const char* view_shape) {
  if (const std::vector<int64_t>* s = a.find_ints(view_shape)) return Shape(s->begin(), s->end());
  const Shape& stored = im.input(node, input).shape;
  const std::vector<int64_t>* p = a.find_ints(perm);
  if (!p) return stored;
  if (p->size() != stored.size()) im.fail(node, std::string(perm) + " does not fit the input");
  Shape s;
  for (int64_t d : *p) s.push_back(stored.at(d));
  return s;
}

// The element of a constant `m`, broadcast (numpy) to `to`, at the flat index `at` of `to`.
float broadcast_at(const HostTensor& m, const Shape& to, int64_t at) {
  int64_t index = 0, stride = 1;
  for (size_t i = to.size(); i-- > 0;) {
    const int64_t coord = at % to[i];
    at /= to[i];
    const size_t from_end = to.size() - i;
    if (from_end > m.shape.size()) continue;
    const int64_t dim = m.shape[m.shape.size() - from_end];
    if (dim != 1) index += coord * stride;
    stride *= dim;
  }
  return m.data<float>()[index];
}

// The scores' two additive masks as one constant of the scores' shape: the first broadcast to
// the scores, the window mask broadcast to the scores viewed as `window_shape` (same elements).
HostTensor windowed_mask(Importer& im, const onnx::NodeProto& node, const fold::Attrs& a,
                         const Shape& scores) {
  const HostTensor* first =
      im.has_input(node, fuse::kAttnMask) ? im.constant(node, fuse::kAttnMask) : nullptr;
  const HostTensor* window = im.constant(node, fuse::kAttnWindowMask);
  const std::vector<int64_t>* view = a.find_ints("window_shape");
  if ((im.has_input(node, fuse::kAttnMask) && !first) || !window || !view ||
      numel(Shape(view->begin(), view->end())) != numel(scores))
    im.fail(node, "a window mask needs constant masks and a window_shape of the scores' size");
  const Shape view_shape(view->begin(), view->end());
  HostTensor m(DType::Float32, scores);
  for (int64_t i = 0; i < m.numel(); ++i)
    m.data<float>()[i] =
        (first ? broadcast_at(*first, scores, i) : 0.f) + broadcast_at(*window, view_shape, i);
  return m;
}

std::vector<Value> lower_fused_attention(Importer& im, const onnx::NodeProto& node,
                                         const fold::Attrs& a) {
  im.require_inputs(node, fuse::kAttnV + 1, fuse::kAttnInputs);
  ops::AttentionParams params;
  auto scale = a.floats.find("scale");
  if (scale != a.floats.end()) params.scale = scale->second;
  if (const std::vector<int64_t>* perm = a.find_ints("perm_out")) params.out_perm = *perm;
  const int64_t kind = a.get_int("mask_kind", fuse::kMaskAdd);
  params.zero_nan_rows = a.get_int("zero_nan_rows", 0) != 0;
  const Shape q = viewed_shape(im, node, a, fuse::kAttnQ, "perm_q", "shape_q");
  const Shape v = viewed_shape(im, node, a, fuse::kAttnV, "perm_v", "shape_v");
  if (q.size() < 2 || v.size() < 2) im.fail(node, "q and v need rank 2 at least");
  Shape scores(q.begin(), q.end() - 1);
  scores.push_back(v.end()[-2]);
  const bool windowed = im.has_input(node, fuse::kAttnWindowMask);
  if (windowed && kind != fuse::kMaskAdd) im.fail(node, "a window mask needs an additive mask");
  std::optional<HostTensor> constant_mask;
  if (windowed)
    constant_mask = windowed_mask(im, node, a, scores);
  else if (const HostTensor* m = im.constant(node, fuse::kAttnMask))
    constant_mask = kind == fuse::kMaskAdd ? *m : causal_of_where(*m, kind == fuse::kMaskWhereTrue);
  if (constant_mask) params.causal = is_causal(*constant_mask, q.end()[-2], v.end()[-2]);
  std::optional<TensorRef> mask;
  if (windowed && !params.causal) {
    mask = im.constant_tensor(std::move(*constant_mask),
                              node.input(fuse::kAttnWindowMask) + "/windowed");
  } else if (im.has_input(node, fuse::kAttnMask) && !params.causal) {
    switch (kind) {
      case fuse::kMaskAdd:
        mask = im.tensor(node, fuse::kAttnMask);
        break;
      case fuse::kMaskWhereTrue:
        mask = additive_mask(im, node, true);
        break;
      case fuse::kMaskWhereFalse:
        mask = additive_mask(im, node, false);
        break;
      default:
        im.fail(node, "unknown mask_kind");
    }
  }
  TensorRef y = ops::attention_strided(im.graph(), fused_view(im, node, a, fuse::kAttnQ, "q"),
                                       fused_view(im, node, a, fuse::kAttnKt, "k"),
                                       fused_view(im, node, a, fuse::kAttnV, "v"), mask, params);
  return {Importer::device_value(im.graph(), y)};
}

// FusedRope (fuse_rope.h): x read through its view, cos and sin broadcast to it.
std::vector<Value> lower_fused_rope(Importer& im, const onnx::NodeProto& node,
                                    const fold::Attrs& a) {
  im.require_inputs(node, fuse::kRopeInputs, fuse::kRopeInputs);
  TensorRef y = ops::rope(im.graph(), fused_view(im, node, a, fuse::kRopeX, "x"),
                          im.tensor(node, fuse::kRopeCos), im.tensor(node, fuse::kRopeSin));
  return {Importer::device_value(im.graph(), y)};
}

}  // namespace

void register_attention(LoweringTable& t) {
  // Computes in float16 storage in float16 mode: attention.cmake declares f16 variants of every
  // kernel (the portable one and the cooperative-matrix one).
  t[fuse::fused_key("FusedAttention")] = {lower_fused_attention, /*computes_in_half=*/true};
  t[fuse::fused_key("FusedRope")] = {lower_fused_rope, /*computes_in_half=*/true};
}

}  // namespace vkgraph::onnx_import
