#version 450
// Pointwise convolution of one-pixel images, y[n][m] = W[m] . x[n]: a squeeze-excite block's
// two fully connected layers, 1x1 convolutions of the pooled [N, C, 1, 1] vector. The implicit
// GEMM gives such a layer one or two workgroups that walk K one 16-deep slice after another,
// each slice a memory round trip, so it is latency-bound (the H200 profile: 240 -> 10 took
// 13 us in fp32, 18 us in fp16). Here LANES neighbouring invocations share an output row,
// each issuing its loads UNROLL at a time before any math, and rows spread over workgroups.
// Groups must be 1 (the host checks).
#extension GL_EXT_control_flow_attributes : require
#include "common.glsl"
#include "conv_common.glsl"

// Invocations per output row: a power of two dividing the workgroup size (the host picks it
// from K so that each does a few rounds of UNROLL loads).
layout(constant_id = 5) const int LANES = 32;
const int UNROLL = 8;

shared float partial[gl_WorkGroupSize.x];

void main() {
  const int t = int(gl_LocalInvocationID.x);
  const int lane = t % LANES;
  const int row = int(linear_index()) / LANES;  // over [N, M]: the output element
  const bool live = row < p.batch * p.out_c;
  const int K = p.in_c;
  const int img = row / p.out_c, m = row - img * p.out_c;
  const int x_base = img * K, w_base = m * K;
  float acc = 0.0;
  if (live) {
    for (int k0 = lane; k0 < K; k0 += UNROLL * LANES) {
      float xv[UNROLL], wv[UNROLL];
      [[unroll]] for (int u = 0; u < UNROLL; ++u) {
        const int k = k0 + u * LANES;
        xv[u] = k < K ? T(x[x_base + k]) : 0.0;
        wv[u] = k < K ? T(w[w_base + k]) : 0.0;
      }
      [[unroll]] for (int u = 0; u < UNROLL; ++u) acc = fma(xv[u], wv[u], acc);
    }
  }
  // The row's LANES partial sums meet in a shared-memory tree (rows never straddle workgroups).
  partial[t] = acc;
  barrier();
  [[unroll]] for (int s = LANES / 2; s > 0; s >>= 1) {
    if (lane < s) partial[t] += partial[t + s];
    barrier();
  }
  if (live && lane == 0) y[row] = ELEM(epilogue(partial[t], m, row));
}
