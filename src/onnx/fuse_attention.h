#pragma once
// The attention pattern of the fusion pass (fuse.h): what PyTorch's exporters emit for
// scaled-dot-product attention becomes one FusedAttention node, lowered to ops::attention.
//
//   MatMul(Q, Kᵀ) [-> Mul/Div by a scalar constant] [-> Add(mask) | Where(bool, -inf, ·)]
//     [-> Reshape -> Add(window mask) -> Reshape back] -> Softmax(last axis)
//     [-> Where(IsNaN(p), 0, p)] [-> Dropout (inference)] -> MatMul(·, V) [-> Transpose]
//
// The Where(IsNaN) is torch's _safe_softmax, which the dynamo exporter writes for
// scaled_dot_product_attention with a mask (Hugging Face BERT's): rows that softmax makes NaN
// (every score masked to -inf, say) become zeros; the kernel does that itself
// (AttentionParams::zero_nan_rows).
//
// The Reshape/Add/Reshape is Swin's shifted-window mask, added to the scores viewed as
// [B, windows, H, N, N]; both masks must be host constants (the lowering adds them up on the
// host). Masks, scales and shapes that the exporter computes after the scores' MatMul in node
// order are folded ahead (Importer::fold_ahead).
//
// Q, Kᵀ and V are read as the pass's views (elided Transposes) or as computed tensors; a K
// given transposed is just a Kᵀ with no permutation. The dynamo/onnxscript decomposition of
// scaled_dot_product_attention scales Q and Kᵀ by sqrt(scale) each before the MatMul; rooted at
// the first of those two Muls, the pattern folds both into the one scale. K and V may be grouped
// views (Llama's repeat_kv, fuse_view.h): the kernel reads them with their stored KV heads.
#include <onnx/onnx_pb.h>

#include <optional>

#include "onnx/fuse.h"

namespace vkgraph::onnx_import::fuse {

// Rooted at the scores' MatMul.
std::optional<Fusion> attention(const onnx::NodeProto& matmul, Pass& pass);
// Rooted at a Mul by a scalar whose product is one operand of the scores' MatMul, the other
// operand being a Mul by a scalar not lowered yet (the dynamo form).
std::optional<Fusion> attention_prescaled(const onnx::NodeProto& mul, Pass& pass);
// Rooted at a Mul or Div of q by a scalar constant whose product is the scores' MatMul's first
// operand (Swin; torch 1.13's nn.MultiheadAttention). Kᵀ is computed already or a Transpose
// after the Mul in node order that the pass elides (read through its view ahead).
std::optional<Fusion> attention_scaled_q(const onnx::NodeProto& scale, Pass& pass);

// FusedAttention's inputs (absent mask: an empty name) and attributes: "perm_q", "perm_k",
// "perm_v" (the permutation of the stored tensor that gives q, kᵀ, v; absent: as stored), or
// for another view (fuse_view.h: a Gather or Slice of a packed QKV projection) "shape_x",
// "strides_x", "offset_x" with x one of q, k, v, "perm_out" (the permutation of [B, H, S, D] the
// output is stored in; absent: none), "scale" (float), "mask_kind" (kMaskAdd: added to the scores;
// kMaskWhereTrue/False: a bool tensor, whose true/false entries mask the score out with -inf),
// "window_shape" (with the window mask: the shape the scores are viewed in when it is added; the
// mask broadcasts to it), "zero_nan_rows" (1: the _safe_softmax guard was absorbed).
enum AttentionInput : int { kAttnQ, kAttnKt, kAttnV, kAttnMask, kAttnWindowMask, kAttnInputs };
enum AttentionMask : int64_t { kMaskAdd = 0, kMaskWhereTrue = 1, kMaskWhereFalse = 2 };

}  // namespace vkgraph::onnx_import::fuse
