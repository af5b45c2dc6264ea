// MatMulNBits against a reference that dequantizes the packed weights in double and multiplies:
// the GEMV (M = 1) and tiled (M > 1) kernels, 2/4/8-bit codes, K not a multiple of the block
// size, zero points absent (2^(bits-1)), packed uint8 and unpacked float, g_idx, bias, float32
// and float16 activations; and the ONNX lowering of com.microsoft MatMulNBits.
#include <cmath>
#include <cstring>

#include "gpu_test.h"
#include "model_builder.h"
#include "vkgraph/ops.h"

namespace vkgraph::testing {
namespace {

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

HostTensor to_half(const HostTensor& t) {
  HostTensor h(DType::Float16, t.shape);
  for (int64_t i = 0; i < t.numel(); ++i) h.data<uint16_t>()[i] = float_to_half(t.data<float>()[i]);
  return h;
}

class MatMulNBitsTest : public GpuTest {
 protected:
  // Runs matmul_nbits on a [m, k] (float16 when `half`: a, scales, float zeros, bias) and
  // checks it against the double reference, relative to the sum of |a| |w| of each result.
  void check(int64_t m, const NBitsWeight& wt, bool half, Zeros zeros) {
    std::vector<float> a = random_floats(m * wt.k);
    if (half)
      for (float& v : a) v = half_to_float(float_to_half(v));
    auto fl = [&](Shape s, const std::vector<float>& v) {
      HostTensor t = HostTensor::from(DType::Float32, std::move(s), v);
      return half ? to_half(t) : t;
    };
    std::vector<double> scales_used(wt.scales.begin(), wt.scales.end());
    ComputeGraph g(context());
    std::vector<HostTensor> feeds;
    auto in = [&](HostTensor t) {
      feeds.push_back(t);
      return g.add_input(t.shape, t.dtype, "in" + std::to_string(feeds.size()));
    };
    const int64_t blob = wt.block * wt.bits / 8;
    TensorRef at = in(fl({m, wt.k}, a));
    HostTensor b(DType::UInt8, {wt.n, wt.blocks, blob});
    b.bytes = wt.packed;
    TensorRef bt = in(b);
    TensorRef st = in(fl({wt.n, wt.blocks}, wt.scales));
    std::optional<TensorRef> zt, gt, biast;
    if (zeros == Zeros::Packed) {
      HostTensor z(DType::UInt8, {int64_t(wt.zero_packed.size())});
      z.bytes = wt.zero_packed;
      zt = in(z);
    } else if (zeros == Zeros::Float) {
      zt = in(fl({wt.n, wt.blocks}, wt.zero_float));
    }
    if (!wt.g_idx.empty()) gt = in(HostTensor::from(DType::Int32, {wt.k}, wt.g_idx));
    if (!wt.bias.empty()) biast = in(fl({wt.n}, wt.bias));
    ops::NBitsParams p{wt.k, wt.n, wt.bits, wt.block};
    TensorRef y = ops::matmul_nbits(g, at, bt, st, p, zt, gt, biast);
    g.add_output(y, "y");
    for (size_t i = 0; i < feeds.size(); ++i)
      g.copy_to_input(i, feeds[i].bytes.data(), feeds[i].nbytes());
    g.execute();
    HostTensor got(half ? DType::Float16 : DType::Float32, {m, wt.n});
    std::memset(got.bytes.data(), 0xff, got.bytes.size());  // NaN in both precisions
    g.copy_from_output(0, got.bytes.data(), got.bytes.size());
    // The GPU dequantizes with float32 scales; float16 inputs store the scale rounded.
    int bad = 0;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < wt.n; ++j) {
        double want = wt.bias.empty()
                          ? 0.0
                          : double(half ? half_to_float(float_to_half(wt.bias[j])) : wt.bias[j]);
        double mag = std::abs(want);
        for (int64_t l = 0; l < wt.k; ++l) {
          double wv = wt.w[j * wt.k + l];
          if (half) {
            // Recompute with the float16-rounded scale and zero point.
            int64_t blk = wt.g_idx.empty() ? l / wt.block : wt.g_idx[l];
            double s = wt.scales[j * wt.blocks + blk];
            double sh = half_to_float(float_to_half(float(s)));
            wv = wv / s * sh;
          }
          want += double(a[i * wt.k + l]) * wv;
          mag += std::abs(double(a[i * wt.k + l]) * wv);
        }
        const double v = got.as_double(i * wt.n + j);
        const double tol = (half ? 2e-3 : 2e-5) * (mag + 1e-3);
        if (!(std::abs(v - want) <= tol) && bad++ < 5)
          ADD_FAILURE() << "y[" << i << ", " << j << "] = " << v << ", want " << want << " (tol "
                        << tol << ")";
      }
    EXPECT_EQ(bad, 0);
  }
};

TEST_F(MatMulNBitsTest, GemvAndTiledFourBit) {
  for (Zeros z : {Zeros::Default, Zeros::Packed, Zeros::Float}) {
    NBitsWeight wt(rng, 100, 37, 4, 32, z, false, true);  // K = 100: 4 blocks, the last partial
    for (int64_t m : {1, 5, 70}) {
      SCOPED_TRACE("zeros " + std::to_string(int(z)) + " m " + std::to_string(m));
      check(m, wt, false, z);
    }
  }
}

TEST_F(MatMulNBitsTest, OtherBitsBlocksAndGIdx) {
  struct Case {
    int64_t k, n, bits, block;
    Zeros zeros;
    bool g_idx, bias;
  };
  for (const Case& c : {Case{64, 9, 2, 16, Zeros::Packed, false, false},
                        Case{77, 130, 8, 64, Zeros::Packed, false, true},
                        Case{48, 20, 4, 16, Zeros::Default, true, false},
                        Case{33, 66, 4, 128, Zeros::Packed, true, true}}) {
    NBitsWeight wt(rng, c.k, c.n, c.bits, c.block, c.zeros, c.g_idx, c.bias);
    for (int64_t m : {1, 3}) {
      SCOPED_TRACE("bits " + std::to_string(c.bits) + " k " + std::to_string(c.k) + " m " +
                   std::to_string(m));
      check(m, wt, false, c.zeros);
    }
  }
}

TEST_F(MatMulNBitsTest, Float16Activations) {
  if (!context()->features().storage_buffer_16bit) GTEST_SKIP() << "no 16-bit storage";
  for (Zeros z : {Zeros::Default, Zeros::Float}) {
    NBitsWeight wt(rng, 96, 40, 4, 32, z, false, true);
    for (int64_t m : {1, 6}) check(m, wt, true, z);
  }
}

TEST_F(MatMulNBitsTest, OnnxLoweringComMicrosoft) {
  NBitsWeight wt(rng, 50, 12, 4, 16, Zeros::Packed, false, false);
  const int64_t m = 3, blob = wt.block / 2;
  ModelBuilder mb(17);
  mb.input("A", onnx::TensorProto::FLOAT, {m, wt.k});
  mb.input("B", onnx::TensorProto::UINT8, {wt.n, wt.blocks, blob});
  mb.input("scales", onnx::TensorProto::FLOAT, {wt.n * wt.blocks});
  mb.input("zp", onnx::TensorProto::UINT8, {int64_t(wt.zero_packed.size())});
  mb.output("Y", onnx::TensorProto::FLOAT);
  onnx::NodeProto& node = mb.node("MatMulNBits", {"A", "B", "scales", "zp"}, {"Y"});
  node.set_domain("com.microsoft");
  for (auto [name, v] :
       {std::pair{"K", wt.k}, {"N", wt.n}, {"bits", int64_t{4}}, {"block_size", wt.block}}) {
    onnx::AttributeProto* at = node.add_attribute();
    at->set_name(name);
    at->set_type(onnx::AttributeProto::INT);
    at->set_i(v);
  }
  Session s = mb.session();
  std::vector<float> a = random_floats(m * wt.k);
  // The frontend holds uint8 model inputs widened to int32.
  auto widened = [](Shape sh, const std::vector<uint8_t>& v) {
    return HostTensor::from(DType::Int32, std::move(sh), std::vector<int32_t>(v.begin(), v.end()));
  };
  auto out = s.run({{"A", HostTensor::from(DType::Float32, {m, wt.k}, a)},
                    {"B", widened({wt.n, wt.blocks, blob}, wt.packed)},
                    {"scales", HostTensor::from(DType::Float32, {wt.n * wt.blocks}, wt.scales)},
                    {"zp", widened({int64_t(wt.zero_packed.size())}, wt.zero_packed)}});
  ASSERT_EQ(out[0].shape, (Shape{m, wt.n}));
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < wt.n; ++j) {
      double want = 0, mag = 0;
      for (int64_t l = 0; l < wt.k; ++l) {
        want += a[i * wt.k + l] * wt.w[j * wt.k + l];
        mag += std::abs(a[i * wt.k + l] * wt.w[j * wt.k + l]);
      }
      EXPECT_NEAR(out[0].data<float>()[i * wt.n + j], want, 2e-5 * (mag + 1e-3)) << i << "," << j;
    }
}

}  // namespace
}  // namespace vkgraph::testing
