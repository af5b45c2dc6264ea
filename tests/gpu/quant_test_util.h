#pragma once
// Shared by the quantization tests (tests/gpu/test_ops_quant.cpp, test_ops_matmul_nbits.cpp,
// tests/onnx/test_onnx_quant.cpp): quantized ranges, ONNX's rounding rule, and a random
// MatMulNBits weight with its dequantized reference.
#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "vkgraph/types.h"

namespace vkgraph::testing {

inline int qmin(DType d) {
  return d == DType::Int8 ? -128 : 0;
}
inline int qmax(DType d) {
  return d == DType::Int8 ? 127 : 255;
}

inline std::vector<int> random_ints(std::mt19937& rng, size_t n, int lo, int hi) {
  std::uniform_int_distribution<int> dist(lo, hi);
  std::vector<int> v(n);
  for (int& x : v) x = dist(rng);
  return v;
}

// ONNX's quantization of one value from its exact quotient `q` (= x / scale).
inline int quantize_ref(double q, int zero, DType d) {
  if (std::isnan(q)) return zero;
  double r = std::nearbyint(q) + zero;  // the default rounding mode: half to even
  return static_cast<int>(std::clamp(r, double(qmin(d)), double(qmax(d))));
}

enum class Zeros { Default, Packed, Float };

// A random MatMulNBits weight: codes, their packing and the parameters, with the reference
// dequantized matrix w[n][k].
struct NBitsWeight {
  int64_t k, n, bits, block, blocks;
  std::vector<uint8_t> packed, zero_packed;
  std::vector<float> scales, zero_float, bias;
  std::vector<int32_t> g_idx;
  std::vector<double> w;

  NBitsWeight(std::mt19937& rng, int64_t k_, int64_t n_, int64_t bits_, int64_t block_, Zeros zeros,
              bool use_g_idx, bool use_bias)
      : k(k_), n(n_), bits(bits_), block(block_), blocks((k_ + block_ - 1) / block_) {
    const int64_t blob = block * bits / 8, zero_row = (blocks * bits + 7) / 8;
    const int levels = 1 << bits;
    std::uniform_int_distribution<int> code(0, levels - 1);
    std::uniform_real_distribution<float> scale(0.01f, 0.2f), value(-1.f, 1.f);
    packed.assign(n * blocks * blob, 0);
    std::vector<int> codes(n * k);
    for (int64_t r = 0; r < n; ++r)
      for (int64_t i = 0; i < k; ++i) {
        int c = code(rng);
        codes[r * k + i] = c;
        int64_t bit =
            i * bits;  // blocks are contiguous along K, so a row's code i is at bit i*bits
        packed[r * blocks * blob + bit / 8] |= static_cast<uint8_t>(c << (bit % 8));
      }
    for (int64_t i = 0; i < n * blocks; ++i) scales.push_back(scale(rng));
    std::vector<double> zero(n * blocks, double(1 << (bits - 1)));
    if (zeros == Zeros::Packed) {
      zero_packed.assign(n * zero_row, 0);
      for (int64_t r = 0; r < n; ++r)
        for (int64_t b = 0; b < blocks; ++b) {
          int z = code(rng);
          zero[r * blocks + b] = z;
          int64_t bit = b * bits;
          zero_packed[r * zero_row + bit / 8] |= static_cast<uint8_t>(z << (bit % 8));
        }
    } else if (zeros == Zeros::Float) {
      for (int64_t i = 0; i < n * blocks; ++i) {
        zero_float.push_back(std::round(value(rng) * 4.f) + float(levels / 2));
        zero[i] = zero_float.back();
      }
    }
    for (int64_t i = 0; i < k; ++i)
      g_idx.push_back(use_g_idx ? std::uniform_int_distribution<int>(0, int(blocks) - 1)(rng)
                                : int32_t(i / block));
    if (!use_g_idx) g_idx.clear();
    if (use_bias)
      for (int64_t i = 0; i < n; ++i) bias.push_back(value(rng));
    w.resize(n * k);
    for (int64_t r = 0; r < n; ++r)
      for (int64_t i = 0; i < k; ++i) {
        int64_t b = use_g_idx ? g_idx[i] : i / block;
        w[r * k + i] = (codes[r * k + i] - zero[r * blocks + b]) * double(scales[r * blocks + b]);
      }
  }
};

}  // namespace vkgraph::testing
