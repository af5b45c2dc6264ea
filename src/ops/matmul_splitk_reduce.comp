#version 450
// Second pass of split-K (see matmul_tiled.comp): one invocation per element of C sums the
// partials of every K slice, read from A (the [slices * batch, M, N] scratch), then applies the
// usual alpha, bias and activation epilogue.
#define SPLIT_K_REDUCE 1
#include "matmul_common.glsl"

void main() {
  const int mn = p.M * p.N;
  const int total = batch_count() * mn;
  const int i = int(linear_index());
  if (i >= total) return;
  const int slices = (p.K + p.k_chunk - 1) / p.k_chunk;
  float sum = 0.0;
  for (int s = 0; s < slices; ++s) sum += a[s * total + i];
  const int z = i / mn;
  const int m = (i - z * mn) / p.N;
  store_output(batch_offsets(uint(z)), m, i - z * mn - m * p.N, sum);
}
