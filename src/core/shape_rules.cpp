#include "shape_rules.h"

#include <algorithm>
#include <numeric>

#include "vkgraph/error.h"

namespace vkgraph::shapes {

std::vector<int64_t> contiguous_strides(const Shape& shape) {
  std::vector<int64_t> strides(shape.size());
  int64_t stride = 1;
  for (size_t k = shape.size(); k-- > 0;) {
    strides[k] = stride;
    if (__builtin_mul_overflow(stride, shape[k], &stride)) stride = 0;
  }
  return strides;
}

std::optional<Shape> broadcast(const std::vector<const Shape*>& shapes) {
  size_t rank = 0;
  for (const Shape* s : shapes) rank = std::max(rank, s->size());
  Shape out(rank, 1);
  for (const Shape* s : shapes) {
    const size_t lead = rank - s->size();
    for (size_t d = 0; d < s->size(); ++d) {
      const int64_t dim = (*s)[d];
      int64_t& o = out[lead + d];
      if (dim == o || dim == 1) continue;
      if (o != 1) return std::nullopt;
      o = dim;
    }
  }
  return out;
}

std::vector<int64_t> broadcast_strides(const Shape& in, const Shape& out) {
  std::vector<int64_t> strides(out.size(), 0);
  const std::vector<int64_t> contiguous = contiguous_strides(in);
  const size_t lead = out.size() - in.size();
  for (size_t d = 0; d < in.size(); ++d) {
    const bool broadcasts = in[d] == 1 && out[lead + d] != 1;
    strides[lead + d] = broadcasts ? 0 : contiguous[d];
  }
  return strides;
}

int64_t normalize_axis(int64_t axis, int64_t rank, const std::string& op) {
  // A scalar has no axis; callers that index the shape by the result rely on that.
  if (axis < -rank || axis >= rank)
    throw Error(ErrorKind::InvalidArgument, op + ": axis " + std::to_string(axis) +
                                                " out of range for rank " + std::to_string(rank));
  return axis < 0 ? axis + rank : axis;
}

namespace {

// numel's overflow error, restated for `op` and the shape the model wrote.
int64_t count_of(const Shape& shape, const std::vector<int64_t>& target, const std::string& op) {
  try {
    return numel(shape);
  } catch (const Error& e) {
    throw Error(ErrorKind::InvalidArgument,
                op + ": invalid shape " + shape_str(target) + ": " + e.message());
  }
}

}  // namespace

Shape resolve_reshape(const Shape& in, const std::vector<int64_t>& target, bool allowzero,
                      const std::string& op) {
  auto fail = [&](const std::string& problem) {
    throw Error(ErrorKind::InvalidArgument, op + ": " + problem);
  };
  Shape out = target;
  int64_t inferred = -1;
  bool literal_zero = false;
  for (size_t i = 0; i < target.size(); ++i) {
    if (target[i] == -1) {
      if (inferred >= 0) fail("shape " + shape_str(target) + " has more than one -1");
      inferred = static_cast<int64_t>(i);
      out[i] = 1;
    } else if (target[i] == 0 && !allowzero) {
      if (i >= in.size())
        fail("0 at position " + std::to_string(i) + " of " + shape_str(target) +
             " has no matching dim in input " + shape_str(in));
      out[i] = in[i];
    } else if (target[i] < 0) {
      fail("negative dim in shape " + shape_str(target));
    } else {
      literal_zero |= target[i] == 0;
    }
  }
  const int64_t count = count_of(in, target, op);
  if (inferred >= 0) {
    // With allowzero a 0 is a real dim, and -1 beside it could be anything.
    if (literal_zero) fail("shape " + shape_str(target) + " has both -1 and 0 with allowzero");
    const int64_t known = count_of(out, target, op);
    if (known == 0 || count % known != 0)
      fail("cannot infer -1 in " + shape_str(target) + " for input " + shape_str(in));
    out[inferred] = count / known;
  }
  const int64_t out_count = count_of(out, target, op);
  if (out_count != count)
    fail("input " + shape_str(in) + " has " + std::to_string(count) +
         " elements, cannot reshape to " + shape_str(target) + " (" + std::to_string(out_count) +
         " elements)");
  return out;
}

std::vector<int64_t> resolve_perm(const Shape& shape, std::vector<int64_t> perm,
                                  const std::string& op) {
  const size_t rank = shape.size();
  if (perm.empty()) {
    perm.resize(rank);
    std::iota(perm.rbegin(), perm.rend(), 0);
  }
  std::vector<bool> seen(rank, false);
  bool valid = perm.size() == rank;
  for (int64_t d : perm) {
    if (!valid || d < 0 || d >= static_cast<int64_t>(rank) || seen[d]) {
      valid = false;
      break;
    }
    seen[d] = true;
  }
  if (!valid)
    throw Error(ErrorKind::InvalidArgument, op + ": perm " + shape_str(perm) +
                                                " is not a permutation of the dims of " +
                                                shape_str(shape));
  return perm;
}

Shape gather_shape(const Shape& data, const Shape& indices, int64_t axis) {
  Shape out(data.begin(), data.begin() + axis);
  out.insert(out.end(), indices.begin(), indices.end());
  out.insert(out.end(), data.begin() + axis + 1, data.end());
  return out;
}

bool concat_compatible(const Shape& first, const Shape& shape, int64_t axis) {
  if (shape.size() != first.size()) return false;
  for (size_t d = 0; d < shape.size(); ++d)
    if (static_cast<int64_t>(d) != axis && shape[d] != first[d]) return false;
  return true;
}

Shape reduced_shape(const Shape& in, const std::vector<bool>& reduced, bool keepdims) {
  Shape out;
  for (size_t d = 0; d < in.size(); ++d)
    if (!reduced[d] || keepdims) out.push_back(reduced[d] ? 1 : in[d]);
  return out;
}

std::vector<int64_t> split_evenly(int64_t dim, int64_t parts) {
  const int64_t each = dim / parts + (dim % parts != 0);
  std::vector<int64_t> sizes;
  for (int64_t i = 0; i < parts; ++i) sizes.push_back(std::min(each, dim - i * each));
  return sizes;
}

SliceRange resolve_slice(int64_t dim, int64_t start, int64_t end, int64_t step) {
  int64_t s = start < 0 ? start + dim : start;
  int64_t e = end < 0 ? end + dim : end;
  uint64_t span = 0;
  if (dim > 0) {
    if (step > 0) {
      s = std::clamp<int64_t>(s, 0, dim);
      e = std::clamp<int64_t>(e, 0, dim);
      span = e > s ? static_cast<uint64_t>(e - s) : 0;
    } else {
      s = std::clamp<int64_t>(s, 0, dim - 1);
      e = std::clamp<int64_t>(e, -1, dim - 1);
      span = s > e ? static_cast<uint64_t>(s - e) : 0;
    }
  }
  // Unsigned, so that the magnitude of INT64_MIN is representable.
  const uint64_t magnitude =
      step > 0 ? static_cast<uint64_t>(step) : 0 - static_cast<uint64_t>(step);
  SliceRange r;
  r.count = static_cast<int64_t>(ceil_div(span, magnitude));
  r.first = r.count > 0 ? s : 0;
  r.step = r.count > 1 ? step : 1;
  return r;
}

}  // namespace vkgraph::shapes
