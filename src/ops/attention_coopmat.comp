#version 450
#extension GL_NV_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_control_flow_attributes : require
// Fused attention for float16 storage on tensor cores (GL_NV_cooperative_matrix, 16x16x16 fp16
// fragments, fp32 accumulators): the same contract and push constants as attention.comp. One
// subgroup of 32 per workgroup computes 16 query rows of one (batch, head) with head dim DH (a
// define: 64 or 128). Per tile of BC keys: S = Q Kᵀ on tensor cores into shared memory, the
// online softmax by one invocation per row (probabilities rounded to fp16 for the second
// product, as flash attention does), then P V on tensor cores into a staging tile that is added
// to the running output after that is rescaled. The running output stays in shared memory
// because a fragment cannot be scaled row by row.
#include "common.glsl"

layout(std430, binding = 0) readonly buffer Q { float16_t q[]; };
layout(std430, binding = 1) readonly buffer K { float16_t k[]; };
layout(std430, binding = 2) readonly buffer V { float16_t v[]; };
layout(std430, binding = 3) writeonly buffer O { float16_t o[]; };
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
  uint causal;
  uint o_b, o_h, o_s, o_d;
  uint q_off, k_off, v_off;  // the views' element offsets (Q/K/V of one packed projection)
} p;

const uint BR = 16;
const uint BC = 32;
#define kNegInf uintBitsToFloat(0xff800000u)

shared float16_t Qs[BR * DH];
shared float16_t Ks[BC * DH];
shared float16_t Vs[BC * DH];
shared float Ss[BR * BC];
shared float16_t Ps[BR * BC];
shared float Ot[BR * DH];
shared float Os[BR * DH];
shared float row_max[BR], row_sum[BR], row_rescale[BR];

void main() {
  const uint t = gl_LocalInvocationID.x;
  const uint wg = gl_WorkGroupSize.x;
  const uint bh = gl_WorkGroupID.y;
  const uint b = bh / p.heads, h = bh % p.heads;
  const uint kvh = h / p.group;
  const uint row0 = gl_WorkGroupID.x * BR;
  const uint q_base = p.q_off + b * p.q_b + h * p.q_h;
  const uint k_base = p.k_off + b * p.k_b + kvh * p.k_h;
  const uint v_base = p.v_off + b * p.v_b + kvh * p.v_h;

  for (uint e = t; e < BR * DH; e += wg) {
    uint r = e / DH, c = e % DH;
    Qs[e] = row0 + r < p.s ? q[q_base + (row0 + r) * p.q_s + c * p.q_d] : float16_t(0.0);
    Os[e] = 0.0;
  }
  if (t < BR) {
    row_max[t] = kNegInf;
    row_sum[t] = 0.0;
  }
  const uint col_end = p.causal != 0 ? min(p.skv, row0 + BR) : p.skv;
  for (uint col0 = 0; col0 < col_end; col0 += BC) {
    barrier();
    for (uint e = t; e < BC * DH; e += wg) {
      uint r = e / DH, c = e % DH;
      bool inside = col0 + r < p.skv;
      Ks[e] = inside ? k[k_base + (col0 + r) * p.k_s + c * p.k_d] : float16_t(0.0);
      Vs[e] = inside ? v[v_base + (col0 + r) * p.v_s + c * p.v_d] : float16_t(0.0);
    }
    barrier();
    // S = Q Kᵀ: Kᵀ's fragment at (kd, nc) is Ks read column-major.
    [[unroll]] for (uint nc = 0; nc < BC / 16; ++nc) {
      fcoopmatNV<32, gl_ScopeSubgroup, 16, 16> acc = fcoopmatNV<32, gl_ScopeSubgroup, 16, 16>(0.0);
      [[unroll]] for (uint kd = 0; kd < DH / 16; ++kd) {
        fcoopmatNV<16, gl_ScopeSubgroup, 16, 16> fa, fb;
        coopMatLoadNV(fa, Qs, kd * 16, DH, false);
        coopMatLoadNV(fb, Ks, nc * 16 * DH + kd * 16, DH, true);
        acc = coopMatMulAddNV(fa, fb, acc);
      }
      coopMatStoreNV(acc, Ss, nc * 16, BC, false);
    }
    barrier();
    if (t < BR) {
      const uint i = row0 + t;
      float m_old = row_max[t], m_new = m_old;
      float x[BC];
      [[unroll]] for (uint c = 0; c < BC; ++c) {
        uint j = col0 + c;
        x[c] = kNegInf;
        if (j < p.skv && (p.causal == 0 || j <= i)) {
          x[c] = Ss[t * BC + c] * p.scale;
#if MASK
          if (i < p.s) x[c] += float(mask[b * p.m_b + h * p.m_h + i * p.m_r + j * p.m_c]);
#endif
        }
        m_new = max(m_new, x[c]);
      }
      float rescale = m_new == kNegInf ? 1.0 : exp(m_old - m_new);
      float sum = 0.0;
      [[unroll]] for (uint c = 0; c < BC; ++c) {
        float pr = m_new == kNegInf ? 0.0 : exp(x[c] - m_new);
        float16_t ph = float16_t(pr);
        Ps[t * BC + c] = ph;
        sum += float(ph);  // the sum of what P V multiplies, so rows still sum to 1
      }
      row_max[t] = m_new;
      row_sum[t] = row_sum[t] * rescale + sum;
      row_rescale[t] = rescale;
    }
    barrier();
    [[unroll]] for (uint dc = 0; dc < DH / 16; ++dc) {
      fcoopmatNV<32, gl_ScopeSubgroup, 16, 16> acc = fcoopmatNV<32, gl_ScopeSubgroup, 16, 16>(0.0);
      [[unroll]] for (uint kc = 0; kc < BC / 16; ++kc) {
        fcoopmatNV<16, gl_ScopeSubgroup, 16, 16> fa, fb;
        coopMatLoadNV(fa, Ps, kc * 16, BC, false);
        coopMatLoadNV(fb, Vs, kc * 16 * DH + dc * 16, DH, false);
        acc = coopMatMulAddNV(fa, fb, acc);
      }
      coopMatStoreNV(acc, Ot, dc * 16, DH, false);
    }
    barrier();
    for (uint e = t; e < BR * DH; e += wg) Os[e] = Os[e] * row_rescale[e / DH] + Ot[e];
  }
  barrier();
  const uint o_base = b * p.o_b + h * p.o_h;
  for (uint e = t; e < BR * DH; e += wg) {
    uint r = e / DH, c = e % DH;
    if (row0 + r >= p.s) continue;
    float val = row_max[r] == kNegInf ? uintBitsToFloat(0x7fc00000u) : Os[e] / row_sum[r];
    o[o_base + (row0 + r) * p.o_s + c * p.o_d] = float16_t(val);
  }
}
