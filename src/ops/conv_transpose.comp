#version 450
// Transposed convolution in gather form: each output element sums the inputs whose scattered
// taps land on it, ih = (oh + pad_t - kh * dil_h) / stride_h when that divides exactly. No
// atomics and no zero-inserted intermediate. Weight layout [in_c, out_c_g, k_h, k_w].
#include "common.glsl"
#include "conv_common.glsl"

void main() {
  int idx = int(linear_index());
  if (idx >= p.batch * p.out_c * p.out_h * p.out_w) return;
  int ow = idx % p.out_w;
  int t = idx / p.out_w;
  int oh = t % p.out_h;
  t /= p.out_h;
  int co = t % p.out_c;
  int img = t / p.out_c;
  int group = co / p.out_c_g;
  int co_g = co - group * p.out_c_g;
  int in_hw = p.in_h * p.in_w;
  int taps = p.k_h * p.k_w;
  int c0 = group * p.in_c_g;
  float acc = 0.0;
  for (int kh = 0; kh < p.k_h; ++kh) {
    int th = oh + p.pad_t - kh * p.dil_h;
    if (th < 0 || th % p.stride_h != 0) continue;
    int ih = th / p.stride_h;
    if (ih >= p.in_h) continue;
    for (int kw = 0; kw < p.k_w; ++kw) {
      int tw = ow + p.pad_l - kw * p.dil_w;
      if (tw < 0 || tw % p.stride_w != 0) continue;
      int iw = tw / p.stride_w;
      if (iw >= p.in_w) continue;
      int xi = (img * p.in_c + c0) * in_hw + ih * p.in_w + iw;
      int wi = (c0 * p.out_c_g + co_g) * taps + kh * p.k_w + kw;
      for (int c = 0; c < p.in_c_g; ++c)
        acc = fma(T(x[xi + c * in_hw]), T(w[wi + c * p.out_c_g * taps]), acc);
    }
  }
  y[idx] = ELEM(epilogue(acc, co, idx));
}
