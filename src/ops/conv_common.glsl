// Shared by the convolution shaders: their one push-constant block (filled by conv.cpp's
// conv_push()) and the fused epilogue, bias then activation, selected by specialization
// constants so that each variant compiles to straight-line code.

layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) readonly buffer Wt { float w[]; };
layout(std430, binding = 2) readonly buffer Bias { float bias[]; };  // aliases w without bias
layout(std430, binding = 3) writeonly buffer Y { float y[]; };

layout(push_constant) uniform Params {
  int batch;
  int in_c, in_d, in_h, in_w;  // depth is 1 for 1-D and 2-D convolutions
  int out_c, out_d, out_h, out_w;
  int k_d, k_h, k_w;
  int stride_d, stride_h, stride_w;
  int pad_f, pad_t, pad_l;
  int dil_d, dil_h, dil_w;
  int in_c_g, out_c_g;  // channels per group
  float alpha, beta;    // activation parameters
  int k_chunk;          // split-K slice depth (conv.comp's SPLIT_K); unused otherwise
} p;

// Codes mirror conv.cpp's activation_code().
#define ACT_IDENTITY 0
#define ACT_RELU 1
#define ACT_LEAKY_RELU 2
#define ACT_CLIP 3
#define ACT_SIGMOID 4
#define ACT_HARD_SWISH 5
#define ACT_GELU 6
#define ACT_GELU_TANH 7
#define ACT_TANH 8
#define ACT_HARD_SIGMOID 9

layout(constant_id = 3) const int ACT = ACT_IDENTITY;
layout(constant_id = 4) const bool HAS_BIAS = false;

// erfc with fractional error below 1.2e-7 everywhere (Numerical Recipes' erfcc): GLSL has no
// erf(), and GELU needs erfc so that its tiny outputs for negative inputs keep their relative
// precision instead of cancelling in 1 + erf.
float erfc_approx(float v) {
  float z = abs(v);
  float t = 1.0 / (1.0 + 0.5 * z);
  float r =
      t * exp(-z * z - 1.26551223 +
              t * (1.00002368 +
              t * (0.37409196 +
              t * (0.09678418 +
              t * (-0.18628806 +
              t * (0.27886807 +
              t * (-1.13520398 +
              t * (1.48851587 +
              t * (-0.82215223 +
              t * 0.17087277)))))))));
  return v >= 0.0 ? r : 2.0 - r;
}

// tanh through exp(2x) overflows to inf / inf on some drivers; |x| > 10 is +-1 in float anyway.
float safe_tanh(float v) { return tanh(clamp(v, -10.0, 10.0)); }

float epilogue(float acc, int channel) {
  float v = HAS_BIAS ? acc + bias[channel] : acc;
  switch (ACT) {
    case ACT_RELU:
      return max(v, 0.0);
    case ACT_LEAKY_RELU:
      return v < 0.0 ? v * p.alpha : v;
    case ACT_CLIP:
      return min(max(v, p.alpha), p.beta);
    case ACT_SIGMOID:
      return 1.0 / (1.0 + exp(-v));
    case ACT_HARD_SWISH:
      return v * clamp(v / 6.0 + 0.5, 0.0, 1.0);
    case ACT_GELU:
      return 0.5 * v * erfc_approx(-v * 0.70710678118654752);
    case ACT_GELU_TANH:
      return 0.5 * v * (1.0 + safe_tanh(0.79788456080286536 * (v + 0.044715 * v * v * v)));
    case ACT_TANH:
      return safe_tanh(v);
    case ACT_HARD_SIGMOID:
      return clamp(p.alpha * v + p.beta, 0.0, 1.0);
    default:
      return v;
  }
}
