#pragma once
// Operators: each adds one or more nodes to a ComputeGraph and returns the output tensor.
// Shape rules are checked here, at build time, with errors that name the op and the shapes.
//
// Float ops take float32 or float16 tensors, all operands of one dtype, and return that dtype.
// Float16 tensors are stored in 16 bits (storageBuffer16BitAccess) and computed in float32;
// sums and split-K partials stay float32. Exceptions say so: cumsum, topk, compare and the
// scatter reductions take float32 only.
#include <optional>
#include <vector>

#include "vkgraph/graph/compute_graph.h"

namespace vkgraph::ops {

enum class BinaryOp { Add, Sub, Mul, Div, Max, Min, Pow, Mod, FMod };
enum class CompareOp { Equal, Less, LessOrEqual, Greater, GreaterOrEqual };

enum class UnaryOp {
  Relu,
  Sigmoid,
  Tanh,
  Gelu,
  GeluTanh,
  Exp,
  Log,
  Neg,
  Sqrt,
  Abs,
  Reciprocal,
  Floor,
  Ceil,
  Round,
  Sign,
  Sin,
  Cos,
  Erf,
  Softplus,
  Mish,
  LeakyRelu,
  Elu,
  Selu,
  Clip,
  HardSigmoid,
  HardSwish,
  Identity,
  Not,
  Tan,
  Asin,
  Acos,
  Atan,
  Sinh,
  Cosh,
  Asinh,
  Acosh,
  Atanh,
  Softsign,
  ThresholdedRelu,  // alpha: threshold
  Celu,             // alpha
};

enum class ReduceOp { Sum, Mean, Max, Min, Prod, L2, LogSumExp, SumSquare, L1 };

struct UnaryParams {
  float alpha = 0.f;  // LeakyRelu/Elu/Selu/HardSigmoid slope; Clip min
  float beta = 0.f;   // Selu gamma, HardSigmoid offset; Clip max
};

// NumPy-style broadcast of two shapes; throws naming `op` when incompatible.
Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op);

TensorRef binary(ComputeGraph& g, BinaryOp op, TensorRef a, TensorRef b);
TensorRef unary(ComputeGraph& g, UnaryOp op, TensorRef x, UnaryParams params = {});
// matmul, linear and gemm end with an optional activation applied in their epilogue (after the
// bias), so a frontend can fuse MatMul/Gemm + Add + activation into one dispatch. Fusable:
// Relu, LeakyRelu, Sigmoid, Tanh, Gelu (exact erf), GeluTanh, Clip, HardSigmoid, HardSwish and
// Identity, with `activation_params` as in unary(); others throw Unsupported.
bool matmul_can_fuse(UnaryOp activation);
// numpy.matmul: a: [..., M, K], b: [..., K, N], batch dims broadcast; a 1-D operand is promoted
// to a matrix and the added dim removed from the result. bias broadcasts to the result.
TensorRef matmul(ComputeGraph& g, TensorRef a, TensorRef b,
                 std::optional<TensorRef> bias = std::nullopt,
                 std::optional<UnaryOp> activation = std::nullopt,
                 UnaryParams activation_params = {});
// A stored tensor read with its dims permuted, without a copy: dim i of the view is dim perm[i]
// of `tensor` (perm empty: as stored).
struct PermutedView {
  TensorRef tensor;
  std::vector<int64_t> perm;
};
// matmul of permuted views (a transposed operand costs no copy, the kernels read it through
// strides), with the result scaled: alpha * (a b + bias), then the activation.
TensorRef matmul_permuted(ComputeGraph& g, const PermutedView& a, const PermutedView& b,
                          std::optional<TensorRef> bias = std::nullopt,
                          std::optional<UnaryOp> activation = std::nullopt,
                          UnaryParams activation_params = {}, float alpha = 1.f);
// x: [M, K] (or [..., K]); weight: [N, K] (PyTorch layout, read in place); bias: [N].
TensorRef linear(ComputeGraph& g, TensorRef x, TensorRef weight,
                 std::optional<TensorRef> bias = std::nullopt,
                 std::optional<UnaryOp> activation = std::nullopt,
                 UnaryParams activation_params = {});
// ONNX Gemm: alpha * op(a) @ op(b) + beta * c, op(x) = trans ? x^T : x; a, b 2-D; c optional,
// unidirectionally broadcast to [M, N].
TensorRef gemm(ComputeGraph& g, TensorRef a, TensorRef b, std::optional<TensorRef> c = std::nullopt,
               float alpha = 1.f, float beta = 1.f, bool trans_a = false, bool trans_b = false,
               std::optional<UnaryOp> activation = std::nullopt,
               UnaryParams activation_params = {});
TensorRef softmax(ComputeGraph& g, TensorRef x, int axis = -1, bool log = false);
// ONNX Reduce*: over `axes` (empty: all axes; ONNX's noop_with_empty_axes is the caller's),
// keeping them as size 1 with keepdims. Float32; Sum, Max, Min and Prod also Int32 and Int64.
// An empty reduction gives the op's identity (Sum 0, Prod 1, Max and LogSumExp -inf).
TensorRef reduce(ComputeGraph& g, ReduceOp op, TensorRef x, std::vector<int64_t> axes,
                 bool keepdims);
// ONNX ArgMax (ArgMin with is_min) along `axis`; Int64 indices. Ties go to the first index, or
// the last with select_last_index; NaN counts as the extreme, as in numpy and PyTorch.
TensorRef argmax(ComputeGraph& g, TensorRef x, int64_t axis, bool keepdims,
                 bool select_last_index = false, bool is_min = false);

}  // namespace vkgraph::ops

// ===== Convolution, pooling and normalization (src/ops/conv, pool, norm) =====
// Tensors are NCHW (NCDHW for 3-D) Float32. Pads are ONNX-ordered: all begins, then all ends
// ({top, left, bottom, right} in 2-D).
#include <array>

namespace vkgraph::ops {

struct Conv2dParams {
  std::array<int64_t, 2> strides{1, 1};
  std::array<int64_t, 4> pads{0, 0, 0, 0};
  std::array<int64_t, 2> dilations{1, 1};
  int64_t groups = 1;
};

// Activations conv2d/conv1d fuse after the bias, with parameters as in unary(): Identity, Relu,
// LeakyRelu, Clip (ReLU6 is {0, 6}), Sigmoid, Tanh, HardSigmoid, HardSwish, Gelu (exact erf),
// GeluTanh. A `residual` of the output's shape (a ResNet block's skip connection) is added
// after the bias and before the activation, in the same pass.
bool conv_can_fuse(UnaryOp activation);

// x: [N, Cin, H, W]; weight: [Cout, Cin/groups, kH, kW] (constant or computed); bias: [Cout].
// Output [N, Cout, Hout, Wout], Hout = (H + top + bottom - dilation*(kH-1) - 1) / stride + 1.
TensorRef conv2d(ComputeGraph& g, TensorRef x, TensorRef weight,
                 std::optional<TensorRef> bias = std::nullopt, const Conv2dParams& params = {},
                 std::optional<UnaryOp> activation = std::nullopt,
                 UnaryParams activation_params = {},
                 std::optional<TensorRef> residual = std::nullopt);

struct Conv1dParams {
  int64_t stride = 1;
  std::array<int64_t, 2> pads{0, 0};  // begin, end
  int64_t dilation = 1;
  int64_t groups = 1;
};

// x: [N, Cin, L]; weight: [Cout, Cin/groups, k]; bias: [Cout].
TensorRef conv1d(ComputeGraph& g, TensorRef x, TensorRef weight,
                 std::optional<TensorRef> bias = std::nullopt, const Conv1dParams& params = {},
                 std::optional<UnaryOp> activation = std::nullopt,
                 UnaryParams activation_params = {},
                 std::optional<TensorRef> residual = std::nullopt);

struct Conv3dParams {
  std::array<int64_t, 3> strides{1, 1, 1};
  std::array<int64_t, 6> pads{0, 0, 0, 0, 0, 0};  // front, top, left, back, bottom, right
  std::array<int64_t, 3> dilations{1, 1, 1};
  int64_t groups = 1;
};

// x: [N, Cin, D, H, W]; weight: [Cout, Cin/groups, kD, kH, kW]; bias: [Cout]. Fuses activations
// as conv2d does. conv1d and conv2d are this with unit leading spatial dims; a 3-D input whose
// depth window is trivial (D = kD = 1, no depth pads) runs the 2-D kernels.
TensorRef conv3d(ComputeGraph& g, TensorRef x, TensorRef weight,
                 std::optional<TensorRef> bias = std::nullopt, const Conv3dParams& params = {},
                 std::optional<UnaryOp> activation = std::nullopt,
                 UnaryParams activation_params = {},
                 std::optional<TensorRef> residual = std::nullopt);

struct ConvTranspose2dParams {
  std::array<int64_t, 2> strides{1, 1};
  std::array<int64_t, 4> pads{0, 0, 0, 0};
  std::array<int64_t, 2> dilations{1, 1};
  std::array<int64_t, 2> output_padding{0, 0};
  int64_t groups = 1;
};

// x: [N, Cin, H, W]; weight: [Cin, Cout/groups, kH, kW]; bias: [Cout]. Output size
// Hout = (H - 1) * stride - top - bottom + dilation * (kH - 1) + output_padding + 1.
TensorRef conv_transpose2d(ComputeGraph& g, TensorRef x, TensorRef weight,
                           std::optional<TensorRef> bias = std::nullopt,
                           const ConvTranspose2dParams& params = {});

struct Pool2dParams {
  std::array<int64_t, 2> kernel{1, 1};
  std::array<int64_t, 2> strides{1, 1};
  std::array<int64_t, 4> pads{0, 0, 0, 0};
  std::array<int64_t, 2> dilations{1, 1};
  bool ceil_mode = false;
  bool count_include_pad = false;  // avg_pool2d only: divide by the taps inside the pads too
};

// x: [N, C, H, W], ONNX MaxPool / AveragePool: with ceil_mode the output size rounds up, but a
// window that would start in the bottom/right padding is dropped. Max ignores padding; a
// window with no input element gives -inf (max) or 0 (avg).
TensorRef max_pool2d(ComputeGraph& g, TensorRef x, const Pool2dParams& params);
TensorRef avg_pool2d(ComputeGraph& g, TensorRef x, const Pool2dParams& params);
struct Pool3dParams {
  std::array<int64_t, 3> kernel{1, 1, 1};
  std::array<int64_t, 3> strides{1, 1, 1};
  std::array<int64_t, 6> pads{0, 0, 0, 0, 0, 0};  // front, top, left, back, bottom, right
  std::array<int64_t, 3> dilations{1, 1, 1};
  bool ceil_mode = false;
  bool count_include_pad = false;
};

// x: [N, C, D, H, W]; as max_pool2d / avg_pool2d with a depth dim (those run this kernel).
TensorRef max_pool3d(ComputeGraph& g, TensorRef x, const Pool3dParams& params);
TensorRef avg_pool3d(ComputeGraph& g, TensorRef x, const Pool3dParams& params);
// x: [N, C, D1, ...] (at least one spatial dim) -> [N, C, 1, ...].
TensorRef global_avg_pool(ComputeGraph& g, TensorRef x);
TensorRef global_max_pool(ComputeGraph& g, TensorRef x);

// Inference BatchNormalization: x [N, C, ...]; scale, bias, mean, var: [C].
TensorRef batch_norm_inference(ComputeGraph& g, TensorRef x, TensorRef scale, TensorRef bias,
                               TensorRef mean, TensorRef var, float epsilon = 1e-5f);
// Normalizes over dims [axis, rank). scale and bias broadcast to those dims (their non-1 dims
// must be one contiguous run, e.g. [D] or [S, D] for a [S, D] row).
TensorRef layer_norm(ComputeGraph& g, TensorRef x, TensorRef scale,
                     std::optional<TensorRef> bias = std::nullopt, int64_t axis = -1,
                     float epsilon = 1e-5f);
// x: [N, C, D1, ...] (at least one spatial dim); scale, bias: [C].
TensorRef instance_norm(ComputeGraph& g, TensorRef x, TensorRef scale, TensorRef bias,
                        float epsilon = 1e-5f);
// x: [N, C, ...]; statistics per (sample, group of C/groups channels); scale, bias: [C].
TensorRef group_norm(ComputeGraph& g, TensorRef x, TensorRef scale, TensorRef bias, int64_t groups,
                     float epsilon = 1e-5f);

}  // namespace vkgraph::ops

// --- data movement ---
// Shape, indexing, selection and conversion ops with ONNX semantics (src/ops/shape_ops, pad,
// gather, where, compare, cast, cumsum, topk, resize). Unless noted they take f32, f16, i32,
// i64 and Bool (one byte per element; needs 8-bit storage on the device), count negative axes from
// the end, and handle rank up to 6. Errors name the op and the offending shape, axis or dtype.
#include <cstdint>
#include <vector>

namespace vkgraph::ops {

enum class LogicalOp { And, Or, Xor };
enum class ScatterReduction { None, Add, Mul, Max, Min };
enum class PadMode { Constant, Reflect, Edge, Wrap };
enum class ResizeMode { Nearest, Linear };
enum class ResizeCoordinates { HalfPixel, Asymmetric, AlignCorners, PytorchHalfPixel };
enum class ResizeNearest { RoundPreferFloor, RoundPreferCeil, Floor, Ceil };

struct ResizeOptions {
  ResizeMode mode = ResizeMode::Nearest;
  ResizeCoordinates coordinates = ResizeCoordinates::HalfPixel;
  ResizeNearest nearest = ResizeNearest::RoundPreferFloor;
  // The model's scales when it gives scales rather than sizes (ONNX maps coordinates with the
  // given scale, not out/in); 0 means output size / input size.
  float scale_h = 0.f, scale_w = 0.f;
};

struct TopKResult {
  TensorRef values;
  TensorRef indices;  // Int64
};

// ONNX Reshape: 0 copies the input's dim (unless allowzero), one -1 is inferred. A view, no copy.
TensorRef reshape(ComputeGraph& g, TensorRef x, const Shape& shape, bool allowzero = false);
// perm empty: reverse the dims.
TensorRef transpose(ComputeGraph& g, TensorRef x, const std::vector<int64_t>& perm = {});
// transpose's `perm` for a tensor of `shape` (empty: the dims reversed); throws InvalidArgument
// naming `op` unless it is a permutation of the dims.
std::vector<int64_t> resolve_perm(const Shape& shape, std::vector<int64_t> perm,
                                  const std::string& op);
TensorRef concat(ComputeGraph& g, const std::vector<TensorRef>& inputs, int64_t axis);
// One output per entry of `sizes`, which must sum to the axis length.
std::vector<TensorRef> split(ComputeGraph& g, TensorRef x, int64_t axis,
                             const std::vector<int64_t>& sizes);
// axes empty: 0, 1, ...; steps empty: all 1. Starts and ends clamp to the dim, as in ONNX.
TensorRef slice(ComputeGraph& g, TensorRef x, const std::vector<int64_t>& starts,
                const std::vector<int64_t>& ends, const std::vector<int64_t>& axes = {},
                const std::vector<int64_t>& steps = {});
// indices: Int32 or Int64, negative ones count from the end. Out-of-range indices throw when
// `indices` is a constant; computed ones read zero (gather, gather_elements) or are skipped
// (scatter_elements).
TensorRef gather(ComputeGraph& g, TensorRef data, TensorRef indices, int64_t axis = 0);
TensorRef gather_elements(ComputeGraph& g, TensorRef data, TensorRef indices, int64_t axis = 0);
// Reductions other than None take f32, i32, i64. Duplicate indices apply in order (the last
// wins with None), deterministically.
TensorRef scatter_elements(ComputeGraph& g, TensorRef data, TensorRef indices, TensorRef updates,
                           int64_t axis = 0, ScatterReduction reduction = ScatterReduction::None);
// Bidirectional broadcast of x against `shape`.
TensorRef expand(ComputeGraph& g, TensorRef x, const Shape& shape);
TensorRef tile(ComputeGraph& g, TensorRef x, const std::vector<int64_t>& repeats);
// pads: all begins, then all ends, for `axes` (empty: every axis); negative pads crop. `value`
// (Constant mode) is converted to x's dtype.
TensorRef pad(ComputeGraph& g, TensorRef x, const std::vector<int64_t>& pads,
              PadMode mode = PadMode::Constant, double value = 0.0,
              const std::vector<int64_t>& axes = {});
// cond: Bool; a, b: one dtype; all three broadcast.
TensorRef where(ComputeGraph& g, TensorRef cond, TensorRef a, TensorRef b);
// Bool result; a, b: one dtype, broadcast. NaN compares false (not equal to itself).
TensorRef compare(ComputeGraph& g, CompareOp op, TensorRef a, TensorRef b);
// Bool inputs, broadcast.
TensorRef logical(ComputeGraph& g, LogicalOp op, TensorRef a, TensorRef b);
TensorRef logical_not(ComputeGraph& g, TensorRef x);
// Floats truncate toward zero; to Bool is (x != 0), so NaN is true. Same dtype: a view.
TensorRef cast(ComputeGraph& g, TensorRef x, DType to);
// f32, i32, i64.
TensorRef cumsum(ComputeGraph& g, TensorRef x, int64_t axis, bool exclusive = false,
                 bool reverse = false);
// f32, i32, i64; 0 <= k <= axis length. Output is always sorted (which ONNX sorted=0 also
// allows); ties keep the lower index first; NaN ranks above every number.
TopKResult topk(ComputeGraph& g, TensorRef x, int64_t k, int64_t axis = -1, bool largest = true);
// x: NCHW; out_shape: [N, C, H', W'] (only H and W change). Nearest: any dtype; Linear: f32,
// f16.
TensorRef resize(ComputeGraph& g, TensorRef x, const Shape& out_shape,
                 const ResizeOptions& options = {});

}  // namespace vkgraph::ops
#include "vkgraph/ops/quant.h"
