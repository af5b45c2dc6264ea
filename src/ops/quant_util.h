#pragma once
// Helpers shared by the quantization op files (quant.cpp, quant_gemm.cpp, quant_nbits.cpp).
#include <optional>
#include <string>

#include "shape_ops.h"
#include "vkgraph/ops/quant.h"

namespace vkgraph::ops {

inline bool is_quantized(DType dtype) {
  return dtype == DType::Int8 || dtype == DType::UInt8;
}

// Throws naming `op` unless the device can store bytes (storageBuffer8BitAccess).
void require_8bit_storage(ComputeGraph& g, const std::string& op);
// Throws naming `op` and `what` unless `t` is Int8 or UInt8.
void require_quantized(ComputeGraph& g, TensorRef t, const std::string& op, const char* what);
// The saturation range of a quantized dtype.
struct QuantRange {
  int32_t min, max;
};
QuantRange quant_range(DType dtype);
// `dtype`'s range narrowed to a fused activation's [lo, hi] (RequantEpilogue::range); throws
// naming `op` when nothing is left.
QuantRange output_range(DType dtype, std::optional<std::array<int32_t, 2>> range,
                        const std::string& op);

// A zero point as the Int32 tensor the shaders read: 8-bit ones widened on the device, an
// absent one a constant 0.
TensorRef zero_point_i32(ComputeGraph& g, std::optional<TensorRef> zero_point,
                         const std::string& op);
// Throws naming `op` unless the zero point is int8, uint8 or int32.
void require_zero_point_type(ComputeGraph& g, TensorRef zero_point, const std::string& op);
// A scale as Float32 (a Float16 one converted); throws naming `op` for other dtypes.
TensorRef scale_f32(ComputeGraph& g, TensorRef scale, const std::string& op);
// Number of values of a per-tensor (1) or per-row/column parameter, checked against `expect`
// (valid lengths: 1 or a multiple of `expect` that `total` is a multiple of).
int32_t param_count(ComputeGraph& g, TensorRef param, int64_t expect, int64_t total,
                    const std::string& op, const char* what);
// Throws naming `op` unless `range` is dynamic_quant_range's Float32 [partials, 2].
void require_range(ComputeGraph& g, TensorRef range, const std::string& op);

}  // namespace vkgraph::ops
