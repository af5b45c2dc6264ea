// Constant folding of indexed data movement: ScatterND, GatherND and Trilu. Exporters build
// attention masks with them from shapes alone (a slice assignment into zeros becomes ScatterND,
// torch.triu becomes Trilu), so with static shapes the whole mask is known at load.
#include "onnx/fold_eval.h"

namespace vkgraph::fold::detail {
namespace {

int64_t product(const Shape& shape, size_t from, size_t to) {
  int64_t p = 1;
  for (size_t d = from; d < to; ++d) p *= shape[d];
  return p;
}

// The element offset of the block that index tuple `tuple` (k values starting at dim `first`
// of `shape`) names, with negative indices counted from the back as ONNX allows.
int64_t block_offset(const Node& n, const Shape& shape, size_t first, const int64_t* tuple,
                     size_t k) {
  int64_t offset = 0;
  for (size_t j = 0; j < k; ++j) {
    const int64_t dim = shape[first + j];
    int64_t i = tuple[j];
    n.require(i >= -dim && i < dim, "index " + std::to_string(i) + " out of range for axis " +
                                        std::to_string(first + j) + " of size " +
                                        std::to_string(dim));
    if (i < 0) i += dim;
    offset = offset * dim + i;
  }
  return offset;
}

HostTensor eval_gather_nd(const Node& n) {
  const HostTensor& data = n.in(0);
  const HostTensor& idx = n.in(1);
  const std::vector<int64_t> indices = n.int_values(idx, "indices");
  const size_t r = data.shape.size(), q = idx.shape.size();
  const int64_t b = n.attrs.get_int("batch_dims", 0);
  n.require(r >= 1 && q >= 1, "data and indices must have rank >= 1");
  n.require(b >= 0 && static_cast<size_t>(b) < std::min(r, q),
            "batch_dims " + std::to_string(b) + " must be less than both ranks");
  const size_t batch = static_cast<size_t>(b);
  const size_t k = static_cast<size_t>(idx.shape.back());
  n.require(k >= 1 && batch + k <= r, "indices' last dimension " + std::to_string(k) +
                                          " does not fit data of rank " + std::to_string(r));
  for (size_t d = 0; d < batch; ++d)
    n.require(data.shape[d] == idx.shape[d], "batch dimensions of data and indices differ");

  Shape shape(idx.shape.begin(), idx.shape.end() - 1);
  shape.insert(shape.end(), data.shape.begin() + batch + k, data.shape.end());
  HostTensor out = n.output(data.dtype, shape);
  const int64_t batches = product(data.shape, 0, batch);
  const int64_t tuples_per_batch = product(idx.shape, batch, q - 1);
  const int64_t block = product(data.shape, batch + k, r);
  const int64_t data_batch = product(data.shape, batch, r);
  for (int64_t bi = 0; bi < batches; ++bi) {
    for (int64_t t = 0; t < tuples_per_batch; ++t) {
      const int64_t tuple = bi * tuples_per_batch + t;
      const int64_t from =
          bi * data_batch +
          block_offset(n, data.shape, batch, indices.data() + tuple * k, k) * block;
      for (int64_t e = 0; e < block; ++e) copy_element(data, from + e, out, tuple * block + e);
    }
  }
  return out;
}

enum class Reduction { None, Add, Mul, Max, Min };

Reduction reduction_of(const Node& n) {
  const auto it = n.attrs.strings.find("reduction");
  if (it == n.attrs.strings.end() || it->second == "none") return Reduction::None;
  if (it->second == "add") return Reduction::Add;
  if (it->second == "mul") return Reduction::Mul;
  if (it->second == "max") return Reduction::Max;
  if (it->second == "min") return Reduction::Min;
  n.fail("unknown reduction '" + it->second + "'");
}

// out[to] = reduce(out[to], updates[from]), in int64 or double like the other folds.
void scatter_element(Reduction reduction, const HostTensor& updates, int64_t from, HostTensor& out,
                     int64_t to) {
  if (reduction == Reduction::None) return copy_element(updates, from, out, to);
  if (is_float(out.dtype)) {
    const double a = out.as_double(to), b = updates.as_double(from);
    const double v = reduction == Reduction::Add   ? a + b
                     : reduction == Reduction::Mul ? a * b
                     : std::isnan(a) || std::isnan(b)
                         ? NAN
                         : (reduction == Reduction::Max ? std::max(a, b) : std::min(a, b));
    return out.set(to, v);
  }
  const int64_t a = out.as_int(to), b = updates.as_int(from);
  const int64_t v = reduction == Reduction::Add   ? wrap_add(a, b)
                    : reduction == Reduction::Mul ? wrap_mul(a, b)
                    : reduction == Reduction::Max ? std::max(a, b)
                                                  : std::min(a, b);
  out.set_int(to, v);
}

HostTensor eval_scatter_nd(const Node& n) {
  const HostTensor& data = n.in(0);
  const HostTensor& idx = n.in(1);
  const HostTensor& updates = n.in(2);
  const std::vector<int64_t> indices = n.int_values(idx, "indices");
  const size_t r = data.shape.size(), q = idx.shape.size();
  n.require(r >= 1 && q >= 1, "data and indices must have rank >= 1");
  n.require(updates.dtype == data.dtype, std::string("updates dtype ") + dtype_name(updates.dtype) +
                                             " differs from data's " + dtype_name(data.dtype));
  const size_t k = static_cast<size_t>(idx.shape.back());
  n.require(k >= 1 && k <= r, "indices' last dimension " + std::to_string(k) +
                                  " does not fit data of rank " + std::to_string(r));
  Shape want(idx.shape.begin(), idx.shape.end() - 1);
  want.insert(want.end(), data.shape.begin() + k, data.shape.end());
  n.require(updates.shape == want,
            "updates have shape " + shape_str(updates.shape) + ", expected " + shape_str(want));
  const Reduction reduction = reduction_of(n);
  n.require(reduction == Reduction::None || data.dtype != DType::Bool,
            "reductions do not accept bool data");

  HostTensor out = n.output(data.dtype, data.shape);
  out.bytes = data.bytes;
  const int64_t tuples = product(idx.shape, 0, q - 1);
  const int64_t block = product(data.shape, k, r);
  // Duplicate indices without a reduction are undefined by ONNX; the last update wins here.
  for (int64_t t = 0; t < tuples; ++t) {
    const int64_t to = block_offset(n, data.shape, 0, indices.data() + t * k, k) * block;
    for (int64_t e = 0; e < block; ++e)
      scatter_element(reduction, updates, t * block + e, out, to + e);
  }
  return out;
}

HostTensor eval_trilu(const Node& n) {
  const HostTensor& x = n.in(0);
  const size_t rank = x.shape.size();
  n.require(rank >= 2, "input must have rank >= 2");
  const int64_t k = n.opt(1) ? n.int_values(n.scalar(1, "k"), "k")[0] : 0;
  const bool upper = n.attrs.get_int("upper", 1) != 0;
  const int64_t rows = x.shape[rank - 2], cols = x.shape[rank - 1];
  HostTensor out = n.output(x.dtype, x.shape);  // zero-filled: what the triangle drops
  const int64_t matrices = product(x.shape, 0, rank - 2);
  for (int64_t m = 0; m < matrices; ++m) {
    for (int64_t i = 0; i < rows; ++i) {
      for (int64_t j = 0; j < cols; ++j) {
        // Kept: on or above diagonal k (upper), on or below it (lower). j - i cannot overflow:
        // both are dims of a tensor that fits in memory.
        const bool keep = upper ? j - i >= k : j - i <= k;
        const int64_t e = (m * rows + i) * cols + j;
        if (keep) copy_element(x, e, out, e);
      }
    }
  }
  return out;
}

}  // namespace

void add_index_evaluators(EvaluatorTable& table) {
  table["GatherND"] = eval_gather_nd;
  table["ScatterND"] = eval_scatter_nd;
  table["Trilu"] = eval_trilu;
}

}  // namespace vkgraph::fold::detail
