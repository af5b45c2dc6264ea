#version 450
// Depthwise integer convolution (groups = input channels), one invocation per output element:
// sum over the window of (x - zx) * (w - zw[c]), padding adding 0; REQUANT requantizes it as
// quant_packed.comp does (and looks the byte up in a fused byte table, HAS_TABLE), else stores
// the int32 sum. A GEMM per group would compute a single
// output channel per tile.
#extension GL_EXT_shader_8bit_storage : require
#include "common.glsl"
#include "quant_packed.glsl"

layout(std430, binding = 0) readonly buffer X { uint8_t x[]; };
layout(std430, binding = 1) readonly buffer Wt { uint8_t w[]; };
#if REQUANT
layout(std430, binding = 2) writeonly buffer Y { uint8_t y[]; };
#else
layout(std430, binding = 2) writeonly buffer Y { int y[]; };
#endif
layout(std430, binding = 3) readonly buffer ZX { int zx[]; };
layout(std430, binding = 4) readonly buffer ZW { int zw[]; };
#if REQUANT
layout(std430, binding = 5) readonly buffer SX { float sx[]; };
layout(std430, binding = 6) readonly buffer SW { float sw[]; };
layout(std430, binding = 7) readonly buffer SY { float sy[]; };
layout(std430, binding = 8) readonly buffer ZY { int zy[]; };
layout(std430, binding = 9) readonly buffer Bias { int bias[]; };
// quant_packed.comp's epilogue constant (binding 10, the residual operand, is a placeholder:
// no residual Add fuses here); only its byte table is read.
layout(std430, binding = 11) readonly buffer RP { ivec4 rp[3]; uint table_words[64]; };
layout(constant_id = 3) const bool HAS_TABLE = false;
#endif

layout(push_constant) uniform Params {
  int total, channels, out_per_group;  // output channels per input channel
  int x_signed, w_signed, zw_count;
  int sw_count, qmin, qmax, has_bias;
  int H, W, kh, kw, Ho, Wo, sh, sw, ph, pw, dh, dw;
} p;

void main() {
  int at = int(linear_index());
  if (at >= p.total) return;
  int ox = at % p.Wo, t = at / p.Wo;
  int oy = t % p.Ho;
  t /= p.Ho;
  int c = t % p.channels, img = t / p.channels;
  int ci = c / p.out_per_group;
  int in_c = p.channels / p.out_per_group;
  int x_base = (img * in_c + ci) * p.H * p.W;
  int w_base = c * p.kh * p.kw;
  int z = zx[0], zc = zw[c % p.zw_count];
  int sum = 0;
  for (int ky = 0; ky < p.kh; ++ky) {
    int iy = oy * p.sh - p.ph + ky * p.dh;
    if (uint(iy) >= uint(p.H)) continue;
    for (int kx = 0; kx < p.kw; ++kx) {
      int ix = ox * p.sw - p.pw + kx * p.dw;
      if (uint(ix) >= uint(p.W)) continue;
      int xv = widen_byte(x[x_base + iy * p.W + ix], p.x_signed) - z;
      sum += xv * (widen_byte(w[w_base + ky * p.kw + kx], p.w_signed) - zc);
    }
  }
#if REQUANT
  if (p.has_bias != 0) sum += bias[c];
  float m = div_exact(sx[0] * sw[c % p.sw_count], sy[0]);
  const int q = requantize(sum, m, zy[0], p.qmin, p.qmax);
  y[at] = narrow_byte(HAS_TABLE ? TABLE_BYTE(table_words, uint(q) & 0xffu) : uint(q));
#else
  y[at] = sum;
#endif
}
