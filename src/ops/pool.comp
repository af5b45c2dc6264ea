#version 450
// MaxPool (POOL_MAX) / AveragePool (POOL_AVG) over NCDHW, one invocation per output element;
// 1-D and 2-D pooling run with unit leading spatial dims. Windows may hang over the padding
// and, with ceil_mode, past it; only taps inside the input are read. With count_include_pad,
// the average divides by the taps inside the padded input. MaxPool with POOL_INDICES also
// writes where each maximum came from: its flat index into the whole input (ONNX's Indices,
// storage order 0) as an int64 pair of words, the first maximum on ties, -1 for a window with
// no element. QUANT8 (MaxPool only): x and y are Int8 / UInt8 bytes (signedness a push
// constant), compared as the integers they hold, which float32 holds exactly: a QDQ MaxPool
// with one scale and zero point on both sides (quantization is monotone, so it commutes).
#if QUANT8
#extension GL_EXT_shader_8bit_storage : require
#endif
#include "common.glsl"

#if QUANT8
#include "quant.glsl"
layout(std430, binding = 0) readonly buffer X { uint8_t x[]; };
layout(std430, binding = 1) writeonly buffer Y { uint8_t y[]; };
#define LOAD(i) float(widen_byte(x[i], p.is_signed))
#else
layout(std430, binding = 0) readonly buffer X { ELEM x[]; };
layout(std430, binding = 1) writeonly buffer Y { ELEM y[]; };
#define LOAD(i) T(x[i])
#endif
#if POOL_INDICES
layout(std430, binding = 2) writeonly buffer Indices { int index_words[]; };
#endif
layout(push_constant) uniform Params {
  int total;
  int in_d, in_h, in_w, out_d, out_h, out_w;
  int k_d, k_h, k_w, stride_d, stride_h, stride_w, dil_d, dil_h, dil_w;
  int pad_f, pad_t, pad_l, pad_bk, pad_b, pad_r;  // begins (front, top, left), then ends
  int count_include_pad;
#if QUANT8
  int is_signed;
#endif
} p;

void main() {
  int idx = int(linear_index());
  if (idx >= p.total) return;
  int ow = idx % p.out_w;
  int t = idx / p.out_w;
  int oh = t % p.out_h;
  t /= p.out_h;
  int od = t % p.out_d;
  int plane = t / p.out_d;
  int base = plane * p.in_d * p.in_h * p.in_w;
  int id0 = od * p.stride_d - p.pad_f;
  int ih0 = oh * p.stride_h - p.pad_t;
  int iw0 = ow * p.stride_w - p.pad_l;
#if POOL_MAX
  float r = uintBitsToFloat(0xff800000u);  // -inf: the max of no element
  int where = -1;
#else
  float r = 0.0;
  int n_in = 0, n_padded = 0;
#endif
  for (int kd = 0; kd < p.k_d; ++kd) {
    int id = id0 + kd * p.dil_d;
    bool slice_in = uint(id) < uint(p.in_d);
    for (int kh = 0; kh < p.k_h; ++kh) {
      int ih = ih0 + kh * p.dil_h;
      bool row_in = slice_in && uint(ih) < uint(p.in_h);
      int row = base + (id * p.in_h + ih) * p.in_w;
      for (int kw = 0; kw < p.k_w; ++kw) {
        int iw = iw0 + kw * p.dil_w;
        bool tap_in = row_in && uint(iw) < uint(p.in_w);
#if POOL_MAX
        if (tap_in) {
          float v = LOAD(row + iw);
          // Strictly greater keeps the first maximum; a NaN wins and stays (GLSL's max() leaves
          // NaN to the implementation).
          if (where < 0 || v > r || (isnan(v) && !isnan(r))) {
            where = row + iw;
            r = v;
          }
        }
#else
        if (tap_in) {
          r += LOAD(row + iw);
          ++n_in;
        }
        // Windows never start before the leading padding, so only the far edges can cut taps.
        if (id < p.in_d + p.pad_bk && ih < p.in_h + p.pad_b && iw < p.in_w + p.pad_r) ++n_padded;
#endif
      }
    }
  }
#if POOL_AVG
  int divisor = p.count_include_pad != 0 ? n_padded : n_in;
  r = divisor > 0 ? r / float(divisor) : 0.0;
#endif
#if QUANT8
  // A window of padding only is -inf, which quantizes to the type's minimum.
  y[idx] = narrow_byte(where < 0 ? (p.is_signed != 0 ? -128 : 0) : int(r));
#else
  y[idx] = ELEM(r);
#endif
#if POOL_INDICES
  index_words[2 * idx] = where;
  index_words[2 * idx + 1] = where < 0 ? -1 : 0;
#endif
}
