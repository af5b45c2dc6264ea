#version 450
#extension GL_EXT_control_flow_attributes : require
// GEMV-style kernel for small M (batch-1 Linear, decoding): a workgroup computes ROWS rows of C
// for a strip of columns, reading that strip of B once for all rows. The threads of a column
// split K; their partial sums meet through subgroupAdd (SUBGROUP_REDUCE, one subgroup per
// column) or a shared-memory tree over the workgroup's K-lanes.
#ifdef SUBGROUP_REDUCE
#extension GL_KHR_shader_subgroup_arithmetic : require
#endif
#include "matmul_common.glsl"

layout(constant_id = 3) const uint ROWS = 4;
// B contiguous along K (Linear's [N, K] weight): a column's threads walk K side by side.
// Otherwise neighbouring threads take neighbouring columns and each column's threads stride K.
layout(constant_id = 4) const bool K_FAST = true;
// K_FAST with every column starting at a multiple of 4 elements and K a multiple of 4 (the host
// checks): lanes read B four elements at a time, through a second view of binding 1.
layout(constant_id = 6) const bool VEC4_B = false;
layout(std430, binding = 1) readonly buffer B4 { ELEM4 b4[]; };

float acc[ROWS];

// Partial dot products of rows m0 .. m0+ROWS-1 with column n over k = lane, lane + lanes, ...
// Rows past M read row M-1 (valid memory) and are dropped at the store, which keeps the inner
// loop free of branches. B is read UNROLL steps at a time, all loads issued before the first
// use: one step per loop trip would leave a single load in flight per lane, and a batch-1
// Linear would wait out the memory latency once per step (the loop carries no other work).
const int UNROLL = 8;

void accumulate_step(Offsets o, int m0, int k, float bk) {
  for (uint r = 0; r < ROWS; ++r) {
    int m = min(m0 + int(r), p.M - 1);
    acc[r] = fma(T(a[o.a + m * p.a_sm + k * p.a_sk]), bk, acc[r]);
  }
}

void accumulate_vec4(Offsets o, int m0, int col, int lane, int lanes) {
  const int col4 = col / 4, k4_end = p.K / 4;
  int k4 = lane;
  for (; k4 + (UNROLL - 1) * lanes < k4_end; k4 += UNROLL * lanes) {
    vec4 bk[UNROLL];
    [[unroll]] for (int u = 0; u < UNROLL; ++u) bk[u] = vec4(b4[col4 + k4 + u * lanes]);
    [[unroll]] for (int u = 0; u < UNROLL; ++u)
      [[unroll]] for (int j = 0; j < 4; ++j)
        accumulate_step(o, m0, 4 * (k4 + u * lanes) + j, bk[u][j]);
  }
  for (; k4 < k4_end; k4 += lanes) {
    vec4 bk = vec4(b4[col4 + k4]);
    [[unroll]] for (int j = 0; j < 4; ++j) accumulate_step(o, m0, 4 * k4 + j, bk[j]);
  }
}

void accumulate(Offsets o, int m0, int n, int lane, int lanes) {
  for (uint r = 0; r < ROWS; ++r) acc[r] = 0.0;
  const int col = o.b + n * p.b_sn;
  if (VEC4_B) {
    accumulate_vec4(o, m0, col, lane, lanes);
    return;
  }
  int k = lane;
  for (; k + (UNROLL - 1) * lanes < p.K; k += UNROLL * lanes) {
    float bk[UNROLL];
    [[unroll]] for (int u = 0; u < UNROLL; ++u) bk[u] = T(b[col + (k + u * lanes) * p.b_sk]);
    [[unroll]] for (int u = 0; u < UNROLL; ++u) accumulate_step(o, m0, k + u * lanes, bk[u]);
  }
  for (; k < p.K; k += lanes) accumulate_step(o, m0, k, T(b[col + k * p.b_sk]));
}

void store_rows(Offsets o, int m0, int n, uint r, float sum) {
  if (m0 + int(r) < p.M) store_output(o, m0 + int(r), n, sum);
}

#ifdef SUBGROUP_REDUCE
// Chosen only when B is contiguous along K, so a subgroup's lanes read neighbouring elements.
// Columns per workgroup; subgroups take them in turn, so the result does not depend on the
// subgroup size the driver picks.
layout(constant_id = 5) const uint COLS = 8;

void main() {
  Offsets o = batch_offsets(gl_WorkGroupID.z);
  int m0 = int(gl_WorkGroupID.y * ROWS);
  for (uint col = gl_SubgroupID; col < COLS; col += gl_NumSubgroups) {
    int n = int(gl_WorkGroupID.x * COLS + col);
    if (n >= p.N) return;
    accumulate(o, m0, n, int(gl_SubgroupInvocationID), int(gl_SubgroupSize));
    for (uint r = 0; r < ROWS; ++r) {
      float sum = subgroupAdd(acc[r]);
      if (subgroupElect()) store_rows(o, m0, n, r, sum);
    }
  }
}
#else
const uint THREADS = gl_WorkGroupSize.x * gl_WorkGroupSize.y;
const uint LANES = K_FAST ? gl_WorkGroupSize.x : gl_WorkGroupSize.y;  // threads per column
const uint COLS = K_FAST ? gl_WorkGroupSize.y : gl_WorkGroupSize.x;
shared float partial[ROWS * THREADS];

void main() {
  Offsets o = batch_offsets(gl_WorkGroupID.z);
  int m0 = int(gl_WorkGroupID.y * ROWS);
  uint lane = K_FAST ? gl_LocalInvocationID.x : gl_LocalInvocationID.y;
  uint col = K_FAST ? gl_LocalInvocationID.y : gl_LocalInvocationID.x;
  int n = int(gl_WorkGroupID.x * COLS + col);
  bool live = n < p.N;
  // Dead columns still join every barrier, contributing zeros.
  for (uint r = 0; r < ROWS; ++r) acc[r] = 0.0;
  if (live) accumulate(o, m0, n, int(lane), int(LANES));
  uint slot = col * LANES + lane;
  for (uint r = 0; r < ROWS; ++r) partial[r * THREADS + slot] = acc[r];
  barrier();
  for (uint s = LANES / 2; s > 0; s >>= 1) {
    if (lane < s)
      for (uint r = 0; r < ROWS; ++r) partial[r * THREADS + slot] += partial[r * THREADS + slot + s];
    barrier();
  }
  if (lane == 0 && live)
    for (uint r = 0; r < ROWS; ++r) store_rows(o, m0, n, r, partial[r * THREADS + slot]);
}
#endif
