#pragma once
// Fused scaled-dot-product attention: softmax(scale * q kᵀ + mask) v over the last axis, in one
// dispatch (src/ops/attention.comp). Float32 or float16 (16-bit storage, float32 arithmetic and
// accumulation), all operands of one dtype.
#include <optional>

#include "vkgraph/ops.h"

namespace vkgraph::ops {

struct AttentionParams {
  float scale = 1.f;
  // Key j > query i is masked out (top-left aligned, as torch's is_causal), besides any mask.
  bool causal = false;
};

// Operands are permuted views (read through strides, no copy), rank 3 or 4:
//   q  [B, H, S, D] (rank 3: [H, S, D]),
//   kt [B', Hkv, D, Skv]: K transposed (a K stored [B', Hkv, Skv, D] is the view {k, {0,1,3,2}}),
//   v  [B', Hkv, Skv, D],
// with B' 1 or B, Hkv dividing H (grouped-query attention; Hkv = 1 is multi-query), D <= 256;
// mask: additive, broadcastable to [B, H, S, Skv]. Returns q's shape, contiguous. A row whose
// scores are all -inf is NaN, as Softmax gives unfused.
TensorRef attention(ComputeGraph& g, const PermutedView& q, const PermutedView& kt,
                    const PermutedView& v, std::optional<TensorRef> mask,
                    const AttentionParams& params);

}  // namespace vkgraph::ops
