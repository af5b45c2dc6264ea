#version 450
// y = OP(x), one element per invocation. OP_* and DTYPE_* come from defines (see unary.cmake).
//
// The transcendental helpers below are written out rather than left to the GLSL built-ins where
// Vulkan's precision rules are too loose for ONNX conformance (sin/cos may be off by 2^-11 and
// log near 1 by 2^-21 absolutely) or where the textbook formula cancels (1 + erf(x) for x << 0,
// exp(x) - 1 and log(1 + x) near 0). The built-in exp() is kept: Vulkan bounds its error by
// 3 + 2|x| ulp, about 1e-5 relative at worst (|x| near 88).
#if DTYPE_BOOL
#extension GL_EXT_shader_8bit_storage : require
#endif
#include "common.glsl"
// Bool tensors hold one byte per element (storageBuffer8BitAccess). Elements are widened to
// VALUE in registers: any arithmetic on uint8_t, even a compare, would need shaderInt8.
#if DTYPE_BOOL
#undef ELEM
#define ELEM uint8_t
#define VALUE uint
#else
#define VALUE T
#endif

layout(std430, binding = 0) readonly buffer X { ELEM x[]; };
layout(std430, binding = 1) writeonly buffer Y { ELEM y[]; };
layout(push_constant) uniform Params {
  uint n;
  float alpha;
  float beta;
} p;

#if DTYPE_BOOL
VALUE apply(VALUE v) { return v == 0u ? 1u : 0u; }
#elif defined(DTYPE_FLOAT)
// exp(v) - 1: a Taylor series where the subtraction would cancel, the built-in elsewhere.
float expm1_(float v) {
  if (abs(v) >= 0.5) return exp(v) - 1.0;
  return v * (1.0 + v * (1.0 / 2.0 + v * (1.0 / 6.0 + v * (1.0 / 24.0 + v * (1.0 / 120.0 +
         v * (1.0 / 720.0 + v * (1.0 / 5040.0 + v * (1.0 / 40320.0 + v / 362880.0))))))));
}

// 2 atanh(s) for |s| <= 1/3, which is log((1 + s) / (1 - s)).
float two_atanh(float s) {
  float s2 = s * s;
  return 2.0 * s * (1.0 + s2 * (1.0 / 3.0 + s2 * (1.0 / 5.0 + s2 * (1.0 / 7.0 + s2 * (1.0 / 9.0 +
         s2 * (1.0 / 11.0 + s2 * (1.0 / 13.0 + s2 / 15.0)))))));
}

// log(1 + u) for u in [0, 1]; exact to a few ulp even when 1 + u rounds to 1.
float log1p_unit(float u) { return two_atanh(u / (2.0 + u)); }

// The built-in log may be off by 2^-21 absolutely near 1, where log(v) itself is tiny.
float log_(float v) {
  if (v < 0.5 || v > 2.0) return log(v);
  return two_atanh((v - 1.0) / (v + 1.0));  // v - 1 is exact here
}

float sigmoid_(float v) {
  float e = exp(-abs(v));  // never overflows
  float s = 1.0 / (1.0 + e);
  return v >= 0.0 ? s : e * s;
}

// Built-in tanh may be computed as (e^2x - 1) / (e^2x + 1) and turn into inf/inf; beyond
// |v| = 10 tanh is 1 in float anyway. expm1 keeps small |v| relatively exact.
float tanh_(float v) {
  if (isnan(v)) return v;
  float e = expm1_(2.0 * min(abs(v), 10.0));
  return sign(v) * (e / (e + 2.0));
}

// log(1 + e^v) without overflow for large v or loss of the tiny result for very negative v.
float softplus_(float v) { return max_nan(v, 0.0) + log1p_unit(exp(-abs(v))); }

// erf(v) = v P(v^2) on |v| < 1: Chebyshev fit, error 1.3e-9 relative.
float erf_small(float v) {
  float t = v * v;
  return v * (1.128379166 + t * (-3.761262667e-1 + t * (1.128359472e-1 + t * (-2.685421201e-2 +
         t * (5.189087423e-3 + t * (-8.016864287e-4 + t * 7.875875063e-5))))));
}

// erfc(v) for 1 <= v < 10 as e^(-v^2) t Q(t), t = 2 / (2 + v): Chebyshev fit of the smooth
// factor, error 1.3e-10 relative. v^2 is split so that e^(-v^2) keeps full precision when v^2 is
// large: vh has 12 significant bits, so vh * vh is exact.
float erfc_large(float v) {
  float t = 2.0 / (2.0 + v);
  float w = 4.0 * t - 1.666666667;  // t mapped from [1/6, 2/3] to [-1, 1]
  float q = 4.573173114e-1 + w * (1.493528203e-1 + w * (3.224986294e-2 + w * (3.045248501e-3 +
            w * (-4.685113355e-4 + w * (-1.393318686e-4 + w * (1.265246816e-5 + w * (6.230882237e-6 +
            w * (-6.551954876e-7 + w * -2.639439846e-7))))))));
  float vh = uintBitsToFloat(floatBitsToUint(v) & 0xfffff000u);
  precise float low = (vh - v) * (vh + v);  // "precise": no reassociation into v * v
  return exp(-vh * vh) * exp(low) * t * q;
}

float erf_(float v) {
  float a = abs(v);
  if (!(a >= 1.0)) return erf_small(v);  // NaN too: sign(NaN) below is undefined
  return sign(v) * (a >= 10.0 ? 1.0 : 1.0 - erfc_large(a));
}

float erfc_(float v) {
  float a = abs(v);
  if (a < 1.0) return 1.0 - erf_small(v);
  float r = a >= 10.0 ? 0.0 : erfc_large(a);
  return v > 0.0 ? r : 2.0 - r;
}

// sin(r + q pi/2) for |r| <= pi/4 (Taylor series, error below 2e-9).
float sin_quadrant(float r, int q) {
  float r2 = r * r;
  float s = r + r * r2 * (-1.0 / 6.0 + r2 * (1.0 / 120.0 + r2 * (-1.0 / 5040.0 + r2 / 362880.0)));
  float c = 1.0 + r2 * (-0.5 + r2 * (1.0 / 24.0 + r2 * (-1.0 / 720.0 + r2 * (1.0 / 40320.0 -
            r2 / 3628800.0))));
  float v = (q & 1) == 0 ? s : c;
  return (q & 2) == 0 ? v : -v;
}

// sin(v + quarter_turns pi/2). Cody-Waite reduction by pi/2 split into four 8-bit parts and a
// rest: each product with the quotient is exact while the quotient stays below 2^16 (|v| up
// to 1e5), with no fma (lavapipe does not fuse one). Larger arguments, rare in models, take
// the built-in, whose own reduction is coarser on some drivers.
float sin_shifted(float v, int quarter_turns) {
  if (isinf(v)) return nan_value();  // the built-ins are undefined there
  if (abs(v) > 1.0e5) return quarter_turns == 0 ? sin(v) : cos(v);
  float k = roundEven(v * 0.636619772);
  // "precise" keeps the compiler from folding the parts back into one rounded pi/2.
  precise float r = (v - k * 1.5703125) - k * 4.825592041015625e-4;
  r = (r - k * 1.2665987014770508e-6) - k * 9.89530235528946e-10;
  r = r - k * 2.5633440682570896e-12;
  return sin_quadrant(r, int(k) + quarter_turns);
}

float apply(float v) {
// NaN in gives NaN out wherever NumPy gives it (Relu, Clip, Sign, ...): comparisons with NaN are
// false, and selections are written so that a false comparison keeps v (Relu uses max_nan: NVIDIA
// turns its select into a NaN-dropping max).
#if OP_RELU
  return max_nan(v, 0.0);  // not `v < 0 ? 0 : v`: NVIDIA folds that into a NaN-dropping max
#elif OP_SIGMOID
  return sigmoid_(v);
#elif OP_TANH
  return tanh_(v);
#elif OP_GELU
  // 0.5 v erfc(-v/sqrt2) rather than 0.5 v (1 + erf(v/sqrt2)): no cancellation for v << 0.
  return 0.5 * v * erfc_(-0.7071067812 * v);
#elif OP_GELU_TANH
  // 0.5 (1 + tanh(u)) = sigmoid(2u), which keeps the tiny values for v << 0.
  return v * sigmoid_(1.595769122 * (v + 0.044715 * v * v * v));
#elif OP_EXP
  return exp(v);
#elif OP_LOG
  return log_(v);
#elif OP_NEG
  return -v;
#elif OP_SQRT
  return sqrt(v);
#elif OP_ABS
  return abs(v);
#elif OP_RECIPROCAL
  return 1.0 / v;
#elif OP_FLOOR
  return floor(v);
#elif OP_CEIL
  return ceil(v);
#elif OP_ROUND
  return roundEven(v);
#elif OP_SIGN
  return isnan(v) ? v : sign(v);
#elif OP_SIN
  return sin_shifted(v, 0);
#elif OP_COS
  return sin_shifted(v, 1);
#elif OP_ERF
  return erf_(v);
#elif OP_SOFTPLUS
  return softplus_(v);
#elif OP_MISH
  return v * tanh_(softplus_(v));
#elif OP_LEAKY_RELU
  return v >= 0.0 ? v : p.alpha * v;
#elif OP_ELU
  return v > 0.0 ? v : p.alpha * expm1_(v);
#elif OP_SELU
  return p.beta * (v > 0.0 ? v : p.alpha * expm1_(v));
#elif OP_CLIP
  return clamp_nan(v, p.alpha, p.beta);
#elif OP_HARD_SIGMOID
  // "precise": a multiply and an add, each rounded, on every device (no fma contraction), as
  // a QDQ model's byte table computes it on the host (fuse_qdq.cpp's unary_on_host).
  precise float t = p.alpha * v + p.beta;
  return clamp_nan(t, 0.0, 1.0);
#elif OP_HARD_SWISH
  precise float t = v * (1.0 / 6.0) + 0.5;  // as HardSigmoid's
  return v * clamp_nan(t, 0.0, 1.0);
#elif OP_TAN
  return sin_shifted(v, 0) / sin_shifted(v, 1);
#elif OP_ASIN
  // Through atan: some drivers' asin built-in is only good to ~3e-4 relative.
  // Outside [-1, 1] (and for NaN) the result is NaN, not the clamped formula's value.
  if (!(abs(v) <= 1.0)) return nan_value();
  return 2.0 * atan(v / (1.0 + sqrt(1.0 - v * v)));
#elif OP_ACOS
  if (!(abs(v) <= 1.0)) return nan_value();
  return v == -1.0 ? 3.14159265 : 2.0 * atan(sqrt(1.0 - v * v) / (1.0 + v));
#elif OP_ATAN
  return isnan(v) ? v : atan(v);  // lavapipe's atan(NaN) is 0
#elif OP_SINH
  // expm1 on both sides keeps small |v| accurate: sinh(v) = (e^v - 1 - (e^-v - 1)) / 2.
  return 0.5 * (expm1_(v) - expm1_(-v));
#elif OP_COSH
  return 0.5 * (exp(v) + exp(-v));
#elif OP_ASINH
  return asinh(v);
#elif OP_ACOSH
  return acosh(v);
#elif OP_ATANH
  return atanh(v);
#elif OP_SOFTSIGN
  return v / (1.0 + abs(v));
#elif OP_THRESHOLDED_RELU
  return v > p.alpha ? v : 0.0;
#elif OP_SILU
  return v * sigmoid_(v);
#elif OP_CELU
  return max_nan(v, 0.0) + min_nan(0.0, p.alpha * expm1_(v / p.alpha));
#endif
}
#else
T apply(T v) {
#if OP_NEG
  return -v;
#elif OP_ABS
  return v < T(0) ? -v : v;
#elif OP_SIGN
  return T(v > T(0)) - T(v < T(0));
#endif
}
#endif

void main() {
  uint i = linear_index();
  if (i >= p.n) return;
  y[i] = ELEM(apply(VALUE(x[i])));
}
