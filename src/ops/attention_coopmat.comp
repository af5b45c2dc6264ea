#version 450
#extension GL_NV_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_control_flow_attributes : require
#extension GL_KHR_shader_subgroup_basic : require
// Fused attention for float16 storage on tensor cores (GL_NV_cooperative_matrix, 16x16x16 fp16
// fragments, fp32 accumulators): the same contract and push constants as attention.comp.
// A workgroup of NSG subgroups computes 16 NSG query rows of one (batch, head), 16 per
// subgroup, with head dim DH (a define: 64 or 128); the K and V tiles of BC keys it stages in
// shared memory serve all of its subgroups.
//
// Two passes over the keys instead of one online pass, because a cooperative matrix cannot be
// scaled row by row: an online softmax would have to move the running output through shared
// memory on every tile. Pass 1 computes S = Q Kᵀ tile by tile and keeps, per query row, the
// maximum m and the sum l of exp(s - m). Pass 2 computes S again, the final probabilities
// P = exp(s - m) / l rounded to fp16 (as flash attention rounds them), and accumulates P V in
// fp32 fragments that are the output as they stand. The extra Q Kᵀ is cheap next to what it
// saves: the tensor cores are far from busy at these sizes.
//
// Each score tile goes through shared memory (fp32) once per pass: two invocations per query
// row read its 16 x BC scores, add the scale and the mask, and update (pass 1) or turn them
// into probabilities (pass 2, written as fp16 for the P V fragments). Operands are staged with
// 16-byte loads where the view allows them (element stride 1, row stride and offset multiples
// of 8 halves), else element by element, then read as fragments from shared memory.
// NaN in a score makes its row NaN; a row whose scores are all -inf is NaN, as unfused Softmax
// (zeros instead with flags bit 1, as torch's _safe_softmax: also a row with a +inf score).
#include "common.glsl"

layout(std430, binding = 0) readonly buffer Q { float16_t q[]; };
layout(std430, binding = 1) readonly buffer K { float16_t k[]; };
layout(std430, binding = 2) readonly buffer V { float16_t v[]; };
layout(std430, binding = 3) writeonly buffer O { float16_t o[]; };
// The same buffers as 16-byte words, for the vector loads.
layout(std430, binding = 0) readonly buffer Q4 { uvec4 q4[]; };
layout(std430, binding = 1) readonly buffer K4 { uvec4 k4[]; };
layout(std430, binding = 2) readonly buffer V4 { uvec4 v4[]; };
#if MASK
layout(std430, binding = 4) readonly buffer M { float16_t mask[]; };
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

layout(constant_id = 3) const uint NSG = 1;  // subgroups (of 32) per workgroup
// Keys per tile: 64 at DH 64 (half the serial steps of a short sequence), 32 at DH 128, where
// 64 would leave room in 48 KiB for one subgroup only.
#if DH == 64
const uint BC = 64;
#else
const uint BC = 32;
#endif
const uint THREADS = NSG * 32;
// Rows of 16-byte words, padded by one so that the 16 rows of a fragment spread over the banks.
const uint ROW4 = DH / 8 + 1;  // a row of DH halves (Q, K, V)
const uint PROW4 = BC / 8 + 1; // a row of BC halves (P)
const uint SROW = BC + 4;      // a row of BC floats (S)
// K's tile, then V's (from V_AT on); before the first tile the same words stage Q's 16 NSG
// rows (at most 64 <= 2 BC, so NSG <= 4). K's tile is BC key rows of DH, or, where Kᵀ is stored
// with its keys contiguous (a materialised transpose), DH rows of BC keys.
const uint KT_ROW4 = BC / 8 + 1;
const uint V_AT = max(BC * ROW4, DH * KT_ROW4);
shared uvec4 kv[V_AT + BC * ROW4];
shared float scores[NSG * 16 * SROW];
shared uvec4 probs[NSG * 16 * PROW4];
shared vec2 halves[THREADS];  // per invocation: its half row's (max, sum)

#define kNegInf uintBitsToFloat(0xff800000u)
#define FRAG16 fcoopmatNV<16, gl_ScopeSubgroup, 16, 16>
#define FRAG32 fcoopmatNV<32, gl_ScopeSubgroup, 16, 16>

// Rows [row0, row0 + rows) of a [rows, DH] operand (element (r, c) at base + r rs + c cs) into
// kv from word `dst` on, rows at or past `end` as zeros; every invocation calls it.
void stage(uint which, uint base, uint rs, uint cs, uint row0, uint rows, uint end, uint dst) {
  const bool vec = cs == 1 && rs % 8 == 0 && base % 8 == 0;  // uniform in the workgroup
  for (uint i = gl_LocalInvocationIndex; i < rows * (DH / 8); i += THREADS) {
    const uint r = i / (DH / 8), c8 = i % (DH / 8), row = row0 + r;
    uvec4 w = uvec4(0);
    if (row < end) {
      const uint e = base + row * rs + c8 * 8 * cs;
      if (vec) {
        w = which == 0 ? q4[e / 8] : which == 1 ? k4[e / 8] : v4[e / 8];
      } else {
        float16_t h[8];
        [[unroll]] for (uint j = 0; j < 8; ++j) {
          const uint ej = e + j * cs;
          h[j] = which == 0 ? q[ej] : which == 1 ? k[ej] : v[ej];
        }
        w = uvec4(packFloat2x16(f16vec2(h[0], h[1])), packFloat2x16(f16vec2(h[2], h[3])),
                  packFloat2x16(f16vec2(h[4], h[5])), packFloat2x16(f16vec2(h[6], h[7])));
      }
    }
    kv[dst + r * ROW4 + c8] = w;
  }
}

// Kᵀ's tile of keys [col0, col0 + BC) as DH rows of BC keys (element (c, j) at
// base + j + c cs: keys contiguous), keys at or past `end` as zeros.
void stage_kt(uint base, uint cs, uint col0, uint end) {
  const bool vec = cs % 8 == 0 && base % 8 == 0;  // col0 is a multiple of BC
  for (uint i = gl_LocalInvocationIndex; i < DH * (BC / 8); i += THREADS) {
    const uint c = i / (BC / 8), j8 = i % (BC / 8), key = col0 + j8 * 8;
    const uint e = base + key + c * cs;
    uvec4 w;
    if (vec && key + 8 <= end) {
      w = k4[e / 8];
    } else {
      float16_t h[8];
      [[unroll]] for (uint j = 0; j < 8; ++j) h[j] = key + j < end ? k[e + j] : float16_t(0.0);
      w = uvec4(packFloat2x16(f16vec2(h[0], h[1])), packFloat2x16(f16vec2(h[2], h[3])),
                packFloat2x16(f16vec2(h[4], h[5])), packFloat2x16(f16vec2(h[6], h[7])));
    }
    kv[c * KT_ROW4 + j8] = w;
  }
}

// The scaled, masked score of query row i and key col0 + side BC / 2 + c, read from its
// subgroup's score row `srow`: -inf where the key is past the end or masked out causally.
float score_of(uint srow, uint i, uint b, uint h, uint col0, uint side, uint c) {
  const uint j = col0 + side * (BC / 2) + c;
  float x = kNegInf;
  if (j < p.skv && ((p.flags & 1u) == 0 || j <= i)) {
    x = scores[srow + c] * p.scale;
#if MASK
    if (i < p.s) x += float(mask[b * p.m_b + h * p.m_h + i * p.m_r + j * p.m_c]);
#endif
  }
  return x;
}

void main() {
  const uint sg = gl_SubgroupID, lane = gl_SubgroupInvocationID;
  const uint bh = gl_WorkGroupID.y;
  const uint b = bh / p.heads, h = bh % p.heads;
  const uint kvh = h / p.group;
  const uint wg_row0 = gl_WorkGroupID.x * NSG * 16;
  const uint q_base = p.q_off + b * p.q_b + h * p.q_h;
  const uint k_base = p.k_off + b * p.k_b + kvh * p.k_h;
  const uint v_base = p.v_off + b * p.v_b + kvh * p.v_h;
  // Kᵀ is [D, SKV]: key row j, element c at k_base + j k_s + c k_d.
  const bool kt_rows = p.k_s == 1;

  // Q's rows stay in registers as fragments for both passes.
  stage(0, q_base, p.q_s, p.q_d, wg_row0, NSG * 16, p.s, 0);
  barrier();
  FRAG16 fq[DH / 16];
  [[unroll]] for (uint kd = 0; kd < DH / 16; ++kd)
    coopMatLoadNV(fq[kd], kv, sg * 16 * ROW4 + kd * 2, ROW4, false);

  // Two invocations per query row: row r = lane / 2 of the subgroup's 16, scores
  // [side BC / 2, (side + 1) BC / 2) of each tile (side = lane % 2).
  const uint r = lane / 2, side = lane % 2;
  const uint i = wg_row0 + sg * 16 + r;  // the query row
  const uint col_end = (p.flags & 1u) != 0 ? min(p.skv, wg_row0 + NSG * 16) : p.skv;
  const uint srow = (sg * 16 + r) * SROW + side * (BC / 2);

  #define STAGE_K(col0)                                   \
    if (kt_rows)                                          \
      stage_kt(k_base, p.k_d, col0, p.skv);               \
    else                                                  \
      stage(1, k_base, p.k_s, p.k_d, col0, BC, p.skv, 0)

  // S = Q Kᵀ of the tile at col0 (staged in kv) into this subgroup's score rows.
  #define SCORES()                                                                      \
    [[unroll]] for (uint nc = 0; nc < BC / 16; ++nc) {                                  \
      FRAG32 acc = FRAG32(0.0);                                                         \
      [[unroll]] for (uint kd = 0; kd < DH / 16; ++kd) {                                \
        FRAG16 fk;                                                                      \
        if (kt_rows)                                                                    \
          coopMatLoadNV(fk, kv, kd * 16 * KT_ROW4 + nc * 2, KT_ROW4, false);            \
        else                                                                            \
          coopMatLoadNV(fk, kv, nc * 16 * ROW4 + kd * 2, ROW4, true);                   \
        acc = coopMatMulAddNV(fq[kd], fk, acc);                                         \
      }                                                                                 \
      coopMatStoreNV(acc, scores, sg * 16 * SROW + nc * 16, SROW, false);               \
    }                                                                                   \
    subgroupMemoryBarrierShared();                                                      \
    subgroupBarrier();

  float m = kNegInf, l = 0.0;
  barrier();  // every subgroup holds its Q fragments: kv is free
  for (uint col0 = 0; col0 < col_end; col0 += BC) {
    STAGE_K(col0);
    barrier();
    SCORES()
    // The tile's maximum first, then its exponentials, independent of each other.
    float x[BC / 2];
    float tile_max = kNegInf;
    bool nan_seen = false;
    [[unroll]] for (uint c = 0; c < BC / 2; ++c) {
      x[c] = score_of(srow, i, b, h, col0, side, c);
      nan_seen = nan_seen || isnan(x[c]);
      tile_max = max(tile_max, x[c]);
    }
    if (nan_seen || isnan(m)) {
      m = nan_value();
      l = m;
    } else if (tile_max != kNegInf) {
      const float m_new = max(m, tile_max);
      float sum = 0.0;
      [[unroll]] for (uint c = 0; c < BC / 2; ++c) sum += exp(x[c] - m_new);
      l = l * exp(m - m_new) + sum;
      m = m_new;
    }
    barrier();  // everyone is done with this K tile
  }
  // The row's (max, sum) from its two halves.
  halves[gl_LocalInvocationIndex] = vec2(m, l);
  subgroupMemoryBarrierShared();
  subgroupBarrier();
  const vec2 other = halves[gl_LocalInvocationIndex ^ 1u];
  float row_m, row_l;
  if (isnan(m) || isnan(other.x)) {
    row_m = nan_value();
    row_l = nan_value();
  } else {
    row_m = max(m, other.x);
    row_l = (m == kNegInf ? 0.0 : l * exp(m - row_m)) +
            (other.x == kNegInf ? 0.0 : other.y * exp(other.x - row_m));
  }
  const float inv_l = 1.0 / row_l;
  const bool zero_row = (p.flags & 2u) != 0 && (isnan(row_m) || isinf(row_m));

  FRAG32 acc_o[DH / 16];
  [[unroll]] for (uint dc = 0; dc < DH / 16; ++dc) acc_o[dc] = FRAG32(0.0);
  for (uint col0 = 0; col0 < col_end; col0 += BC) {
    STAGE_K(col0);
    stage(2, v_base, p.v_s, p.v_d, col0, BC, p.skv, V_AT);
    barrier();
    SCORES()
    float pr[BC / 2];
    [[unroll]] for (uint c = 0; c < BC / 2; ++c) {
      const float x = score_of(srow, i, b, h, col0, side, c);
      // A row of -inf has row_m -inf: its probabilities are 0 here and its output NaN below.
      pr[c] = row_m == kNegInf ? 0.0 : exp(x - row_m) * inv_l;
    }
    [[unroll]] for (uint w = 0; w < BC / 16; ++w) {
      uvec4 packed;
      [[unroll]] for (uint e = 0; e < 4; ++e)
        packed[e] = packFloat2x16(f16vec2(pr[w * 8 + e * 2], pr[w * 8 + e * 2 + 1]));
      probs[(sg * 16 + r) * PROW4 + side * (BC / 16) + w] = packed;
    }
    subgroupMemoryBarrierShared();
    subgroupBarrier();
    [[unroll]] for (uint kc = 0; kc < BC / 16; ++kc) {
      FRAG16 fp;
      coopMatLoadNV(fp, probs, sg * 16 * PROW4 + kc * 2, PROW4, false);
      [[unroll]] for (uint dc = 0; dc < DH / 16; ++dc) {
        FRAG16 fv;
        coopMatLoadNV(fv, kv, V_AT + kc * 16 * ROW4 + dc * 2, ROW4, false);
        acc_o[dc] = coopMatMulAddNV(fp, fv, acc_o[dc]);
      }
    }
    barrier();  // everyone is done with this K / V tile
  }

  // The output fragments through this subgroup's score rows (16 x 16 floats each fit), stored
  // element by element through the output's strides.
  const uint o_base = b * p.o_b + h * p.o_h;
  [[unroll]] for (uint dc = 0; dc < DH / 16; ++dc) {
    coopMatStoreNV(acc_o[dc], scores, sg * 16 * SROW, SROW, false);
    subgroupMemoryBarrierShared();
    subgroupBarrier();
    // Invocation pair (2r, 2r + 1) holds row r's statistics; each writes 8 of its 16 columns.
    if (i < p.s)
      [[unroll]] for (uint c = 0; c < 8; ++c) {
        const uint col = side * 8 + c;
        const float val = zero_row                                ? 0.0
                          : isnan(row_m) || row_m == kNegInf ? nan_value()
                                                             : scores[(sg * 16 + r) * SROW + col];
        o[o_base + i * p.o_s + (dc * 16 + col) * p.o_d] = float16_t(val);
      }
    subgroupBarrier();  // every lane has read the fragment before the next one lands
  }
}
