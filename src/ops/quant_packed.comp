#version 450
// Integer GEMM on packed 8-bit operands: Y[c][n] = sum_k (W[c][k] - zw[c]) * (D[n][k] - zd)
// in int32, four k per 32-bit word. W: the weights, packed at load (quant_packed.cpp) into
// [channels][K4 / 4] words, K4 = K rounded up to 4, padded with zw. D: the data vectors,
//   CONV       the im2col columns of x (an output pixel of one image), gathered byte by byte;
//              POINTWISE (1x1, stride 1, no pads) reads them as a plain [K, pixels] matrix.
//              gl_WorkGroupID.z is the group (SPLIT_K: slice * groups + group).
//   otherwise  the rows of a matmul's a [rows][K] (K % 4 == 0), read as words.
// A workgroup computes a BM (channels) x BN (vectors) tile, walking K in BK-deep slices staged
// in shared memory, with the next slice's loads in flight in registers while the current one
// is multiplied; each invocation sums a TM x TN block with one 4x8-bit dot product per word
// pair (DOT: VK_KHR_shader_integer_dot_product's OpSDot / OpUDot / OpSUDot; else unpacked
// into 4 multiply-adds). Zero points are corrected in the epilogue (quant_packed.glsl).
// Output: REQUANT bytes saturate(round_half_even((acc + bias) * sd * sw / sy) + zy), then with
// HAS_RESIDUAL a QDQ residual Add applied to them, with HAS_TABLE a QDQ unary op's byte table
// (quant_packed.glsl); else the int32 sums;
// SPLIT_K int32 partials of one K slice (quant_packed_reduce.comp finishes them).
// DYNAMIC (a matmul; quantize_dynamic's linear layer, ops::dynamic_quant_matmul): a is float
// (ELEM: float32, or float16 with DTYPE_F16, as are y, the bias and the residual), quantized to
// uint8 as it loads with DynamicQuantizeLinear's parameters, which each workgroup
// computes from the per-workgroup (min, max) partials of quant_dynamic.comp's MINMAX pass;
// y = float(acc) * (x_scale * sw[c]) [+ bias[c]] in float32, the unfused Cast, Mul and Add.
// DYNAMIC_BYTES: a was quantized beforehand (quant_dynamic.comp PACK, the same values) and is
// read as words; the parameters still come from the partials.
// COOPMAT (16 or 8: the fragments' N): the products on int8 tensor cores (GL_NV_integer_
// cooperative_matrix, int8 x int8 -> int32 fragments of 16 x COOPMAT x 32). Same loads, the
// slices staged row by row ([channel][k], [vector][k]: the fragments' row-major A and
// column-major B), BK 64; SG_M x SG_N subgroups of 32 each own a (BM / SG_M) x (BN / SG_N) block
// of fragments, which land in shared memory, from where every invocation runs the same epilogue
// on a TM x TN block. Fragments are signed: the host packs unsigned weights as w - 128 (zero point
// zw - 128, which must be 0: no data sums, HAS_DSUM false), and unsigned data is flipped to
// d - 128 as it is staged (its zero point read as zd - 128), which leaves every sum unchanged.
// EMULATE (tests on devices without tensor cores): the same staging, thread layout and
// epilogue, each invocation summing its block from the staged rows instead of fragments.
#extension GL_EXT_control_flow_attributes : require
#ifndef COOPMAT
#define COOPMAT 0
#endif
#if COOPMAT && !EMULATE
#extension GL_NV_cooperative_matrix : require
#extension GL_NV_integer_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_EXT_shader_explicit_arithmetic_types_int8 : require
#extension GL_EXT_shader_explicit_arithmetic_types_int32 : require
#endif
#if DOT
#extension GL_EXT_spirv_intrinsics : require
#endif
#include "common.glsl"
#if DYNAMIC
#include "activation.glsl"  // before quant_packed.glsl, for dynamic_epilogue
#endif
#include "quant_packed.glsl"

#if COOPMAT
#define SG_M 2
#define SG_N 2
#define THREADS (SG_M * SG_N * 32)
#define FM (BM / SG_M / 16)
#define FN (BN / SG_N / COOPMAT)
#define BK 64
#define TM 4
#define TN (BM * BN / (THREADS * TM))
#else
#define TM 4
#define TN 4
#define BK 32
#define THREADS ((BM / TM) * (BN / TN))
#endif
#define KW (BK / 4)  // words per row of a slice
#define THREADS_N (BN / TN)
// Padding keeps the rows 16-byte aligned for uvec4 reads and spreads a row's words over banks.
#define W_STRIDE (BM + 4)
#define D_STRIDE (BN + 4)
#define W_WORDS (BM * KW / THREADS)
#if CONV
#define D_WORDS (KW / (THREADS / BN))  // a thread gathers words of one column
#else
#define D_WORDS (BN * KW / THREADS)
#endif

layout(constant_id = 3) const bool W_SIGNED = true;
layout(constant_id = 4) const bool D_SIGNED = false;
layout(constant_id = 5) const bool HAS_DSUM = false;  // some weight zero point is not 0
layout(constant_id = 6) const bool HAS_RESIDUAL = false;
layout(constant_id = 7) const bool HAS_TABLE = false;

layout(std430, binding = 0) readonly buffer Wt { uint w[]; };
#if CONV
layout(std430, binding = 1) readonly buffer X { uint8_t x[]; };
#elif DYNAMIC && !DYNAMIC_BYTES
layout(std430, binding = 1) readonly buffer A { ELEM4 xf[]; };
#else
layout(std430, binding = 1) readonly buffer A { uint a[]; };
#endif
#if REQUANT && !SPLIT_K
layout(std430, binding = 2) writeonly buffer Y { uint8_t y[]; };
#elif DYNAMIC
layout(std430, binding = 2) writeonly buffer Y { ELEM y[]; };
#else
layout(std430, binding = 2) writeonly buffer Y { int y[]; };
#endif
#if DYNAMIC
layout(std430, binding = 3) readonly buffer Range { vec2 range_partial[]; };  // zd_count of them
#else
layout(std430, binding = 3) readonly buffer ZD { int zd[]; };
#endif
layout(std430, binding = 4) readonly buffer Chan { ivec2 chan[]; };
#if DYNAMIC
layout(std430, binding = 5) readonly buffer SW { float sw[]; };
layout(std430, binding = 6) readonly buffer Bias { ELEM bias[]; };
layout(std430, binding = 7) readonly buffer Residual { ELEM residual[]; };  // laid out as y
#define TAPS_BINDING 8
#elif REQUANT && !SPLIT_K
layout(std430, binding = 5) readonly buffer SD { float sd[]; };
layout(std430, binding = 6) readonly buffer SW { float sw[]; };
layout(std430, binding = 7) readonly buffer SY { float sy[]; };
layout(std430, binding = 8) readonly buffer ZY { int zy[]; };
layout(std430, binding = 9) readonly buffer Bias { int bias[]; };
// A fused residual Add (HAS_RESIDUAL; else a placeholder operand and zeros): the other operand,
// laid out as y, and its parameters (quant_packed.glsl's add_residual), then a fused byte table
// (HAS_TABLE).
layout(std430, binding = 10) readonly buffer R { uint8_t residual[]; };
layout(std430, binding = 11) readonly buffer RP { ivec4 rp[3]; uint table_words[64]; };
#define TAPS_BINDING 12
#else
#define TAPS_BINDING 5
#endif
#if CONV && !POINTWISE
// Per depth k (K4 entries): {offset of the tap from the window's corner in x, dy << 16 | dx}
// (quant_packed.cpp), -1 for k >= K: a table read instead of two divisions per byte.
layout(std430, binding = TAPS_BINDING) readonly buffer Taps { ivec2 taps_table[]; };
#endif

layout(push_constant) uniform Params {
  int C, N, K4;  // channels per group, data vectors, padded depth
  int zd_count;  // 1: per tensor; else per data vector (matmul rows), cycling
  int sd_count, sw_count;
  int qmin, qmax;
  int has_bias;
  int k_chunk;  // SPLIT_K: words per slice
#if DYNAMIC
  int has_residual, activation;  // the epilogue after the bias (dynamic_epilogue)
  float alpha, beta;
#endif
#if CONV
  int groups, cin_g, H, W, kh, kw, Ho, Wo, sh, sw, ph, pw, dh, dw;
#endif
} p;

#if COOPMAT
// Row r of a slice at uvec4 r * ROW_VECS: BK bytes, padded by 16 so that the 16 rows of a
// fragment spread over the banks. The fragments' int32 sums: c_tile[channel][vector].
#define ROW_VECS (BK / 16 + 1)
shared uvec4 w_tile[BM * ROW_VECS];
shared uvec4 d_tile[BN * ROW_VECS];
#if !EMULATE
shared int c_tile[BM * BN];
#endif
#define W_AT(r, kw) ((r) * ROW_VECS * 4 + (kw))
#define D_AT(n, kw) ((n) * ROW_VECS * 4 + (kw))
// Unsigned data as signed bytes d - 128: each byte's top bit flipped.
#define STAGED_D(v) (D_SIGNED ? (v) : (v) ^ 0x80808080u)
#define DATA_ZERO(z) (D_SIGNED ? (z) : (z) - 128)
#else
// As uvec4s, so that a thread's TM weights (TN data words) of one k are one 16-byte read.
shared uvec4 w_tile[KW * W_STRIDE / 4];
shared uvec4 d_tile[KW * D_STRIDE / 4];
#define W_AT(r, kw) ((kw) * W_STRIDE + (r))
#define D_AT(n, kw) ((kw) * D_STRIDE + (n))
#define STAGED_D(v) (v)
#define DATA_ZERO(z) (z)
#endif
#define SET_WORD(tile, i, v) tile[(i) >> 2][(i) & 3] = (v)
#define GET_WORD(tile, i) tile[(i) >> 2][(i) & 3]

#if DOT
spirv_instruction(extensions = ["SPV_KHR_integer_dot_product"], capabilities = [6019, 6018],
                  id = 4450) int sdot4x8(int a, int b, spirv_literal int packed_format);
spirv_instruction(extensions = ["SPV_KHR_integer_dot_product"], capabilities = [6019, 6018],
                  id = 4451) uint udot4x8(uint a, uint b, spirv_literal int packed_format);
spirv_instruction(extensions = ["SPV_KHR_integer_dot_product"], capabilities = [6019, 6018],
                  id = 4452) int sudot4x8(int a, int b, spirv_literal int packed_format);
#endif

// The four bytes of `v` as ints, sign-extended when `is_signed`.
ivec4 unpack4(uint v, bool is_signed) {
  ivec4 r;
  if (is_signed)
    for (int i = 0; i < 4; ++i) r[i] = bitfieldExtract(int(v), 8 * i, 8);
  else
    for (int i = 0; i < 4; ++i) r[i] = int(bitfieldExtract(v, 8 * i, 8));
  return r;
}

// The dot product of a weight word and a data word, each read with its signedness.
int dot4(uint wv, uint dv) {
#if DOT
  if (W_SIGNED && D_SIGNED) return sdot4x8(int(wv), int(dv), 0);
  if (!W_SIGNED && !D_SIGNED) return int(udot4x8(wv, dv, 0));
  if (W_SIGNED) return sudot4x8(int(wv), int(dv), 0);
  return sudot4x8(int(dv), int(wv), 0);
#else
  ivec4 a = unpack4(wv, W_SIGNED), b = unpack4(dv, D_SIGNED);
  return a.x * b.x + a.y * b.y + a.z * b.z + a.w * b.w;
#endif
}

// The sum of a data word's four values.
int sum4(uint dv) {
#if DOT
  return D_SIGNED ? sdot4x8(int(dv), 0x01010101, 0) : int(udot4x8(dv, 0x01010101u, 0));
#else
  ivec4 b = unpack4(dv, D_SIGNED);
  return b.x + b.y + b.z + b.w;
#endif
}

uint next_w[W_WORDS];
uint next_d[D_WORDS];
int tid, group, c0, n0, KWORDS;

#if DYNAMIC
float x_scale, x_inverse;
int x_zero;
#define RANGE_LOCAL THREADS
shared vec2 range_tree[THREADS];
#include "quant_range.glsl"

// DynamicQuantizeLinear's scale and zero point, from the range partials (every workgroup
// reduces them itself: there are few, and a separate pass would cost a dispatch).
void dynamic_range() {
  dynamic_params(reduce_range_partials(uint(tid), p.zd_count), x_scale, x_zero);
  x_inverse = 1.0 / x_scale;
}
#endif

#if DYNAMIC && !DYNAMIC_BYTES
// Four floats quantized as quant.comp's QUANTIZE does, packed low byte first. Every workgroup
// quantizes its rows again, so the quotient is v * (1 / scale), which is within 3e-4 of the
// correctly rounded v / scale (|v / scale| <= 255, a few ulp); only where that lands within 2^-8
// of a .5 tie can the rounding differ, and there div_exact decides, as quant.comp does.
uint quantize4(vec4 v) {
  uint r = 0u;
  for (int c = 0; c < 4; ++c) {
    float q = v[c] * x_inverse;
    if (abs(q - floor(q) - 0.5) < 0.00390625) q = div_exact(v[c], x_scale);
    r |= uint(quantize_value(q, x_zero, 0, 255)) << (8 * c);
  }
  return r;
}
#endif

#if CONV
int zd_byte;  // zd as the stored byte: what padding reads
bool n_valid;
#if POINTWISE
int x_pix;
#else
int x_corner, ih0, iw0;
#endif

void decode_column(int n) {
  const int out_hw = p.Ho * p.Wo;
  n_valid = n < p.N;
  const int img = n_valid ? n / out_hw : 0;
  const int pix = n - img * out_hw;
  const int x_base = (img * p.groups + group) * p.cin_g * p.H * p.W;
#if POINTWISE
  x_pix = x_base + pix;
#else
  const int oh = pix / p.Wo;
  ih0 = oh * p.sh - p.ph;
  iw0 = (pix - oh * p.Wo) * p.sw - p.pw;
  x_corner = x_base + ih0 * p.W + iw0;
#endif
}

// Depth k of the thread's column as the stored byte (zd's in the padding and beyond K).
uint im2col_byte(int k) {
#if POINTWISE
  if (!n_valid || k >= p.cin_g) return uint(zd_byte);
  return uint(x[x_pix + k * p.H * p.W]);
#else
  ivec2 t = taps_table[k];
  int ih = ih0 + (t.y >> 16), iw = iw0 + (t.y & 0xffff);
  if (n_valid && t.y >= 0 && uint(ih) < uint(p.H) && uint(iw) < uint(p.W))
    return uint(x[x_corner + t.x]);
  return uint(zd_byte);
#endif
}
#endif

// Loads slice [kw0, kw0 + KW) (in words) of the tile's weights and data into next_w, next_d.
void fetch(int kw0, int kw_end) {
  [[unroll]] for (int i = 0; i < W_WORDS; ++i) {
    int e = tid + i * THREADS;
    int r = e / KW, kw = kw0 + e % KW;
    int c = c0 + r;
    next_w[i] = c < p.C && kw < kw_end ? w[(group * p.C + c) * KWORDS + kw] : 0u;
  }
#if CONV
  [[unroll]] for (int i = 0; i < D_WORDS; ++i) {
    int kw = kw0 + tid / BN + i * (THREADS / BN);
    uint v = 0u;
    if (kw < kw_end) {
      int k = kw * 4;
      v = im2col_byte(k) | im2col_byte(k + 1) << 8 | im2col_byte(k + 2) << 16 |
          im2col_byte(k + 3) << 24;
    }
    next_d[i] = v;
  }
#else
  [[unroll]] for (int i = 0; i < D_WORDS; ++i) {
    int e = tid + i * THREADS;
    int r = e / KW, kw = kw0 + e % KW;
    int n = n0 + r;
#if DYNAMIC && !DYNAMIC_BYTES
    next_d[i] = n < p.N && kw < kw_end ? quantize4(vec4(xf[n * KWORDS + kw])) : 0u;
#else
    next_d[i] = n < p.N && kw < kw_end ? a[n * KWORDS + kw] : 0u;
#endif
  }
#endif
}

void stage() {
  [[unroll]] for (int i = 0; i < W_WORDS; ++i) {
    int e = tid + i * THREADS;
    SET_WORD(w_tile, W_AT(e / KW, e % KW), next_w[i]);
  }
#if CONV
  [[unroll]] for (int i = 0; i < D_WORDS; ++i)
    SET_WORD(d_tile, D_AT(tid % BN, tid / BN + i * (THREADS / BN)), STAGED_D(next_d[i]));
#else
  [[unroll]] for (int i = 0; i < D_WORDS; ++i) {
    int e = tid + i * THREADS;
    SET_WORD(d_tile, D_AT(e / KW, e % KW), STAGED_D(next_d[i]));
  }
#endif
}

#if COOPMAT && EMULATE
int acc_emulated[TM][TN];

// The staged slice's products for the invocation's block, as the fragments would sum them.
void multiply_slice() {
  const int ty = tid / THREADS_N, tx = tid - ty * THREADS_N;
  for (int kw = 0; kw < KW; ++kw)
    for (int i = 0; i < TM; ++i) {
      ivec4 a = unpack4(GET_WORD(w_tile, W_AT(ty * TM + i, kw)), true);
      for (int j = 0; j < TN; ++j) {
        ivec4 b = unpack4(GET_WORD(d_tile, D_AT(tx * TN + j, kw)), true);
        acc_emulated[i][j] += a.x * b.x + a.y * b.y + a.z * b.z + a.w * b.w;
      }
    }
}

void gather_sums(int ty, int tx, inout int acc[TM][TN]) {
  acc = acc_emulated;
}
#elif COOPMAT
#define FRAG_A icoopmatNV<8, gl_ScopeSubgroup, 16, 32>
#define FRAG_B icoopmatNV<8, gl_ScopeSubgroup, 32, COOPMAT>
#define FRAG_C icoopmatNV<32, gl_ScopeSubgroup, 16, COOPMAT>
FRAG_C frag_acc[FM * FN];

// The products of the staged slice, BK / 32 fragment steps.
void multiply_slice() {
  const uint sg = gl_SubgroupID;
  const uint sm = (sg / SG_N) * (BM / SG_M), sn = (sg % SG_N) * (BN / SG_N);
  [[unroll]] for (uint kf = 0; kf < BK / 32; ++kf) {
    FRAG_A fa[FM];
    FRAG_B fb[FN];
    [[unroll]] for (uint i = 0; i < FM; ++i)
      coopMatLoadNV(fa[i], w_tile, (sm + i * 16) * ROW_VECS + kf * 2, ROW_VECS, false);
    [[unroll]] for (uint j = 0; j < FN; ++j)
      coopMatLoadNV(fb[j], d_tile, (sn + j * COOPMAT) * ROW_VECS + kf * 2, ROW_VECS, true);
    [[unroll]] for (uint i = 0; i < FM; ++i)
      [[unroll]] for (uint j = 0; j < FN; ++j)
        frag_acc[i * FN + j] = coopMatMulAddNV(fa[i], fb[j], frag_acc[i * FN + j]);
  }
}

// The fragments into c_tile (after the K loop's last barrier), then the invocation's block.
void gather_sums(int ty, int tx, inout int acc[TM][TN]) {
  const uint sg = gl_SubgroupID;
  const uint sm = (sg / SG_N) * (BM / SG_M), sn = (sg % SG_N) * (BN / SG_N);
  [[unroll]] for (uint i = 0; i < FM; ++i)
    [[unroll]] for (uint j = 0; j < FN; ++j)
      coopMatStoreNV(frag_acc[i * FN + j], c_tile, (sm + i * 16) * BN + sn + j * COOPMAT, BN,
                     false);
  barrier();
  for (int i = 0; i < TM; ++i)
    for (int j = 0; j < TN; ++j) acc[i][j] = c_tile[(ty * TM + i) * BN + tx * TN + j];
}
#endif

void main() {
  tid = int(gl_LocalInvocationID.x);
#if CONV
  const int groups = p.groups;
#else
  const int groups = 1;
#endif
#if SPLIT_K
  const int slice = int(gl_WorkGroupID.z) / groups;
  group = int(gl_WorkGroupID.z) - slice * groups;
#else
  group = int(gl_WorkGroupID.z);
#endif
  c0 = int(gl_WorkGroupID.y) * BM;
  n0 = int(gl_WorkGroupID.x) * BN;
  KWORDS = p.K4 / 4;
#if SPLIT_K
  const int kw_begin = slice * p.k_chunk;
  const int kw_end = min(KWORDS, kw_begin + p.k_chunk);
#else
  const int kw_begin = 0;
  const int kw_end = KWORDS;
#endif
#if CONV
  zd_byte = zd[0] & 0xff;
  decode_column(n0 + tid % BN);
#endif
#if DYNAMIC
  dynamic_range();
#endif
  const int ty = tid / THREADS_N, tx = tid - ty * THREADS_N;
  int acc[TM][TN];
  int dsum[TN];
  for (int i = 0; i < TM; ++i)
    for (int j = 0; j < TN; ++j) acc[i][j] = 0;
  for (int j = 0; j < TN; ++j) dsum[j] = 0;

#if COOPMAT && EMULATE
  for (int i = 0; i < TM; ++i)
    for (int j = 0; j < TN; ++j) acc_emulated[i][j] = 0;
#elif COOPMAT
  [[unroll]] for (uint f = 0; f < FM * FN; ++f) frag_acc[f] = FRAG_C(0);
#endif
  if (kw_begin < kw_end) fetch(kw_begin, kw_end);
  for (int kw0 = kw_begin; kw0 < kw_end; kw0 += KW) {
    stage();
    barrier();
    if (kw0 + KW < kw_end) fetch(kw0 + KW, kw_end);
#if COOPMAT
    multiply_slice();
#else
    [[unroll]] for (int kk = 0; kk < KW; ++kk) {
      uvec4 wv = w_tile[(kk * W_STRIDE + ty * TM) / 4];
      uvec4 dv = d_tile[(kk * D_STRIDE + tx * TN) / 4];
      for (int i = 0; i < TM; ++i)
        for (int j = 0; j < TN; ++j) acc[i][j] += dot4(wv[i], dv[j]);
      if (HAS_DSUM)
        for (int j = 0; j < TN; ++j) dsum[j] += sum4(dv[j]);
    }
#endif
    barrier();
  }
#if COOPMAT
  gather_sums(ty, tx, acc);
#endif

  // Per-tensor data scales (every convolution, most matmuls) give one multiplier per channel.
#if REQUANT && !SPLIT_K
  float multiplier[TM];
  for (int i = 0; i < TM; ++i) {
    int c = group * p.C + min(c0 + ty * TM + i, p.C - 1);
    multiplier[i] = div_exact(sd[0] * sw[c % p.sw_count], sy[0]);
  }
#endif
  for (int j = 0; j < TN; ++j) {
    int n = n0 + tx * TN + j;
    if (n >= p.N) break;
#if CONV
    const int out_hw = p.Ho * p.Wo;
    const int img = n / out_hw;
    const int y_at0 = (img * p.groups * p.C + group * p.C) * out_hw + (n - img * out_hw);
    const int y_step = out_hw;
    const int z = DATA_ZERO(zd[0]);
#else
    const int y_at0 = n * p.C;
    const int y_step = 1;
#if DYNAMIC
    const int z = DATA_ZERO(x_zero);
#else
    const int z = DATA_ZERO(zd[n % p.zd_count]);
#endif
#endif
#if SPLIT_K
    const int y_base = slice * p.N * p.C * groups;
#else
    const int y_base = 0;
#endif
    for (int i = 0; i < TM; ++i) {
      int cg = c0 + ty * TM + i;
      if (cg >= p.C) break;
      int c = group * p.C + cg;
      ivec2 ch = chan[c];
      int partial = corrected_partial(acc[i][j], dsum[j], ch);
      int at = y_base + y_at0 + cg * y_step;
#if SPLIT_K
      // The reduce subtracts zd * sum w with the stored zd: flipped data summed (d - 128) w, so
      // the first slice adds back 128 * sum w (the sum over all slices is what it expects).
      if (COOPMAT != 0 && !D_SIGNED && slice == 0) partial += 128 * ch.x;
      y[at] = partial;
#else
      int sum = finish_sum(partial, z, ch, p.K4);
#if DYNAMIC
      y[at] = ELEM(dynamic_epilogue(
          dynamic_dequant(sum, x_scale, sw[c % p.sw_count], p.has_bias != 0 ? float(bias[c]) : -0.0),
          p.has_residual != 0 ? float(residual[at]) : -0.0, p.activation, p.alpha, p.beta));
#elif REQUANT
      if (p.has_bias != 0) sum += bias[c];
      float m = p.sd_count == 1 ? multiplier[i]
                                : div_exact(sd[n % p.sd_count] * sw[c % p.sw_count], sy[0]);
      int q = requantize(sum, m, zy[0], p.qmin, p.qmax);
      if (HAS_RESIDUAL) q = add_residual(q, uint(residual[at]), rp[0], rp[1], rp[2].xy);
      y[at] = narrow_byte(HAS_TABLE ? TABLE_BYTE(table_words, uint(q) & 0xffu) : uint(q));
#else
      y[at] = sum;
#endif
#endif
    }
  }
}
