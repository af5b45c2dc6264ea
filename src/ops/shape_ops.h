#pragma once
// Helpers shared by the data-movement op families (shape_ops, pad, gather, where, compare,
// cast, cumsum, topk, resize).
#include <array>
#include <string>
#include <vector>

#include "core/shape_rules.h"
#include "op_util.h"

namespace vkgraph::ops {

// The element size that selects the shaders moving elements without arithmetic: 8 (Bool),
// 16 (f16), 32 (f32, i32), 64 (i64). Throws naming `op` for other dtypes, and for Bool or f16
// when the device lacks 8- or 16-bit storage.
uint32_t elem_bits(ComputeGraph& g, DType dtype, const std::string& op);
// `dtype` when per-dtype shaders take it: f32, i32, i64, and Bool when `allow_bool`. Throws
// naming `op` for other dtypes, and for i64 when the device lacks shaderInt64.
DType typed_dtype(ComputeGraph& g, DType dtype, const std::string& op, bool allow_bool = false);
// Throws naming `op` unless `t` is Bool and the device can store it.
void require_bool(ComputeGraph& g, TensorRef t, const std::string& op, const std::string& what);
// Throws naming `op` unless `t` is int32 or int64.
void require_index_dtype(ComputeGraph& g, TensorRef t, const std::string& op);

// A fill value's bits in `dtype` (Bool: 1 unless 0), low word first, for shaders that move
// raw elements (shape_ops.glsl's value_from_words). Throws naming `op` when an integer dtype
// cannot hold it.
std::array<uint32_t, 2> value_words(DType dtype, double value, const std::string& op);

int32_t checked_i32(int64_t v, const std::string& op, const char* what);
// A dispatch of one invocation per element of a range of `n` (nothing when n is zero).
void add_elementwise(ComputeGraph& g, vk::ShaderRef shader, std::vector<Binding> bindings,
                     int64_t n, std::vector<uint8_t> push, std::string label,
                     std::vector<uint32_t> spec = {});

// Throws InvalidArgument naming `op` unless `strides` (one per dim of `shape`, non-negative)
// from `offset` read only elements of `t` (an empty shape reads none).
void check_strided_read(ComputeGraph& g, TensorRef t, const Shape& shape,
                        const std::vector<int64_t>& strides, int64_t offset, const std::string& op);

// dst[dst_offset + sum(i_d * dst_stride_d)] = src[src_offset + sum(i_d * src_stride_d)] for every
// coordinate i of `shape`; strides and offsets in elements.
struct StridedCopy {
  Shape shape;
  std::vector<int64_t> src_stride, dst_stride;
  int64_t src_offset = 0, dst_offset = 0;
};

// Records `copy`: a buffer copy when both sides are one contiguous run, else the strided shader.
void add_strided_copy(ComputeGraph& g, TensorRef src, TensorRef dst, const StridedCopy& copy,
                      const std::string& label);
// A new tensor of `shape` read from `src` through strides/offset; a view of `src` (no copy)
// when that reads all of it in order.
TensorRef read_strided(ComputeGraph& g, TensorRef src, const Shape& shape,
                       const std::vector<int64_t>& src_stride, int64_t src_offset,
                       const std::string& label);

}  // namespace vkgraph::ops
