#version 450
// Fused attention, flash-attention style: out = softmax(scale * Q Kᵀ + mask) V over the last
// axis, in one pass over K and V without storing the scores. One workgroup computes BR query
// rows of one (batch, head); it walks the keys in tiles of BC rows through shared memory and
// keeps, per query row, the running maximum m and sum l of the online softmax, rescaling its
// float32 accumulators whenever m grows. Q [B, H, S, D], Kᵀ [B, HKV, D, SKV] and V [B, HKV,
// SKV, D] are read through four strides each, so transposed views cost no copy; a stride is 0
// where an operand broadcasts, and grouped-query heads share a KV head (h / group). The mask
// (MASK=1) is added to the scaled scores likewise. The output is [B, H, S, D] contiguous.
//
// The shared tiles hold (BR + 2 BC) D + BR BC floats: the host picks BR, BC by D to stay within
// 32 KiB (lavapipe's limit). Every invocation owns BR * D / WG accumulators: ACC of them.
#include "common.glsl"

layout(std430, binding = 0) readonly buffer Q { ELEM q[]; };
layout(std430, binding = 1) readonly buffer K { ELEM k[]; };
layout(std430, binding = 2) readonly buffer V { ELEM v[]; };
layout(std430, binding = 3) writeonly buffer O { ELEM o[]; };
#if MASK
layout(std430, binding = 4) readonly buffer M { ELEM mask[]; };
#endif
layout(push_constant) uniform Params {
  uint s;      // query rows
  uint skv;    // key rows
  uint d;      // head dim
  uint heads;  // H of Q; gl_WorkGroupID.y = b * heads + h
  uint group;  // query heads per KV head
  uint q_b, q_h, q_s, q_d;
  uint k_b, k_h, k_d, k_s;  // Kᵀ's dims: batch, head, element, key row
  uint v_b, v_h, v_s, v_d;
  uint m_b, m_h, m_r, m_c;
  float scale;
  uint causal;  // key j > query i is masked out (top-left aligned, as torch's is_causal)
} p;
layout(constant_id = 3) const uint BR = 16;
layout(constant_id = 4) const uint BC = 16;

const uint kSharedFloats = 7168;  // 28 KiB
const uint kMaxAcc = 32;          // BR * D <= 2048 with a workgroup of 64
shared float tile[kSharedFloats];
shared float row_max[32], row_sum[32], row_rescale[32];

#define kNegInf uintBitsToFloat(0xff800000u)

void main() {
  const uint wg = gl_WorkGroupSize.x;
  const uint t = gl_LocalInvocationID.x;
  const uint bh = gl_WorkGroupID.y;
  const uint b = bh / p.heads, h = bh % p.heads;
  const uint kvh = h / p.group;
  const uint row0 = gl_WorkGroupID.x * BR;
  const uint D = p.d;
  const uint qs = 0, ks = BR * D, vs = ks + BC * D, ss = vs + BC * D;
  const uint q_base = b * p.q_b + h * p.q_h;
  const uint o_base = bh * p.s * D;
  const uint k_base = b * p.k_b + kvh * p.k_h;
  const uint v_base = b * p.v_b + kvh * p.v_h;
  const uint acc_n = (BR * D + wg - 1) / wg;

  for (uint e = t; e < BR * D; e += wg) {
    uint r = e / D, c = e % D;
    tile[qs + e] = row0 + r < p.s ? T(q[q_base + (row0 + r) * p.q_s + c * p.q_d]) : 0.0;
  }
  if (t < BR) {
    row_max[t] = kNegInf;
    row_sum[t] = 0.0;
  }
  float acc[kMaxAcc];
  for (uint i = 0; i < kMaxAcc; ++i) acc[i] = 0.0;

  // Causal: key tiles wholly past the block's last row contribute nothing.
  const uint col_end = p.causal != 0 ? min(p.skv, row0 + BR) : p.skv;
  for (uint col0 = 0; col0 < col_end; col0 += BC) {
    barrier();  // the previous tile's readers are done
    for (uint e = t; e < BC * D; e += wg) {
      uint r = e / D, c = e % D;
      bool inside = col0 + r < p.skv;
      tile[ks + e] = inside ? T(k[k_base + (col0 + r) * p.k_s + c * p.k_d]) : 0.0;
      tile[vs + e] = inside ? T(v[v_base + (col0 + r) * p.v_s + c * p.v_d]) : 0.0;
    }
    barrier();
    for (uint e = t; e < BR * BC; e += wg) {
      uint r = e / BC, c = e % BC;
      uint i = row0 + r, j = col0 + c;
      float x = kNegInf;
      if (j < p.skv && (p.causal == 0 || j <= i)) {
        float dot = 0.0;
        for (uint dd = 0; dd < D; ++dd) dot += tile[qs + r * D + dd] * tile[ks + c * D + dd];
        x = dot * p.scale;
#if MASK
        if (i < p.s) x += T(mask[b * p.m_b + h * p.m_h + i * p.m_r + j * p.m_c]);
#endif
      }
      tile[ss + e] = x;
    }
    barrier();
    // Online softmax, one invocation per row: the new maximum, the factor that rescales what
    // was summed under the old one, and the tile's probabilities in place of its scores.
    if (t < BR) {
      float m_old = row_max[t], m_new = m_old;
      for (uint c = 0; c < BC; ++c) m_new = max(m_new, tile[ss + t * BC + c]);
      // While every score so far is -inf nothing is summed: the row stays at m = -inf, l = 0.
      float rescale = m_new == kNegInf ? 1.0 : exp(m_old - m_new);
      float sum = 0.0;
      for (uint c = 0; c < BC; ++c) {
        float pr = m_new == kNegInf ? 0.0 : exp(tile[ss + t * BC + c] - m_new);
        tile[ss + t * BC + c] = pr;
        sum += pr;
      }
      row_max[t] = m_new;
      row_sum[t] = row_sum[t] * rescale + sum;
      row_rescale[t] = rescale;
    }
    barrier();
    for (uint i = 0; i < acc_n; ++i) {
      uint e = t + i * wg;
      if (e >= BR * D) break;
      uint r = e / D, c = e % D;
      float a = acc[i] * row_rescale[r];
      for (uint cc = 0; cc < BC; ++cc) a += tile[ss + r * BC + cc] * tile[vs + cc * D + c];
      acc[i] = a;
    }
  }
  barrier();
  for (uint i = 0; i < acc_n; ++i) {
    uint e = t + i * wg;
    if (e >= BR * D) break;
    uint r = e / D, c = e % D;
    if (row0 + r >= p.s) continue;
    // A row whose scores are all -inf: unfused Softmax computes exp(-inf - -inf) = NaN.
    float val = row_max[r] == kNegInf ? uintBitsToFloat(0x7fc00000u) : acc[i] / row_sum[r];
    o[o_base + (row0 + r) * D + c] = ELEM(val);
  }
}
