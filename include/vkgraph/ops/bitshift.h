#pragma once
// Bit shifts of unsigned integers (src/ops/bitshift), as ONNX BitShift.
#include "vkgraph/graph/compute_graph.h"
#include "vkgraph/shaders/bitshift.h"

namespace vkgraph::ops {

using ShiftDirection = shaders::bitshift::Direction;

// x << amount or x >> amount, elementwise with NumPy broadcasting, on unsigned values of
// `bits` bits (8, 16, 32 or 64): Int32 tensors hold 8- and 16-bit values, Int64 tensors 32-
// and 64-bit ones (a 64-bit value's top bit in the sign bit). Bits shifted past the width are
// dropped; shifting by the width or more gives 0.
TensorRef bit_shift(ComputeGraph& g, TensorRef x, TensorRef amount, ShiftDirection direction,
                    uint32_t bits);

}  // namespace vkgraph::ops
