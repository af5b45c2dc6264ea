#version 450
#extension GL_EXT_control_flow_attributes : require
// Tiled GEMM: a workgroup computes a BM x BN tile of C for batch gl_WorkGroupID.z, staging
// BK-deep slices of A and B in shared memory; each thread accumulates a TM x TN micro-tile in
// registers.
// Threads own groups of VW consecutive rows (columns) every WY * VW rows (WX * VW columns), so
// neighbouring threads read neighbouring shared-memory words and write neighbouring C elements.
// VEC4_TILE (VW = 4) keeps the shared tiles as vec4 so each thread reads its operands with
// 16-byte loads: 4 loads feed 64 FMAs in the 8x8 micro-tile; without it VW = 1 and any TM, TN.
// The next slice is fetched into registers while the current one is multiplied, then stored to
// shared memory (the other buffer when double-buffered, see STAGES).
// DTYPE_F16 (see matmul_common.glsl): fp16 operands and output, fp32 tiles and accumulators.
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
// Lays each run of 32 invocations out as an 8 x 4 block of threads instead of 32 x 1 (or
// 16 x 2): a subgroup of 32 then reads 8 B and 4 A shared-memory words per k instead of 16 and
// 2, fewer shared-memory wavefronts. Only a relabelling, so correct for any subgroup size; the
// host sets it when WX % 8 == 0 and WY % 4 == 0.
layout(constant_id = 8) const bool BLOCKED_LANES = false;
// Shared-memory buffers: 2 overlaps storing the next slice with multiplying the current one
// (one barrier per slice); 1 halves the memory, so deeper slices fit, at two barriers a slice.
layout(constant_id = 9) const uint STAGES = 2;
// Tile rows per band of the workgroup order (tile_of_workgroup in matmul_common.glsl).
layout(constant_id = 10) const uint GROUP_M = 1;

#if VEC4_TILE
#define VW 4
#define SV vec4
#define LANE(v, r) v[r]
#else
#define VW 1
#define SV float
#define LANE(v, r) v
#endif

const uint WX = gl_WorkGroupSize.x;
const uint WY = gl_WorkGroupSize.y;
const uint THREADS = WX * WY;
const uint BM = TM * WY;
const uint BN = TN * WX;
// Shared rows in SV units, padded by one SV: loads that walk K then hit distinct banks (for
// vec4 rows of 128 floats, a row starts 4 banks after the previous one).
const uint AS_ROW = BM / VW + 1;
const uint BS_ROW = BN / VW + 1;
const uint A_LOADS = (BM * BK + THREADS - 1) / THREADS;
const uint B_LOADS = (BN * BK + THREADS - 1) / THREADS;
shared SV As[STAGES * BK * AS_ROW];  // As[(buffer * BK + k) * AS_ROW + m / VW]
shared SV Bs[STAGES * BK * BS_ROW];  // Bs[(buffer * BK + k) * BS_ROW + n / VW]

float pa[A_LOADS];  // the next slice, in flight while the current one is multiplied
float pb[B_LOADS];

void put_a(uint buf, uint k, uint m, float v) {
#if VEC4_TILE
  As[(buf * BK + k) * AS_ROW + m / 4][m % 4] = v;
#else
  As[(buf * BK + k) * AS_ROW + m] = v;
#endif
}

void put_b(uint buf, uint k, uint n, float v) {
#if VEC4_TILE
  Bs[(buf * BK + k) * BS_ROW + n / 4][n % 4] = v;
#else
  Bs[(buf * BK + k) * BS_ROW + n] = v;
#endif
}

void fetch(Offsets o, int m0, int n0, int k0, int k_end) {
  [[unroll]] for (uint l = 0; l < A_LOADS; ++l) {
    uint i = gl_LocalInvocationIndex + l * THREADS;
    uint m = A_K_FAST ? i / BK : i % BM;
    uint k = A_K_FAST ? i % BK : i / BM;
    int gm = m0 + int(m), gk = k0 + int(k);
    pa[l] = 0.0;
    if (i < BM * BK && gm < p.M && gk < k_end) pa[l] = float(a[o.a + gm * p.a_sm + gk * p.a_sk]);
  }
  [[unroll]] for (uint l = 0; l < B_LOADS; ++l) {
    uint i = gl_LocalInvocationIndex + l * THREADS;
    uint n = B_K_FAST ? i / BK : i % BN;
    uint k = B_K_FAST ? i % BK : i / BN;
    int gn = n0 + int(n), gk = k0 + int(k);
    pb[l] = 0.0;
    if (i < BN * BK && gn < p.N && gk < k_end) pb[l] = float(b[o.b + gk * p.b_sk + gn * p.b_sn]);
  }
}

void stash(uint buf) {
  [[unroll]] for (uint l = 0; l < A_LOADS; ++l) {
    uint i = gl_LocalInvocationIndex + l * THREADS;
    if (i < BM * BK) put_a(buf, A_K_FAST ? i % BK : i / BM, A_K_FAST ? i / BK : i % BM, pa[l]);
  }
  [[unroll]] for (uint l = 0; l < B_LOADS; ++l) {
    uint i = gl_LocalInvocationIndex + l * THREADS;
    if (i < BN * BK) put_b(buf, B_K_FAST ? i % BK : i / BN, B_K_FAST ? i / BK : i % BN, pb[l]);
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
  const uvec2 tile = tile_of_workgroup(GROUP_M);
  int m0 = int(tile.y * BM);
  int n0 = int(tile.x * BN);
  uint tx = gl_LocalInvocationID.x, ty = gl_LocalInvocationID.y;
  if (BLOCKED_LANES) {
    uint lane = gl_LocalInvocationIndex % 32, run = gl_LocalInvocationIndex / 32;
    tx = (run % (WX / 8)) * 8 + lane % 8;
    ty = (run / (WX / 8)) * 4 + lane / 8;
  }

  float acc[TM * TN];
  [[unroll]] for (uint i = 0; i < TM * TN; ++i) acc[i] = 0.0;
  SV av[TM / VW];
  SV bv[TN / VW];
  fetch(o, m0, n0, k_begin, k_end);
  stash(0);
  barrier();
  uint buf = 0;
  for (int k0 = k_begin; k0 < k_end; k0 += int(BK)) {
    const bool more = k0 + int(BK) < k_end;
    if (more) fetch(o, m0, n0, k0 + int(BK), k_end);
    [[unroll]] for (uint kk = 0; kk < BK; ++kk) {
      [[unroll]] for (uint i = 0; i < TM / VW; ++i) av[i] = As[(buf * BK + kk) * AS_ROW + ty + i * WY];
      [[unroll]] for (uint j = 0; j < TN / VW; ++j) bv[j] = Bs[(buf * BK + kk) * BS_ROW + tx + j * WX];
      [[unroll]] for (uint i = 0; i < TM / VW; ++i)
        [[unroll]] for (uint r = 0; r < VW; ++r)
          [[unroll]] for (uint j = 0; j < TN / VW; ++j)
            [[unroll]] for (uint s = 0; s < VW; ++s) {
              uint at = (i * VW + r) * TN + j * VW + s;
              acc[at] = fma(LANE(av[i], r), LANE(bv[j], s), acc[at]);
            }
    }
    if (STAGES == 1) barrier();  // every thread is done reading the one buffer
    if (more) stash((buf + 1) % STAGES);
    barrier();
    buf = (buf + 1) % STAGES;
  }

  [[unroll]] for (uint i = 0; i < TM / VW; ++i)
    [[unroll]] for (uint r = 0; r < VW; ++r) {
      int m = m0 + int((i * WY + ty) * VW + r);
      [[unroll]] for (uint j = 0; j < TN / VW; ++j)
        [[unroll]] for (uint s = 0; s < VW; ++s) {
          int n = n0 + int((j * WX + tx) * VW + s);
          if (m >= p.M || n >= p.N) continue;
          float v = acc[(i * VW + r) * TN + j * VW + s];
#if SPLIT_K
          c[int(gl_WorkGroupID.z) * p.M * p.N + m * p.N + n] = v;
#else
          store_output(o, m, n, v);
#endif
        }
    }
}
