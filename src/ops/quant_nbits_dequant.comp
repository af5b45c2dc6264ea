#version 450
// MatMulNBits' weights dequantized into a float matrix for the float GEMM (prompt-sized M,
// docs/notes/w4b-5.md): w[k, n] = (code(n, k) - zero) * scale, row-major [K, N], the layout the
// cooperative-matrix GEMM reads (N contiguous, 16-byte loads). b holds row n's codes of BITS
// bits packed low first along K, so this is a transpose as well: a workgroup reads a 64 n x 64 k
// tile (eight invocations on the 32 bytes of one row's slice), unpacks it into shared memory and
// writes it out along n (64 consecutive values of a row k: coalesced). One pass over the packed
// bytes and one over the result: bandwidth-bound, a few microseconds at K = N = 4096.
// DTYPE_*: scales, float zero points and w; the arithmetic is float32 as the tiled kernel's.
#extension GL_EXT_shader_8bit_storage : require
#extension GL_EXT_control_flow_attributes : require
#include "common.glsl"

layout(std430, binding = 0) readonly buffer B { uint b[]; };
layout(std430, binding = 1) readonly buffer Scales { ELEM scales[]; };
layout(std430, binding = 2) readonly buffer ZeroPacked { uint8_t zero_packed[]; };
layout(std430, binding = 3) readonly buffer ZeroFloat { ELEM zero_float[]; };
layout(std430, binding = 4) readonly buffer GIdx { int g_idx[]; };
layout(std430, binding = 5) writeonly buffer W { ELEM w[]; };

layout(push_constant) uniform Params {
  int N, K;
  int block_size, blocks;  // blocks per row
  int row_words;           // 32-bit words of b per row
  int zero_row_bytes;      // packed zero points: bytes per row
  int zero_mode;           // 0: 2^(BITS-1), 1: packed uint8, 2: float
  int has_g_idx;
} p;

layout(constant_id = 3) const int BITS = 4;

#define TN 64
#define TK 64
#define THREADS 256
const int PER_WORD = 32 / BITS;
const int TILE_WORDS = TK / PER_WORD;  // words of one row in a tile
const uint MASK = (1u << BITS) - 1u;

float zero_of(int n, int block) {
  if (p.zero_mode == 0) return float(1 << (BITS - 1));
  if (p.zero_mode == 2) return float(zero_float[n * p.blocks + block]);
  const int bit = block * BITS;
  const uint byte = uint(zero_packed[n * p.zero_row_bytes + bit / 8]);
  return float((byte >> uint(bit % 8)) & MASK);
}

// Padded by one per k: a row's consecutive words (neighbouring invocations) land 8 k apart.
shared float tile[TK][TN + 1];

void main() {
  const int tid = int(gl_LocalInvocationID.x);
  const int n0 = int(gl_WorkGroupID.x) * TN, k0 = int(gl_WorkGroupID.y) * TK;
  [[unroll]] for (int e = tid; e < TN * TILE_WORDS; e += THREADS) {
    const int nl = e / TILE_WORDS, wl = e % TILE_WORDS, n = n0 + nl, kw = k0 + wl * PER_WORD;
    if (n >= p.N || kw >= p.K) continue;  // never written out
    const uint word = b[n * p.row_words + kw / PER_WORD];
    if (p.has_g_idx == 0) {
      const int block = kw / p.block_size;  // blocks are whole words
      const float scale = float(scales[n * p.blocks + block]), zero = zero_of(n, block);
      [[unroll]] for (int j = 0; j < PER_WORD; ++j)
        tile[wl * PER_WORD + j][nl] = (float((word >> uint(j * BITS)) & MASK) - zero) * scale;
    } else {
      [[unroll]] for (int j = 0; j < PER_WORD; ++j) {
        const int k = min(kw + j, p.K - 1), block = g_idx[k];  // past K: computed, not stored
        const float code = float((word >> uint(j * BITS)) & MASK);
        tile[wl * PER_WORD + j][nl] = (code - zero_of(n, block)) * float(scales[n * p.blocks + block]);
      }
    }
  }
  barrier();
  [[unroll]] for (int e = tid; e < TK * TN; e += THREADS) {
    const int kl = e / TN, nl = e % TN, k = k0 + kl, n = n0 + nl;
    if (k < p.K && n < p.N) w[k * p.N + n] = ELEM(tile[kl][nl]);
  }
}
