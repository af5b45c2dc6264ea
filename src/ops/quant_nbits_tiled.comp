#version 450
// MatMulNBits for prompt-sized M (and any M with g_idx): y[m, n] = sum_k a[m, k] * w[n, k]
// (+ bias[n]), w's codes of `bits` bits packed low first along K (row n's bit k * bits), one
// scale (and zero) per block of K (g_idx: per k's group).
//
// A GEMM, not M GEMVs: 64 n x 64 m tiles, 256 invocations of 4 x 4 results each, K in slices of
// 32. Each slice of w is unpacked once (a word's codes share one scale and zero: blocks are
// whole words) into shared memory and reused by all 64 rows of a; both tiles are read as vec4,
// so 16 fmas take two shared loads. The weights of one tile are read once per 64 rows of a.
// The next slice's global loads are issued into registers before the current slice's fmas.
// DTYPE_*: a, scales, float zero points, bias and y; sums are float32.
#extension GL_EXT_shader_8bit_storage : require
#extension GL_EXT_control_flow_attributes : require
#include "common.glsl"

layout(std430, binding = 0) readonly buffer A { ELEM a[]; };
layout(std430, binding = 1) readonly buffer B { uint b[]; };
layout(std430, binding = 2) readonly buffer Scales { ELEM scales[]; };
layout(std430, binding = 3) readonly buffer ZeroPacked { uint8_t zero_packed[]; };
layout(std430, binding = 4) readonly buffer ZeroFloat { ELEM zero_float[]; };
layout(std430, binding = 5) readonly buffer GIdx { int g_idx[]; };
layout(std430, binding = 6) readonly buffer Bias { ELEM bias[]; };
layout(std430, binding = 7) writeonly buffer Y { ELEM y[]; };

layout(push_constant) uniform Params {
  int M, N, K;
  int bits, block_size, blocks;  // blocks per row
  int row_words;                 // 32-bit words of b per row
  int zero_row_bytes;            // packed zero points: bytes per row
  int zero_mode;                 // 0: 2^(bits-1), 1: packed uint8, 2: float
  int has_g_idx, has_bias;
} p;

#define BN 64
#define BM 64
#define BK 32
#define THREADS 256

float zero_of(int n, int block) {
  if (p.zero_mode == 0) return float(1 << (p.bits - 1));
  if (p.zero_mode == 2) return float(zero_float[n * p.blocks + block]);
  const int bit = block * p.bits;
  const uint byte = uint(zero_packed[n * p.zero_row_bytes + bit / 8]);
  return float((byte >> uint(bit % 8)) & ((1u << uint(p.bits)) - 1u));
}

// Padded by one vec4 per k: the a tile's stores (consecutive k in a warp) spread over banks.
shared vec4 As[BK][BM / 4 + 1];
shared vec4 Ws[BK][BN / 4];

// One slice's global loads, held in registers while the slice before is multiplied: a (BM *
// BK values, consecutive invocations on consecutive k of a row, coalesced) and w (packed words,
// consecutive invocations on consecutive rows n, so their shared stores hit distinct banks).
#define A_PER (BM * BK / THREADS)
#define W_PER 2  // words per invocation and slice at most: 8-bit codes, 64 * 32 / 4 / 256
float a_reg[A_PER];
uint w_reg[W_PER];

void load_slice(int k0, int n0, int m0, int tid, int per_word, int slice_words) {
  [[unroll]] for (int i = 0; i < A_PER; ++i) {
    const int e = tid + i * THREADS, r = e / BK, k = k0 + e % BK, m = m0 + r;
    a_reg[i] = m < p.M && k < p.K ? float(a[m * p.K + k]) : 0.0;
  }
  [[unroll]] for (int i = 0; i < W_PER; ++i) {
    const int e = tid + i * THREADS, c = e % BN, wi = e / BN, n = n0 + c;
    const int kw = k0 + wi * per_word;
    const bool live = e < BN * slice_words && n < p.N && kw < p.K;
    w_reg[i] = live ? b[n * p.row_words + kw / per_word] : 0u;
  }
}

// The held slice into shared memory, w unpacked: a word's codes share one scale and zero.
void store_slice(int k0, int n0, int tid, int per_word, int slice_words) {
  const uint mask = (1u << uint(p.bits)) - 1u;
  [[unroll]] for (int i = 0; i < A_PER; ++i) {
    const int e = tid + i * THREADS, r = e / BK;
    As[e % BK][r / 4][r % 4] = a_reg[i];
  }
  [[unroll]] for (int i = 0; i < W_PER; ++i) {
    const int e = tid + i * THREADS, c = e % BN, wi = e / BN, n = n0 + c;
    if (e >= BN * slice_words) break;
    const int kw = k0 + wi * per_word;
    const bool live = n < p.N && kw < p.K;
    const uint word = w_reg[i];
    if (p.has_g_idx == 0) {
      const int block = kw / p.block_size;
      const float scale = live ? float(scales[n * p.blocks + block]) : 0.0;
      const float zero = live ? zero_of(n, block) : 0.0;
      for (int j = 0; j < per_word; ++j) {
        const float code = float((word >> uint(j * p.bits)) & mask);
        Ws[wi * per_word + j][c / 4][c % 4] = kw + j < p.K ? (code - zero) * scale : 0.0;
      }
    } else {
      for (int j = 0; j < per_word; ++j) {
        const int k = kw + j;
        float v = 0.0;
        if (live && k < p.K) {
          const int block = g_idx[k];
          const float code = float((word >> uint(j * p.bits)) & mask);
          v = (code - zero_of(n, block)) * float(scales[n * p.blocks + block]);
        }
        Ws[wi * per_word + j][c / 4][c % 4] = v;
      }
    }
  }
}

void main() {
  const int tid = int(gl_LocalInvocationID.x);
  const int tn = tid % (BN / 4), tm = tid / (BN / 4);
  const int n0 = int(gl_WorkGroupID.x) * BN, m0 = int(gl_WorkGroupID.y) * BM;
  const int per_word = 32 / p.bits, slice_words = BK / per_word;
  vec4 acc[4];
  [[unroll]] for (int i = 0; i < 4; ++i) acc[i] = vec4(0.0);
  load_slice(0, n0, m0, tid, per_word, slice_words);
  for (int k0 = 0; k0 < p.K; k0 += BK) {
    store_slice(k0, n0, tid, per_word, slice_words);
    barrier();
    // The next slice's loads go out before this slice's fmas, which hide their latency.
    if (k0 + BK < p.K) load_slice(k0 + BK, n0, m0, tid, per_word, slice_words);
    [[unroll]] for (int kk = 0; kk < BK; ++kk) {
      const vec4 av = As[kk][tm], wv = Ws[kk][tn];
      acc[0] = fma(vec4(av.x), wv, acc[0]);
      acc[1] = fma(vec4(av.y), wv, acc[1]);
      acc[2] = fma(vec4(av.z), wv, acc[2]);
      acc[3] = fma(vec4(av.w), wv, acc[3]);
    }
    barrier();
  }
  [[unroll]] for (int i = 0; i < 4; ++i) {
    const int m = m0 + tm * 4 + i;
    if (m >= p.M) continue;
    [[unroll]] for (int j = 0; j < 4; ++j) {
      const int n = n0 + tn * 4 + j;
      if (n >= p.N) continue;
      y[m * p.N + n] = ELEM(acc[i][j] + (p.has_bias != 0 ? float(bias[n]) : 0.0));
    }
  }
}
