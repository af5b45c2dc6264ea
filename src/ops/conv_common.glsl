// Shared by the convolution shaders: their one push-constant block (filled by conv.cpp's
// conv_push()) and the fused epilogue, bias, then the RESIDUAL variants' residual tensor (a
// ResNet block's skip connection, same shape as Y), then the activation; bias and activation
// are specialization constants so that each variant compiles to straight-line code.
#include "activation.glsl"

// Tensors hold ELEM, split-K partials float (common.glsl's GEMM_*_ELEM).
layout(std430, binding = 0) readonly buffer X { GEMM_IN_ELEM x[]; };
layout(std430, binding = 1) readonly buffer Wt { ELEM w[]; };
layout(std430, binding = 2) readonly buffer Bias { ELEM bias[]; };  // aliases w without bias
layout(std430, binding = 3) writeonly buffer Y { GEMM_OUT_ELEM y[]; };
#if RESIDUAL
layout(std430, binding = 4) readonly buffer Residual { ELEM residual[]; };
#endif

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

layout(constant_id = 3) const int ACT = ACT_NONE;  // activation.glsl's codes
layout(constant_id = 4) const bool HAS_BIAS = false;

// `at`: the element of Y being written.
float epilogue(float acc, int channel, int at) {
  float v = HAS_BIAS ? acc + T(bias[channel]) : acc;
#if RESIDUAL
  v += T(residual[at]);
#endif
  return activate(ACT, v, p.alpha, p.beta);
}
