#pragma once
// Fused scaled-dot-product attention: softmax(scale * q kᵀ + mask) v over the last axis, in one
// dispatch (src/ops/attention.comp). Float32 or float16 (16-bit storage, float32 arithmetic and
// accumulation), all operands of one dtype.
#include <optional>
#include <vector>

#include "vkgraph/ops.h"

namespace vkgraph::ops {

struct AttentionParams {
  float scale = 1.f;
  // Key j > query i is masked out (top-left aligned, as torch's is_causal), besides any mask.
  bool causal = false;
  // A row that softmax makes NaN (a NaN or +inf score, or every score masked to -inf) gives
  // zeros instead of NaN, as torch's _safe_softmax does (exported as Where(IsNaN(p), 0, p)).
  bool zero_nan_rows = false;
  // The result's dims permuted (a Transpose after the attention, e.g. the heads merged back
  // as [B, S, H, D], folded into its stores): dim i of the result is dim out_perm[i] of
  // [B, H, S, D]. Empty: [B, H, S, D] (rank-3 q: [H, S, D]). Rank-4 q only.
  std::vector<int64_t> out_perm;
};

// Operands are permuted views (read through strides, no copy), rank 3 or 4:
//   q  [B, H, S, D] (rank 3: [H, S, D]),
//   kt [B', Hkv, D, Skv]: K transposed (a K stored [B', Hkv, Skv, D] is the view {k, {0,1,3,2}}),
//   v  [B', Hkv, Skv, D],
// with B' 1 or B, Hkv dividing H (grouped-query attention; Hkv = 1 is multi-query), D <= 256;
// mask: additive, broadcastable to [B, H, S, Skv]. Returns q's shape (permuted by
// params.out_perm), contiguous. A row whose
// scores are all -inf is NaN, as Softmax gives unfused (zeros with params.zero_nan_rows).
TensorRef attention(ComputeGraph& g, const PermutedView& q, const PermutedView& kt,
                    const PermutedView& v, std::optional<TensorRef> mask,
                    const AttentionParams& params);

// The view `p` is: its permuted shape, the stored tensor's row-major strides permuted.
StridedView strided_view(ComputeGraph& g, const PermutedView& p);
// attention of strided views (rank 3 or 4, the shapes as above); every element a view reads
// must lie within its tensor.
TensorRef attention_strided(ComputeGraph& g, const StridedView& q, const StridedView& kt,
                            const StridedView& v, std::optional<TensorRef> mask,
                            const AttentionParams& params);

}  // namespace vkgraph::ops
