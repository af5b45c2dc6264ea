#version 450
#extension GL_NV_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_control_flow_attributes : require
#extension GL_KHR_shader_subgroup_basic : require
// fp16 GEMM on tensor cores through GL_NV_cooperative_matrix (16x16x16 fp16 fragments, fp32
// accumulators): C = act(alpha A B + beta bias + residual), A [M, K] and B [K, N] row-major, C [M, N]
// fp16. The host sends shapes without batch, K % 8 == 0 and rows of A of whole 16-byte words;
// others take matmul_tiled.comp's DTYPE_F16 variant. M may end inside the last row of tiles
// (ViT's 197 tokens): rows past M load as zeros and their results are not stored. K_TAIL
// (spec constant): K may end inside the last slice, whose loads past K are zeros (a
// convolution's 40 or 240 input channels). B_SCALAR (spec constant, row-major B): B's rows
// are not whole 16-byte words or N ends inside the last tile (a convolution's 49 or 196
// pixels), so its slices load element by element, columns past N as zeros.
// A workgroup of SG_M x SG_N subgroups (of 32) computes a BM x BN tile; each subgroup holds
// FM x FN accumulator fragments (a 16 FM x 16 FN block). BK-deep slices of A and B are copied
// to shared memory with 16-byte loads: the next slice is in registers while the current one
// feeds the tensor cores.
// B_T: B is stored [N, K] (K contiguous: a Linear weight read as its transpose), its slices
// copied like A's (BN rows of BK) and loaded column-major; N may then end inside the last tile
// (rows of B past N load as zeros, their columns are not stored), and a row stride of C that
// is no multiple of 8 stores element by element.
// SPLIT_K: workgroup z walks only K slice [z k_chunk, (z + 1) k_chunk) (a multiple of BK).
// SPLIT_K 1 writes its fp32 sums, without the epilogue, to partials [z, M, N] in C;
// matmul_splitk_reduce sums the slices and applies the epilogue once. SPLIT_K 2 reduces in the
// same dispatch: every workgroup stores its fp32 fragments to Partials (padded to whole tiles,
// [z, rows of tiles * BM, columns of tiles * BN]) and counts itself in its tile's counter; the
// one that arrives last (release/acquire at queue-family scope, so it sees every other slice's
// stores) sums the slices in z order (the same result whichever arrives last), resets the
// counter to 0 for the next run and runs the plain epilogue. No second dispatch, no barrier
// between two passes: at batch-1 sizes those cost about as much as the GEMM.
// DEPTH: slices in flight while one is multiplied (register sets of the next DEPTH slices).
// Small grids are bound by one global load's latency per slice at DEPTH 1.
#define MATMUL_OWN_BUFFERS 1
#include "matmul_common.glsl"

#ifndef DEPTH
#define DEPTH 1
#endif

// Tile rows per band of the workgroup order (tile_of_workgroup in matmul_common.glsl).
layout(constant_id = 3) const uint GROUP_M = 1;
// Without an epilogue (alpha 1, no bias, no residual, no activation) fragments go straight to C; with one,
// each goes through shared memory, where the subgroup's lanes apply it element by element.
layout(constant_id = 4) const bool EPILOGUE = false;
layout(constant_id = 5) const bool K_TAIL = false;
layout(constant_id = 6) const bool B_SCALAR = false;

const uint BM = SG_M * 16 * FM;
const uint BN = SG_N * 16 * FN;
// BK-deep slices; STAGES = 2 double-buffers them (one barrier a slice), 1 lets a 64-deep slice
// fit in 48 KiB at two barriers a slice.
const uint THREADS = SG_M * SG_N * 32;

// uvec4 = 8 halves: every global and shared access moves 16 bytes.
layout(std430, binding = 0) readonly buffer A { uvec4 a[]; };
layout(std430, binding = 1) readonly buffer B { uvec4 b[]; };
layout(std430, binding = 1) readonly buffer B16 { float16_t b16[]; };  // B, for B_SCALAR
layout(std430, binding = 2) readonly buffer Bias { float16_t bias[]; };  // A when absent
#if SPLIT_K == 1
layout(std430, binding = 3) writeonly buffer C { float c[]; };
#else
layout(std430, binding = 3) writeonly buffer C { float16_t c[]; };
#endif
layout(std430, binding = 4) readonly buffer Residual { float16_t residual[]; };  // A when absent
#if SPLIT_K == 2
// coherent: the stores and loads of other workgroups' slices are non-private, made available
// and visible at queue-family scope around the counter's release/acquire.
layout(std430, binding = 5) coherent buffer Partials { float partials[]; };
layout(std430, binding = 6) coherent buffer Counters { uint counters[]; };
shared bool last_arrival;
#endif

// Rows padded by 16 bytes so the 16 rows of a fragment load spread over all banks.
const uint A_ROW = BK / 8 + 1;  // uvec4 per row of the A slice (BM rows)
#if B_T
const uint B_ROW = BK / 8 + 1;  // uvec4 per row of the B slice (BN rows of K)
const uint B_SLICE_ROWS = BN;
#else
const uint B_ROW = BN / 8 + 1;  // uvec4 per row of the B slice (BK rows)
const uint B_SLICE_ROWS = BK;
#endif
const uint A_VECS = BM * BK / 8;
const uint B_VECS = BK * BN / 8;
const uint A_LOADS = A_VECS / THREADS;
const uint B_LOADS = B_VECS / THREADS;
shared uvec4 As[STAGES * BM * A_ROW];
shared uvec4 Bs[STAGES * B_SLICE_ROWS * B_ROW];
// The epilogue stages each subgroup's fp32 16x16 fragment (64 uvec4) in As, free once the K
// loop's last barrier has passed; a separate array would cost occupancy on the plain path.
const uint FRAGMENT = 16 * 16 / 4;

// DEPTH register sets; `set` is a constant wherever the unrolled K loop calls these.
uvec4 ra[DEPTH][A_LOADS];
uvec4 rb[DEPTH][B_LOADS];

// Eight halves of B from element `at` on, those of columns `col` .. past N zeros (B_SCALAR).
uvec4 b_scalar_word(int at, int col) {
  uint w[4];
  [[unroll]] for (int e = 0; e < 4; ++e) {
    const int c = col + 2 * e;
    const float16_t lo = c < p.N ? b16[at + 2 * e] : float16_t(0);
    const float16_t hi = c + 1 < p.N ? b16[at + 2 * e + 1] : float16_t(0);
    w[e] = packFloat2x16(f16vec2(lo, hi));
  }
  return uvec4(w[0], w[1], w[2], w[3]);
}

void fetch(uint set, int m0, int n0, int k0) {
  [[unroll]] for (uint l = 0; l < A_LOADS; ++l) {
    uint i = gl_LocalInvocationIndex + l * THREADS;
    uint r = i / (BK / 8), v = i % (BK / 8);
    const bool in_k = !K_TAIL || k0 + int(v * 8) < p.K;
    ra[set][l] = m0 + int(r) < p.M && in_k ? a[((m0 + int(r)) * p.a_sm + k0) / 8 + int(v)]
                                           : uvec4(0);
  }
  [[unroll]] for (uint l = 0; l < B_LOADS; ++l) {
    uint i = gl_LocalInvocationIndex + l * THREADS;
#if B_T
    uint r = i / (BK / 8), v = i % (BK / 8);
    const bool in_k = !K_TAIL || k0 + int(v * 8) < p.K;
    rb[set][l] = n0 + int(r) < p.N && in_k ? b[((n0 + int(r)) * p.b_sn + k0) / 8 + int(v)]
                                           : uvec4(0);
#else
    uint r = i / (BN / 8), v = i % (BN / 8);
    if (K_TAIL && k0 + int(r) >= p.K)
      rb[set][l] = uvec4(0);
    else if (B_SCALAR)
      rb[set][l] = b_scalar_word((k0 + int(r)) * p.b_sk + n0 + int(v * 8), n0 + int(v * 8));
    else
      rb[set][l] = b[((k0 + int(r)) * p.b_sk + n0) / 8 + int(v)];
#endif
  }
}

void stash(uint set, uint buf) {
  [[unroll]] for (uint l = 0; l < A_LOADS; ++l) {
    uint i = gl_LocalInvocationIndex + l * THREADS;
    As[(buf * BM + i / (BK / 8)) * A_ROW + i % (BK / 8)] = ra[set][l];
  }
  [[unroll]] for (uint l = 0; l < B_LOADS; ++l) {
    uint i = gl_LocalInvocationIndex + l * THREADS;
#if B_T
    Bs[(buf * BN + i / (BK / 8)) * B_ROW + i % (BK / 8)] = rb[set][l];
#else
    Bs[(buf * BK + i / (BN / 8)) * B_ROW + i % (BN / 8)] = rb[set][l];
#endif
  }
}

void main() {
  const uvec2 tile = tile_of_workgroup(GROUP_M);
  const int m0 = int(tile.y * BM);
  const int n0 = int(tile.x * BN);
  const uint sg = gl_SubgroupID;
  const uint sm = (sg / SG_N) * 16 * FM;  // the subgroup's block within the tile
  const uint sn = (sg % SG_N) * 16 * FN;

  fcoopmatNV<32, gl_ScopeSubgroup, 16, 16> acc[FM * FN];
  [[unroll]] for (uint i = 0; i < FM * FN; ++i)
    acc[i] = fcoopmatNV<32, gl_ScopeSubgroup, 16, 16>(0.0);
  fcoopmatNV<16, gl_ScopeSubgroup, 16, 16> fa[FM];
  fcoopmatNV<16, gl_ScopeSubgroup, 16, 16> fb[FN];

#if SPLIT_K
  const int k_begin = int(gl_WorkGroupID.z) * p.k_chunk;
  const int k_end = min(p.K, k_begin + p.k_chunk);
#else
  const int k_begin = 0, k_end = p.K;
#endif
#if SPLIT_K == 1
  const uint c_base = gl_WorkGroupID.z * uint(p.M) * uint(p.N);
#else
  const uint c_base = 0;
#endif
  // Set d holds slice s with s % DEPTH == d: at the top of step s, slices s + 1 .. s + DEPTH - 1
  // are in flight and slice s is in shared memory, so its set takes slice s + DEPTH.
  const int slices = (k_end - k_begin + int(BK) - 1) / int(BK);  // the last one partial: K_TAIL
  [[unroll]] for (uint d = 0; d < DEPTH; ++d)
    if (int(d) < slices) fetch(d, m0, n0, k_begin + int(d * BK));
  stash(0, 0);
  barrier();
  for (int s0 = 0; s0 < slices; s0 += int(DEPTH)) {
    [[unroll]] for (uint d = 0; d < DEPTH; ++d) {
      const int s = s0 + int(d);
      if (s >= slices) break;
      const uint buf = uint(s) % STAGES;
      if (s + int(DEPTH) < slices) fetch(d, m0, n0, k_begin + (s + int(DEPTH)) * int(BK));
      [[unroll]] for (uint kf = 0; kf < BK / 16; ++kf) {
        [[unroll]] for (uint i = 0; i < FM; ++i)
          coopMatLoadNV(fa[i], As, (buf * BM + sm + i * 16) * A_ROW + kf * 2, A_ROW, false);
        [[unroll]] for (uint j = 0; j < FN; ++j)
#if B_T
          coopMatLoadNV(fb[j], Bs, (buf * BN + sn + j * 16) * B_ROW + kf * 2, B_ROW, true);
#else
          coopMatLoadNV(fb[j], Bs, (buf * BK + kf * 16) * B_ROW + (sn + j * 16) / 8, B_ROW,
                        false);
#endif
        [[unroll]] for (uint i = 0; i < FM; ++i)
          [[unroll]] for (uint j = 0; j < FN; ++j)
            acc[i * FN + j] = coopMatMulAddNV(fa[i], fb[j], acc[i * FN + j]);
      }
      if (STAGES == 1) barrier();  // every subgroup is done reading the one buffer
      if (s + 1 < slices) stash((d + 1) % DEPTH, (buf + 1) % STAGES);
      barrier();
    }
  }

#if SPLIT_K == 2
  const uint splits = gl_NumWorkGroups.z;
  const uint rows = gl_NumWorkGroups.y * BM, cols = gl_NumWorkGroups.x * BN;  // padded
  // The last arrival sums the slices element by element on the epilogue's path (adding
  // cooperative matrices crashes Debian's spirv-opt).
  const bool reduce = splits > 1;
  if (reduce) {
    [[unroll]] for (uint i = 0; i < FM; ++i)
      [[unroll]] for (uint j = 0; j < FN; ++j)
        coopMatStoreNV(acc[i * FN + j], partials,
                       gl_WorkGroupID.z * rows * cols + (uint(m0) + sm + i * 16) * cols +
                           uint(n0) + sn + j * 16,
                       cols, false);
    // Every invocation's stores happen before invocation 0's release of the counter; the last
    // arrival's acquire then happens before every invocation of that workgroup reads them.
    controlBarrier(gl_ScopeWorkgroup, gl_ScopeQueueFamily, gl_StorageSemanticsBuffer,
                   gl_SemanticsAcquireRelease);
    if (gl_LocalInvocationIndex == 0) {
      const uint counter = tile.y * gl_NumWorkGroups.x + tile.x;
      const uint before = atomicAdd(counters[counter], 1u, gl_ScopeQueueFamily,
                                    gl_StorageSemanticsBuffer, gl_SemanticsAcquireRelease);
      last_arrival = before == splits - 1;
      // Nobody else touches it in this dispatch; the next run's barrier orders the reset.
      if (last_arrival)
        atomicStore(counters[counter], 0u, gl_ScopeQueueFamily, gl_StorageSemanticsBuffer,
                    gl_SemanticsRelaxed);
    }
    controlBarrier(gl_ScopeWorkgroup, gl_ScopeQueueFamily,
                   gl_StorageSemanticsBuffer | gl_StorageSemanticsShared,
                   gl_SemanticsAcquireRelease);
    if (!last_arrival) return;
  }
#else
  const bool reduce = false;
#endif

  // A tile past M's or N's end stores through the epilogue's shared-memory path, which can skip
  // rows and columns; so does a C whose rows are not 16-byte aligned.
  const bool edge = m0 + int(BM) > p.M || n0 + int(BN) > p.N || p.N % 8 != 0;
  [[unroll]] for (uint i = 0; i < FM; ++i)
    [[unroll]] for (uint j = 0; j < FN; ++j) {
      uint row = uint(m0) + sm + i * 16, col = uint(n0) + sn + j * 16;
      // The whole fragment is past M or N (uniform in the subgroup).
      if (int(row) >= p.M || int(col) >= p.N) continue;
      if (!EPILOGUE && !edge && !reduce) {
#if SPLIT_K == 1
        coopMatStoreNV(acc[i * FN + j], c, c_base + row * uint(p.N) + col, uint(p.N), false);
#else
        fcoopmatNV<16, gl_ScopeSubgroup, 16, 16> h =
            fcoopmatNV<16, gl_ScopeSubgroup, 16, 16>(acc[i * FN + j]);
        coopMatStoreNV(h, c, row * uint(p.N) + col, uint(p.N), false);
#endif
        continue;
      }
      if (!reduce) {
        coopMatStoreNV(acc[i * FN + j], As, sg * FRAGMENT, 16 / 4, false);
        subgroupMemoryBarrierShared();
        subgroupBarrier();
      }
      for (uint e = gl_SubgroupInvocationID; e < 256; e += gl_SubgroupSize) {
        int m = int(row + e / 16), n = int(col + e % 16);
        if (m >= p.M || n >= p.N) continue;
        float sum;
#if SPLIT_K == 2
        if (reduce) {
          // In z order: the same sum whichever workgroup arrived last.
          sum = 0.0;
          for (uint z = 0; z < splits; ++z) sum += partials[(z * rows + uint(m)) * cols + uint(n)];
        } else
#endif
          sum = uintBitsToFloat(As[sg * FRAGMENT + e / 4][e % 4]);
#if SPLIT_K == 1
        c[c_base + uint(m * p.N + n)] = sum;
#else
        float y = p.alpha * sum;
        if ((p.inputs & EPILOGUE_BIAS) != 0)
          y += p.beta * float(bias[m * p.bias_sm + n * p.bias_sn]);
        if ((p.inputs & EPILOGUE_RESIDUAL) != 0) y += float(residual[m * p.N + n]);
        c[m * p.N + n] = float16_t(activate(p.activation, y, p.act_alpha, p.act_beta));
#endif
      }
      subgroupBarrier();  // every lane has read the fragment before the next one lands
    }
}
