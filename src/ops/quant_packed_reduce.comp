#version 450
// Split-K reduce of the packed integer GEMM (quant_packed.comp): one invocation per output
// element sums the slices' int32 partials (each already less zw * sum d of its slice), then
// finishes the zero-point correction and, REQUANT, requantizes to bytes (and applies a fused
// residual Add, HAS_RESIDUAL, and a byte table, HAS_TABLE), or, DYNAMIC, applies quantize_dynamic's float epilogue with the
// data's zero point and scale from the range partials (as quant_packed.comp DYNAMIC does).
// Outputs are laid out
// as the GEMM's: `plane` > 0 a convolution's [images][channels][plane], else a matmul's
// [rows][channels].
#extension GL_EXT_shader_8bit_storage : require
#include "common.glsl"
#if DYNAMIC
#include "activation.glsl"  // before quant_packed.glsl, for dynamic_epilogue
#endif
#include "quant_packed.glsl"

layout(std430, binding = 0) readonly buffer Partials { int partials[]; };
#if DYNAMIC
layout(std430, binding = 1) writeonly buffer Y { ELEM y[]; };  // ELEM: the float activation's
layout(std430, binding = 2) readonly buffer Range { vec2 range_partial[]; };  // zd_count of them
layout(std430, binding = 3) readonly buffer Chan { ivec2 chan[]; };
layout(std430, binding = 4) readonly buffer SW { float sw[]; };
layout(std430, binding = 5) readonly buffer Bias { ELEM bias[]; };
layout(std430, binding = 6) readonly buffer Residual { ELEM residual[]; };  // laid out as y
#define RANGE_LOCAL 128  // the dispatch's workgroup size (op_util.h kLocal)
shared vec2 range_tree[RANGE_LOCAL];
#include "quant_range.glsl"
#else
#if REQUANT
layout(std430, binding = 1) writeonly buffer Y { uint8_t y[]; };
#else
layout(std430, binding = 1) writeonly buffer Y { int y[]; };
#endif
layout(std430, binding = 2) readonly buffer ZD { int zd[]; };
layout(std430, binding = 3) readonly buffer Chan { ivec2 chan[]; };
#if REQUANT
layout(std430, binding = 4) readonly buffer SD { float sd[]; };
layout(std430, binding = 5) readonly buffer SW { float sw[]; };
layout(std430, binding = 6) readonly buffer SY { float sy[]; };
layout(std430, binding = 7) readonly buffer ZY { int zy[]; };
layout(std430, binding = 8) readonly buffer Bias { int bias[]; };
// As quant_packed.comp's: a fused residual Add's operand and parameters, and a byte table.
layout(std430, binding = 9) readonly buffer R { uint8_t residual[]; };
layout(std430, binding = 10) readonly buffer RP { ivec4 rp[3]; uint table_words[64]; };
layout(constant_id = 3) const bool HAS_RESIDUAL = false;
layout(constant_id = 4) const bool HAS_TABLE = false;
#endif
#endif

layout(push_constant) uniform Params {
  int total, channels, plane, splits, K4;
  int zd_count, sd_count, sw_count;
  int qmin, qmax, has_bias;
#if DYNAMIC
  int has_residual, activation;  // the epilogue after the bias (dynamic_epilogue)
  float alpha, beta;
#endif
} p;

void main() {
  int at = int(linear_index());
#if DYNAMIC
  // Before any invocation leaves: the reduction has barriers.
  float x_scale;
  int x_zero;
  dynamic_params(reduce_range_partials(gl_LocalInvocationID.x, p.zd_count), x_scale, x_zero);
#endif
  if (at >= p.total) return;
  int partial = 0;
  for (int s = 0; s < p.splits; ++s) partial += partials[s * p.total + at];
  int c, n;
  if (p.plane > 0) {
    c = at / p.plane % p.channels;
    n = 0;  // convolutions have per-tensor data parameters
  } else {
    c = at % p.channels;
    n = at / p.channels;
  }
  ivec2 ch = chan[c];
#if DYNAMIC
  int sum = finish_sum(partial, x_zero, ch, p.K4);
  y[at] = ELEM(dynamic_epilogue(
      dynamic_dequant(sum, x_scale, sw[c % p.sw_count], p.has_bias != 0 ? float(bias[c]) : -0.0),
      p.has_residual != 0 ? float(residual[at]) : -0.0, p.activation, p.alpha, p.beta));
#else
  int sum = finish_sum(partial, zd[n % p.zd_count], ch, p.K4);
#if REQUANT
  if (p.has_bias != 0) sum += bias[c];
  float m = div_exact(sd[n % p.sd_count] * sw[c % p.sw_count], sy[0]);
  int q = requantize(sum, m, zy[0], p.qmin, p.qmax);
  if (HAS_RESIDUAL) q = add_residual(q, uint(residual[at]), rp[0], rp[1], rp[2].xy);
  y[at] = narrow_byte(HAS_TABLE ? TABLE_BYTE(table_words, uint(q) & 0xffu) : uint(q));
#else
  y[at] = sum;
#endif
#endif
}
