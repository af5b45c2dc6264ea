#version 450
// c = a << b or a >> b with NumPy broadcasting, on unsigned values of p.bits bits stored in
// wider signed elements (Int32 for 8/16 bits, Int64 for 32/64 bits): the shift is logical,
// bits shifted past the width are dropped, and a shift by the width or more gives 0 (C and
// GLSL leave that undefined).
#include "common.glsl"

#if defined(DTYPE_I64)
#define U uint64_t
#define U_BITS 64u
#else
#define U uint
#define U_BITS 32u
#endif

layout(std430, binding = 0) readonly buffer A { ELEM a[]; };
layout(std430, binding = 1) readonly buffer B { ELEM b[]; };
layout(std430, binding = 2) writeonly buffer C { ELEM c[]; };
layout(push_constant) uniform Params {
  int n;
  int rank;
  int shape[MAX_RANK];
  int stride_a[MAX_RANK];
  int stride_b[MAX_RANK];
  uint bits;  // the unsigned type's width: 8, 16, 32 or 64
} p;

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
  const U mask = p.bits >= U_BITS ? ~U(0) : (U(1) << p.bits) - U(1);  // p.bits ones
  const U x = U(a[ia]) & mask, s = U(b[ib]) & mask;
  U r = U(0);
  if (s < U(p.bits)) {
#if SHIFT_LEFT
    r = (x << s) & mask;
#else
    r = x >> s;
#endif
  }
  c[i] = ELEM(r);
}
