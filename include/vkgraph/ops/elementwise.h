#pragma once
// Elementwise ops: arithmetic with NumPy broadcasting, activations, comparisons, logical ops,
// where and cast. BinaryOp, UnaryOp, CompareOp and LogicalOp are generated from their shader
// families' declarations (src/ops/<family>.cmake), so an op exists exactly when its shaders do.
//
// Float ops take float32 or float16 tensors, all operands of one dtype, and return that dtype.
// Float16 tensors are stored in 16 bits (storageBuffer16BitAccess) and computed in float32.
#include "vkgraph/graph/compute_graph.h"
#include "vkgraph/shaders/binary.h"
#include "vkgraph/shaders/compare.h"
#include "vkgraph/shaders/logical.h"
#include "vkgraph/shaders/unary.h"

namespace vkgraph::ops {

using BinaryOp = shaders::binary::Op;
using CompareOp = shaders::compare::Op;
using LogicalOp = shaders::logical::Op;
// Parameters as in UnaryParams; Identity copies, for every dtype; Not takes Bool.
using UnaryOp = shaders::unary::Op;

struct UnaryParams {
  float alpha = 0.f;  // LeakyRelu/Elu/Selu/HardSigmoid/Celu slope; Clip min; ThresholdedRelu
                      // threshold
  float beta = 0.f;   // Selu gamma, HardSigmoid offset; Clip max
};

// NumPy-style broadcast of two shapes; throws naming `op` when incompatible.
Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op);

TensorRef binary(ComputeGraph& g, BinaryOp op, TensorRef a, TensorRef b);
TensorRef unary(ComputeGraph& g, UnaryOp op, TensorRef x, UnaryParams params = {});

// The following also take i32, i64 and Bool (one byte per element; needs 8-bit storage).
// cond: Bool; a, b: one dtype; all three broadcast.
TensorRef where(ComputeGraph& g, TensorRef cond, TensorRef a, TensorRef b);
// Bool result; a, b: one dtype (not f16), broadcast. NaN compares false (not equal to itself).
TensorRef compare(ComputeGraph& g, CompareOp op, TensorRef a, TensorRef b);
// Bool inputs, broadcast.
TensorRef logical(ComputeGraph& g, LogicalOp op, TensorRef a, TensorRef b);
TensorRef logical_not(ComputeGraph& g, TensorRef x);
// Floats truncate toward zero; to Bool is (x != 0), so NaN is true. Same dtype: a view.
TensorRef cast(ComputeGraph& g, TensorRef x, DType to);

}  // namespace vkgraph::ops
