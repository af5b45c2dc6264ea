#version 450
// MatMulNBits decode GEMV (M = 1, no g_idx): y[n] = sum_k a[k] * w[n, k] (+ bias[n]), w's codes
// of BITS bits packed low first along K, one scale (and zero) per block of K; blocks are whole
// 32-bit words (block_size >= 16), so one word has one scale and zero.
//
// Bandwidth design (docs/notes/w4-5.md):
// - 32 invocations (a "row set") own SG_ROWS rows of w; a workgroup is SETS row sets.
// - A step of a row set covers VEC * 32 consecutive words of each of its rows: lane l takes
//   words v * 32 + l (v < VEC), so every load instruction of the 32 lanes reads one contiguous
//   128-byte stretch, and a lane's matching values of a are 32 bytes (fp32) next to its
//   neighbours' (a's loads coalesce too). All SG_ROWS * VEC words are loaded before the first
//   is used: the bytes in flight per lane, not the load width, are what cover DRAM latency.
// - PREPACKED weights (a graph constant, re-laid at load by quant_nbits.cpp) hold each step's
//   words so that lane l's VEC words are VEC / 4 consecutive uvec4s: 16-byte loads, a quarter
//   of the load instructions, same addresses of a. The last partial step keeps the natural
//   order and is read word by word.
// - Codes become floats without int-to-float conversions (quarter rate on NVIDIA): the code's
//   bits go into the top of a float's mantissa, 1 + c / 2^BITS exactly, so a word costs one
//   shift, one mask-or and one fma per code; sum(a * (1 + c/2^B)) and sum(a) give
//   sum(a * (c - zero)) = 2^B * dot - (2^B + zero) * sum(a), once per word and row.
// - Rows end in subgroupAdd where the row set is one subgroup (SUBGROUP_REDUCE and a subgroup
//   size of 32), else in shared memory.
// - SPLIT > 1 (knob nbits.split, docs/notes/w4b-5.md): SPLIT row sets of a workgroup share the
//   same rows, row set s taking steps s, s + SPLIT, ...; their sums meet in shared memory. The
//   workgroup then has SPLIT steps of the same rows in flight at once: more independent loads
//   per row, fewer dependent round trips per row set (K = 4096, 4-bit: 2 steps, 1 at SPLIT 2).
// DTYPE_*: a, scales, float zero points, bias and y; arithmetic is float32.
#extension GL_EXT_shader_8bit_storage : require
#extension GL_EXT_control_flow_attributes : require
#include "common.glsl"
#if SUBGROUP_REDUCE
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#endif

layout(std430, binding = 0) readonly buffer A { ELEM a[]; };
layout(std430, binding = 0) readonly buffer A4 { ELEM4 a4[]; };
layout(constant_id = 3) const int SG_ROWS = 2;  // rows of w per row set (knob nbits.rows)
layout(constant_id = 4) const int VEC = 8;      // words per lane and row in flight (nbits.vec)
layout(constant_id = 5) const int BITS = 4;
layout(constant_id = 6) const bool PREPACKED = false;
layout(constant_id = 7) const int SETS = 4;   // row sets per workgroup (32 invocations each)
layout(constant_id = 8) const int SPLIT = 1;  // row sets per rows (a divisor of SETS)

#define LANES 32
const int GROUPS = SETS / SPLIT;  // sets of rows per workgroup
const int PER_WORD = 32 / BITS;
const uint MASK = (1u << BITS) - 1u;
#include "quant_nbits_gemv.glsl"

// 1 + c / 2^BITS for code j of `word`, exactly: the code as the mantissa's top bits of 1.0.
float code_float(uint word, int j) {
  return uintBitsToFloat(0x3F800000u | (((word >> uint(j * BITS)) & MASK) << uint(23 - BITS)));
}

// Adds word w of each of the row set's rows (codes k0 = w * PER_WORD ..) times a to acc.
void add_word(int w, int n0, uint word[SG_ROWS], inout float acc[SG_ROWS]) {
  const int k0 = w * PER_WORD;
  float x[PER_WORD];
  if ((p.K & 3) == 0 && k0 + PER_WORD <= p.K) {
    [[unroll]] for (int q = 0; q < PER_WORD / 4; ++q) {
      const vec4 v = vec4(a4[k0 / 4 + q]);
      x[4 * q] = v.x, x[4 * q + 1] = v.y, x[4 * q + 2] = v.z, x[4 * q + 3] = v.w;
    }
  } else {
    [[unroll]] for (int j = 0; j < PER_WORD; ++j) x[j] = k0 + j < p.K ? float(a[k0 + j]) : 0.0;
  }
  float sum_a = 0.0;
  [[unroll]] for (int j = 0; j < PER_WORD; ++j) sum_a += x[j];
  const int block = k0 / p.block_size;
  const float levels = float(1 << BITS);
  [[unroll]] for (int r = 0; r < SG_ROWS; ++r) {
    float dot_f = 0.0;
    [[unroll]] for (int j = 0; j < PER_WORD; ++j) dot_f = fma(x[j], code_float(word[r], j), dot_f);
    const int n = min(n0 + r, p.N - 1);  // a row past N is computed and not stored
    const float scale = float(scales[n * p.blocks + block]);
    acc[r] = fma(scale, levels * dot_f - (levels + zero_of(n, block)) * sum_a, acc[r]);
  }
}

shared float partial[SETS][SG_ROWS][LANES];
shared float slice_sum[SETS][SG_ROWS];  // SPLIT > 1: each row set's totals

void main() {
  // Invocations as (row set, lane). With subgroup reductions, numbered subgroup by subgroup,
  // so that a subgroup (of at most 32, a divisor of 32) lies inside one row set.
  int slot = int(gl_LocalInvocationID.x);
  bool by_subgroup = false;
#if SUBGROUP_REDUCE
  by_subgroup = gl_SubgroupSize <= LANES && LANES % gl_SubgroupSize == 0 &&
                gl_NumSubgroups * gl_SubgroupSize == gl_WorkGroupSize.x;  // uniform
  if (by_subgroup) slot = int(gl_SubgroupID * gl_SubgroupSize + gl_SubgroupInvocationID);
#endif
  const int lane = slot % LANES, set = slot / LANES, slice = set % SPLIT;
  const int n0 = (int(gl_WorkGroupID.x) * GROUPS + set / SPLIT) * SG_ROWS;
  int row[SG_ROWS];
  float acc[SG_ROWS];
  [[unroll]] for (int r = 0; r < SG_ROWS; ++r) {
    row[r] = min(n0 + r, p.N - 1) * p.row_stride;
    acc[r] = 0.0;
  }

  // Full steps read PREPACKED weights as uvec4s; the last partial step (natural order in both
  // layouts) word by word with bounds. Either way all of a step's loads come first.
  const int step = VEC * LANES;
  for (int s0 = slice * step; s0 < p.words; s0 += SPLIT * step) {
    uint word[VEC][SG_ROWS];
    if (PREPACKED && s0 + step <= p.words) {
      [[unroll]] for (int r = 0; r < SG_ROWS; ++r)
        [[unroll]] for (int q = 0; q < VEC / 4; ++q) {
          const uvec4 v = b4[(row[r] + s0) / 4 + q * LANES + lane];
          word[4 * q][r] = v.x, word[4 * q + 1][r] = v.y;
          word[4 * q + 2][r] = v.z, word[4 * q + 3][r] = v.w;
        }
    } else {
      [[unroll]] for (int v = 0; v < VEC; ++v) {
        const int w = s0 + v * LANES + lane;
        [[unroll]] for (int r = 0; r < SG_ROWS; ++r) word[v][r] = w < p.words ? b[row[r] + w] : 0u;
      }
    }
    [[unroll]] for (int v = 0; v < VEC; ++v) {
      const int w = s0 + v * LANES + lane;
      if (w < p.words) add_word(w, n0, word[v], acc);
    }
  }

  // Lane r < SG_ROWS ends with row r's total of this row set in `mine`.
  float mine = 0.0;
#if SUBGROUP_REDUCE
  if (by_subgroup) {
    float total[SG_ROWS];
    [[unroll]] for (int r = 0; r < SG_ROWS; ++r) total[r] = subgroupAdd(acc[r]);
    if (gl_SubgroupSize < LANES) {
      // Subgroups smaller than a row set: their sums meet in shared memory.
      const int parts = LANES / int(gl_SubgroupSize);
      if (subgroupElect())
        [[unroll]] for (int r = 0; r < SG_ROWS; ++r)
          partial[set][r][lane / int(gl_SubgroupSize)] = total[r];
      barrier();
      [[unroll]] for (int r = 0; r < SG_ROWS; ++r) {
        total[r] = 0.0;
        for (int i = 0; i < parts; ++i) total[r] += partial[set][r][i];
      }
    }
    [[unroll]] for (int r = 0; r < SG_ROWS; ++r)
      if (lane == r) mine = total[r];
  } else
#endif
  {
    [[unroll]] for (int r = 0; r < SG_ROWS; ++r) partial[set][r][lane] = acc[r];
    barrier();
    if (lane < SG_ROWS)
      for (int i = 0; i < LANES; ++i) mine += partial[set][lane][i];
  }
  if (SPLIT > 1) {
    // The row sets of one set of rows (K slices) meet in shared memory; the first one stores.
    if (lane < SG_ROWS) slice_sum[set][lane] = mine;
    barrier();
    if (slice != 0) return;
    if (lane < SG_ROWS)
      for (int i = 1; i < SPLIT; ++i) mine += slice_sum[set + i][lane];
  }
  if (lane < SG_ROWS && n0 + lane < p.N)
    y[n0 + lane] = ELEM(mine + (p.has_bias != 0 ? float(bias[n0 + lane]) : 0.0));
}
