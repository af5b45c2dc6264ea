#pragma once
// Forward training losses with ONNX semantics (src/ops/loss): NegativeLogLikelihoodLoss, and
// SoftmaxCrossEntropyLoss as log_softmax followed by it.
#include <cstdint>
#include <optional>

#include "vkgraph/graph/compute_graph.h"

namespace vkgraph::ops {

enum class LossReduction { None, Sum, Mean };

struct NllLossOptions {
  LossReduction reduction = LossReduction::Mean;
  // Targets equal to it add nothing to the loss and nothing to Mean's divisor.
  std::optional<int64_t> ignore_index;
};

// log_prob: [N, C, d1, ...] Float32; target: [N, d1, ...] Int32 or Int64; weight: [C] Float32.
// loss = -log_prob[n, target, d...] * weight[target]; None gives target's shape, Sum and Mean a
// scalar (Mean divides by the sum of the weights that were applied). A target outside [0, C)
// that is not ignored throws when `target` is a constant and gives NaN when it is computed.
TensorRef nll_loss(ComputeGraph& g, TensorRef log_prob, TensorRef target,
                   std::optional<TensorRef> weight = std::nullopt,
                   const NllLossOptions& options = {});

}  // namespace vkgraph::ops
