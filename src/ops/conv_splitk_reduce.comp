#version 450
// Second pass of split-K (see conv.comp): one invocation per output element sums the partials
// of every K slice, read from X (the [slices, N, C, pixels] scratch), then applies bias and
// activation.
#define SPLIT_K_REDUCE 1
#include "common.glsl"
#include "conv_common.glsl"

void main() {
  const int out_vol = p.out_d * p.out_h * p.out_w;
  const int total = p.batch * p.out_c * out_vol;
  const int i = int(linear_index());
  if (i >= total) return;
  const int slices = (p.in_c_g * p.k_d * p.k_h * p.k_w + p.k_chunk - 1) / p.k_chunk;
  float sum = 0.0;
  for (int s = 0; s < slices; ++s) sum += x[s * total + i];
  y[i] = ELEM(epilogue(sum, (i / out_vol) % p.out_c, i));
}
