// Activations fused into the epilogues of matmul (code from a push constant: one pipeline for
// every activation, the branch uniform and far from the K loop) and conv (code from a
// specialization constant, folded away). Codes match EpilogueActivation in op_util.h.
#ifndef ACTIVATION_GLSL
#define ACTIVATION_GLSL
#define ACT_NONE 0
#define ACT_RELU 1
#define ACT_LEAKY_RELU 2
#define ACT_SIGMOID 3
#define ACT_TANH 4
#define ACT_GELU 5
#define ACT_GELU_TANH 6
#define ACT_CLIP 7
#define ACT_HARD_SIGMOID 8
#define ACT_HARD_SWISH 9
#define ACT_SILU 10

// erfc with relative error below 1.2e-7 over the whole line (Numerical Recipes' Chebyshev
// fit). GELU uses erfc rather than 1 + erf so that its tiny values for negative inputs keep
// their relative precision instead of cancelling.
float erfc_approx(float x) {
  float z = abs(x);
  float t = 1.0 / (1.0 + 0.5 * z);
  float r = t * exp(-z * z - 1.26551223 +
                    t * (1.00002368 +
                    t * (0.37409196 +
                    t * (0.09678418 +
                    t * (-0.18628806 +
                    t * (0.27886807 +
                    t * (-1.13520398 +
                    t * (1.48851587 +
                    t * (-0.82215223 +
                    t * 0.17087277)))))))));
  return x >= 0.0 ? r : 2.0 - r;
}

// Some drivers compute tanh from exp(2x), which overflows to inf/inf = NaN for large |x|;
// tanh is exactly +-1 in float beyond |x| = 10 anyway (and so for +-inf).
float safe_tanh(float x) { return tanh(clamp_nan(x, -10.0, 10.0)); }

// alpha/beta as in ops::UnaryParams: LeakyRelu slope, Clip min/max, HardSigmoid slope/offset.
// NaN stays NaN (the selections are NaN-aware; see max_nan in common.glsl), as in src/ops/unary.comp.
float activate(int code, float x, float alpha, float beta) {
  // Not `x < 0 ? 0 : x`: NVIDIA folds that select into a max() that drops NaN.
  if (code == ACT_RELU) return max_nan(x, 0.0);
  if (code == ACT_LEAKY_RELU) return x >= 0.0 ? x : alpha * x;
  if (code == ACT_SIGMOID) return 1.0 / (1.0 + exp(-x));
  if (code == ACT_TANH) return safe_tanh(x);
  if (code == ACT_GELU) return 0.5 * x * erfc_approx(-x * 0.70710678118654752);
  if (code == ACT_GELU_TANH)
    return 0.5 * x * (1.0 + safe_tanh(0.79788456080286536 * (x + 0.044715 * x * x * x)));
  if (code == ACT_CLIP) return clamp_nan(x, alpha, beta);
  if (code == ACT_HARD_SIGMOID) return clamp_nan(alpha * x + beta, 0.0, 1.0);
  if (code == ACT_HARD_SWISH) return x * clamp_nan(x / 6.0 + 0.5, 0.0, 1.0);
  if (code == ACT_SILU) return x * (1.0 / (1.0 + exp(-x)));  // exp overflow: x * 0 = -0
  return x;
}
#endif  // ACTIVATION_GLSL
