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
// computes a BM x BN tile, each subgroup FM x FN fragments. BK-deep slices of W and im2col(X)
// are gathered element by element (any size: edges load zeros) into shared memory, the next
// slice into registers while the current one feeds the tensor cores. Each result fragment
// goes through shared memory, where the subgroup's lanes apply the epilogue and store the
// elements inside Y.
#include "common.glsl"
#include "conv_common.glsl"
#include "conv_im2col.glsl"

const int BM = SG_M * 16 * FM;
const int BN = SG_N * 16 * FN;
const int BK = 32;
const int THREADS = SG_M * SG_N * 32;
// Rows padded by 16 bytes: the 16 rows of a fragment load spread over the banks.
const int A_ROW = BK + 8;
const int B_ROW = BN + 8;
const int A_LOADS = BM * BK / THREADS;
const int B_LOADS = BK * BN / THREADS;  // rows tid / BN + i * (THREADS / BN) of column tid % BN
shared float16_t As[BM * A_ROW];
shared float16_t Bs[BK * B_ROW];
shared float Cs[SG_M * SG_N * 256];  // one fp32 fragment per subgroup, for the epilogue

float16_t ra[A_LOADS];
float16_t rb[B_LOADS];
int tid, K, w_base, m_rows;

void fetch(int k0, int k_end) {
  [[unroll]] for (int i = 0; i < A_LOADS; ++i) {
    int e = tid + i * THREADS;
    int r = e / BK;
    int k = k0 + e - r * BK;
    ra[i] = r < m_rows && k < k_end ? w[w_base + r * K + k] : float16_t(0.0);
  }
  // Each element decoded on its own: the cursor of conv.comp (im2col_next) made this kernel
  // 3.4x slower on the H200 (resnet18 fp16 1.00 -> 3.41 ms), while it sped conv.comp up.
  [[unroll]] for (int i = 0; i < B_LOADS; ++i) {
    int k = k0 + tid / BN + i * (THREADS / BN);
    rb[i] = float16_t(n_valid && k < k_end ? im2col(k) : 0.0);
  }
}

void stash() {
  [[unroll]] for (int i = 0; i < A_LOADS; ++i) {
    int e = tid + i * THREADS;
    int r = e / BK;
    As[r * A_ROW + e - r * BK] = ra[i];
  }
  [[unroll]] for (int i = 0; i < B_LOADS; ++i)
    Bs[(tid / BN + i * (THREADS / BN)) * B_ROW + tid % BN] = rb[i];
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
  im2col_column(n0 + tid % BN, group);
  K = p.in_c_g * taps;
  const int out_vol = p.out_d * p.out_h * p.out_w;
  const int N = p.batch * out_vol;
#if SPLIT_K
  const int k_begin = slice * p.k_chunk;
  const int k_end = min(K, k_begin + p.k_chunk);
  const int y_base = slice * p.batch * p.out_c * out_vol;
#else
  const int k_begin = 0;
  const int k_end = K;
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

  if (k_begin < k_end) fetch(k_begin, k_end);
  for (int k0 = k_begin; k0 < k_end; k0 += BK) {
    stash();
    barrier();
    if (k0 + BK < k_end) fetch(k0 + BK, k_end);
    [[unroll]] for (int kf = 0; kf < BK / 16; ++kf) {
      [[unroll]] for (int i = 0; i < FM; ++i)
        coopMatLoadNV(fa[i], As, uint((sm + i * 16) * A_ROW + kf * 16), uint(A_ROW), false);
      [[unroll]] for (int j = 0; j < FN; ++j)
        coopMatLoadNV(fb[j], Bs, uint(kf * 16 * B_ROW + sn + j * 16), uint(B_ROW), false);
      [[unroll]] for (int i = 0; i < FM; ++i)
        [[unroll]] for (int j = 0; j < FN; ++j)
          acc[i * FN + j] = coopMatMulAddNV(fa[i], fb[j], acc[i * FN + j]);
    }
    barrier();  // every subgroup is done with the slice before the next one is stashed
  }

  [[unroll]] for (int i = 0; i < FM; ++i)
    [[unroll]] for (int j = 0; j < FN; ++j) {
      coopMatStoreNV(acc[i * FN + j], Cs, sg * 256, 16, false);
      subgroupMemoryBarrierShared();
      subgroupBarrier();
      for (uint e = gl_SubgroupInvocationID; e < 256; e += gl_SubgroupSize) {
        int m = m0 + sm + i * 16 + int(e / 16), n = n0 + sn + j * 16 + int(e % 16);
        if (m >= p.out_c_g || n >= N) continue;
        int co = group * p.out_c_g + m;
        int s = n / out_vol;
        int at = y_base + (s * p.out_c + co) * out_vol + (n - s * out_vol);
        float v = Cs[sg * 256 + e];
#if SPLIT_K
        y[at] = v;
#else
        y[at] = ELEM(epilogue(v, co, at));
#endif
      }
      subgroupBarrier();  // every lane has read the fragment before the next one lands
    }
}
