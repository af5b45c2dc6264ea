// MatMulNBits against a reference that dequantizes the packed weights in double and multiplies:
// the GEMV (M = 1) and tiled (M > 1) kernels, 2/4/8-bit codes, K not a multiple of the block
// size, zero points absent (2^(bits-1)), packed uint8 and unpacked float, g_idx, bias, float32
// and float16 activations (tests/onnx/test_onnx_quant.cpp: the ONNX lowering).
#include <cmath>
#include <cstring>

#include "gpu_test.h"
#include "quant_test_util.h"
#include "vkgraph/ops.h"
#include "vkgraph/ops/tuning.h"

namespace vkgraph::testing {
namespace {

HostTensor to_half(const HostTensor& t) {
  HostTensor h(DType::Float16, t.shape);
  for (int64_t i = 0; i < t.numel(); ++i) h.data<uint16_t>()[i] = float_to_half(t.data<float>()[i]);
  return h;
}

class MatMulNBitsTest : public GpuTest {
 protected:
  // Runs matmul_nbits on a [m, k] (float16 when `half`: a, scales, float zeros, bias) and
  // checks it against the double reference, relative to the sum of |a| |w| of each result.
  void check(int64_t m, const NBitsWeight& wt, bool half, Zeros zeros, GraphOptions go = {}) {
    std::vector<float> a = random_floats(m * wt.k);
    if (half)
      for (float& v : a) v = half_to_float(float_to_half(v));
    auto fl = [&](Shape s, const std::vector<float>& v) {
      HostTensor t = HostTensor::from(DType::Float32, std::move(s), v);
      return half ? to_half(t) : t;
    };
    std::vector<double> scales_used(wt.scales.begin(), wt.scales.end());
    ComputeGraph g(context(), go);
    std::vector<HostTensor> feeds;
    auto in = [&](HostTensor t) {
      feeds.push_back(t);
      return g.add_input(t.shape, t.dtype, "in" + std::to_string(feeds.size()));
    };
    const int64_t blob = wt.block * wt.bits / 8;
    TensorRef at = in(fl({m, wt.k}, a));
    HostTensor b(DType::UInt8, {wt.n, wt.blocks, blob});
    b.bytes.assign(wt.packed.begin(), wt.packed.end());
    TensorRef bt = in(b);
    TensorRef st = in(fl({wt.n, wt.blocks}, wt.scales));
    std::optional<TensorRef> zt, gt, biast;
    if (zeros == Zeros::Packed) {
      HostTensor z(DType::UInt8, {int64_t(wt.zero_packed.size())});
      z.bytes.assign(wt.zero_packed.begin(), wt.zero_packed.end());
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

// The GEMV's two reductions (subgroupAdd, where the device has it, and the shared-memory tree
// that tuning knob nbits.subgroup = 0 forces), the subgroup one with 1, 3 and 4 rows per
// subgroup (nbits.rows; N = 19 and 7 leave a partial group of rows), over rows long enough for
// its unrolled loads (K = 1100: 35 blocks, the last partial) and short ones.
TEST_F(MatMulNBitsTest, GemvBothReductions) {
  for (auto [subgroup, rows] : {std::pair{1u, 4u}, {1u, 3u}, {1u, 1u}, {0u, 4u}}) {
    GraphOptions go;
    auto tuning = std::make_shared<ops::Tuning>();
    tuning->knobs["nbits.subgroup"] = subgroup;
    tuning->knobs["nbits.rows"] = rows;
    go.tuning = tuning;
    for (int64_t k : {1100, 40}) {
      SCOPED_TRACE("subgroup " + std::to_string(subgroup) + " rows " + std::to_string(rows) +
                   " k " + std::to_string(k));
      NBitsWeight wt(rng, k, 19, 4, 32, Zeros::Packed, false, true);
      check(1, wt, false, Zeros::Packed, go);
      NBitsWeight wt2(rng, k, 7, 2, 16, Zeros::Default, k == 40, false);
      check(1, wt2, false, Zeros::Default, go);
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

}  // namespace
}  // namespace vkgraph::testing
