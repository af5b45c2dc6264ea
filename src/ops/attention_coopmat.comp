#version 450
#extension GL_NV_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_control_flow_attributes : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_shuffle : require
// Fused attention for float16 storage on tensor cores (GL_NV_cooperative_matrix, 16x16x16 fp16
// fragments, fp32 accumulators): the same contract and push constants as attention.comp.
// A workgroup of NSG subgroups computes 16 NSG query rows of one (batch, head), 16 per
// subgroup, with head dim DH (a define: 64 or 128); the K and V tiles of BC keys it stages in
// shared memory serve all of its subgroups.
//
// One pass over the keys with an online softmax, as flash attention. A cooperative matrix
// cannot be scaled row by row, so the running output lives outside the fragments: each tile's
// P V is a fresh fp32 fragment, stored through shared memory, and two invocations per query row
// fold it into their half of the row's output in registers (o = o * alpha + P V, alpha the
// rescale of the row's new maximum). Per tile: S = Q Kᵀ in fragments, stored to shared memory
// (fp32); the row's two invocations read its BC scores, add the scale and the mask, take the
// tile maximum (exchanged by a subgroup shuffle), the exponentials and their sum, and write the
// probabilities as fp16 (rounded before P V, as flash attention does; the sum keeps them
// unrounded); then P V.
//
// KSPLIT > 1 (short grids, NSG 1): the workgroup's KSPLIT subgroups share its 16 query rows
// and split the keys, subgroup g taking tiles g, g + KSPLIT, ...; each stages its own K and V
// tiles and synchronises only itself, and at the end subgroup 0 merges the others' running
// maxima, sums and outputs (flash-decoding's split, within one workgroup). A batch-1 grid of
// ~100-150 one-subgroup workgroups otherwise leaves each SM one subgroup walking every key
// tile in turn, each step waiting out its own loads, barriers and exponentials.
//
// The next tile's K and V words (and each invocation's mask values of it) are loaded into
// registers while this tile is multiplied, and K and V stored to shared memory after it, so the
// loads' latency hides behind the arithmetic; words are 16-byte loads where the view allows them
// (element stride 1, row stride and offset multiples of 8 halves), else 8 element loads.
// NaN in a score makes its row NaN; a row whose scores are all -inf is NaN, as unfused Softmax
// (zeros instead with flags bit 1, as torch's _safe_softmax: also a row with a +inf score).
#include "common.glsl"

layout(std430, binding = 0) readonly buffer Q { float16_t q[]; };
layout(std430, binding = 1) readonly buffer K { float16_t k[]; };
layout(std430, binding = 2) readonly buffer V { float16_t v[]; };
layout(std430, binding = 3) writeonly buffer O { float16_t o[]; };
// The same buffers as 16-byte words, for the vector loads and stores.
layout(std430, binding = 0) readonly buffer Q4 { uvec4 q4[]; };
layout(std430, binding = 1) readonly buffer K4 { uvec4 k4[]; };
layout(std430, binding = 2) readonly buffer V4 { uvec4 v4[]; };
layout(std430, binding = 3) writeonly buffer O4 { uvec4 o4[]; };
#if MASK
layout(std430, binding = 4) readonly buffer M { float16_t mask[]; };
layout(std430, binding = 4) readonly buffer M4 { uvec4 mask4[]; };
#endif
layout(push_constant) uniform Params {
  uint s, skv, d, heads, group;
  uint q_b, q_h, q_s, q_d;
  uint k_b, k_h, k_d, k_s;
  uint v_b, v_h, v_s, v_d;
  uint m_b, m_h, m_r, m_c;
  float scale;
  uint flags;  // as attention.comp's: bit 0 causal, bit 1 rows softmax makes NaN are zeros
  uint o_b, o_h, o_s, o_d;
  uint q_off, k_off, v_off;
} p;

layout(constant_id = 3) const uint NSG = 1;  // query-row subgroups (of 32): 1, 2 or 4
layout(constant_id = 4) const uint KSPLIT = 1;  // subgroups splitting the keys (NSG 1 if > 1)
// Keys per tile: small, so that the next tile's K and V words (2 BC DH / 8 per workgroup) fit
// in registers beside the running output (DH / 2 floats per invocation).
#if DH == 64
const uint BC = 32;
#else
const uint BC = 16;
#endif
const uint THREADS = NSG * 32;
// The invocations that stage one set of K and V tiles: the workgroup, or with KSPLIT > 1 each
// subgroup for itself.
const uint KV_THREADS = KSPLIT > 1 ? 32 : THREADS;
// Rows of 16-byte words in shared memory, padded by one so that a fragment's 16 rows spread
// over the banks.
const uint ROW4 = DH / 8 + 1;   // a row of DH halves (Q, K, V)
const uint KT_ROW4 = BC / 8 + 1;  // a row of BC halves (Kᵀ stored with its keys contiguous; P)
// K's tile is BC key rows of DH, or, where Kᵀ is stored with its keys contiguous (a
// materialised transpose), DH rows of BC keys; V's tile follows at V_AT. Before the first tile
// the same words stage the Q rows of up to 4 subgroups. With KSPLIT > 1 each subgroup has a
// KV_SLOT of its own, which at the end also carries its state to the merge.
const uint V_AT = max(BC * ROW4, DH * KT_ROW4);
const uint KV_TILES = V_AT + BC * ROW4;
const uint KV_SLOT = KSPLIT > 1 ? KV_TILES : max(KV_TILES, 4 * 16 * ROW4);
shared uvec4 kv[KSPLIT * KV_SLOT];
// Per subgroup, 16 rows of SCOLS floats: a tile's scores, then its P V, SCOLS columns at a time.
const uint SCOLS = max(BC, 32u);
const uint SROW = SCOLS + 4;
shared float scores[NSG * KSPLIT * 16 * SROW];
// A tile's fp16 probabilities, 16 rows of BC per subgroup. With KSPLIT > 1 they go to the
// subgroup's own K tile instead, dead once S is computed (so 4 subgroups fit 48 KiB at DH 64).
shared uvec4 probs[KSPLIT > 1 ? 1 : NSG * 16 * KT_ROW4];

// Each operand tile is BC DH / 8 words; every staging invocation moves WORDS of K's and V's.
const uint WORDS = BC * (DH / 8) / KV_THREADS;

#define kNegInf uintBitsToFloat(0xff800000u)
#define FRAG16 fcoopmatNV<16, gl_ScopeSubgroup, 16, 16>
#define FRAG32 fcoopmatNV<32, gl_ScopeSubgroup, 16, 16>

// Set once by main(): where this workgroup's K and V start, and how K is stored; this
// invocation's index among those staging its K and V tiles, and where they stage them in kv.
uint k_base, v_base;
bool kt_rows;  // Kᵀ stored [D, SKV], its keys contiguous
uint kv_lane, slot;
// Two invocations per query row (set by main()): row r = lane / 2 of the subgroup's 16, query
// row i; `side` = lane % 2 takes scores [side BC / 2, (side + 1) BC / 2) of each tile.
uint i, side;

uvec4 pack8(float16_t h[8]) {
  return uvec4(packFloat2x16(f16vec2(h[0], h[1])), packFloat2x16(f16vec2(h[2], h[3])),
               packFloat2x16(f16vec2(h[4], h[5])), packFloat2x16(f16vec2(h[6], h[7])));
}

// Word w of rows [row0, ...) of a [rows, DH] operand `which` (0 Q, 1 K, 2 V; element (r, c)
// at base + r rs + c cs); zeros for rows at or past `end`. Stored at row_slot(w).
uvec4 row_word(uint which, uint base, uint rs, uint cs, uint row0, uint end, uint w) {
  const uint row = row0 + w / (DH / 8);
  if (row >= end) return uvec4(0);
  const uint e = base + row * rs + (w % (DH / 8)) * 8 * cs;
  if (cs == 1 && rs % 8 == 0 && base % 8 == 0)  // uniform in the workgroup
    return which == 0 ? q4[e / 8] : which == 1 ? k4[e / 8] : v4[e / 8];
  float16_t h[8];
  [[unroll]] for (uint j = 0; j < 8; ++j) {
    const uint ej = e + j * cs;
    h[j] = which == 0 ? q[ej] : which == 1 ? k[ej] : v[ej];
  }
  return pack8(h);
}
uint row_slot(uint w) {
  return w / (DH / 8) * ROW4 + w % (DH / 8);
}

// Word w of Kᵀ's tile of keys [col0, col0 + BC) as DH rows of BC keys (element (c, j) at
// k_base + j + c cs); zeros for keys at or past `end`. Stored at kt_slot(w).
uvec4 kt_word(uint cs, uint col0, uint end, uint w) {
  const uint c = w / (BC / 8), key = col0 + (w % (BC / 8)) * 8;
  const uint e = k_base + key + c * cs;
  if (cs % 8 == 0 && k_base % 8 == 0 && key + 8 <= end) return k4[e / 8];
  float16_t h[8];
  [[unroll]] for (uint j = 0; j < 8; ++j) h[j] = key + j < end ? k[e + j] : float16_t(0.0);
  return pack8(h);
}
uint kt_slot(uint w) {
  return w / (BC / 8) * KT_ROW4 + w % (BC / 8);
}

// The next tile, in flight in registers: K's and V's words, and (MASK) this invocation's
// BC / 2 mask values of it as float16 pairs; cur_mask holds the current tile's.
uvec4 next_k[WORDS], next_v[WORDS];
#if MASK
uvec4 next_mask[BC / 16], cur_mask[BC / 16];
uint mask_row;  // the mask's element (b, h, i, key 0)
#endif

void fetch(uint col0) {
  [[unroll]] for (uint n = 0; n < WORDS; ++n) {
    const uint w = kv_lane + n * KV_THREADS;
    next_k[n] = kt_rows ? kt_word(p.k_d, col0, p.skv, w)
                        : row_word(1, k_base, p.k_s, p.k_d, col0, p.skv, w);
    next_v[n] = row_word(2, v_base, p.v_s, p.v_d, col0, p.skv, w);
  }
#if MASK
  // One 16-byte load per 8 keys where the row's keys are contiguous and aligned: a query row's
  // mask values read one at a time would be 16 scattered loads per tile.
  [[unroll]] for (uint w = 0; w < BC / 16; ++w) {
    const uint j0 = col0 + side * (BC / 2) + w * 8, e = mask_row + j0 * p.m_c;
    uvec4 word = uvec4(0);
    if (i < p.s) {
      if (p.m_c == 1 && e % 8 == 0 && j0 + 8 <= p.skv) {
        word = mask4[e / 8];
      } else {
        float16_t h[8];
        [[unroll]] for (uint j = 0; j < 8; ++j)
          h[j] = j0 + j < p.skv ? mask[e + j * p.m_c] : float16_t(0.0);
        word = pack8(h);
      }
    }
    next_mask[w] = word;
  }
#endif
}

void put() {
  [[unroll]] for (uint n = 0; n < WORDS; ++n) {
    const uint w = kv_lane + n * KV_THREADS;
    kv[slot + (kt_rows ? kt_slot(w) : row_slot(w))] = next_k[n];
    kv[slot + V_AT + row_slot(w)] = next_v[n];
  }
#if MASK
  cur_mask = next_mask;
#endif
}

// Orders the staging invocations' shared-memory accesses of K and V: the workgroup's, or with
// KSPLIT > 1 the subgroup's alone (its subgroups walk different numbers of tiles).
void kv_barrier() {
  if (KSPLIT > 1) {
    subgroupMemoryBarrierShared();
    subgroupBarrier();
  } else {
    barrier();
  }
}

void main() {
  const uint sg = gl_SubgroupID, lane = gl_SubgroupInvocationID;
  // This subgroup's block of 16 query rows in the workgroup's, and its first key tile.
  const uint q_sub = KSPLIT > 1 ? 0 : sg, key_sub = KSPLIT > 1 ? sg : 0;
  kv_lane = KSPLIT > 1 ? lane : gl_LocalInvocationIndex;
  slot = key_sub * KV_SLOT;
  const uint bh = gl_WorkGroupID.y;
  const uint b = bh / p.heads, h = bh % p.heads;
  const uint kvh = h / p.group;
  const uint wg_row0 = gl_WorkGroupID.x * NSG * 16;
  const uint q_base = p.q_off + b * p.q_b + h * p.q_h;
  k_base = p.k_off + b * p.k_b + kvh * p.k_h;
  v_base = p.v_off + b * p.v_b + kvh * p.v_h;
  kt_rows = p.k_s == 1;
  const uint r = lane / 2;
  side = lane % 2;
  i = wg_row0 + q_sub * 16 + r;
#if MASK
  mask_row = b * p.m_b + h * p.m_h + i * p.m_r;
#endif
  const uint col_end = (p.flags & 1u) != 0 ? min(p.skv, wg_row0 + NSG * 16) : p.skv;

  // Q's 16 NSG rows (DH / 16 words per invocation) and the first K / V tile, loaded together
  // (with KSPLIT > 1 each subgroup loads the workgroup's 16 rows for itself).
  uvec4 qw[DH / 16];
  [[unroll]] for (uint n = 0; n < DH / 16; ++n)
    qw[n] = row_word(0, q_base, p.q_s, p.q_d, wg_row0, p.s, kv_lane + n * KV_THREADS);
  fetch(key_sub * BC);
  [[unroll]] for (uint n = 0; n < DH / 16; ++n)
    kv[slot + row_slot(kv_lane + n * KV_THREADS)] = qw[n];
  kv_barrier();
  // Q's rows stay in registers as fragments.
  FRAG16 fq[DH / 16];
  [[unroll]] for (uint kd = 0; kd < DH / 16; ++kd)
    coopMatLoadNV(fq[kd], kv, slot + q_sub * 16 * ROW4 + kd * 2, ROW4, false);
  kv_barrier();  // every subgroup holds its Q fragments: kv is free
  put();
  kv_barrier();

  // The row's two invocations also split each SCOLS-wide block of its output columns:
  // `side` takes [side SCOLS / 2, (side + 1) SCOLS / 2).
  const uint srow = (sg * 16 + r) * SROW;
  float m = kNegInf, l = 0.0;  // the row's running maximum; this half's running sum
  bool bad = false;            // a NaN or +inf score: the row is NaN (or zeros)
  float acc[DH / 2];
  [[unroll]] for (uint c = 0; c < DH / 2; ++c) acc[c] = 0.0;

  for (uint col0 = key_sub * BC; col0 < col_end; col0 += KSPLIT * BC) {
    const bool more = col0 + KSPLIT * BC < col_end;
    if (more) fetch(col0 + KSPLIT * BC);

    // S = Q Kᵀ into this subgroup's score rows.
    [[unroll]] for (uint nc = 0; nc < BC / 16; ++nc) {
      FRAG32 st = FRAG32(0.0);
      [[unroll]] for (uint kd = 0; kd < DH / 16; ++kd) {
        FRAG16 fk;
        if (kt_rows)
          coopMatLoadNV(fk, kv, slot + kd * 16 * KT_ROW4 + nc * 2, KT_ROW4, false);
        else
          coopMatLoadNV(fk, kv, slot + nc * 16 * ROW4 + kd * 2, ROW4, true);
        st = coopMatMulAddNV(fq[kd], fk, st);
      }
      coopMatStoreNV(st, scores, sg * 16 * SROW + nc * 16, SROW, false);
    }
    subgroupMemoryBarrierShared();
    subgroupBarrier();

    // The scaled, masked scores of this half row; -inf past the keys or masked causally.
    float x[BC / 2];
    float tile_max = kNegInf;
    [[unroll]] for (uint c = 0; c < BC / 2; ++c) {
      const uint j = col0 + side * (BC / 2) + c;
      x[c] = kNegInf;
      if (j < p.skv && ((p.flags & 1u) == 0 || j <= i)) {
        x[c] = scores[srow + side * (BC / 2) + c] * p.scale;
#if MASK
        x[c] += unpackHalf2x16(cur_mask[c / 8][c % 8 / 2])[c % 2];
#endif
      }
      bad = bad || isnan(x[c]) || x[c] == uintBitsToFloat(0x7f800000u);
      tile_max = max(tile_max, x[c]);
    }
    const float m_new = max(m, max(tile_max, subgroupShuffleXor(tile_max, 1u)));
    // While every score so far is -inf nothing is summed: the row stays at max -inf, sum 0.
    const float alpha = m_new == kNegInf ? 1.0 : exp(m - m_new);
    float pr[BC / 2];
    float sum = 0.0;
    [[unroll]] for (uint c = 0; c < BC / 2; ++c) {
      pr[c] = m_new == kNegInf ? 0.0 : exp(x[c] - m_new);
      sum += pr[c];
    }
    l = l * alpha + sum;
    m = m_new;
    [[unroll]] for (uint w = 0; w < BC / 16; ++w) {
      uvec4 packed;
      [[unroll]] for (uint e = 0; e < 4; ++e)
        packed[e] = packFloat2x16(f16vec2(pr[w * 8 + e * 2], pr[w * 8 + e * 2 + 1]));
      const uint at = r * KT_ROW4 + side * (BC / 16) + w;
      if (KSPLIT > 1)
        kv[slot + at] = packed;
      else
        probs[sg * 16 * KT_ROW4 + at] = packed;
    }
    subgroupMemoryBarrierShared();
    subgroupBarrier();

    // P V, SCOLS output columns at a time, folded into the running output.
    FRAG16 fp[BC / 16];
    [[unroll]] for (uint kc = 0; kc < BC / 16; ++kc)
      if (KSPLIT > 1)
        coopMatLoadNV(fp[kc], kv, slot + kc * 2, KT_ROW4, false);
      else
        coopMatLoadNV(fp[kc], probs, sg * 16 * KT_ROW4 + kc * 2, KT_ROW4, false);
    [[unroll]] for (uint blk = 0; blk < DH / SCOLS; ++blk) {
      [[unroll]] for (uint f = 0; f < SCOLS / 16; ++f) {
        FRAG32 pv = FRAG32(0.0);
        [[unroll]] for (uint kc = 0; kc < BC / 16; ++kc) {
          FRAG16 fv;
          coopMatLoadNV(fv, kv, slot + V_AT + kc * 16 * ROW4 + (blk * SCOLS / 16 + f) * 2, ROW4,
                        false);
          pv = coopMatMulAddNV(fp[kc], fv, pv);
        }
        coopMatStoreNV(pv, scores, sg * 16 * SROW + f * 16, SROW, false);
      }
      subgroupMemoryBarrierShared();
      subgroupBarrier();
      [[unroll]] for (uint c = 0; c < SCOLS / 2; ++c) {
        const uint a = blk * (SCOLS / 2) + c;
        acc[a] = acc[a] * alpha + scores[srow + side * (SCOLS / 2) + c];
      }
      subgroupBarrier();  // every lane has read the block before the next one lands
    }

    kv_barrier();  // every subgroup is done with this K / V tile
    if (more) {
      put();
      kv_barrier();
    }
  }

  if (KSPLIT > 1) {
    // Each subgroup but the first leaves its running maximum, half sum, verdict and half row
    // of output in its own slot (its last kv_barrier has passed: no lane reads it any more);
    // the first scales every part to the common maximum and adds them up.
    const uint at = slot + lane * (DH / 8 + 1);
    if (sg > 0) {
      kv[at] = uvec4(floatBitsToUint(m), floatBitsToUint(l), uint(bad), 0u);
      [[unroll]] for (uint w = 0; w < DH / 8; ++w)
        kv[at + 1 + w] = floatBitsToUint(vec4(acc[4 * w], acc[4 * w + 1], acc[4 * w + 2],
                                              acc[4 * w + 3]));
    }
    barrier();
    if (sg > 0) return;
    float m_all = m;
    for (uint g = 1; g < KSPLIT; ++g) m_all = max(m_all, uintBitsToFloat(kv[g * KV_SLOT + at].x));
    // A part whose scores were all -inf (or that had no keys) holds nothing: weight 0.
    float f = m == kNegInf ? 0.0 : exp(m - m_all);
    l *= f;
    [[unroll]] for (uint c = 0; c < DH / 2; ++c) acc[c] *= f;
    for (uint g = 1; g < KSPLIT; ++g) {
      const uvec4 head = kv[g * KV_SLOT + at];
      const float m_g = uintBitsToFloat(head.x);
      f = m_g == kNegInf ? 0.0 : exp(m_g - m_all);
      l += f * uintBitsToFloat(head.y);
      bad = bad || head.z != 0u;
      [[unroll]] for (uint w = 0; w < DH / 8; ++w) {
        const vec4 part = uintBitsToFloat(kv[g * KV_SLOT + at + 1 + w]);
        [[unroll]] for (uint e = 0; e < 4; ++e) acc[4 * w + e] += f * part[e];
      }
    }
    m = m_all;
  }

  // The row's sum and verdict from its two halves.
  const float row_l = l + subgroupShuffleXor(l, 1u);
  // Both lanes must run the shuffle: `bad || shuffle(...)` would skip it where bad is true,
  // and the partner would read an inactive lane (on NVIDIA: false).
  const bool other_bad = subgroupShuffleXor(uint(bad), 1u) != 0u;
  const bool row_bad = bad || other_bad;
  if (i >= p.s) return;
  const bool undefined = row_bad || m == kNegInf;  // NaN as unfused Softmax, or zeros (bit 1)
  const float fill = (p.flags & 2u) != 0 ? 0.0 : nan_value();
  const float inv_l = 1.0 / row_l;
  const uint o_row = b * p.o_b + h * p.o_h + i * p.o_s;
  const bool vec = p.o_d == 1 && o_row % 8 == 0;
  [[unroll]] for (uint blk = 0; blk < DH / SCOLS; ++blk)
    [[unroll]] for (uint w = 0; w < SCOLS / 16; ++w) {
      const uint col = blk * SCOLS + side * (SCOLS / 2) + w * 8;
      float16_t h8[8];
      [[unroll]] for (uint c = 0; c < 8; ++c)
        h8[c] = float16_t(undefined ? fill : acc[blk * (SCOLS / 2) + w * 8 + c] * inv_l);
      if (vec) {
        o4[(o_row + col) / 8] = pack8(h8);
      } else {
        [[unroll]] for (uint c = 0; c < 8; ++c) o[o_row + (col + c) * p.o_d] = h8[c];
      }
    }
}
