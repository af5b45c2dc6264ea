#version 450
#extension GL_EXT_control_flow_attributes : require
// c = a OP b with NumPy broadcasting. OP and T come from defines (see src/ops/binary.cmake).
#include "common.glsl"

#ifdef VEC4
// Same-shape operands, n divisible by 4: no index arithmetic, 16-byte loads and stores.
#if defined(DTYPE_I32)
#define T4 ivec4
#elif defined(MATH_F16)
#define T4 f16vec4
#else
#define T4 vec4
#endif
layout(std430, binding = 0) readonly buffer A { ELEM4 a[]; };
layout(std430, binding = 1) readonly buffer B { ELEM4 b[]; };
layout(std430, binding = 2) writeonly buffer C { ELEM4 c[]; };
#else
layout(std430, binding = 0) readonly buffer A { ELEM a[]; };
layout(std430, binding = 1) readonly buffer B { ELEM b[]; };
layout(std430, binding = 2) writeonly buffer C { ELEM c[]; };
#endif
layout(push_constant) uniform Params {
  int n;
  int rank;
  int shape[MAX_RANK];
  int stride_a[MAX_RANK];
  int stride_b[MAX_RANK];
} p;

T apply(T x, T y) {
#if OP_ADD
  return x + y;
#elif OP_SUB
  return x - y;
#elif OP_MUL
  return x * y;
#elif OP_DIV
  return x / y;
#elif OP_MAX
  #ifdef DTYPE_FLOAT
  return max_nan(x, y);  // NaN in either operand gives NaN, as np.maximum
  #else
  return max(x, y);
  #endif
#elif OP_MIN
  #ifdef DTYPE_FLOAT
  return min_nan(x, y);
  #else
  return min(x, y);
  #endif
#elif OP_POW
  #ifdef DTYPE_FLOAT
  // IEEE pow: x^0 and 1^y are 1 even for NaN. GLSL pow() is undefined for x < 0 (ONNX expects
  // real results for integral exponents, NaN for the others) and for x = 0, y <= 0.
  if (y == 0.0 || x == 1.0) return 1.0;
  if (isnan(x) || isnan(y)) return x + y;  // lavapipe's pow(NaN, y) is 0
  if (x < 0.0) {
    // Not an integer (infinite y counts as even): NaN, but (-inf)^0.5 = inf.
    if (y != floor(y)) return isinf(x) ? pow(-x, y) : nan_value();
    if (x == -1.0) return isinf(y) || mod(y, 2.0) == 0.0 ? 1.0 : -1.0;  // pow(1, inf) is NaN
    float r = pow(-x, y);
    return mod(y, 2.0) == 1.0 ? -r : r;
  }
  if (x == 0.0) return y < 0.0 ? uintBitsToFloat(0x7f800000u) : (y > 0.0 ? 0.0 : y);  // y NaN
  return pow(x, y);
  #else
  T r = T(1);
  for (T e = y; e > T(0); e--) r *= x;
  return r;
  #endif
#elif OP_MOD
  // Integer mod takes the sign of the divisor (Python/ONNX fmod=0).
  T r = x - (x / y) * y;
  return (r != T(0) && ((r < T(0)) != (y < T(0)))) ? r + y : r;
#elif OP_FMOD
  #ifdef DTYPE_FLOAT
  if (isinf(y) && !isinf(x)) return x;  // C fmod; the formula below would give inf * 0 = NaN
  return x - y * trunc(x / y);
  #else
  return x - (x / y) * y;
  #endif
#endif
}

#ifdef VEC4
// Grid-stride over p.n vec4s: the host caps the workgroup count, and each step an invocation
// issues UNROLL independent loads of each operand before the first use, so enough bytes are in
// flight to saturate HBM without a workgroup per 16 bytes.
layout(constant_id = 3) const uint UNROLL = 4;

void main() {
  const uint n = uint(p.n);
  const uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint base = gl_GlobalInvocationID.x; base < n; base += stride * UNROLL) {
    T4 x[UNROLL], y[UNROLL];
    [[unroll]] for (uint u = 0; u < UNROLL; ++u) {
      uint i = base + u * stride;
      if (i < n) {
        x[u] = T4(a[i]);
        y[u] = T4(b[i]);
      }
    }
    [[unroll]] for (uint u = 0; u < UNROLL; ++u) {
      uint i = base + u * stride;
      if (i < n)
        c[i] = ELEM4(T4(apply(x[u].x, y[u].x), apply(x[u].y, y[u].y), apply(x[u].z, y[u].z),
                        apply(x[u].w, y[u].w)));
    }
  }
}
#else
void main() {
  int i = int(linear_index());
  if (i >= p.n) return;
  int ia = 0, ib = 0, rem = i;
  for (int d = p.rank - 1; d >= 0; --d) {
    int idx = rem % p.shape[d];
    rem /= p.shape[d];
    ia += idx * p.stride_a[d];
    ib += idx * p.stride_b[d];
  }
  c[i] = ELEM(apply(T(a[ia]), T(b[ib])));
}
#endif
