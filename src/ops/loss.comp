#version 450
// NegativeLogLikelihoodLoss, per target element: log_prob viewed as [N, C, inner], target as
// [N, inner]. Writes the weighted loss and the weight applied (Mean divides by their sums).
#include "common.glsl"

layout(std430, binding = 0) readonly buffer LogProb { float log_prob[]; };
// Int32 targets, or Int64 read as word pairs (no shaderInt64 needed): spec constant 3.
layout(std430, binding = 1) readonly buffer Target { int target_words[]; };
layout(std430, binding = 2) readonly buffer Weight { float weight[]; };
layout(std430, binding = 3) writeonly buffer Loss { float loss[]; };
layout(std430, binding = 4) writeonly buffer Applied { float applied[]; };
layout(constant_id = 3) const bool WIDE_TARGET = false;
layout(push_constant) uniform Params {
  int n;
  int classes;
  int inner;
  int has_ignore;
  int ignore_lo;  // ignore_index as two words, compared whole
  int ignore_hi;
} p;

void main() {
  int i = int(linear_index());
  if (i >= p.n) return;
  int lo, hi;
  if (WIDE_TARGET) {
    lo = target_words[2 * i];
    hi = target_words[2 * i + 1];
  } else {
    lo = target_words[i];
    hi = lo >> 31;
  }
  if (p.has_ignore != 0 && lo == p.ignore_lo && hi == p.ignore_hi) {
    loss[i] = 0.0;
    applied[i] = 0.0;
    return;
  }
  if (hi != (lo >> 31) || lo < 0 || lo >= p.classes) {
    // Undefined in ONNX; NaN makes the bad target visible in every reduction.
    loss[i] = uintBitsToFloat(0x7fc00000u);
    applied[i] = uintBitsToFloat(0x7fc00000u);
    return;
  }
  int r = i % p.inner;
  int s = i / p.inner;
  float w = weight[lo];
  loss[i] = -log_prob[(s * p.classes + lo) * p.inner + r] * w;
  applied[i] = w;
}
