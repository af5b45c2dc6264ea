#version 450
// Tiled GEMM: a workgroup computes a BM x BN tile of C for batch gl_WorkGroupID.z, staging
// BK-deep slices of A and B in shared memory; each thread accumulates a TM x TN micro-tile in
// registers. Threads own rows ty + i*WY and columns tx + j*WX (interleaved, not blocked), so
// neighbouring threads read neighbouring shared-memory banks and write neighbouring C elements.
// SPLIT_K: gl_WorkGroupID.z enumerates (K slice, batch index), slice outermost; the workgroup
// sums only its slice's p.k_chunk of K and stores the raw partial at C[z] (a [slices * batch,
// M, N] scratch), leaving alpha, bias and activation to matmul_splitk_reduce.comp.
#include "matmul_common.glsl"

layout(constant_id = 3) const uint TM = 4;
layout(constant_id = 4) const uint TN = 4;
layout(constant_id = 5) const uint BK = 16;
// Whether A / B are contiguous along K; tile loads give neighbouring threads neighbouring
// addresses in the contiguous dimension.
layout(constant_id = 6) const bool A_K_FAST = true;
layout(constant_id = 7) const bool B_K_FAST = false;

const uint WX = gl_WorkGroupSize.x;
const uint WY = gl_WorkGroupSize.y;
const uint THREADS = WX * WY;
const uint BM = TM * WY;
const uint BN = TN * WX;
// One float of padding per k-row: loads that walk K then hit distinct banks.
const uint AS_ROW = BM + 1;
const uint BS_ROW = BN + 1;
shared float As[BK * AS_ROW];  // As[k * AS_ROW + m]
shared float Bs[BK * BS_ROW];  // Bs[k * BS_ROW + n]

void load_tiles(Offsets o, int m0, int n0, int k0, int k_end) {
  for (uint i = gl_LocalInvocationIndex; i < BM * BK; i += THREADS) {
    uint m = A_K_FAST ? i / BK : i % BM;
    uint k = A_K_FAST ? i % BK : i / BM;
    int gm = m0 + int(m), gk = k0 + int(k);
    float v = 0.0;
    if (gm < p.M && gk < k_end) v = a[o.a + gm * p.a_sm + gk * p.a_sk];
    As[k * AS_ROW + m] = v;
  }
  for (uint i = gl_LocalInvocationIndex; i < BN * BK; i += THREADS) {
    uint n = B_K_FAST ? i / BK : i % BN;
    uint k = B_K_FAST ? i % BK : i / BN;
    int gn = n0 + int(n), gk = k0 + int(k);
    float v = 0.0;
    if (gn < p.N && gk < k_end) v = b[o.b + gk * p.b_sk + gn * p.b_sn];
    Bs[k * BS_ROW + n] = v;
  }
}

void main() {
#if SPLIT_K
  const int batches = batch_count();
  const int slice = int(gl_WorkGroupID.z) / batches;
  Offsets o = batch_offsets(gl_WorkGroupID.z - uint(slice * batches));
  const int k_begin = slice * p.k_chunk;
  const int k_end = min(p.K, k_begin + p.k_chunk);
#else
  Offsets o = batch_offsets(gl_WorkGroupID.z);
  const int k_begin = 0;
  const int k_end = p.K;
#endif
  int m0 = int(gl_WorkGroupID.y * BM);
  int n0 = int(gl_WorkGroupID.x * BN);
  uint tx = gl_LocalInvocationID.x, ty = gl_LocalInvocationID.y;

  float acc[TM * TN];
  for (uint i = 0; i < TM * TN; ++i) acc[i] = 0.0;
  float av[TM];
  float bv[TN];
  for (int k0 = k_begin; k0 < k_end; k0 += int(BK)) {
    load_tiles(o, m0, n0, k0, k_end);
    barrier();
    for (uint kk = 0; kk < BK; ++kk) {
      for (uint i = 0; i < TM; ++i) av[i] = As[kk * AS_ROW + ty + i * WY];
      for (uint j = 0; j < TN; ++j) bv[j] = Bs[kk * BS_ROW + tx + j * WX];
      for (uint i = 0; i < TM; ++i)
        for (uint j = 0; j < TN; ++j) acc[i * TN + j] = fma(av[i], bv[j], acc[i * TN + j]);
    }
    barrier();
  }

  for (uint i = 0; i < TM; ++i) {
    int m = m0 + int(ty + i * WY);
    for (uint j = 0; j < TN; ++j) {
      int n = n0 + int(tx + j * WX);
      if (m >= p.M || n >= p.N) continue;
#if SPLIT_K
      c[int(gl_WorkGroupID.z) * p.M * p.N + m * p.N + n] = acc[i * TN + j];
#else
      store_output(o, m, n, acc[i * TN + j]);
#endif
    }
  }
}
