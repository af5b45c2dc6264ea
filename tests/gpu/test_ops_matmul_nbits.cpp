// MatMulNBits against a reference that dequantizes the packed weights in double and multiplies:
// the GEMV (M = 1) and tiled (M > 1) kernels, 2/4/8-bit codes, K not a multiple of the block
// size, zero points absent (2^(bits-1)), packed uint8 and unpacked float, g_idx, bias, float32
// and float16 activations, weights as inputs and as constants (the GEMV's re-laid layout),
// garbage codes in the padding past K, outputs poisoned (tests/onnx/test_onnx_quant.cpp: the
// ONNX lowering).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <tuple>

#include "gpu_test.h"
#include "quant_test_util.h"
#include "vkgraph/ops.h"
#include "vkgraph/ops/tuning.h"
#include "vkgraph/vk/barrier.h"
#include "vkgraph/vk/buffer.h"
#include "vkgraph/vk/command.h"

namespace vkgraph::testing {
namespace {

HostTensor to_half(const HostTensor& t) {
  HostTensor h(DType::Float16, t.shape);
  for (int64_t i = 0; i < t.numel(); ++i) h.data<uint16_t>()[i] = float_to_half(t.data<float>()[i]);
  return h;
}

// Where the weights come from: graph inputs (the GEMV reads them in MatMulNBits' layout) or
// constants (re-laid for 16-byte loads at load, where a row has a full step of words).
enum class Weights { Input, Constant };

// A device buffer filled with 0xff bytes (NaN in float32 and float16), so an output element the
// kernel never writes is caught.
class PoisonedBuffer {
 public:
  PoisonedBuffer(vk::Context& ctx, size_t bytes)
      : ctx_(ctx),
        bytes_(bytes),
        buffer_(ctx, bytes, vk::MemoryUsage::Device,
                VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
                    VK_BUFFER_USAGE_TRANSFER_DST_BIT,
                "poisoned output") {
    vk::StagingBuffer staging(ctx, bytes, vk::StagingBuffer::Direction::ToDevice, "poison");
    std::vector<uint8_t> poison(bytes, 0xff);
    staging.copy_in(poison.data(), bytes);
    vk::OneShot shot(ctx);
    shot.cmd().copy_buffer(staging, buffer_, 0, 0, bytes);
    vk::PipelineBarrier before_compute;
    before_compute.add_global(VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT,
                              VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                              VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT);
    shot.cmd().record_barrier(before_compute);
    shot.submit_and_wait();
  }
  ExternalBuffer external() const {
    return {buffer_.handle(), 0, buffer_.size(), VK_BUFFER_USAGE_STORAGE_BUFFER_BIT};
  }
  void read(void* out) {
    vk::StagingBuffer staging(ctx_, bytes_, vk::StagingBuffer::Direction::FromDevice, "read");
    vk::OneShot shot(ctx_);
    vk::PipelineBarrier after_compute;
    after_compute.add_global(VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT,
                             VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_READ_BIT);
    shot.cmd().record_barrier(after_compute);
    shot.cmd().copy_buffer(buffer_, staging, 0, 0, bytes_);
    shot.cmd().record_barrier(vk::device_to_host_barrier());
    shot.submit_and_wait();
    staging.copy_out(out, bytes_);
  }

 private:
  vk::Context& ctx_;
  size_t bytes_;
  vk::Buffer buffer_;
};

// The packed rows with random codes in the last block's padding past K: no kernel may read them.
std::vector<uint8_t> with_padding_garbage(const NBitsWeight& wt, std::mt19937& rng) {
  std::vector<uint8_t> packed = wt.packed;
  const int64_t row_bits = wt.blocks * wt.block * wt.bits;
  for (int64_t r = 0; r < wt.n; ++r)
    for (int64_t bit = r * row_bits + wt.k * wt.bits; bit < (r + 1) * row_bits; ++bit)
      packed[bit / 8] |= static_cast<uint8_t>((rng() & 1u) << (bit % 8));
  return packed;
}

class MatMulNBitsTest : public GpuTest {
 protected:
  // Runs matmul_nbits on a [m, k] (float16 when `half`: a, scales, float zeros, bias) into a
  // poisoned output and checks it against the double reference, relative to the sum of
  // |a| |w| of each result. accuracy_level 4: the reference quantizes a to int8 per block as
  // the integer GEMV does (float32 steps), and a dispatch labelled `label` must have run.
  void check(int64_t m, const NBitsWeight& wt, bool half, Zeros zeros, GraphOptions go = {},
             Weights weights = Weights::Input, int64_t accuracy_level = 0,
             const std::string& label = "") {
    std::vector<float> a = random_floats(m * wt.k);
    if (half)
      for (float& v : a) v = half_to_float(float_to_half(v));
    std::vector<float> a_ref = a;  // a as the kernel computes with it
    if (accuracy_level == 4)
      for (int64_t i = 0; i < m; ++i)
        for (int64_t b0 = 0; b0 < wt.k; b0 += wt.block) {
          float* row = a_ref.data() + i * wt.k;
          const int64_t end = std::min(wt.k, b0 + wt.block);
          float amax = 0.f;
          for (int64_t l = b0; l < end; ++l) amax = std::max(amax, std::abs(row[l]));
          const float inv = amax > 0.f ? 1.f / amax : 0.f, scale = amax / 127.f;
          for (int64_t l = b0; l < end; ++l)
            row[l] = std::nearbyint(std::clamp(row[l] * inv, -1.f, 1.f) * 127.f) * scale;
        }
    if (!label.empty()) go.profile = true;
    auto fl = [&](Shape s, const std::vector<float>& v) {
      HostTensor t = HostTensor::from(DType::Float32, std::move(s), v);
      return half ? to_half(t) : t;
    };
    ComputeGraph g(context(), go);
    std::vector<HostTensor> feeds;
    auto in = [&](HostTensor t) {
      feeds.push_back(t);
      return g.add_input(t.shape, t.dtype, "in" + std::to_string(feeds.size()));
    };
    // Weights, scales and zero points: inputs or constants alike.
    auto weight = [&](HostTensor t) {
      return weights == Weights::Constant ? g.add_constant(std::move(t)) : in(std::move(t));
    };
    const int64_t blob = wt.block * wt.bits / 8;
    TensorRef at = in(fl({m, wt.k}, a));
    HostTensor b(DType::UInt8, {wt.n, wt.blocks, blob});
    const std::vector<uint8_t> packed = with_padding_garbage(wt, rng);
    b.bytes.assign(packed.begin(), packed.end());
    TensorRef bt = weight(b);
    TensorRef st = weight(fl({wt.n, wt.blocks}, wt.scales));
    std::optional<TensorRef> zt, gt, biast;
    if (zeros == Zeros::Packed) {
      HostTensor z(DType::UInt8, {int64_t(wt.zero_packed.size())});
      z.bytes.assign(wt.zero_packed.begin(), wt.zero_packed.end());
      zt = weight(z);
    } else if (zeros == Zeros::Float) {
      zt = weight(fl({wt.n, wt.blocks}, wt.zero_float));
    }
    if (!wt.g_idx.empty()) gt = in(HostTensor::from(DType::Int32, {wt.k}, wt.g_idx));
    if (!wt.bias.empty()) biast = in(fl({wt.n}, wt.bias));
    ops::NBitsParams p{wt.k, wt.n, wt.bits, wt.block, accuracy_level};
    TensorRef y = ops::matmul_nbits(g, at, bt, st, p, zt, gt, biast);
    HostTensor got(half ? DType::Float16 : DType::Float32, {m, wt.n});
    PoisonedBuffer out(*context(), got.nbytes());
    g.add_output(y, "y", IOMode::External);
    g.bind_external("y", out.external());
    for (size_t i = 0; i < feeds.size(); ++i)
      g.copy_to_input(i, feeds[i].bytes.data(), feeds[i].nbytes());
    g.execute();
    out.read(got.bytes.data());
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
          want += double(a_ref[i * wt.k + l]) * wv;
          mag += std::abs(double(a[i * wt.k + l]) * wv);
        }
        const double v = got.as_double(i * wt.n + j);
        const double tol = (half ? 2e-3 : 2e-5) * (mag + 1e-3);
        if (!(std::abs(v - want) <= tol) && bad++ < 5)
          ADD_FAILURE() << "y[" << i << ", " << j << "] = " << v << ", want " << want << " (tol "
                        << tol << ")";
      }
    EXPECT_EQ(bad, 0);
    if (!label.empty()) {
      bool ran = false;
      for (const NodeTime& t : g.node_times()) ran |= t.label.find(label) != std::string::npos;
      EXPECT_TRUE(ran) << "no dispatch labelled " << label;
    }
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
    tuning->knobs["nbits.gemv"] = 1;  // the first GEMV
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

// The decode GEMV in both weight layouts and the prompt path at M = 37 (the weights dequantized
// for the float GEMM; PromptDequantizedGemmAndTiled covers the tiled kernel as well): odd K and
// N (partial blocks, partial steps of words, partial groups of rows), blocks of 16, 32 and 128,
// zero points absent, packed and float, 2, 4 and 8 bits, float32 and float16. nbits.vec = 4
// gives rows this short full steps (128 words), so constants take the re-laid layout; one case
// keeps the default 8 words per lane.
TEST_F(MatMulNBitsTest, GemvLayoutsAndTiledAcrossBlocks) {
  struct Case {
    int64_t k, n, bits, block;
    Zeros zeros;
    uint32_t rows, vec;
  };
  const bool fp16 = context()->features().storage_buffer_16bit;
  for (const Case& c :
       {Case{1100, 67, 4, 32, Zeros::Default, 2, 4}, Case{777, 33, 4, 16, Zeros::Packed, 1, 4},
        Case{1030, 19, 4, 128, Zeros::Float, 3, 4}, Case{515, 45, 8, 32, Zeros::Packed, 2, 4},
        Case{1024, 40, 8, 128, Zeros::Default, 1, 4}, Case{2100, 9, 2, 16, Zeros::Float, 2, 4},
        Case{2100, 21, 4, 32, Zeros::Packed, 2, 8}}) {
    NBitsWeight wt(rng, c.k, c.n, c.bits, c.block, c.zeros, false, c.n % 2 == 1);
    GraphOptions go;
    auto tuning = std::make_shared<ops::Tuning>();
    tuning->knobs["nbits.rows"] = c.rows;
    tuning->knobs["nbits.gemv"] = 1;  // the first GEMV
    tuning->knobs["nbits.vec"] = c.vec;
    go.tuning = tuning;
    for (Weights weights : {Weights::Input, Weights::Constant})
      for (int64_t m : {1, 37})
        for (bool half : {false, true}) {
          if (half && !fp16) continue;
          SCOPED_TRACE("bits " + std::to_string(c.bits) + " block " + std::to_string(c.block) +
                       " k " + std::to_string(c.k) + " n " + std::to_string(c.n) + " m " +
                       std::to_string(m) + (half ? " fp16" : " fp32") +
                       (weights == Weights::Constant ? " constant" : " input"));
          check(m, wt, half, c.zeros, go, weights);
        }
  }
}

// A constant weight re-laid for the GEMV is on the device once: the original, which no dispatch
// reads any more, is not uploaded (prepare's constant bytes: the re-laid rows are padded to
// whole uvec4s, at most 12 bytes a row more than the natural layout's).
TEST_F(MatMulNBitsTest, RelaidWeightUploadedOnce) {
  NBitsWeight wt(rng, 1100, 67, 4, 32, Zeros::Default, false, false);
  auto constant_bytes = [&](uint32_t prepack) {
    GraphOptions go;
    auto tuning = std::make_shared<ops::Tuning>();
    tuning->knobs["nbits.prepack"] = prepack;
    tuning->knobs["nbits.gemv"] = 1;  // the first GEMV
    tuning->knobs["nbits.vec"] = 4;
    go.tuning = tuning;
    ComputeGraph g(context(), go);
    HostTensor b(DType::UInt8, {wt.n, wt.blocks, wt.block / 2});
    b.bytes.assign(wt.packed.begin(), wt.packed.end());
    TensorRef x = g.add_input({1, wt.k}, DType::Float32, "x");
    TensorRef y = ops::matmul_nbits(
        g, x, g.add_constant(b),
        g.add_constant(HostTensor::from(DType::Float32, {wt.n, wt.blocks}, wt.scales)),
        ops::NBitsParams{wt.k, wt.n, wt.bits, wt.block});
    g.add_output(y, "y");
    g.prepare();
    return g.stats().constant_bytes;
  };
  const uint64_t natural = constant_bytes(0), relaid = constant_bytes(1);
  EXPECT_GE(relaid, natural);
  EXPECT_LE(relaid, natural + 12 * uint64_t(wt.n) + 16);
}

// Prompt-sized M through both kernels: the weights dequantized into a float [K, N] scratch and
// the float GEMM (the default from M = 16), and the tiled kernel (nbits.dequant = 0); M = 16
// (the threshold), 37 and 70; odd K and N (partial 64 x 64 dequantization tiles), 2, 4 and
// 8 bits, blocks of 16, 32 and 128, zero points absent, packed and float, g_idx, bias, fp32
// and fp16, weights as inputs and as constants.
TEST_F(MatMulNBitsTest, PromptDequantizedGemmAndTiled) {
  struct Case {
    int64_t k, n, bits, block;
    Zeros zeros;
    bool g_idx, bias;
  };
  const bool fp16 = context()->features().storage_buffer_16bit;
  for (uint32_t dequant : {1u, 0u})
    for (const Case& c : {Case{200, 67, 4, 32, Zeros::Default, false, true},
                          Case{130, 70, 4, 16, Zeros::Packed, false, false},
                          Case{300, 19, 8, 128, Zeros::Float, false, true},
                          Case{96, 130, 2, 16, Zeros::Packed, false, false},
                          Case{48, 33, 4, 16, Zeros::Default, true, true},
                          Case{75, 20, 8, 32, Zeros::Packed, true, false}}) {
      NBitsWeight wt(rng, c.k, c.n, c.bits, c.block, c.zeros, c.g_idx, c.bias);
      GraphOptions go;
      auto tuning = std::make_shared<ops::Tuning>();
      tuning->knobs["nbits.dequant"] = dequant;
      go.tuning = tuning;
      for (int64_t m : {16, 37, 70})
        for (bool half : {false, true}) {
          if (half && !fp16) continue;
          const Weights weights = m == 37 ? Weights::Constant : Weights::Input;
          SCOPED_TRACE(std::string(dequant ? "dequantized" : "tiled") + " bits " +
                       std::to_string(c.bits) + " block " + std::to_string(c.block) + " k " +
                       std::to_string(c.k) + " n " + std::to_string(c.n) + " m " +
                       std::to_string(m) + (half ? " fp16" : " fp32"));
          check(m, wt, half, c.zeros, go, weights);
        }
    }
}

// nbits.dequant_min_m moves the threshold: M = 5 dequantized (and a bigger M still), M = 1
// stays the GEMV, which nbits.dequant_min_m = 1 also replaces.
TEST_F(MatMulNBitsTest, DequantizeThresholdKnob) {
  NBitsWeight wt(rng, 100, 37, 4, 32, Zeros::Packed, false, true);
  for (uint32_t min_m : {5u, 1u}) {
    GraphOptions go;
    auto tuning = std::make_shared<ops::Tuning>();
    tuning->knobs["nbits.dequant_min_m"] = min_m;
    go.tuning = tuning;
    for (int64_t m : {1, 5, 9}) {
      SCOPED_TRACE("min_m " + std::to_string(min_m) + " m " + std::to_string(m));
      check(m, wt, false, Zeros::Packed, go);
    }
  }
}

// The GEMV with K split over the row sets of a workgroup (nbits.split: 2, 4, 8; sums meeting
// in shared memory), with both reductions, 1 to 3 rows per row set, both layouts, fp32 and
// fp16: K = 1100 at vec 4 is 9 steps (odd, the last partial), K = 515 at 8 bits 2 steps.
TEST_F(MatMulNBitsTest, GemvSplitK) {
  struct Case {
    uint32_t split, subgroup, rows;
  };
  const bool fp16 = context()->features().storage_buffer_16bit;
  NBitsWeight w4(rng, 1100, 67, 4, 32, Zeros::Default, false, true);
  NBitsWeight w8(rng, 515, 45, 8, 32, Zeros::Packed, false, false);
  NBitsWeight w2(rng, 2100, 9, 2, 16, Zeros::Float, false, true);
  for (const Case& c : {Case{2, 1, 2}, Case{8, 1, 1}, Case{4, 0, 3}, Case{8, 0, 2}}) {
    GraphOptions go;
    auto tuning = std::make_shared<ops::Tuning>();
    tuning->knobs["nbits.split"] = c.split;
    tuning->knobs["nbits.subgroup"] = c.subgroup;
    tuning->knobs["nbits.gemv"] = 1;  // the first GEMV
    tuning->knobs["nbits.rows"] = c.rows;
    tuning->knobs["nbits.vec"] = 4;
    go.tuning = tuning;
    for (const NBitsWeight* wt : {&w4, &w8, &w2})
      for (Weights weights : {Weights::Input, Weights::Constant})
        for (bool half : {false, true}) {
          if (half && !fp16) continue;
          SCOPED_TRACE("split " + std::to_string(c.split) + " subgroup " +
                       std::to_string(c.subgroup) + " rows " + std::to_string(c.rows) + " bits " +
                       std::to_string(wt->bits) + (half ? " fp16" : " fp32") +
                       (weights == Weights::Constant ? " constant" : " input"));
          Zeros z = wt == &w4 ? Zeros::Default : wt == &w8 ? Zeros::Packed : Zeros::Float;
          check(1, *wt, half, z, go, weights);
        }
  }
}

// The wide-load GEMV (nbits.gemv = 2, where the device has subgroup arithmetic):
// 2, 4 and 8 bits; blocks of 16, 32 and 128; K not a multiple of the block (nor of 4) and N odd
// (a partial group of rows); rows starting off 16-byte boundaries (4-bit blocks of 16 with an
// odd block count: the word-by-word loads); zero points absent, packed and float; bias or not;
// 1, 3, 8 and 16 rows per workgroup; workgroups of 32 invocations (several passes over a row,
// the last partial) and the default; fp32, fp16 and fp16 with float16 arithmetic for 4-bit
// codes (nbits.half_math); passes loaded one ahead (nbits.wide_prefetch; K = 515 and 4099 at 32
// invocations take 2 and 5 passes, so both ends of the two-pass loop run); M = 1 here and
// M = 3 on the tiled kernel.
TEST_F(MatMulNBitsTest, GemvWideAcrossShapes) {
  if (!context()->features().subgroup_arithmetic) GTEST_SKIP() << "no subgroup arithmetic";
  struct Case {
    int64_t k, n, bits, block;
    Zeros zeros;
    uint32_t rows, threads;
  };
  const bool fp16 = context()->features().storage_buffer_16bit;
  for (const Case& c :
       {Case{1104, 67, 4, 32, Zeros::Default, 8, 256}, Case{777, 33, 4, 16, Zeros::Packed, 3, 32},
        Case{1030, 19, 4, 128, Zeros::Float, 16, 256}, Case{515, 45, 8, 32, Zeros::Packed, 1, 32},
        Case{1024, 40, 8, 16, Zeros::Default, 8, 64}, Case{2100, 9, 2, 16, Zeros::Float, 3, 64},
        Case{4099, 21, 4, 32, Zeros::Packed, 8, 32}, Case{70, 5, 8, 128, Zeros::Float, 16, 256},
        Case{90, 7, 4, 16, Zeros::Default, 1, 256}}) {
    NBitsWeight wt(rng, c.k, c.n, c.bits, c.block, c.zeros, false, c.n % 2 == 1);
    for (Weights weights : {Weights::Input, Weights::Constant})
      for (int64_t m : {1, 3})
        for (int math : {0, 1, 2})  // fp32, fp16 with float32 math, fp16 with half math
          for (bool prefetch : {false, true}) {
            const bool half = math > 0;
            if (half && !fp16) continue;
            if (math == 2 && (c.bits != 4 || m != 1)) continue;                  // 4-bit GEMV only
            if (m == 3 && (weights == Weights::Constant || prefetch)) continue;  // tiled: covered
            if (prefetch && weights == Weights::Constant) continue;              // the same kernel
            GraphOptions go;
            auto tuning = std::make_shared<ops::Tuning>();
            tuning->knobs["nbits.gemv"] = 2;
            tuning->knobs["nbits.wide_rows"] = c.rows;
            tuning->knobs["nbits.wide_threads"] = c.threads;
            tuning->knobs["nbits.half_math"] = math == 2;
            tuning->knobs["nbits.wide_prefetch"] = prefetch;
            go.tuning = tuning;
            SCOPED_TRACE("bits " + std::to_string(c.bits) + " block " + std::to_string(c.block) +
                         " k " + std::to_string(c.k) + " n " + std::to_string(c.n) + " rows " +
                         std::to_string(c.rows) + " threads " + std::to_string(c.threads) + " m " +
                         std::to_string(m) + " math " + std::to_string(math) +
                         (prefetch ? " prefetch" : "") +
                         (weights == Weights::Constant ? " constant" : " input"));
            check(m, wt, half, c.zeros, go, weights);
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

// accuracy_level 4 at M = 1: a quantized to int8 per block, summed on 4x8-bit integer dot
// products (quant_nbits_gemv_dot.comp), against a reference that quantizes a the same way:
// blocks of 32..256 (a block over 2-8 lanes), K ending inside a block and inside a quad, a
// loaded element by element (K % 8 != 0), every zero-point form, bias, rows per workgroup,
// float32 and float16 activations. Other accuracy levels and M > 1 keep the float kernels.
TEST_F(MatMulNBitsTest, IntegerDotGemvForAccuracyLevel4) {
  const auto& f = context()->features();
  if (!f.integer_dot_product || !f.subgroup_arithmetic || !f.subgroup_shuffle)
    GTEST_SKIP() << "no integer dot products or subgroup operations";
  struct Case {
    int64_t k, n, block;
    Zeros zeros;
    uint32_t rows;
  };
  const bool fp16 = f.storage_buffer_16bit;
  for (const Case& c : {Case{1104, 67, 32, Zeros::Default, 8}, Case{777, 33, 64, Zeros::Packed, 3},
                        Case{1030, 19, 128, Zeros::Float, 16}, Case{4099, 21, 32, Zeros::Packed, 1},
                        Case{520, 9, 256, Zeros::Default, 4}, Case{90, 7, 32, Zeros::Float, 8}}) {
    if (f.subgroup_size < c.block / 32) continue;
    NBitsWeight wt(rng, c.k, c.n, 4, c.block, c.zeros, false, c.n % 2 == 1);
    for (bool half : {false, true}) {
      if (half && !fp16) continue;
      GraphOptions go;
      auto tuning = std::make_shared<ops::Tuning>();
      tuning->knobs["nbits.dot"] = 1;
      tuning->knobs["nbits.dot_rows"] = c.rows;
      go.tuning = tuning;
      SCOPED_TRACE("block " + std::to_string(c.block) + " k " + std::to_string(c.k) + " n " +
                   std::to_string(c.n) + " rows " + std::to_string(c.rows) +
                   (half ? " fp16" : " fp32"));
      check(1, wt, half, c.zeros, go, Weights::Constant, 4, "(int8 dot)");
    }
  }
  // Not taken: M > 1, another accuracy level, 8-bit codes.
  GraphOptions go;
  auto tuning = std::make_shared<ops::Tuning>();
  tuning->knobs["nbits.dot"] = 1;
  go.tuning = tuning;
  NBitsWeight four(rng, 256, 16, 4, 32, Zeros::Default, false, false);
  NBitsWeight eight(rng, 256, 16, 8, 32, Zeros::Default, false, false);
  for (auto [m, level, wt] :
       {std::tuple{int64_t{3}, int64_t{4}, &four}, std::tuple{int64_t{1}, int64_t{0}, &four},
        std::tuple{int64_t{1}, int64_t{4}, &eight}}) {
    go.profile = true;
    ComputeGraph g(context(), go);
    TensorRef at = g.add_input({m, 256}, DType::Float32, "a");
    HostTensor b(DType::UInt8, {16, 8, 32 * wt->bits / 8});
    TensorRef y = ops::matmul_nbits(g, at, g.add_constant(b),
                                    g.add_constant(HostTensor(DType::Float32, {16, 8})),
                                    {256, 16, wt->bits, 32, level});
    g.add_output(y, "y");
    g.prepare();
    g.execute();
    for (const NodeTime& t : g.node_times())
      EXPECT_EQ(t.label.find("int8 dot"), std::string::npos) << "m " << m << " level " << level;
  }
}

}  // namespace
}  // namespace vkgraph::testing
