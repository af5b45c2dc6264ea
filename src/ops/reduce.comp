#version 450
// y[o] = reduction of x over the reduced dims, for each combination o of the kept dims. The
// host merges adjacent dims of the same kind, so both index spaces are short (rank <= 3 for
// rank-6 inputs); each is walked through its own shape and strides. Either one workgroup per
// output with a shared-memory tree, or (OUTPUT_PER_THREAD) one invocation per output.
// OP_* and DTYPE_* come from defines (see reduce.cmake).
#extension GL_EXT_control_flow_attributes : require
#include "common.glsl"

layout(std430, binding = 0) readonly buffer X { ELEM x[]; };
layout(std430, binding = 1) writeonly buffer Y { ELEM y[]; };
layout(push_constant) uniform Params {
  uint n_out;
  uint n_red;
  uint kept_rank;
  uint red_rank;
  uint kept_shape[MAX_RANK];
  uint kept_stride[MAX_RANK];
  uint red_shape[MAX_RANK];
  uint red_stride[MAX_RANK];
} p;
layout(constant_id = 3) const bool OUTPUT_PER_THREAD = false;
layout(constant_id = 4) const bool UNROLLED = true;  // see accumulate()

shared T partial[gl_WorkGroupSize.x];

#ifdef DTYPE_FLOAT
#define LOWEST uintBitsToFloat(0xff800000u)  // -inf
#define HIGHEST uintBitsToFloat(0x7f800000u)
#elif defined(DTYPE_I64)
#define LOWEST (-9223372036854775807l - 1l)
#define HIGHEST 9223372036854775807l
#else
#define LOWEST (-2147483647 - 1)
#define HIGHEST 2147483647
#endif

#if OP_MAX
#define IDENTITY LOWEST
#elif OP_MIN
#define IDENTITY HIGHEST
#elif OP_PROD
#define IDENTITY T(1)
#else
#define IDENTITY T(0)
#endif

// Float max and min propagate NaN (np.maximum.reduce); GLSL's are undefined for NaN.
#ifdef DTYPE_FLOAT
#define MAX_OF max_nan
#define MIN_OF min_nan
#else
#define MAX_OF max
#define MIN_OF min
#endif

T combine(T a, T b) {
#if OP_MAX
  return MAX_OF(a, b);
#elif OP_MIN
  return MIN_OF(a, b);
#elif OP_PROD
  return a * b;
#else
  return a + b;
#endif
}

// The term each element contributes; `shift` is LogSumExp's maximum.
T term(T v, T shift) {
#if OP_L1
  return abs(v);
#elif OP_L2 || OP_SUM_SQUARE
  return v * v;
#elif OP_LOG_SUM_EXP
  return exp(v - shift);
#else
  return v;
#endif
}

T finish(T acc, T shift) {
#if OP_MEAN
  return acc / float(p.n_red);
#elif OP_L2
  return sqrt(acc);
#elif OP_LOG_SUM_EXP
  return shift + log(acc);
#else
  return acc;
#endif
}

uint kept_offset(uint o) {
  uint offset = 0;
  for (int d = int(p.kept_rank) - 1; d >= 0; --d) {
    offset += (o % p.kept_shape[d]) * p.kept_stride[d];
    o /= p.kept_shape[d];
  }
  return offset;
}

uint reduced_offset(uint r) {
  uint offset = 0;
  for (int d = int(p.red_rank) - 1; d >= 0; --d) {
    offset += (r % p.red_shape[d]) * p.red_stride[d];
    r /= p.red_shape[d];
  }
  return offset;
}

T accumulate_one(T acc, T v, bool max_pass, T shift) {
  return max_pass ? MAX_OF(acc, v) : combine(acc, term(v, shift));
}

// This invocation's share of the reduction: elements first, first + step, ...; with `max_pass`
// their maximum (LogSumExp's first pass), else the op's combination of their terms. UNROLLED
// loads 8 elements before combining them (in the same order): one load per loop trip leaves a
// single load in flight, and a long row (a squeeze-excite pool of 112x112 pixels: 49 per
// invocation) waits out the memory latency once per element.
T accumulate(uint base, uint first, uint step, bool max_pass, T shift) {
  T acc = max_pass ? LOWEST : IDENTITY;
  uint r = first;
  if (UNROLLED) {
    for (; r + 7 * step < p.n_red; r += 8 * step) {
      T v[8];
      [[unroll]] for (uint u = 0; u < 8; ++u) v[u] = T(x[base + reduced_offset(r + u * step)]);
      [[unroll]] for (uint u = 0; u < 8; ++u) acc = accumulate_one(acc, v[u], max_pass, shift);
    }
  }
  for (; r < p.n_red; r += step)
    acc = accumulate_one(acc, T(x[base + reduced_offset(r)]), max_pass, shift);
  return acc;
}

// Combines every invocation's `v`; all invocations get the result. The workgroup size is a
// power of two.
T workgroup_reduce(T v, bool max_pass) {
  uint t = gl_LocalInvocationID.x;
  partial[t] = v;
  barrier();
  for (uint s = gl_WorkGroupSize.x / 2; s > 0; s >>= 1) {
    if (t < s) {
      partial[t] = max_pass ? MAX_OF(partial[t], partial[t + s]) : combine(partial[t], partial[t + s]);
    }
    barrier();
  }
  T r = partial[0];
  barrier();  // the next reduction overwrites `partial`
  return r;
}

void main() {
  uint o, first, step;
  if (OUTPUT_PER_THREAD) {
    o = linear_index();
    first = 0;
    step = 1;
  } else {
    o = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
    first = gl_LocalInvocationID.x;
    step = gl_WorkGroupSize.x;
  }
  if (o >= p.n_out) return;  // uniform across a workgroup in the shared-memory mode
  uint base = kept_offset(o);

  T shift = T(0);
#if OP_LOG_SUM_EXP
  shift = accumulate(base, first, step, true, T(0));
  if (!OUTPUT_PER_THREAD) shift = workgroup_reduce(shift, true);
  // An infinite maximum: exp(inf - inf) would be NaN; any finite shift gives the right +-inf
  // (all -inf, or an empty reduction: log(0); a +inf element: log(inf)). A NaN shift stays.
  if (isinf(shift)) shift = 0.0;
#endif
  T acc = accumulate(base, first, step, false, shift);
  if (!OUTPUT_PER_THREAD) acc = workgroup_reduce(acc, false);
  if (OUTPUT_PER_THREAD || gl_LocalInvocationID.x == 0) y[o] = ELEM(finish(acc, shift));
}
