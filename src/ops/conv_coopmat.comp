#version 450
#extension GL_NV_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_EXT_control_flow_attributes : require
#extension GL_KHR_shader_subgroup_basic : require
// Convolution as an implicit GEMM on tensor cores (GL_NV_cooperative_matrix, 16x16x16 fp16
// fragments, fp32 accumulators), for float16 tensors: the contract, push constants, grid and
// epilogue of conv.comp (Y[m][n] = sum_k W[m][k] im2col(X)[k][n] per group; SPLIT_K writes
// float32 partials for conv_splitk_reduce.comp). A workgroup of SG_M x SG_N subgroups (of 32)
// computes a BM x BN tile, each subgroup FM x FN fragments.
//
// BK-deep slices of W and im2col(X) are staged in shared memory in 8-half (16-byte) vectors,
// double-buffered: the next slice is loaded into registers while the current one feeds the
// tensor cores, one barrier a slice. Each thread owns 8 consecutive im2col columns (output
// pixels) for the whole K walk, so their pixel decoding happens once, and a row's channel and
// taps once per 8 elements (the earlier kernel divided for every element; on the H200 it lost
// to the fp32-arithmetic conv.comp). Where the 8 pixels read 8 consecutive inputs (pointwise,
// or stride-1 pixels of one output row with the window inside the row) and the address is
// aligned, they come in one 16-byte or two 8-byte loads; elsewhere (edges, padding, strides,
// odd sizes) element by element. Each result fragment goes through shared memory, where the
// subgroup's lanes apply the epilogue and store the elements inside Y.
#include "common.glsl"
#include "conv_common.glsl"

// Vector views of X and W (the same bindings) for the aligned loads; tensors start 16-byte
// aligned.
layout(std430, binding = 0) readonly buffer Xv4 { uvec4 xv4[]; };
layout(std430, binding = 0) readonly buffer Xv2 { uvec2 xv2[]; };
layout(std430, binding = 1) readonly buffer Wv4 { uvec4 wv4[]; };
layout(std430, binding = 3) writeonly buffer Yv4 { uvec4 yv4[]; };

// Knob conv.tc_vec_store: each lane applies the epilogue to 8 consecutive pixels of one row of
// the fragment and stores them as one 16-byte vector (two for float32 partials) where they lie
// in one image at an aligned address; off, the lanes walk the fragment element by element.
layout(constant_id = 5) const bool VEC_STORE = false;

const int BM = SG_M * 16 * FM;
const int BN = SG_N * 16 * FN;
const int BK = 32;
const int THREADS = SG_M * SG_N * 32;
// uvec4 per shared row, padded by one so the 16 rows of a fragment load spread over the banks.
const int A_ROW = BK / 8 + 1;
const int B_ROW = BN / 8 + 1;
const int A_LOADS = BM * BK / 8 / THREADS;
const int B_GROUPS = BN / 8;               // 8-column groups in a row of the B slice
const int B_STEP = THREADS / B_GROUPS;     // rows between one thread's B loads
const int B_LOADS = BK / B_STEP;
shared uvec4 As[2 * BM * A_ROW];
shared uvec4 Bs[2 * BK * B_ROW];
// The epilogue stages each subgroup's fp32 fragment (64 uvec4) in As, free after the K loop.
const int FRAGMENT = 16 * 16 / 4;

uvec4 ra[A_LOADS];
uvec4 rb[B_LOADS];
int tid, K, w_base, m_rows, k_end, taps, in_vol;

// The thread's 8 columns: X offset of the column's image and group (pointwise: plus its pixel;
// -1 past N); otherwise the window origin, NO_PIXEL past N so every bounds check fails.
const int NO_PIXEL = -(1 << 29);
int col_x[8];
#if !POINTWISE
int col_h[8], col_w[8];
#if CONV3D
int col_d[8];
#endif
#endif
// The 8 columns read consecutive X elements (one image; for windows: one output row, stride 1).
bool run;

void setup_columns(int n_first, int group) {
  const int out_hw = p.out_h * p.out_w;
  const int out_vol = p.out_d * out_hw;
  const int N = p.batch * out_vol;
  run = true;
  int img0 = 0, row0 = 0;
  [[unroll]] for (int j = 0; j < 8; ++j) {
    const int n = n_first + j;
    const bool valid = n < N;
    const int img = valid ? n / out_vol : 0;
    const int pix = n - img * out_vol;
    const int base = (img * p.in_c + group * p.in_c_g) * in_vol;
#if POINTWISE
    col_x[j] = valid ? base + pix : -1;
    if (j == 0) img0 = img;
    run = run && valid && img == img0;
#else
    const int od = pix / out_hw;
    const int pix_hw = pix - od * out_hw;
    const int oh = pix_hw / p.out_w;
    const int ow = pix_hw - oh * p.out_w;
    col_x[j] = base;
    col_h[j] = valid ? oh * p.stride_h - p.pad_t : NO_PIXEL;
    col_w[j] = ow * p.stride_w - p.pad_l;
#if CONV3D
    col_d[j] = od * p.stride_d - p.pad_f;
#endif
    const int row = img * out_vol + od * out_hw + oh * p.out_w;  // the output row's first n
    if (j == 0) row0 = row;
    run = run && valid && row == row0;
#endif
  }
#if !POINTWISE
  run = run && p.stride_w == 1;
#endif
}

uvec4 pack8(float16_t h[8]) {
  return uvec4(packFloat2x16(f16vec2(h[0], h[1])), packFloat2x16(f16vec2(h[2], h[3])),
               packFloat2x16(f16vec2(h[4], h[5])), packFloat2x16(f16vec2(h[6], h[7])));
}

// Eight consecutive X elements from `at`, with the widest load its alignment allows.
bool load_run(int at, out uvec4 v) {
  if ((at & 7) == 0) {
    v = xv4[at >> 3];
    return true;
  }
  if ((at & 3) == 0) {
    v = uvec4(xv2[at >> 2], xv2[(at >> 2) + 1]);
    return true;
  }
  return false;
}

// Row k of im2col(X) at the thread's 8 columns (zeros past the slice, in padding, past N).
uvec4 load_b(int k) {
  uvec4 v = uvec4(0);
  if (k >= k_end) return v;
  float16_t h[8];
#if POINTWISE
  const int off = k * in_vol;
  if (run && load_run(col_x[0] + off, v)) return v;
  [[unroll]] for (int j = 0; j < 8; ++j) {
    h[j] = float16_t(0.0);
    if (col_x[j] >= 0) h[j] = x[col_x[j] + off];
  }
#else
  const int ci = k / taps;
  int tap = k - ci * taps;
#if CONV3D
  const int k_hw = p.k_h * p.k_w;
  const int kd = tap / k_hw;
  tap -= kd * k_hw;
  const int dd = kd * p.dil_d;
#endif
  const int kh = tap / p.k_w;
  const int dh = kh * p.dil_h, dw = (tap - kh * p.k_w) * p.dil_w;
  const int plane = ci * in_vol;
  if (run) {
    const int ih = col_h[0] + dh, iw = col_w[0] + dw;
#if CONV3D
    const int id = col_d[0] + dd;
    const bool depth_in = uint(id) < uint(p.in_d);
#else
    const int id = 0;
    const bool depth_in = true;
#endif
    if (depth_in && uint(ih) < uint(p.in_h) && iw >= 0 && iw + 7 < p.in_w &&
        load_run(col_x[0] + plane + (id * p.in_h + ih) * p.in_w + iw, v))
      return v;
  }
  [[unroll]] for (int j = 0; j < 8; ++j) {
    const int ih = col_h[j] + dh, iw = col_w[j] + dw;
#if CONV3D
    const int id = col_d[j] + dd;
    const bool depth_in = uint(id) < uint(p.in_d);
#else
    const int id = 0;
    const bool depth_in = true;
#endif
    h[j] = float16_t(0.0);
    if (depth_in && uint(ih) < uint(p.in_h) && uint(iw) < uint(p.in_w))
      h[j] = x[col_x[j] + plane + (id * p.in_h + ih) * p.in_w + iw];
  }
#endif
  return pack8(h);
}

// Y's element `at` (column n of the GEMM, channel co): the epilogue applied, or the raw
// partial sum under SPLIT_K.
void store_one(int at, int co, float v) {
#if SPLIT_K
  y[at] = v;
#else
  y[at] = ELEM(epilogue(v, co, at));
#endif
}

// Fragment row m of channel co, columns [n, n + 8), values in As from `from` (float32s);
// n_end: N.
void store8(int m, int co, int n, int n_end, int y_base, int out_vol, uint from) {
  const int s = n / out_vol;
  const int at = y_base + (s * p.out_c + co) * out_vol + (n - s * out_vol);
  float v[8];
  [[unroll]] for (int t = 0; t < 8; ++t)
    v[t] = uintBitsToFloat(As[from + uint(t) / 4][t % 4]);
#if SPLIT_K
  const int align = 3;  // 16 bytes in elements, minus one
#else
  const int align = 7;
#endif
  if (n + 7 < n_end && (n + 7) / out_vol == s && (at & align) == 0) {
#if SPLIT_K
    yv4[at >> 2] = floatBitsToUint(vec4(v[0], v[1], v[2], v[3]));
    yv4[(at >> 2) + 1] = floatBitsToUint(vec4(v[4], v[5], v[6], v[7]));
#else
    float16_t h[8];
    [[unroll]] for (int t = 0; t < 8; ++t) h[t] = float16_t(epilogue(v[t], co, at + t));
    yv4[at >> 3] = pack8(h);
#endif
    return;
  }
  [[unroll]] for (int t = 0; t < 8; ++t) {
    const int nt = n + t;
    if (nt >= n_end) break;
    const int st = nt / out_vol;
    store_one(y_base + (st * p.out_c + co) * out_vol + (nt - st * out_vol), co, v[t]);
  }
}

// Weight row r, K columns [k, k + 8).
uvec4 load_a(int r, int k) {
  if (r >= m_rows || k >= k_end) return uvec4(0);
  const int at = w_base + r * K + k;
  if ((K & 7) == 0) return wv4[at >> 3];  // k and k_end are multiples of 8 then
  float16_t h[8];
  [[unroll]] for (int e = 0; e < 8; ++e) {
    h[e] = float16_t(0.0);
    if (k + e < k_end) h[e] = w[at + e];
  }
  return pack8(h);
}

void fetch(int k0) {
  [[unroll]] for (int l = 0; l < A_LOADS; ++l) {
    const int i = tid + l * THREADS;
    ra[l] = load_a(i / (BK / 8), k0 + (i % (BK / 8)) * 8);
  }
  [[unroll]] for (int l = 0; l < B_LOADS; ++l) rb[l] = load_b(k0 + tid / B_GROUPS + l * B_STEP);
}

void stash(int buf) {
  [[unroll]] for (int l = 0; l < A_LOADS; ++l) {
    const int i = tid + l * THREADS;
    As[(buf * BM + i / (BK / 8)) * A_ROW + i % (BK / 8)] = ra[l];
  }
  [[unroll]] for (int l = 0; l < B_LOADS; ++l)
    Bs[(buf * BK + tid / B_GROUPS + l * B_STEP) * B_ROW + tid % B_GROUPS] = rb[l];
}

void main() {
  tid = int(gl_LocalInvocationIndex);
#if SPLIT_K
  const int groups = p.in_c / p.in_c_g;
  const int slice = int(gl_WorkGroupID.z) / groups;
  const int group = int(gl_WorkGroupID.z) - slice * groups;
#else
  const int group = int(gl_WorkGroupID.z);
#endif
  const int m0 = int(gl_WorkGroupID.y) * BM;
  const int n0 = int(gl_WorkGroupID.x) * BN;
  taps = p.k_d * p.k_h * p.k_w;
  in_vol = p.in_d * p.in_h * p.in_w;
  K = p.in_c_g * taps;
  setup_columns(n0 + (tid % B_GROUPS) * 8, group);
  const int out_vol = p.out_d * p.out_h * p.out_w;
  const int N = p.batch * out_vol;
#if SPLIT_K
  const int k_begin = slice * p.k_chunk;
  k_end = min(K, k_begin + p.k_chunk);
  const int y_base = slice * p.batch * p.out_c * out_vol;
#else
  const int k_begin = 0;
  k_end = K;
  const int y_base = 0;
#endif
  m_rows = min(BM, p.out_c_g - m0);
  w_base = (group * p.out_c_g + m0) * K;

  const uint sg = gl_SubgroupID;
  const int sm = int(sg / SG_N) * 16 * FM;  // the subgroup's block within the tile
  const int sn = int(sg % SG_N) * 16 * FN;
  fcoopmatNV<32, gl_ScopeSubgroup, 16, 16> acc[FM * FN];
  [[unroll]] for (int i = 0; i < FM * FN; ++i)
    acc[i] = fcoopmatNV<32, gl_ScopeSubgroup, 16, 16>(0.0);
  fcoopmatNV<16, gl_ScopeSubgroup, 16, 16> fa[FM];
  fcoopmatNV<16, gl_ScopeSubgroup, 16, 16> fb[FN];

  if (k_begin < k_end) {
    fetch(k_begin);
    stash(0);
  }
  barrier();
  int buf = 0;
  for (int k0 = k_begin; k0 < k_end; k0 += BK) {
    const bool more = k0 + BK < k_end;
    if (more) fetch(k0 + BK);
    [[unroll]] for (int kf = 0; kf < BK / 16; ++kf) {
      [[unroll]] for (int i = 0; i < FM; ++i)
        coopMatLoadNV(fa[i], As, uint((buf * BM + sm + i * 16) * A_ROW + kf * 2), uint(A_ROW),
                      false);
      [[unroll]] for (int j = 0; j < FN; ++j)
        coopMatLoadNV(fb[j], Bs, uint((buf * BK + kf * 16) * B_ROW + (sn + j * 16) / 8),
                      uint(B_ROW), false);
      [[unroll]] for (int i = 0; i < FM; ++i)
        [[unroll]] for (int j = 0; j < FN; ++j)
          acc[i * FN + j] = coopMatMulAddNV(fa[i], fb[j], acc[i * FN + j]);
    }
    // The other buffer was last read before the previous barrier.
    if (more) stash(buf ^ 1);
    barrier();
    buf ^= 1;
  }

  [[unroll]] for (int i = 0; i < FM; ++i)
    [[unroll]] for (int j = 0; j < FN; ++j) {
      coopMatStoreNV(acc[i * FN + j], As, sg * FRAGMENT, 16 / 4, false);
      subgroupMemoryBarrierShared();
      subgroupBarrier();
      if (VEC_STORE) {
        // 32 lanes x 8 = the 16 x 16 fragment: lane l takes row l / 2, columns (l % 2) * 8...
        const uint l = gl_SubgroupInvocationID;
        const int m = m0 + sm + i * 16 + int(l / 2);
        if (m < p.out_c_g)
          store8(m, group * p.out_c_g + m, n0 + sn + j * 16 + int(l % 2) * 8, N, y_base,
                 out_vol, sg * FRAGMENT + l * 2);
        subgroupBarrier();
        continue;
      }
      for (uint e = gl_SubgroupInvocationID; e < 256; e += gl_SubgroupSize) {
        int m = m0 + sm + i * 16 + int(e / 16), n = n0 + sn + j * 16 + int(e % 16);
        if (m >= p.out_c_g || n >= N) continue;
        int co = group * p.out_c_g + m;
        int s = n / out_vol;
        int at = y_base + (s * p.out_c + co) * out_vol + (n - s * out_vol);
        store_one(at, co, uintBitsToFloat(As[sg * FRAGMENT + e / 4][e % 4]));
      }
      subgroupBarrier();  // every lane has read the fragment before the next one lands
    }
}
