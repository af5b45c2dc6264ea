#version 450
// TfIdfVectorizer: one invocation per (row, output column) counts its column's n-gram over
// every start position and skip of the row. The host resolves each column to its n-gram
// (columns[3 j] = n, 0 when no n-gram of a counted length maps there; [3 j + 1] = where its
// items start in `pool`; [3 j + 2] = its weight's bits), so the shader does no lookups.
#include "common.glsl"

layout(std430, binding = 0) readonly buffer X { ELEM x[]; };
layout(std430, binding = 1) readonly buffer Pool { ELEM pool[]; };
layout(std430, binding = 2) readonly buffer Columns { int columns[]; };
layout(std430, binding = 3) writeonly buffer Y { float y[]; };
layout(push_constant) uniform Params {
  int total;  // rows * width
  int width;  // output columns
  int row_length;  // tokens per row
  int max_skip;
  int mode;  // 0 TF, 1 IDF, 2 TFIDF
} p;

void main() {
  int idx = int(linear_index());
  if (idx >= p.total) return;
  int row = idx / p.width, j = idx % p.width;
  int n = columns[3 * j], start = columns[3 * j + 1];
  float weight = intBitsToFloat(columns[3 * j + 2]);
  int base = row * p.row_length;
  float count = 0.0;
  int skips = n == 1 ? 0 : p.max_skip;  // a 1-gram is one token: skips do not recount it
  for (int s = 0; n > 0 && s <= skips; ++s) {
    int step = s + 1;
    for (int i = 0; i + (n - 1) * step < p.row_length; ++i) {
      bool match = true;
      for (int k = 0; k < n && match; ++k) match = x[base + i + k * step] == pool[start + k];
      if (match) count += 1.0;
    }
  }
  y[idx] = p.mode == 0 ? count : (p.mode == 1 ? (count > 0.0 ? weight : 0.0) : count * weight);
}
