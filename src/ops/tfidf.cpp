// TfIdfVectorizer's counting: the pool is checked and resolved per output column on the host,
// the counting runs on the device.
#include "vkgraph/ops/tfidf.h"

#include <algorithm>
#include <bit>
#include <limits>

#include "shape_ops.h"
#include "vkgraph/shaders/tfidf.h"

namespace vkgraph::ops {

TensorRef tfidf_vectorize(ComputeGraph& g, TensorRef x, const NgramPool& ngrams) {
  const std::string op = "tfidf_vectorize";
  const TensorInfo xi = g.info(x);
  if (xi.dtype != DType::Int32 && xi.dtype != DType::Int64)
    throw Error(ErrorKind::InvalidArgument,
                op + ": x must be int32 or int64, got " + dtype_name(xi.dtype));
  if (xi.shape.empty() || xi.shape.size() > 2)
    throw Error(ErrorKind::InvalidArgument,
                op + ": x must be [C] or [B, C], got " + shape_str(xi.shape));
  const NgramPool& p = ngrams;
  auto bad = [&](const std::string& what) {
    throw Error(ErrorKind::InvalidArgument, op + ": " + what);
  };
  if (p.min_gram_length < 1 || p.max_gram_length < p.min_gram_length)
    bad("gram lengths [" + std::to_string(p.min_gram_length) + ", " +
        std::to_string(p.max_gram_length) + "] are not a range of positive lengths");
  if (p.max_skip_count < 0) bad("max_skip_count is negative");
  if (static_cast<int64_t>(p.level_starts.size()) < p.max_gram_length)
    bad("level_starts has " + std::to_string(p.level_starts.size()) +
        " entries for n-grams up to " + std::to_string(p.max_gram_length));
  // Walk the pool level by level: n-gram i has length n and starts at `at`.
  const int64_t pool_size = static_cast<int64_t>(p.pool.size());
  std::vector<std::pair<int64_t, int64_t>> grams;  // (n, start) in pool order
  for (size_t level = 0; level < p.level_starts.size(); ++level) {
    const int64_t n = static_cast<int64_t>(level) + 1;
    const int64_t begin = p.level_starts[level];
    const int64_t end = level + 1 < p.level_starts.size() ? p.level_starts[level + 1] : pool_size;
    if (begin < 0 || end < begin || end > pool_size || (end - begin) % n != 0)
      bad("level_starts entry " + std::to_string(level) + " (" + std::to_string(begin) +
          ") does not split the pool of " + std::to_string(pool_size) + " into " +
          std::to_string(n) + "-grams");
    for (int64_t at = begin; at < end; at += n) grams.push_back({n, at});
  }
  if (p.columns.size() != grams.size())
    bad(std::to_string(p.columns.size()) + " columns for " + std::to_string(grams.size()) +
        " n-grams");
  if (!p.weights.empty() && p.weights.size() != grams.size())
    bad(std::to_string(p.weights.size()) + " weights for " + std::to_string(grams.size()) +
        " n-grams");
  int64_t width = 0;
  for (int64_t c : p.columns) {
    if (c < 0 || c >= std::numeric_limits<int32_t>::max())
      bad("column " + std::to_string(c) + " out of range");
    width = std::max(width, c + 1);
  }
  std::vector<int32_t> table(static_cast<size_t>(width) * 3, 0);
  std::vector<bool> taken(static_cast<size_t>(width), false);
  for (size_t i = 0; i < grams.size(); ++i) {
    const size_t c = static_cast<size_t>(p.columns[i]);
    if (taken[c]) bad("two n-grams map to column " + std::to_string(c));
    taken[c] = true;
    const auto [n, start] = grams[i];
    // An item beyond int32 can never match int32 tokens: that n-gram always counts 0.
    bool representable = true;
    for (int64_t k = 0; k < n && xi.dtype == DType::Int32; ++k)
      representable = representable && p.pool[start + k] >= std::numeric_limits<int32_t>::min() &&
                      p.pool[start + k] <= std::numeric_limits<int32_t>::max();
    const bool counted = n >= p.min_gram_length && n <= p.max_gram_length && representable;
    table[3 * c] = counted ? static_cast<int32_t>(n) : 0;
    table[3 * c + 1] = static_cast<int32_t>(start);
    table[3 * c + 2] = std::bit_cast<int32_t>(p.weights.empty() ? 1.f : p.weights[i]);
  }
  const int64_t length = xi.shape.back();
  const int64_t rows = xi.shape.size() == 2 ? xi.shape[0] : 1;
  const Shape out = xi.shape.size() == 2 ? Shape{rows, width} : Shape{width};
  std::vector<int64_t> pool = p.pool;
  if (pool.empty()) pool.push_back(0);  // storage buffers cannot be empty
  HostTensor pool_values;
  if (xi.dtype == DType::Int64) {
    pool_values = HostTensor::from(DType::Int64, {static_cast<int64_t>(pool.size())}, pool);
  } else {
    std::vector<int32_t> narrow(pool.size());  // unrepresentable items are never compared
    for (size_t i = 0; i < narrow.size(); ++i) narrow[i] = static_cast<int32_t>(pool[i]);
    pool_values = HostTensor::from(DType::Int32, {static_cast<int64_t>(pool.size())}, narrow);
  }
  if (table.empty()) table = {0, 0, 0};  // storage buffers cannot be empty
  TensorRef pool_t = g.add_constant(std::move(pool_values), "ngram_pool");
  TensorRef table_t = g.add_constant(
      HostTensor::from(DType::Int32, {static_cast<int64_t>(table.size())}, table), "ngram_columns");
  TensorRef y = g.add_tensor(out, DType::Float32);
  const int64_t total = rows * width;
  PushConstants pc;
  pc.add(checked_i32(total, op, "output size")).add(checked_i32(width, op, "width"));
  pc.add(checked_i32(length, op, "row length"))
      .add(checked_i32(p.max_skip_count, op, "max_skip_count"));
  pc.add(static_cast<int32_t>(p.mode));
  const vk::ShaderId shader = declared(shaders::tfidf::find(typed_dtype(g, xi.dtype, op)), op);
  add_elementwise(
      g, shader,
      {{x, Access::Read}, {pool_t, Access::Read}, {table_t, Access::Read}, {y, Access::Write}},
      total, pc.take(), op);
  return y;
}

}  // namespace vkgraph::ops
