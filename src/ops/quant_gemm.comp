#version 450
// Integer GEMM: acc[row, col] = sum_k (A[row, k] - za) * (B[k, col] - zb) in int32, from
// 8-bit operands widened on load (zero points subtracted there, so padding contributes 0).
//   matmul   A = a [batch][M, K], B = b [batch][K, N]; batch = workgroup z
//   CONV     implicit GEMM of a 1-D/2-D convolution: row = output pixel, col = output channel
//            of group z % groups, image z / groups; A is x read through the window, B the
//            weights [channels][K]
// Output: int32 acc, or (REQUANT) saturate(round_half_even((acc + bias) * sa * sb / sy) + zy)
// as bytes. 64x64 tiles, 16-deep K slices in shared memory, 4x4 results per invocation.
#extension GL_EXT_shader_8bit_storage : require
#include "common.glsl"
#include "quant.glsl"

#define BM 64
#define BN 64
#define BK 16
#define TM 4
#define TN 4

layout(std430, binding = 0) readonly buffer A { uint8_t a[]; };
layout(std430, binding = 1) readonly buffer B { uint8_t b[]; };
#if REQUANT
layout(std430, binding = 2) writeonly buffer Y { uint8_t y[]; };
#else
layout(std430, binding = 2) writeonly buffer Y { int y[]; };
#endif
layout(std430, binding = 3) readonly buffer ZA { int za[]; };
layout(std430, binding = 4) readonly buffer ZB { int zb[]; };
#if REQUANT
layout(std430, binding = 5) readonly buffer SA { float sa[]; };
layout(std430, binding = 6) readonly buffer SB { float sb[]; };
layout(std430, binding = 7) readonly buffer SY { float sy[]; };
layout(std430, binding = 8) readonly buffer ZY { int zy[]; };
layout(std430, binding = 9) readonly buffer Bias { int bias[]; };
#endif

layout(push_constant) uniform Params {
  int M, N, K;
  int a_signed, b_signed;
  int za_count, zb_count;  // 1: per tensor; else per row of A / column of B, cycling
#if REQUANT
  int sa_count, sb_count;
  int qmin, qmax;
  int has_bias;
#endif
#if CONV
  int groups, channels;  // input channels per group
  int H, W, kh, kw, Ho, Wo;
  int sh, sw, ph, pw, dh, dw;
#else
  int a_batch_stride, b_batch_stride;  // elements; 0 broadcasts one matrix
#endif
} p;

shared int As[BK][BM];
shared int Bs[BK][BN];

// Global output channel (CONV) or column: the index of per-column parameters.
int channel_of(int col) {
#if CONV
  return int(gl_WorkGroupID.z) % p.groups * p.N + col;
#else
  return col;
#endif
}

int load_a(int row, int k) {
  if (row >= p.M || k >= p.K) return 0;
#if CONV
  int image = int(gl_WorkGroupID.z) / p.groups, group = int(gl_WorkGroupID.z) % p.groups;
  int window = p.kh * p.kw;
  int c = k / window, r = k % window;
  int iy = row / p.Wo * p.sh - p.ph + r / p.kw * p.dh;
  int ix = row % p.Wo * p.sw - p.pw + r % p.kw * p.dw;
  if (iy < 0 || iy >= p.H || ix < 0 || ix >= p.W) return 0;
  int plane = image * p.groups * p.channels + group * p.channels + c;
  return widen_byte(a[(plane * p.H + iy) * p.W + ix], p.a_signed) - za[0];
#else
  int v = widen_byte(a[int(gl_WorkGroupID.z) * p.a_batch_stride + row * p.K + k], p.a_signed);
  return v - za[(int(gl_WorkGroupID.z) * p.M + row) % p.za_count];
#endif
}

int load_b(int k, int col) {
  if (k >= p.K || col >= p.N) return 0;
  int ch = channel_of(col);
#if CONV
  int v = widen_byte(b[ch * p.K + k], p.b_signed);
#else
  int v = widen_byte(b[int(gl_WorkGroupID.z) * p.b_batch_stride + k * p.N + col], p.b_signed);
#endif
#if CONV
  return v - zb[ch % p.zb_count];
#else
  return v - zb[(int(gl_WorkGroupID.z) * p.N + col) % p.zb_count];
#endif
}

void store(int row, int col, int acc) {
  int ch = channel_of(col);
#if CONV
  int image = int(gl_WorkGroupID.z) / p.groups;
  int at = (image * p.groups * p.N + ch) * p.M + row;
#else
  int at = (int(gl_WorkGroupID.z) * p.M + row) * p.N + col;
#endif
#if REQUANT
  if (p.has_bias != 0) acc += bias[ch];
#if CONV
  float s = sa[0] * sb[ch % p.sb_count];
#else
  int z = int(gl_WorkGroupID.z);
  float s = sa[(z * p.M + row) % p.sa_count] * sb[(z * p.N + col) % p.sb_count];
#endif
  float multiplier = div_exact(s, sy[0]);
  y[at] = narrow_byte(quantize_value(float(acc) * multiplier, zy[0], p.qmin, p.qmax));
#else
  y[at] = acc;
#endif
}

void main() {
  int tx = int(gl_LocalInvocationID.x) % (BN / TN), ty = int(gl_LocalInvocationID.x) / (BN / TN);
  int tid = int(gl_LocalInvocationID.x);
  int row0 = int(gl_WorkGroupID.y) * BM, col0 = int(gl_WorkGroupID.x) * BN;
  int acc[TM][TN];
  for (int i = 0; i < TM; ++i)
    for (int j = 0; j < TN; ++j) acc[i][j] = 0;
  for (int k0 = 0; k0 < p.K; k0 += BK) {
    // 256 invocations load 1024 elements of each tile, 4 apiece.
    for (int e = tid; e < BM * BK; e += 256) {
      int r = e / BK, kk = e % BK;
      As[kk][r] = load_a(row0 + r, k0 + kk);
      int c = e % BN, kb = e / BN;
      Bs[kb][c] = load_b(k0 + kb, col0 + c);
    }
    barrier();
    for (int kk = 0; kk < BK; ++kk) {
      int av[TM], bv[TN];
      for (int i = 0; i < TM; ++i) av[i] = As[kk][ty * TM + i];
      for (int j = 0; j < TN; ++j) bv[j] = Bs[kk][tx * TN + j];
      for (int i = 0; i < TM; ++i)
        for (int j = 0; j < TN; ++j) acc[i][j] += av[i] * bv[j];
    }
    barrier();
  }
  for (int i = 0; i < TM; ++i) {
    int row = row0 + ty * TM + i;
    if (row >= p.M) continue;
    for (int j = 0; j < TN; ++j) {
      int col = col0 + tx * TN + j;
      if (col < p.N) store(row, col, acc[i][j]);
    }
  }
}
