#pragma once
// The packed integer GEMM (quant_packed.comp) behind the integer convolution and matmul of
// quant_gemm.cpp: weights that are graph constants (as in every QDQ or QLinear model) are
// packed on the host, four 8-bit values to a word along K, with per-channel sums for the
// zero-point correction; the kernel sums with packed dot-product instructions where the device
// has them. Weights computed on the device keep quant_gemm.comp.
#include <array>
#include <optional>
#include <string>

#include "quant_util.h"
#include "vkgraph/ops/elementwise.h"

namespace vkgraph::ops {

// A residual Add fused into the epilogue (ops::ResidualAdd): its operand, laid out as y, and
// its parameters as quant_packed.glsl's add_residual reads them.
struct ResidualRequant {
  ResidualAdd add;  // as given: what runs after the convolution where the kernel cannot fuse it
  std::array<int32_t, 12> params;
};

// What the requantizing epilogue needs; absent for the Int32-output ops. `a` is the data
// operand (x, a matmul's a), `b` the weights.
struct Requant {
  TensorRef a_scale, b_scale, y_scale, y_zero;
  int32_t a_scale_count = 1, b_scale_count = 1;
  std::optional<TensorRef> bias;
  QuantRange range{0, 255};
  DType out = DType::UInt8;
  std::optional<ResidualRequant> residual;  // convolutions only; y then has add.out
  std::optional<ByteTable> table;           // not with a residual; y then has table->out
  // The type of what the kernel stores.
  DType stored() const { return residual ? residual->add.out : table ? table->out : out; }
};

// A 2-D integer convolution (1-D lifted), validated by the caller; y is its output tensor.
struct PackedConv {
  TensorRef x, w, y, x_zero;        // x_zero: Int32, per tensor
  std::optional<TensorRef> w_zero;  // as the model gave it
  int64_t batch, in_c, h, w_in, out_c, kh, kw, ho, wo, groups;
  std::array<int64_t, 2> strides, pads, dilations;  // pads: begin (top, left)
};

// Adds the packed kernel's dispatches computing c.y and returns true, or returns false (adding
// nothing) where it does not apply: weights or their zero point not constants, tuning knob
// qgemm.packed = 0, or a residual epilogue on a depthwise convolution.
bool add_packed_conv(ComputeGraph& g, const PackedConv& c, const std::optional<Requant>& requant,
                     const std::string& op);
// Whether add_packed_conv applies `requant`'s residual Add in its epilogue: where the packed
// GEMM runs (not the depthwise kernel, not the portable one).
bool packed_conv_fuses_residual(ComputeGraph& g, const PackedConv& c);

// y [rows][n] = a [rows][k] x b [k][n]: one weight matrix; a's zero point Int32 with
// `a_zero_count` values (1 or per row, cycling). Returns false as add_packed_conv, and where
// k % 4 != 0.
struct PackedMatmul {
  TensorRef a, b, y, a_zero;
  std::optional<TensorRef> b_zero;  // as the model gave it
  int32_t a_zero_count = 1;
  int64_t rows, k, n;
};
bool add_packed_matmul(ComputeGraph& g, const PackedMatmul& m,
                       const std::optional<Requant>& requant, const std::string& op);

// quantize_dynamic's linear layer (ops::dynamic_quant_matmul): y [rows][n] float32 =
// float(sum (quantize(x) - x_zero)(b - b_zero)) * (x_scale * b_scale[col]) [+ bias[col]]
// [+ residual], then the activation; x float32 [rows][k] quantized as it loads with
// DynamicQuantizeLinear's parameters from `range` (Float32 [range_count][2] per-workgroup
// (min, max) partials), or read from `x_packed` (ops::dynamic_quantize_packed) where given,
// and then split along K where the plan says so (knob qdyn.split). Returns false as
// add_packed_matmul (then nothing is added).
struct PackedDynamicMatmul {
  TensorRef x, range, b, y, b_scale;
  std::optional<TensorRef> b_zero, bias;  // bias: Float32 [n]
  std::optional<TensorRef> x_packed;
  std::optional<TensorRef> residual;  // Float32, y's shape, added after the bias
  int32_t activation = 0;             // EpilogueActivation, applied last
  UnaryParams activation_params;
  int32_t range_count = 1, b_scale_count = 1;
  int64_t rows, k, n;
};
bool add_packed_dynamic_matmul(ComputeGraph& g, const PackedDynamicMatmul& m,
                               const std::string& op);

}  // namespace vkgraph::ops
