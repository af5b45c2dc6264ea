#version 450
// MatMulNBits decode GEMV with a quantized to int8 (accuracy_level 4: "A can be quantized with
// the same block_size to int8"), 4-bit codes, integer dot products: y[n] = sum over blocks of
// scale[n, blk] * scale_a[blk] * sum_k aq[k] * (c[n, k] - zero[n, blk]) (+ bias[n]).
//
// Why: the float kernel (quant_nbits_gemv_wide.comp) spends ~10 instructions on every code
// (extract, convert, multiply-add) and so runs at a third of the memory's speed; here eight
// codes take two masks and two 4x8-bit dot products.
// Layout and passes as the wide kernel's: a "quad" is 4 consecutive words (32 codes) of a row;
// invocation t of T takes quads t, t + T, ... of each of the workgroup's ROWS rows, loading one
// pass's operands (the quad's values of a, a 16-byte word of each row, the rows' scales and
// zero points) before any math. Each pass quantizes its quad's 32 values of a in registers:
// scale_a = max |a| / 127 over the block (a block of BLOCK > 32 codes spans BLOCK / 32
// consecutive lanes of a subgroup: a max over subgroup shuffles), aq = round(a / scale_a) packed by
// packSnorm4x8, the even codes' values in one word and the odd ones' in another, matching a
// code word's low nibbles (w & 0x0F0F0F0F) and high nibbles ((w >> 4) & 0x0F0F0F0F). The
// quantization is repeated by every workgroup, spread over its ROWS rows.
// Values of a past K are zero (aq 0), so the codes in a block's padding add nothing, and the
// zero point's correction counts only real values. Rows past N are computed (clamped to N - 1)
// and not stored. Every pass is uniform in the subgroup (the clustered max needs all lanes).
#extension GL_EXT_shader_8bit_storage : require
#extension GL_EXT_control_flow_attributes : require
#extension GL_EXT_spirv_intrinsics : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#extension GL_KHR_shader_subgroup_shuffle : require
#include "common.glsl"

layout(std430, binding = 0) readonly buffer A { ELEM a[]; };
layout(std430, binding = 0) readonly buffer A16 { uvec4 a16[]; };
layout(constant_id = 3) const int ROWS = 8;       // rows per workgroup (knob nbits.dot_rows)
layout(constant_id = 4) const int BLOCK = 32;  // block_size: 32, 64, 128 or 256
const int CLUSTER = BLOCK / 32;                   // lanes (quads) per block
const int BITS = 4;
// Rows of whole quads (b4 alone is read): a block of >= 32 4-bit codes is a multiple of 4 words.
#include "quant_nbits_gemv.glsl"
const int MAX_SUBGROUPS = 256;  // quant_nbits.cpp keeps workgroups at <= 256 invocations
#if defined(DTYPE_F16)
const int A_VEC = 8;  // values of a per 16-byte load
#else
const int A_VEC = 4;
#endif

// OpSUDot, 4x8-bit packed (VK_KHR_shader_integer_dot_product): signed aq, unsigned codes.
spirv_instruction(extensions = ["SPV_KHR_integer_dot_product"], capabilities = [6019, 6018],
                  id = 4452) int sudot4x8(int a, int b, spirv_literal int packed_format);
// OpSDot, to sum four signed bytes.
spirv_instruction(extensions = ["SPV_KHR_integer_dot_product"], capabilities = [6019, 6018],
                  id = 4450) int sdot4x8(int a, int b, spirv_literal int packed_format);

shared float part[ROWS][MAX_SUBGROUPS];

int row[ROWS];  // the workgroup's rows, clamped to N - 1
float acc[ROWS];

// Value k of a, zero past K.
float a_at(int k) {
  return k < p.K ? float(a[k]) : 0.0;
}

void main() {
  const int t = int(gl_LocalInvocationID.x), threads = int(gl_WorkGroupSize.x);
  // Quads by subgroup lane, so that a block's quads are consecutive lanes of one subgroup.
  const int lane_quad = int(gl_SubgroupID * gl_SubgroupSize + gl_SubgroupInvocationID);
  const int n0 = int(gl_WorkGroupID.x) * ROWS;
  [[unroll]] for (int r = 0; r < ROWS; ++r) {
    row[r] = min(n0 + r, p.N - 1);
    acc[r] = 0.0;
  }
  const int quads = (p.words + 3) / 4;
  const bool vec_a = p.K % A_VEC == 0;

  for (int q0 = 0; q0 < quads; q0 += threads) {
    const int q = q0 + lane_quad;
    const bool valid = q < quads;
    const int w0 = 4 * q, k0 = 32 * q;
    // The quad's 32 values of a.
    float x[32];
    if (valid && vec_a && k0 + 32 <= p.K) {
      [[unroll]] for (int i = 0; i < 32 / A_VEC; ++i) {
        const uvec4 u = a16[k0 / A_VEC + i];
#if defined(DTYPE_F16)
        [[unroll]] for (int j = 0; j < 4; ++j) {
          const vec2 h = unpackHalf2x16(u[j]);
          x[8 * i + 2 * j] = h.x, x[8 * i + 2 * j + 1] = h.y;
        }
#else
        [[unroll]] for (int j = 0; j < 4; ++j) x[4 * i + j] = uintBitsToFloat(u[j]);
#endif
      }
    } else {
      [[unroll]] for (int j = 0; j < 32; ++j) x[j] = valid ? a_at(k0 + j) : 0.0;
    }
    // The rows' code words, scales and zero points of this quad's block.
    const int blk = min(k0 / BLOCK, p.blocks - 1);
    uvec4 wq[ROWS];
    float sw[ROWS], zw[ROWS];
    [[unroll]] for (int r = 0; r < ROWS; ++r) {
      wq[r] = valid ? b4[(row[r] * p.row_stride + w0) / 4] : uvec4(0);
      sw[r] = valid ? float(scales[row[r] * p.blocks + blk]) : 0.0;
      zw[r] = valid ? zero_of(row[r], blk) : 0.0;
    }

    // a quantized to int8 over its block.
    float amax = 0.0;
    [[unroll]] for (int j = 0; j < 32; ++j) amax = max(amax, abs(x[j]));
    [[unroll]] for (uint c = 1; c < CLUSTER; c *= 2) amax = max(amax, subgroupShuffleXor(amax, c));
    const float inv = amax > 0.0 ? 1.0 / amax : 0.0;
    const float scale_a = amax / 127.0;
    uint even[4], odd[4];
    int sum_q = 0;
    [[unroll]] for (int w = 0; w < 4; ++w) {
      const int c = 8 * w;
      even[w] = packSnorm4x8(vec4(x[c], x[c + 2], x[c + 4], x[c + 6]) * inv);
      odd[w] = packSnorm4x8(vec4(x[c + 1], x[c + 3], x[c + 5], x[c + 7]) * inv);
      sum_q += sdot4x8(int(even[w]), 0x01010101, 0) + sdot4x8(int(odd[w]), 0x01010101, 0);
    }

    [[unroll]] for (int r = 0; r < ROWS; ++r) {
      int dot = 0;
      [[unroll]] for (int w = 0; w < 4; ++w) {
        dot = sudot4x8(int(even[w]), int(wq[r][w] & 0x0F0F0F0Fu), 0) + dot;
        dot = sudot4x8(int(odd[w]), int((wq[r][w] >> 4u) & 0x0F0F0F0Fu), 0) + dot;
      }
      acc[r] = fma(sw[r] * scale_a, float(dot) - zw[r] * float(sum_q), acc[r]);
    }
  }

  [[unroll]] for (int r = 0; r < ROWS; ++r) {
    const float s = subgroupAdd(acc[r]);
    if (subgroupElect()) part[r][gl_SubgroupID] = s;
  }
  barrier();
  if (t < ROWS && n0 + t < p.N) {
    float sum = 0.0;
    for (uint i = 0; i < gl_NumSubgroups; ++i) sum += part[t][i];
    y[n0 + t] = ELEM(sum + (p.has_bias != 0 ? float(bias[n0 + t]) : 0.0));
  }
}
