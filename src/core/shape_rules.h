#pragma once
// ONNX shape rules, host-only (no Vulkan, no protobuf): the one place that says how shapes
// broadcast, how a Reshape target or a Slice range resolves, and how a row-major tensor is
// strided. The host folder (onnx/fold*) and the device ops (ops/*) both call these, so a folded
// result and a device result can never disagree about a shape.
//
// Rules that can fail throw Error(InvalidArgument, "<op>: ...") naming `op`; rules whose
// callers phrase their own errors return std::nullopt instead.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "vkgraph/types.h"

namespace vkgraph::shapes {

// ceil(a / b) for b > 0, without the overflow of (a + b - 1) / b.
constexpr uint64_t ceil_div(uint64_t a, uint64_t b) {
  return a / b + (a % b != 0);
}

// Row-major element strides of `shape`. Where the product overflows int64 the shape has a zero
// dim (numel rejects every other such shape), so there is nothing to address and the
// overflowing strides are set to 0 instead of wrapping.
std::vector<int64_t> contiguous_strides(const Shape& shape);

// The multidirectional (NumPy) broadcast of `shapes`, right-aligned; nullopt when two dims
// differ and neither is 1.
std::optional<Shape> broadcast(const std::vector<const Shape*>& shapes);

// Element strides that read a contiguous tensor of shape `in` at each index of its broadcast
// shape `out` (right-aligned, length out.size()): 0 along dims that `in` broadcasts.
std::vector<int64_t> broadcast_strides(const Shape& in, const Shape& out);

// Maps `axis` from [-rank, rank) to [0, rank); throws naming `op` outside that range.
int64_t normalize_axis(int64_t axis, int64_t rank, const std::string& op);

// The output shape of ONNX Reshape of `in` to `target`: 0 copies the input dim at its position
// (a real zero-sized dim with `allowzero`), one -1 takes what is left. Throws naming `op` for
// targets the spec rejects or whose element count differs from the input's.
Shape resolve_reshape(const Shape& in, const std::vector<int64_t>& target, bool allowzero,
                      const std::string& op);

// `perm` checked to be a permutation of the dims of `shape`; empty means reversing them (ONNX
// Transpose's default). Throws naming `op` otherwise.
std::vector<int64_t> resolve_perm(const Shape& shape, std::vector<int64_t> perm,
                                  const std::string& op);

// The output shape of ONNX Gather: `data`'s dims with dim `axis` (already normalized) replaced
// by all of `indices`' dims.
Shape gather_shape(const Shape& data, const Shape& indices, int64_t axis);

// Whether an input of `shape` can join one of `first` in ONNX Concat along `axis` (already
// normalized): the same rank, and the same dims off the axis.
bool concat_compatible(const Shape& first, const Shape& shape, int64_t axis);

// The output shape of a reduction of `in` over the dims flagged in `reduced`: those dims
// become 1 with `keepdims`, and are dropped without.
Shape reduced_shape(const Shape& in, const std::vector<bool>& reduced, bool keepdims);

// One axis of an ONNX Slice, clamped to a dim: `count` elements from index `first`, `step`
// apart. With one element or none the step is never taken and is reported as 1, so callers
// that multiply it into a stride cannot overflow.
struct SliceRange {
  int64_t first = 0;
  int64_t count = 0;
  int64_t step = 1;
};
// Negative start/end count from the end, then clamp: a positive step to [0, dim]; a negative
// step start to [0, dim-1] and end to [-1, dim-1], so end -1 means "through index 0". `step`
// must be non-zero (callers name the axis in that error).
SliceRange resolve_slice(int64_t dim, int64_t start, int64_t end, int64_t step);

// ONNX Split without sizes: `parts` pieces of ceil(dim / parts) along the axis, the last one
// smaller where it does not divide (parts > 0; a size below 0 where parts do not fit: the
// caller's to refuse).
std::vector<int64_t> split_evenly(int64_t dim, int64_t parts);

}  // namespace vkgraph::shapes
