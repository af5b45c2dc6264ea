#version 450
// MatMulNBits: y[m, n] = sum_k a[m, k] * w[n, k] (+ bias[n]), w dequantized in registers from
// codes of `bits` bits packed low first along K (row n's bit k * bits), one scale (and zero) per
// block of K. b is read as 32-bit words; a word holds 32 / bits codes of one block.
//   GEMV   the lanes of one subgroup (SUBGROUP_REDUCE; else 32 invocations) per SG_ROWS rows
//          n (else one) stride over the rows' 32-bit words, 4 word positions in flight each,
//          so the packed weights are read once, coalesced; subgroupAdd (else a shared-memory
//          tree) ends each row. ROWS rows per workgroup; workgroup y is the row m of a.
//   TILED  64 n x 32 m tiles, K in slices of 32: each slice of w is dequantized once into
//          shared memory and reused by all 32 rows of a.
// DTYPE_*: a, scales, float zero points, bias and y; sums are float32.
#extension GL_EXT_shader_8bit_storage : require
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

float zero_of(int n, int block) {
  if (p.zero_mode == 0) return float(1 << (p.bits - 1));
  if (p.zero_mode == 2) return float(zero_float[n * p.blocks + block]);
  int bit = block * p.bits;
  uint byte = uint(zero_packed[n * p.zero_row_bytes + bit / 8]);
  return float((byte >> uint(bit % 8)) & ((1u << uint(p.bits)) - 1u));
}

int block_of(int k) { return p.has_g_idx != 0 ? g_idx[k] : k / p.block_size; }

float dequantized(int n, int k, uint word, int j) {
  int block = block_of(k);
  float code = float((word >> uint(j * p.bits)) & ((1u << uint(p.bits)) - 1u));
  return (code - zero_of(n, block)) * float(scales[n * p.blocks + block]);
}

#if GEMV
#extension GL_EXT_control_flow_attributes : require
#if SUBGROUP_REDUCE
#extension GL_KHR_shader_subgroup_arithmetic : require
#endif
// Rows of b (outputs n) per workgroup.
layout(constant_id = 3) const uint ROWS = 4;
// Word loads in flight per lane, all issued before the first is used: one per loop trip would
// leave a single 4-byte load in flight per lane, far too few bytes to cover memory latency.
// Knob "nbits.unroll".
layout(constant_id = 5) const int UNROLL = 4;

// a[m, k0 ..] against the codes of one word of row n. Blocks are whole words (block_size >= 16,
// so a block is 32 / bits codes or more), so one word has one scale and zero: sum a * code
// and a, then scale and shift once.
float word_dot(int m, int n, int w, uint word) {
  const int per_word = 32 / p.bits, k0 = w * per_word, count = min(per_word, p.K - k0);
  const uint mask = (1u << uint(p.bits)) - 1u;
  if (p.has_g_idx != 0) {
    float sum = 0.0;
    for (int j = 0; j < count; ++j)
      sum += float(a[m * p.K + k0 + j]) * dequantized(n, k0 + j, word, j);
    return sum;
  }
  float dot_codes = 0.0, sum_a = 0.0;
  [[unroll]] for (int j = 0; j < 16; ++j) {
    if (j >= count) break;
    float x = float(a[m * p.K + k0 + j]);
    dot_codes += x * float((word >> uint(j * p.bits)) & mask);
    sum_a += x;
  }
  const int block = k0 / p.block_size;
  return (dot_codes - zero_of(n, block) * sum_a) * float(scales[n * p.blocks + block]);
}

// Row n's partial dot product over its words lane, lane + lanes, ...: neighbouring lanes read
// neighbouring words, so each load of the `lanes` lanes is one coalesced stretch of b.
float row_partial(int m, int n, int lane, int lanes) {
  const int per_word = 32 / p.bits, row = n * p.row_words;
  const int words = min(p.row_words, (p.K + per_word - 1) / per_word);  // words with k < K
  float sum = 0.0;
  int w = lane;
  for (; w + (UNROLL - 1) * lanes < words; w += UNROLL * lanes) {
    uint word[UNROLL];
    [[unroll]] for (int u = 0; u < UNROLL; ++u) word[u] = b[row + w + u * lanes];
    [[unroll]] for (int u = 0; u < UNROLL; ++u) sum += word_dot(m, n, w + u * lanes, word[u]);
  }
  for (; w < words; w += lanes) sum += word_dot(m, n, w, b[row + w]);
  return sum;
}

void store_row(int m, int n, float v) {
  if (p.has_bias != 0) v += float(bias[n]);
  y[m * p.N + n] = ELEM(v);
}

#if SUBGROUP_REDUCE
// Rows of b one subgroup computes together. a's values for a word position are loaded once
// and serve all of them: one row at a time, a is read per_word times for every 4 bytes of b,
// and those (cached) loads, not b's, bound the kernel.
layout(constant_id = 4) const int SG_ROWS = 4;
layout(std430, binding = 0) readonly buffer A4 { ELEM4 a4[]; };

// Adds to sum[r] row n0 + r's products with a[m, k0 ..] over word w of each row, one block
// per word (no g_idx), so sum_a (shared by the rows) and one scale and zero per row suffice.
void words_dot(int m, int n0, int w, uint word[SG_ROWS], inout float sum[SG_ROWS]) {
  const int per_word = 32 / p.bits, k0 = w * per_word, count = min(per_word, p.K - k0);
  const uint mask = (1u << uint(p.bits)) - 1u;
  float dot_codes[SG_ROWS];
  [[unroll]] for (int r = 0; r < SG_ROWS; ++r) dot_codes[r] = 0.0;
  float sum_a = 0.0;
  if ((p.K & 3) == 0 && (per_word & 3) == 0 && count == per_word) {
    // Four values of a per load, through a second view of binding 0 (k0 and the row start
    // are multiples of 4).
    const int base = (m * p.K + k0) >> 2;
    [[unroll]] for (int q = 0; q < 4; ++q) {
      if (4 * q >= per_word) break;
      const vec4 x = vec4(a4[base + q]);
      sum_a += (x.x + x.y) + (x.z + x.w);
      [[unroll]] for (int r = 0; r < SG_ROWS; ++r) {
        const uint c = word[r] >> uint(4 * q * p.bits);
        const vec4 codes = vec4(float(c & mask), float((c >> uint(p.bits)) & mask),
                                float((c >> uint(2 * p.bits)) & mask),
                                float((c >> uint(3 * p.bits)) & mask));
        dot_codes[r] += dot(x, codes);
      }
    }
  } else {
    [[unroll]] for (int j = 0; j < 16; ++j) {
      if (j >= count) break;
      const float x = float(a[m * p.K + k0 + j]);
      sum_a += x;
      [[unroll]] for (int r = 0; r < SG_ROWS; ++r)
        dot_codes[r] += x * float((word[r] >> uint(j * p.bits)) & mask);
    }
  }
  const int block = k0 / p.block_size;
  [[unroll]] for (int r = 0; r < SG_ROWS; ++r) {
    const int n = min(n0 + r, p.N - 1);  // a row past N is computed and not stored
    sum[r] += (dot_codes[r] - zero_of(n, block) * sum_a) * float(scales[n * p.blocks + block]);
  }
}

// SG_ROWS rows of b per subgroup over their words lane, lane + lanes, ..., UNROLL word
// positions of every row loaded before the first is used; subgroupAdd ends each row.
// Subgroups take the workgroup's ROWS rows in turn, so the result does not depend on the
// subgroup size the driver picks; the host sizes ROWS for the size the device reports.
void main() {
  const int m = int(gl_WorkGroupID.y);
  const int lane = int(gl_SubgroupInvocationID), lanes = int(gl_SubgroupSize);
  for (uint first = gl_SubgroupID * SG_ROWS; first < ROWS; first += gl_NumSubgroups * SG_ROWS) {
    const int n0 = int(gl_WorkGroupID.x * ROWS + first);
    if (n0 >= p.N) return;
    float sum[SG_ROWS];
    [[unroll]] for (int r = 0; r < SG_ROWS; ++r) sum[r] = 0.0;
    if (p.has_g_idx != 0) {
      [[unroll]] for (int r = 0; r < SG_ROWS; ++r)
        if (n0 + r < p.N) sum[r] = row_partial(m, n0 + r, lane, lanes);
    } else {
      const int per_word = 32 / p.bits;
      const int words = min(p.row_words, (p.K + per_word - 1) / per_word);  // words with k < K
      int row[SG_ROWS];
      [[unroll]] for (int r = 0; r < SG_ROWS; ++r) row[r] = min(n0 + r, p.N - 1) * p.row_words;
      int w = lane;
      for (; w + (UNROLL - 1) * lanes < words; w += UNROLL * lanes) {
        uint word[UNROLL][SG_ROWS];
        [[unroll]] for (int u = 0; u < UNROLL; ++u)
          [[unroll]] for (int r = 0; r < SG_ROWS; ++r) word[u][r] = b[row[r] + w + u * lanes];
        [[unroll]] for (int u = 0; u < UNROLL; ++u)
          words_dot(m, n0, w + u * lanes, word[u], sum);
      }
      for (; w < words; w += lanes) {
        uint word[SG_ROWS];
        [[unroll]] for (int r = 0; r < SG_ROWS; ++r) word[r] = b[row[r] + w];
        words_dot(m, n0, w, word, sum);
      }
    }
    [[unroll]] for (int r = 0; r < SG_ROWS; ++r) {
      const float total = subgroupAdd(sum[r]);
      if (subgroupElect() && n0 + r < p.N) store_row(m, n0 + r, total);
    }
  }
}
#else
// 32 lanes per row of b, their partial sums met by a shared-memory tree.
#define LANES 32
shared float partial[ROWS * LANES];

void main() {
  const int lane = int(gl_LocalInvocationID.x) % LANES, slot = int(gl_LocalInvocationID.x) / LANES;
  const int n = int(gl_WorkGroupID.x * ROWS) + slot, m = int(gl_WorkGroupID.y);
  partial[gl_LocalInvocationID.x] = n < p.N ? row_partial(m, n, lane, LANES) : 0.0;
  barrier();
  for (int s = LANES / 2; s > 0; s >>= 1) {
    if (lane < s) partial[gl_LocalInvocationID.x] += partial[gl_LocalInvocationID.x + s];
    barrier();
  }
  if (lane == 0 && n < p.N) store_row(m, n, partial[gl_LocalInvocationID.x]);
}
#endif

#else  // TILED
#define BN 64
#define BM 32
#define BK 32
#define TN 4
#define TM 2
shared float As[BK][BM];
shared float Ws[BK][BN];

void main() {
  int tid = int(gl_LocalInvocationID.x);
  int tn = tid % (BN / TN), tm = tid / (BN / TN);
  int n0 = int(gl_WorkGroupID.x) * BN, m0 = int(gl_WorkGroupID.y) * BM;
  int per_word = 32 / p.bits, slice_words = BK / per_word;
  float acc[TM][TN];
  for (int i = 0; i < TM; ++i)
    for (int j = 0; j < TN; ++j) acc[i][j] = 0.0;
  for (int k0 = 0; k0 < p.K; k0 += BK) {
    for (int e = tid; e < BM * BK; e += 256) {
      int r = e / BK, kk = e % BK;
      int m = m0 + r, k = k0 + kk;
      As[kk][r] = m < p.M && k < p.K ? float(a[m * p.K + k]) : 0.0;
    }
    for (int e = tid; e < BN * slice_words; e += 256) {
      int c = e / slice_words, wi = e % slice_words;
      int n = n0 + c, kw = k0 + wi * per_word;
      int w = kw / per_word;
      uint word = n < p.N && w < p.row_words ? b[n * p.row_words + w] : 0u;
      for (int j = 0; j < per_word; ++j) {
        int k = kw + j;
        Ws[k - k0][c] = n < p.N && k < p.K ? dequantized(n, k, word, j) : 0.0;
      }
    }
    barrier();
    for (int kk = 0; kk < BK; ++kk) {
      float av[TM], wv[TN];
      for (int i = 0; i < TM; ++i) av[i] = As[kk][tm * TM + i];
      for (int j = 0; j < TN; ++j) wv[j] = Ws[kk][tn * TN + j];
      for (int i = 0; i < TM; ++i)
        for (int j = 0; j < TN; ++j) acc[i][j] += av[i] * wv[j];
    }
    barrier();
  }
  for (int i = 0; i < TM; ++i) {
    int m = m0 + tm * TM + i;
    if (m >= p.M) continue;
    for (int j = 0; j < TN; ++j) {
      int n = n0 + tn * TN + j;
      if (n >= p.N) continue;
      float v = acc[i][j];
      if (p.has_bias != 0) v += float(bias[n]);
      y[m * p.N + n] = ELEM(v);
    }
  }
}
#endif
