#version 450
// Convolution as an implicit GEMM per group: Y[m][n] = sum_k W[m][k] * im2col(X)[k][n] with
// M = the group's output channels, N = batch * output pixels, K = in_c_g * kernel taps. A
// workgroup computes a BM x BN tile of Y, walking K in BK-deep slices staged in shared memory;
// each thread accumulates a TM x TN block in registers, so every value read from shared memory
// feeds TM or TN multiply-adds. POINTWISE (1x1, stride 1, no padding) reads X as a plain
// [K, N] matrix per image, without the im2col index arithmetic, whatever the spatial rank.
// CONV3D decodes a depth tap too; without it the depth window must be trivial (in_d = k_d = 1,
// no depth pads), which spares 2-D convolutions that arithmetic. Tile sizes are defines; the
// workgroup size (spec constant 0) must be (BM / TM) * (BN / TN), a multiple of BN.
// SPLIT_K: gl_WorkGroupID.z enumerates (K slice, group), slice outermost; the workgroup sums
// only its slice's p.k_chunk of K and stores the raw partial into slice `slice` of a
// [slices, N, C, pixels] scratch bound as Y; conv_splitk_reduce.comp sums them and applies the
// epilogue.
#extension GL_EXT_control_flow_attributes : require
#include "common.glsl"
#include "conv_common.glsl"
#include "conv_im2col.glsl"

#define THREADS ((BM / TM) * (BN / TN))
#define THREADS_N (BN / TN)
// Threads fill A along K, so consecutive threads would hit one bank with a stride of BM.
#define A_STRIDE (BM + 1)

// Global loads per thread and K slice; THREADS is a multiple of BN, BK of THREADS / BN.
#define A_LOADS ((BM * BK + THREADS - 1) / THREADS)
#define B_LOADS (BK / (THREADS / BN))

shared float a_tile[BK * A_STRIDE];
shared float b_tile[BK * BN];

// The next K slice, in flight in registers while the current one is multiplied, so each
// slice's global-memory latency overlaps the previous slice's multiply-adds.
float pa[A_LOADS];
float pb[B_LOADS];

// What the thread's weight loads need, fixed for the whole K walk (set once by main()).
int tid, K, w_base, m_rows;

// Loads slice [k0, k0 + BK) of this workgroup's weight rows and im2col columns into pa, pb.
void fetch(int k0, int k_end) {
  // Consecutive threads read consecutive k of one weight row: contiguous memory.
  [[unroll]] for (int i = 0; i < A_LOADS; ++i) {
    int e = tid + i * THREADS;
    int r = e / BK;
    int k = k0 + e - r * BK;
    pa[i] = (e < BM * BK && r < m_rows && k < k_end) ? T(w[w_base + r * K + k]) : 0.0;
  }
  // Consecutive threads read consecutive output pixels of one (channel, tap).
  im2col_seek(k0 + tid / BN);
  [[unroll]] for (int i = 0; i < B_LOADS; ++i) {
    int k = k0 + tid / BN + i * (THREADS / BN);
    pb[i] = n_valid && k < k_end ? im2col_here() : 0.0;
    im2col_next(THREADS / BN);
  }
}

void stage() {
  [[unroll]] for (int i = 0; i < A_LOADS; ++i) {
    int e = tid + i * THREADS;
    int r = e / BK;
    if (e < BM * BK) a_tile[(e - r * BK) * A_STRIDE + r] = pa[i];
  }
  [[unroll]] for (int i = 0; i < B_LOADS; ++i)
    b_tile[(tid / BN + i * (THREADS / BN)) * BN + tid % BN] = pb[i];
}

void main() {
  tid = int(gl_LocalInvocationID.x);
#if SPLIT_K
  const int groups = p.in_c / p.in_c_g;
  const int slice = int(gl_WorkGroupID.z) / groups;
  const int group = int(gl_WorkGroupID.z) - slice * groups;
#else
  const int group = int(gl_WorkGroupID.z);
#endif
  const int m0 = int(gl_WorkGroupID.y) * BM;
  const int n0 = int(gl_WorkGroupID.x) * BN;
  // Each thread always loads the same column of the B tile.
  im2col_column(n0 + tid % BN, group);
  K = p.in_c_g * taps;
  const int out_vol = p.out_d * p.out_h * p.out_w;
  const int N = p.batch * out_vol;
#if SPLIT_K
  const int k_begin = slice * p.k_chunk;
  const int k_end = min(K, k_begin + p.k_chunk);
  const int y_base = slice * p.batch * p.out_c * out_vol;
#else
  const int k_begin = 0;
  const int k_end = K;
  const int y_base = 0;
#endif

  m_rows = min(BM, p.out_c_g - m0);
  w_base = (group * p.out_c_g + m0) * K;

  const int ty = tid / THREADS_N;
  const int tx = tid - ty * THREADS_N;
  float acc[TM][TN];
  for (int i = 0; i < TM; ++i)
    for (int j = 0; j < TN; ++j) acc[i][j] = 0.0;

  if (k_begin < k_end) fetch(k_begin, k_end);
  for (int k0 = k_begin; k0 < k_end; k0 += BK) {
    stage();
    barrier();
    if (k0 + BK < k_end) fetch(k0 + BK, k_end);
    for (int kk = 0; kk < BK; ++kk) {
      float a[TM], b[TN];
      for (int i = 0; i < TM; ++i) a[i] = a_tile[kk * A_STRIDE + ty + i * (BM / TM)];
      for (int j = 0; j < TN; ++j) b[j] = b_tile[kk * BN + tx + j * THREADS_N];
      for (int i = 0; i < TM; ++i)
        for (int j = 0; j < TN; ++j) acc[i][j] = fma(a[i], b[j], acc[i][j]);
    }
    barrier();
  }

  for (int i = 0; i < TM; ++i) {
    int m = m0 + ty + i * (BM / TM);
    if (m >= p.out_c_g) break;
    int co = group * p.out_c_g + m;
    for (int j = 0; j < TN; ++j) {
      int n = n0 + tx + j * THREADS_N;
      if (n >= N) break;
      int s = n / out_vol;
      int at = y_base + (s * p.out_c + co) * out_vol + (n - s * out_vol);
#if SPLIT_K
      y[at] = acc[i][j];
#else
      y[at] = ELEM(epilogue(acc[i][j], co, at));
#endif
    }
  }
}
