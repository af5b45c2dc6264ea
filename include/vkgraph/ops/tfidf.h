#pragma once
// N-gram counting over integer token ids (src/ops/tfidf), as ONNX TfIdfVectorizer.
#include <cstdint>
#include <vector>

#include "vkgraph/graph/compute_graph.h"

namespace vkgraph::ops {

enum class TfIdfMode { TF, IDF, TFIDF };

// The n-grams to count: `pool` holds them level by level (all 1-grams, then all 2-grams, ...),
// `level_starts[k]` is where the (k+1)-grams start; n-gram number i of the pool (in that
// order) is counted into output column `columns[i]` with weight `weights[i]` (empty: all 1).
struct NgramPool {
  std::vector<int64_t> pool;
  std::vector<int64_t> level_starts;
  std::vector<int64_t> columns;
  std::vector<float> weights;
  int64_t min_gram_length = 1, max_gram_length = 1;
  int64_t max_skip_count = 0;  // tokens an n-gram may skip between its items
  TfIdfMode mode = TfIdfMode::TF;
};

// x: Int32 or Int64 token ids, [C] or [B, C]. Returns Float32 [max(columns) + 1] or
// [B, max(columns) + 1]: per row, the count of each pool n-gram whose length is within
// [min_gram_length, max_gram_length] over every start and every skip 0..max_skip_count (a
// 1-gram once per position), as TF (the count), IDF (weight where the count is non-zero) or
// TFIDF (count * weight). Columns no n-gram maps to are 0.
TensorRef tfidf_vectorize(ComputeGraph& g, TensorRef x, const NgramPool& ngrams);

}  // namespace vkgraph::ops
