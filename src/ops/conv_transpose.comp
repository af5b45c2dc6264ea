#version 450
// Transposed convolution in gather form: each output element sums the inputs whose scattered
// taps land on it, ih = (oh + pad_t - kh * dil_h) / stride_h when that divides exactly (and so
// for depth and width). No atomics and no zero-inserted intermediate. Weight layout
// [in_c, out_c_g, k_d, k_h, k_w]; 1-D and 2-D have unit depth (one pass of the depth loop).
#include "common.glsl"
#include "conv_common.glsl"

// The input position that tap k of output position o reads along one axis, or -1 for none.
int source(int o, int pad, int k, int dil, int stride, int size) {
  int t = o + pad - k * dil;
  if (t < 0 || t % stride != 0) return -1;
  int i = t / stride;
  return i < size ? i : -1;
}

void main() {
  int idx = int(linear_index());
  if (idx >= p.batch * p.out_c * p.out_d * p.out_h * p.out_w) return;
  int ow = idx % p.out_w;
  int t = idx / p.out_w;
  int oh = t % p.out_h;
  t /= p.out_h;
  int od = t % p.out_d;
  t /= p.out_d;
  int co = t % p.out_c;
  int img = t / p.out_c;
  int group = co / p.out_c_g;
  int co_g = co - group * p.out_c_g;
  int in_vol = p.in_d * p.in_h * p.in_w;
  int taps = p.k_d * p.k_h * p.k_w;
  int c0 = group * p.in_c_g;
  float acc = 0.0;
  for (int kd = 0; kd < p.k_d; ++kd) {
    int id = source(od, p.pad_f, kd, p.dil_d, p.stride_d, p.in_d);
    if (id < 0) continue;
    for (int kh = 0; kh < p.k_h; ++kh) {
      int ih = source(oh, p.pad_t, kh, p.dil_h, p.stride_h, p.in_h);
      if (ih < 0) continue;
      for (int kw = 0; kw < p.k_w; ++kw) {
        int iw = source(ow, p.pad_l, kw, p.dil_w, p.stride_w, p.in_w);
        if (iw < 0) continue;
        int xi = (img * p.in_c + c0) * in_vol + (id * p.in_h + ih) * p.in_w + iw;
        int wi = (c0 * p.out_c_g + co_g) * taps + (kd * p.k_h + kh) * p.k_w + kw;
        for (int c = 0; c < p.in_c_g; ++c)
          acc = fma(T(x[xi + c * in_vol]), T(w[wi + c * p.out_c_g * taps]), acc);
      }
    }
  }
  y[idx] = ELEM(epilogue(acc, co, idx));
}
