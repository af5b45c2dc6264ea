#version 450
// MatMulNBits decode GEMV, wide-load version (knob nbits.gemv = 2; docs/notes/gemv4-6.md):
// y[n] = sum_k a[k] * w[n, k] (+ bias[n]) for M = 1 without g_idx, w's codes of BITS bits
// packed low first along K in the natural layout, one scale (and zero) per block of K.
//
// Why a second kernel: the first (quant_nbits_gemv.comp) issued its weight words up front but
// loaded each word's scale (and a) only when it used the word, inside the loop over the step's
// words, so every step waited out one more memory round trip per word: at K = N = 4096 about
// 16 dependent trips per row set, ~20 us where streaming 8 MiB takes ~2 us.
// Here an invocation loads everything of one pass first, in one straight-line block:
// - a "quad" is 4 consecutive words of a row (one 16-byte load where rows start on 16-byte
//   boundaries, QUADS); invocation t of T takes quads t, t + T, ... of every row, so the 32
//   lanes of a subgroup read 512 contiguous bytes of a row per load instruction;
// - a workgroup owns ROWS rows and loads one quad of each (ROWS * 16 bytes in flight per
//   invocation, 16-64 KB per SM at the default sizes), the quad's scales and zero points of
//   each row (consecutive lanes: consecutive blocks, coalesced), and the quad's values of a
//   once for all ROWS rows; only then does any math start;
// - codes become floats without conversions (1 + c / 2^BITS as a float's top mantissa bits)
//   and sum(a * (c - zero)) = 2^B * dot - (2^B + zero) * sum(a) per block, as in the first
//   kernel;
// - rows end in subgroupAdd and one shared-memory sum over the workgroup's subgroups;
// - PREFETCH (knob nbits.wide_prefetch) issues the next pass's loads before this pass's math,
//   so an invocation with several passes has a pass of loads in flight while it computes:
//   without it, a workgroup's loads and its math alternate, and the GPU overlaps them only
//   across workgroups (session 17's question: is that why 4096 x 4096 ran at ~750 GB/s?).
// Values of a arrive in 16-byte loads (8 float16 or 4 float32 values) where K allows.
// Values of a past K are zero, so the codes in a block's padding past K add nothing whatever
// they hold. Rows past N are computed (clamped to N - 1) and not stored.
#extension GL_EXT_shader_8bit_storage : require
#extension GL_EXT_control_flow_attributes : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#include "common.glsl"
#if HALF_MATH
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#endif

layout(std430, binding = 0) readonly buffer A { ELEM a[]; };
layout(std430, binding = 0) readonly buffer A16 { uvec4 a16[]; };
layout(constant_id = 3) const int ROWS = 8;  // rows per workgroup (knob nbits.wide_rows)
layout(constant_id = 4) const int BITS = 4;
layout(constant_id = 5) const int BLOCK = 32;     // block_size, as a constant for the unrolling
layout(constant_id = 6) const bool QUADS = true;  // row_stride % 4 == 0: 16-byte loads
layout(constant_id = 7) const bool PREFETCH = false;  // knob nbits.wide_prefetch

const int PER_WORD = 32 / BITS;
const int CODES = 4 * PER_WORD;                // codes per quad
const int QB = CODES > BLOCK ? CODES / BLOCK : 1;  // blocks per quad (blocks are whole words)
const int QB_CODES = CODES / QB;                   // codes of a quad in one block
const uint MASK = (1u << BITS) - 1u;
#include "quant_nbits_gemv.glsl"
const int MAX_SUBGROUPS = 256;  // quant_nbits.cpp keeps workgroups at <= 256 invocations
#if defined(DTYPE_F16)
const int A_VEC = 8;  // values of a per 16-byte load
#else
const int A_VEC = 4;
#endif

shared float part[ROWS][MAX_SUBGROUPS];

int row[ROWS];  // the workgroup's rows, clamped to N - 1
float acc[ROWS];
bool vec_a;  // K % A_VEC == 0: a in 16-byte loads

// One pass's operands: the quad's values of a (as loaded: float16 pairs or float32), and of
// each row its quad of codes, the quad's scales and zero points.
struct Pass {
#if defined(DTYPE_F16)
  uint xh[CODES / 2];
#else
  float x[CODES];
#endif
  uvec4 wq[ROWS];
  float scale[ROWS][QB], zero[ROWS][QB];
};

float a_value(const Pass s, const int c) {
#if defined(DTYPE_F16)
  return unpackHalf2x16(s.xh[c / 2])[c % 2];
#else
  return s.x[c];
#endif
}

// 1 + c / 2^BITS for code j of `word`, exactly: the code as the mantissa's top bits of 1.0.
float code_float(uint word, int j) {
  return uintBitsToFloat(0x3F800000u | (((word >> uint(j * BITS)) & MASK) << uint(23 - BITS)));
}

// Every load of quad q, in one straight-line block: a, the ROWS quads, their scales and zeros.
void load_pass(const int q, out Pass s) {
  const int w0 = 4 * q, k0 = w0 * PER_WORD;
  if (vec_a && k0 + CODES <= p.K) {
    [[unroll]] for (int i = 0; i < CODES / A_VEC; ++i) {
      const uvec4 u = a16[k0 / A_VEC + i];
#if defined(DTYPE_F16)
      [[unroll]] for (int j = 0; j < 4; ++j) s.xh[4 * i + j] = u[j];
#else
      [[unroll]] for (int j = 0; j < 4; ++j) s.x[4 * i + j] = uintBitsToFloat(u[j]);
#endif
    }
  } else {
    [[unroll]] for (int j = 0; j < CODES; j += 2) {
      const float v0 = k0 + j < p.K ? float(a[k0 + j]) : 0.0;
      const float v1 = k0 + j + 1 < p.K ? float(a[k0 + j + 1]) : 0.0;
#if defined(DTYPE_F16)
      s.xh[j / 2] = packHalf2x16(vec2(v0, v1));  // exact: v0 and v1 are float16 values
#else
      s.x[j] = v0, s.x[j + 1] = v1;
#endif
    }
  }
  [[unroll]] for (int r = 0; r < ROWS; ++r) {
    const int at = row[r] * p.row_stride + w0;
    if (QUADS) {
      s.wq[r] = b4[at / 4];
    } else {
      [[unroll]] for (int j = 0; j < 4; ++j) s.wq[r][j] = w0 + j < p.words ? b[at + j] : 0u;
    }
    [[unroll]] for (int i = 0; i < QB; ++i) {
      // min: a last quad that reaches past the row's blocks (its x there are zero).
      const int blk = min((k0 + i * QB_CODES) / BLOCK, p.blocks - 1);
      s.scale[r][i] = float(scales[row[r] * p.blocks + blk]);
      s.zero[r][i] = zero_of(row[r], blk);
    }
  }
}

// The math of one pass: acc[r] += the quad's part of row r's dot product.
void add_pass(const Pass s) {
  const float levels = float(1 << BITS);
  float sum_a[QB];
  [[unroll]] for (int i = 0; i < QB; ++i) {
    sum_a[i] = 0.0;
    [[unroll]] for (int j = 0; j < QB_CODES; ++j) sum_a[i] += a_value(s, i * QB_CODES + j);
  }
#if HALF_MATH
  // 4-bit codes two at a time in float16 (knob nbits.half_math): a word's nibbles j and
  // j + 4 masked into the low mantissa bits of two halves of 1024.0 are 1024 + c exactly;
  // subtracting 1024 + zero (integral zero points; float ones go through sum_a as below)
  // leaves c - zero exactly, and one fma multiplies it by a pair of a: about 2 instructions
  // per code instead of 3. Products and a block's sum round to float16 (a's 11 bits), well
  // inside the fp16 tolerance; the block's sum then goes on in float32.
  f16vec2 xp[4][4];  // word i, pair j: a of codes j and j + 4 of word i
  [[unroll]] for (int i = 0; i < 4; ++i)
    [[unroll]] for (int j = 0; j < 4; ++j)
      xp[i][j] = f16vec2(unpackFloat2x16(s.xh[4 * i + j / 2])[j % 2],
                         unpackFloat2x16(s.xh[4 * i + 2 + j / 2])[j % 2]);
  const bool float_zero = p.zero_mode == 2;
  [[unroll]] for (int r = 0; r < ROWS; ++r)
    [[unroll]] for (int i = 0; i < QB; ++i) {
      const float16_t off = float16_t(1024.0 + (float_zero ? 0.0 : s.zero[r][i]));
      f16vec2 d = f16vec2(0.0);
      [[unroll]] for (int wi = i * (4 / QB); wi < (i + 1) * (4 / QB); ++wi)
        [[unroll]] for (int j = 0; j < 4; ++j) {
          const uint h = ((s.wq[r][wi] >> uint(4 * j)) & 0x000F000Fu) | 0x64006400u;
          d = fma(unpackFloat2x16(h) - f16vec2(off), xp[wi][j], d);
        }
      const float rest = float_zero ? s.zero[r][i] * sum_a[i] : 0.0;
      acc[r] = fma(s.scale[r][i], float(d.x) + float(d.y) - rest, acc[r]);
    }
#else
  [[unroll]] for (int r = 0; r < ROWS; ++r)
    [[unroll]] for (int i = 0; i < QB; ++i) {
      float dot_f = 0.0;
      [[unroll]] for (int j = 0; j < QB_CODES; ++j) {
        const int c = i * QB_CODES + j;
        dot_f = fma(a_value(s, c), code_float(s.wq[r][c / PER_WORD], c % PER_WORD), dot_f);
      }
      acc[r] = fma(s.scale[r][i], levels * dot_f - (levels + s.zero[r][i]) * sum_a[i], acc[r]);
    }
#endif
}

void main() {
  const int t = int(gl_LocalInvocationID.x), threads = int(gl_WorkGroupSize.x);
  const int n0 = int(gl_WorkGroupID.x) * ROWS;
  [[unroll]] for (int r = 0; r < ROWS; ++r) {
    row[r] = min(n0 + r, p.N - 1);
    acc[r] = 0.0;
  }
  const int quads = (p.words + 3) / 4;
  vec_a = p.K % A_VEC == 0;

  Pass s0, s1;
  if (t < quads) load_pass(t, s0);
  if (PREFETCH) {
    // Two passes an iteration in alternating registers: s1 loads while s0 computes, and back.
    for (int q = t; q < quads; q += 2 * threads) {
      if (q + threads < quads) load_pass(q + threads, s1);
      add_pass(s0);
      if (q + threads >= quads) break;
      if (q + 2 * threads < quads) load_pass(q + 2 * threads, s0);
      add_pass(s1);
    }
  } else {
    for (int q = t; q < quads; q += threads) {
      add_pass(s0);
      if (q + threads < quads) load_pass(q + threads, s0);
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
