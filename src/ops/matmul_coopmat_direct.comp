#version 450
#extension GL_NV_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_control_flow_attributes : require
#extension GL_KHR_shader_subgroup_basic : require
// fp16 GEMM of few rows on tensor cores (batch-1 transformers: M 16..512 tokens), without
// shared-memory staging in the K loop: C = act(alpha A B + beta bias + residual), A [M, K]
// row-major, B [K, N] row-major or stored [N, K] (B_T), C [M, N] fp16, fp32 accumulation.
// Why: matmul_coopmat.comp stages each BK-deep slice through shared memory between two
// workgroup barriers, so a small grid pays one global load's latency per slice (H200: 0.31 us
// per 32-deep slice, 24 of them at K 768). Here each subgroup loads its 16x16 fragments
// straight from the buffers and keeps the next UNROLL steps' loads in flight while it
// multiplies the current ones: no barrier until the K walk ends.
// A workgroup of SG_K subgroups computes one BM x BN tile (FM x FN fragments); subgroup s walks
// its own share of K, and the shares are summed through shared memory in subgroup order (the
// same sum on every run) before the epilogue.
// Fragments are read whole, so a tile's last fragment row (column) that would run past M (N)
// is read from row M - 16 (column N - 16) instead: the host sends only M, N >= 16, and the
// store skips what the shifted fragment repeats. The host also sends only K % 16 == 0 and
// row strides (a_sm, b_sk or b_sn) that are multiples of 8 halves: every fragment row starts
// on a 16-byte boundary.
#define MATMUL_OWN_BUFFERS 1
#include "matmul_common.glsl"

const uint BM = 16 * FM;
const uint BN = 16 * FN;
const uint THREADS = 32 * SG_K;
const uint STEP = 16 * UNROLL;  // K walked per pipeline stage

layout(std430, binding = 0) readonly buffer A { uvec4 a[]; };
layout(std430, binding = 1) readonly buffer B { uvec4 b[]; };
layout(std430, binding = 2) readonly buffer Bias { float16_t bias[]; };  // A when absent
layout(std430, binding = 3) writeonly buffer C { float16_t c[]; };
layout(std430, binding = 4) readonly buffer Residual { float16_t residual[]; };  // A when absent

// Every subgroup's fp32 sums of the tile, [SG_K][BM][BN].
shared float partial[SG_K * BM * BN];

#define FRAG16 fcoopmatNV<16, gl_ScopeSubgroup, 16, 16>

// The first row (column) fragment f of the tile at m0 (n0) is read from: shifted back where it
// would pass M (N).
int fragment_row(int m0, uint f) { return min(m0 + int(16 * f), p.M - 16); }
int fragment_col(int n0, uint f) { return min(n0 + int(16 * f), p.N - 16); }

void main() {
  const uvec2 tile = tile_of_workgroup(1);
  const int m0 = int(tile.y * BM), n0 = int(tile.x * BN);
  const uint sg = gl_SubgroupID;


  // This subgroup's share of K, in whole 16-deep steps.
  const int share = (p.K / 16 + int(SG_K) - 1) / int(SG_K) * 16;
  const int k_begin = min(p.K, int(sg) * share), k_end = min(p.K, k_begin + share);

  fcoopmatNV<32, gl_ScopeSubgroup, 16, 16> acc[FM * FN];
  [[unroll]] for (uint i = 0; i < FM * FN; ++i)
    acc[i] = fcoopmatNV<32, gl_ScopeSubgroup, 16, 16>(0.0);
  // Two stages of UNROLL steps: one being multiplied while the other's loads are in flight.
  FRAG16 fa0[UNROLL * FM], fa1[UNROLL * FM];
  FRAG16 fb0[UNROLL * FN], fb1[UNROLL * FN];

// Offsets and strides in uvec4 (8 halves).
#if B_T
#define LOAD_B(F, kk, j) \
  coopMatLoadNV(F, b, uint(fragment_col(n0, j) * p.b_sn + (kk)) / 8, uint(p.b_sn) / 8, true)
#else
#define LOAD_B(F, kk, j) \
  coopMatLoadNV(F, b, uint((kk) * p.b_sk + fragment_col(n0, j)) / 8, uint(p.b_sk) / 8, false)
#endif
#define LOAD_STAGE(FA, FB, k0)                                                         \
  [[unroll]] for (uint u = 0; u < UNROLL; ++u) {                                      \
    const int kk = (k0) + int(16 * u);                                                \
    if (kk >= k_end) break;                                                           \
    [[unroll]] for (uint i = 0; i < FM; ++i)                                          \
      coopMatLoadNV(FA[u * FM + i], a, uint(fragment_row(m0, i) * p.a_sm + kk) / 8, uint(p.a_sm) / 8, \
                    false);                                                           \
    [[unroll]] for (uint j = 0; j < FN; ++j) LOAD_B(FB[u * FN + j], kk, j);           \
  }
#define MMA_STAGE(FA, FB, k0)                                                  \
  [[unroll]] for (uint u = 0; u < UNROLL; ++u) {                              \
    if ((k0) + int(16 * u) >= k_end) break;                                   \
    [[unroll]] for (uint i = 0; i < FM; ++i)                                  \
      [[unroll]] for (uint j = 0; j < FN; ++j)                                \
        acc[i * FN + j] = coopMatMulAddNV(FA[u * FM + i], FB[u * FN + j], acc[i * FN + j]); \
  }

  int k = k_begin;
  if (k < k_end) LOAD_STAGE(fa0, fb0, k);
  while (k < k_end) {
    const int k1 = k + int(STEP), k2 = k1 + int(STEP);
    if (k1 < k_end) LOAD_STAGE(fa1, fb1, k1);
    MMA_STAGE(fa0, fb0, k);
    if (k2 < k_end) LOAD_STAGE(fa0, fb0, k2);
    if (k1 < k_end) MMA_STAGE(fa1, fb1, k1);
    k = k2;
  }

  [[unroll]] for (uint i = 0; i < FM; ++i)
    [[unroll]] for (uint j = 0; j < FN; ++j)
      coopMatStoreNV(acc[i * FN + j], partial, (sg * BM + 16 * i) * BN + 16 * j, BN, false);
  barrier();

  for (uint e = gl_LocalInvocationIndex; e < BM * BN; e += THREADS) {
    const uint tm = e / BN, tn = e % BN;
    const int m = m0 + int(tm), n = n0 + int(tn);
    if (m >= p.M || n >= p.N) continue;
    // Where element (m, n) sits in its (possibly shifted) fragment.
    const uint lr = tm / 16 * 16 + uint(m - fragment_row(m0, tm / 16));
    const uint lc = tn / 16 * 16 + uint(n - fragment_col(n0, tn / 16));
    float sum = 0.0;
    [[unroll]] for (uint s = 0; s < SG_K; ++s) sum += partial[(s * BM + lr) * BN + lc];
    float y = p.alpha * sum;
    if ((p.inputs & EPILOGUE_BIAS) != 0) y += p.beta * float(bias[m * p.bias_sm + n * p.bias_sn]);
    if ((p.inputs & EPILOGUE_RESIDUAL) != 0) y += float(residual[m * p.N + n]);
    c[m * p.N + n] = float16_t(activate(p.activation, y, p.act_alpha, p.act_beta));
  }
}
