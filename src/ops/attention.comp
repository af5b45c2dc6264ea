#version 450
// Fused attention, flash-attention style: out = softmax(scale * Q Kᵀ + mask) V over the last
// axis, in one pass over K and V without storing the scores. One workgroup computes BR query
// rows of one (batch, head); it walks the keys in tiles of BC rows through shared memory and
// keeps, per query row, the running maximum of the online softmax, rescaling its float32
// accumulators whenever it grows. Q [B, H, S, D], Kᵀ [B, HKV, D, SKV] and V [B, HKV, SKV, D] are
// read through an offset and four strides each, so transposed views and Q/K/V split from one
// packed projection cost no copy; a stride is 0 where an
// operand broadcasts, and grouped-query heads share a KV head (h / group). The mask (MASK=1) is
// added to the scaled scores likewise. The output is [B, H, S, D] contiguous.
//
// TPR invocations share a query row (the workgroup is BR * TPR): each computes BC / TPR of the
// row's scores and D / TPR of its output columns, both strided by TPR so that neighbouring
// invocations touch neighbouring shared words. A thread keeps its scores, its part of the row's
// sum and its accumulators in registers; only the row maximum is exchanged per tile. The shared
// rows are padded by one word against bank conflicts; the host picks BR, BC by D so that the
// tiles fit 32 KiB (lavapipe's limit) and by the problem size so that the grid fills the GPU.
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
  uint d;      // head dim (also the specialization constant D)
  uint heads;  // H of Q; gl_WorkGroupID.y = b * heads + h
  uint group;  // query heads per KV head
  uint q_b, q_h, q_s, q_d;
  uint k_b, k_h, k_d, k_s;  // Kᵀ's dims: batch, head, element, key row
  uint v_b, v_h, v_s, v_d;
  uint m_b, m_h, m_r, m_c;
  float scale;
  // Bit 0: key j > query i is masked out (top-left aligned, as torch's is_causal). Bit 1: a
  // row that softmax makes NaN (a NaN or +inf score, or every score -inf) is zeros instead,
  // as torch's _safe_softmax (Where(IsNaN(p), 0, p) after the Softmax).
  uint flags;
  uint o_b, o_h, o_s, o_d;  // the output's strides of batch, head, query row, element
  uint q_off, k_off, v_off;  // the views' element offsets (Q/K/V of one packed projection)
} p;
layout(constant_id = 3) const uint BR = 8;
layout(constant_id = 4) const uint BC = 32;
layout(constant_id = 5) const uint TPR = 8;  // invocations per query row
layout(constant_id = 6) const uint D = 64;
const uint NK = BC / TPR;               // scores per invocation and tile
const uint ACC = (D + TPR - 1) / TPR;   // output columns per invocation
const uint QW = D + 1, KW = BC + 1;     // padded row widths of the Q / Kᵀ / P tiles
const uint QS = 0, KS = QS + BR * QW, VS = KS + D * KW, PS = VS + BC * D;
shared float tile[PS + BR * KW];
shared float partial[BR * TPR];  // per invocation: its tile maximum, at the end its sum

#define kNegInf uintBitsToFloat(0xff800000u)

// The maximum over the row's TPR invocations of x; every invocation of the workgroup calls it.
float row_reduce_max(uint t, uint r, float x) {
  partial[t] = x;
  barrier();
  float m = kNegInf;
  for (uint j = 0; j < TPR; ++j) m = max_nan(m, partial[r * TPR + j]);
  barrier();  // read before the next write
  return m;
}

// Element e of a BC x D tile of Kᵀ as (key row c, element dd): neighbouring e are neighbouring
// in memory, along the key rows where Kᵀ is stored with its keys contiguous (a materialised
// transpose), else along D.
uvec2 k_element(uint e) {
  return p.k_s == 1 ? uvec2(e % BC, e / BC) : uvec2(e / D, e % D);
}

// Kᵀ's element `cd` (k_element's) of the tile starting at key col0.
float load_k(uint k_base, uint col0, uvec2 cd) {
  return col0 + cd.x < p.skv ? T(k[k_base + (col0 + cd.x) * p.k_s + cd.y * p.k_d]) : 0.0;
}

float load_v(uint v_base, uint col0, uint e) {
  const uint c = e / D, dd = e % D;
  return col0 + c < p.skv ? T(v[v_base + (col0 + c) * p.v_s + dd * p.v_d]) : 0.0;
}

void main() {
  const uint wg = BR * TPR;
  const uint t = gl_LocalInvocationID.x;
  const uint r = t / TPR, lane = t % TPR;
  const uint bh = gl_WorkGroupID.y;
  const uint b = bh / p.heads, h = bh % p.heads;
  const uint kvh = h / p.group;
  const uint row0 = gl_WorkGroupID.x * BR;
  const uint i = row0 + r;  // this invocation's query row
  const uint q_base = p.q_off + b * p.q_b + h * p.q_h;
  const uint k_base = p.k_off + b * p.k_b + kvh * p.k_h;
  const uint v_base = p.v_off + b * p.v_b + kvh * p.v_h;

  for (uint e = t; e < BR * D; e += wg) {
    uint rr = e / D, c = e % D;
    tile[QS + rr * QW + c] = row0 + rr < p.s ? T(q[q_base + (row0 + rr) * p.q_s + c * p.q_d]) : 0.0;
  }
  float row_max = kNegInf, sum = 0.0;
  float acc[ACC];
  for (uint a = 0; a < ACC; ++a) acc[a] = 0.0;

  // Causal: key tiles wholly past the block's last row contribute nothing.
  const uint col_end = (p.flags & 1u) != 0 ? min(p.skv, row0 + BR) : p.skv;
  for (uint col0 = 0; col0 < col_end; col0 += BC) {
    barrier();  // the previous tile's readers are done
    for (uint e = t; e < BC * D; e += wg) {
      const uvec2 cd = k_element(e);
      tile[KS + cd.y * KW + cd.x] = load_k(k_base, col0, cd);
      tile[VS + e] = load_v(v_base, col0, e);  // key row e / D, element e % D
    }
    barrier();
    float sc[NK];
    for (uint n = 0; n < NK; ++n) sc[n] = 0.0;
    for (uint dd = 0; dd < D; ++dd) {
      float qv = tile[QS + r * QW + dd];
      for (uint n = 0; n < NK; ++n) sc[n] += qv * tile[KS + dd * KW + lane + n * TPR];
    }
    float tile_max = kNegInf;
    for (uint n = 0; n < NK; ++n) {
      uint j = col0 + lane + n * TPR;
      float x = kNegInf;
      if (j < p.skv && ((p.flags & 1u) == 0 || j <= i)) {
        x = sc[n] * p.scale;
#if MASK
        if (i < p.s) x += T(mask[b * p.m_b + h * p.m_h + i * p.m_r + j * p.m_c]);
#endif
      }
      sc[n] = x;
      tile_max = max_nan(tile_max, x);
    }
    const float m_new = max_nan(row_max, row_reduce_max(t, r, tile_max));
    // While every score so far is -inf nothing is summed: the row stays at max -inf, sum 0.
    const float rescale = m_new == kNegInf ? 1.0 : exp(row_max - m_new);
    row_max = m_new;
    sum *= rescale;
    for (uint n = 0; n < NK; ++n) {
      float pr = m_new == kNegInf ? 0.0 : exp(sc[n] - m_new);
      sum += pr;
      tile[PS + r * KW + lane + n * TPR] = pr;
    }
    for (uint a = 0; a < ACC; ++a) acc[a] *= rescale;
    barrier();  // the row's probabilities are in place
    for (uint c = 0; c < BC; ++c) {
      float pr = tile[PS + r * KW + c];
      for (uint a = 0; a < ACC; ++a) {
        uint col = lane + a * TPR;
        if (col < D) acc[a] += pr * tile[VS + c * D + col];
      }
    }
  }
  partial[t] = sum;
  barrier();
  float row_sum = 0.0;
  for (uint j = 0; j < TPR; ++j) row_sum += partial[r * TPR + j];
  if (i >= p.s) return;
  const uint o_base = b * p.o_b + h * p.o_h + i * p.o_s;
  const bool zero_row = (p.flags & 2u) != 0 && (isnan(row_max) || isinf(row_max));
  for (uint a = 0; a < ACC; ++a) {
    uint col = lane + a * TPR;
    // A row whose scores are all -inf: unfused Softmax computes exp(-inf - -inf) = NaN.
    if (col < D)
      o[o_base + col * p.o_d] =
          ELEM(zero_row ? 0.0 : row_max == kNegInf ? nan_value() : acc[a] / row_sum);
  }
}
