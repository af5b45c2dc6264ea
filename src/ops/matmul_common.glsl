// Shared by the matmul kernels. They compute, for each batch index z,
//   C[z, m, n] = act(alpha * sum_k A[z, m, k] * B[z, k, n] + beta * bias[z, m, n]
//                    + residual[z, m, n])
// with every input addressed through element strides from push constants, so transposed and
// broadcast operands (stride 0) need no copies. C is contiguous [batch, M, N].
#include "common.glsl"
#include "activation.glsl"

#define MAX_BATCH 4

// Tensors hold ELEM (float16_t for DTYPE_F16, see common.glsl); arithmetic stays fp32. Split-K
// partials stay fp32 for any dtype: the partial pass writes them as C, the reduce pass reads
// them as A (common.glsl's GEMM_*_ELEM).
// MATMUL_OWN_BUFFERS: the kernel declares its own views of the bindings (matmul_coopmat.comp).
#ifndef MATMUL_OWN_BUFFERS
layout(std430, binding = 0) readonly buffer A { GEMM_IN_ELEM a[]; };
layout(std430, binding = 1) readonly buffer B { ELEM b[]; };
// Without a bias (a residual) the host binds A here and `inputs` keeps it unread.
layout(std430, binding = 2) readonly buffer Bias { ELEM bias[]; };
layout(std430, binding = 3) writeonly buffer C { GEMM_OUT_ELEM c[]; };
// Laid out as C (the result's shape, contiguous): a skip connection added in the epilogue.
layout(std430, binding = 4) readonly buffer Residual { ELEM residual[]; };
#endif

// Bits of p.inputs: which of the epilogue's optional operands are bound.
#define EPILOGUE_BIAS 1
#define EPILOGUE_RESIDUAL 2

layout(push_constant) uniform Params {
  int M, N, K;
  int a_sm, a_sk, b_sk, b_sn, bias_sm, bias_sn;
  int inputs;  // EPILOGUE_* bits
  int activation;  // ACT_* of activation.glsl
  float alpha, beta;
  float act_alpha, act_beta;
  int k_chunk;  // split-K slice depth (see matmul_tiled.comp's SPLIT_K); unused otherwise
  int batch[MAX_BATCH];  // batch dims, outermost first, padded with 1
  int a_sb[MAX_BATCH];
  int b_sb[MAX_BATCH];
  int bias_sb[MAX_BATCH];
} p;

int batch_count() {
  int n = 1;
  for (int d = 0; d < MAX_BATCH; ++d) n *= p.batch[d];
  return n;
}

struct Offsets {
  int a, b, bias, c;
};

Offsets batch_offsets(uint z) {
  Offsets o = Offsets(0, 0, 0, int(z) * p.M * p.N);
  int rem = int(z);
  for (int d = MAX_BATCH - 1; d >= 0; --d) {
    int i = rem % p.batch[d];
    rem /= p.batch[d];
    o.a += i * p.a_sb[d];
    o.b += i * p.b_sb[d];
    o.bias += i * p.bias_sb[d];
  }
  return o;
}

// The (column, row) tile of C this workgroup computes, from a 2-D grid of tiles. Workgroups
// are taken in bands of group_m tile rows, column by column within a band, so the workgroups
// resident at once share A's rows and B's columns in L2; group_m = 1 is the plain row-major
// order of the grid.
uvec2 tile_of_workgroup(uint group_m) {
  const uint cols = gl_NumWorkGroups.x, rows = gl_NumWorkGroups.y;
  const uint id = gl_WorkGroupID.y * cols + gl_WorkGroupID.x;
  const uint band = id / (group_m * cols);
  const uint first = band * group_m;
  const uint height = min(rows - first, group_m);
  const uint in_band = id - band * group_m * cols;
  return uvec2(in_band / height, first + in_band % height);
}

#ifndef MATMUL_OWN_BUFFERS
void store_output(Offsets o, int m, int n, float acc) {
  float y = p.alpha * acc;
  if ((p.inputs & EPILOGUE_BIAS) != 0)
    y += p.beta * float(bias[o.bias + m * p.bias_sm + n * p.bias_sn]);
  const int at = o.c + m * p.N + n;
  if ((p.inputs & EPILOGUE_RESIDUAL) != 0) y += float(residual[at]);
  c[at] = GEMM_OUT_ELEM(activate(p.activation, y, p.act_alpha, p.act_beta));
}
#endif
