// The lowering of the fusion pass's FusedAttention node (fuse_attention.h) to ops::attention.
#include <limits>

#include "onnx/fuse_attention.h"
#include "onnx/importer.h"
#include "vkgraph/ops/attention.h"

namespace vkgraph::onnx_import {
namespace {

ops::PermutedView view(Importer& im, const onnx::NodeProto& node, const fold::Attrs& a, int input,
                       const char* perm) {
  const std::vector<int64_t>* p = a.find_ints(perm);
  return {im.tensor(node, input), p ? *p : std::vector<int64_t>{}};
}

HostTensor float_scalar(float v) {
  HostTensor t(DType::Float32, {});
  t.data<float>()[0] = v;
  return t;
}

// The additive mask of a Where that masks scores out where its condition is `masked_when`:
// -inf there, 0 elsewhere. A constant condition becomes a constant; a computed one a Where.
TensorRef additive_mask(Importer& im, const onnx::NodeProto& node, bool masked_when) {
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  if (const HostTensor* cond = im.constant(node, fuse::kAttnMask)) {
    HostTensor m(DType::Float32, cond->shape);
    for (int64_t i = 0; i < cond->numel(); ++i)
      m.data<float>()[i] = (cond->data<uint8_t>()[i] != 0) == masked_when ? kNegInf : 0.f;
    return im.constant_tensor(std::move(m), node.input(fuse::kAttnMask) + "/additive");
  }
  TensorRef inf = im.constant_tensor(float_scalar(kNegInf)),
            zero = im.constant_tensor(float_scalar(0.f));
  TensorRef cond = im.tensor(node, fuse::kAttnMask);
  return masked_when ? ops::where(im.graph(), cond, inf, zero)
                     : ops::where(im.graph(), cond, zero, inf);
}

std::vector<Value> lower_fused_attention(Importer& im, const onnx::NodeProto& node,
                                         const fold::Attrs& a) {
  im.require_inputs(node, fuse::kAttnInputs - 1, fuse::kAttnInputs);
  std::optional<TensorRef> mask;
  if (im.has_input(node, fuse::kAttnMask)) {
    switch (a.get_int("mask_kind", fuse::kMaskAdd)) {
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
  ops::AttentionParams params;
  auto scale = a.floats.find("scale");
  if (scale != a.floats.end()) params.scale = scale->second;
  TensorRef y = ops::attention(im.graph(), view(im, node, a, fuse::kAttnQ, "perm_q"),
                               view(im, node, a, fuse::kAttnKt, "perm_k"),
                               view(im, node, a, fuse::kAttnV, "perm_v"), mask, params);
  return {Importer::device_value(im.graph(), y)};
}

}  // namespace

void register_attention(LoweringTable& t) {
  t[fuse::fused_key("FusedAttention")] = lower_fused_attention;
}

}  // namespace vkgraph::onnx_import
