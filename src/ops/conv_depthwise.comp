#version 450
// Depthwise convolution (groups == in_c, out_c a multiple of it): output channel co reads only
// input channel co / out_c_g, so there is no channel reduction to tile. One invocation per
// output element, ow fastest, so neighbouring invocations read neighbouring input and share
// the channel's few weights through the cache. CONV3D walks a depth window too; without it the
// depth window must be trivial (in_d = k_d = 1, no depth pads).
#include "common.glsl"
#include "conv_common.glsl"

void main() {
  int idx = int(linear_index());
  if (idx >= p.batch * p.out_c * p.out_d * p.out_h * p.out_w) return;
  int ow = idx % p.out_w;
  int t = idx / p.out_w;
  int oh = t % p.out_h;
  t /= p.out_h;
#if CONV3D
  int od = t % p.out_d;
  t /= p.out_d;
  const int id0 = od * p.stride_d - p.pad_f;
  const int k_d = p.k_d;
#else
  const int id0 = 0;
  const int k_d = 1;
#endif
  int co = t % p.out_c;
  int img = t / p.out_c;
  int in_hw = p.in_h * p.in_w;
  int k_hw = p.k_h * p.k_w;
  int x_base = (img * p.in_c + co / p.out_c_g) * p.in_d * in_hw;
  int w_base = co * p.k_d * k_hw;
  int ih0 = oh * p.stride_h - p.pad_t;
  int iw0 = ow * p.stride_w - p.pad_l;
  float acc = 0.0;
  for (int kd = 0; kd < k_d; ++kd) {
    int id = id0 + kd * p.dil_d;
    if (uint(id) >= uint(p.in_d)) continue;
    int x_plane = x_base + id * in_hw;
    int w_plane = w_base + kd * k_hw;
    for (int kh = 0; kh < p.k_h; ++kh) {
      int ih = ih0 + kh * p.dil_h;
      if (uint(ih) >= uint(p.in_h)) continue;
      for (int kw = 0; kw < p.k_w; ++kw) {
        int iw = iw0 + kw * p.dil_w;
        if (uint(iw) >= uint(p.in_w)) continue;
        acc = fma(T(x[x_plane + ih * p.in_w + iw]), T(w[w_plane + kh * p.k_w + kw]), acc);
      }
    }
  }
  y[idx] = ELEM(epilogue(acc, co, idx));
}
