// The ONNX lowerings of the quantization ops beyond the conformance data: opset 21 blocked
// QuantizeLinear / DequantizeLinear and com.microsoft MatMulNBits, against C++ references.
#include <algorithm>
#include <cmath>

#include "gpu_test.h"
#include "model_builder.h"
#include "quant_test_util.h"

namespace vkgraph::testing {
namespace {

HostTensor f32(Shape s, const std::vector<float>& v) {
  return HostTensor::from(DType::Float32, s, v);
}
HostTensor i32(Shape s, const std::vector<int32_t>& v) {
  return HostTensor::from(DType::Int32, s, v);
}

class QuantTest : public GpuTest {};
class MatMulNBitsTest : public GpuTest {};

// Opset 21 blocked quantization through the ONNX frontend: QuantizeLinear (output_dtype int8,
// axis 1, block_size 3) then DequantizeLinear of its 8-bit result, which stays 8-bit between
// them; the quantized output reaches the model output widened.
TEST_F(QuantTest, OnnxBlockedQuantizeDequantizeOpset21) {
  const int64_t rows = 4, cols = 7, blocks = 3;  // ceil(7 / 3)
  ModelBuilder m(21);
  m.input("x", onnx::TensorProto::FLOAT, {rows, cols});
  m.input("scale", onnx::TensorProto::FLOAT, {rows, blocks});
  m.input("zp", onnx::TensorProto::INT8, {rows, blocks});
  m.output("q", onnx::TensorProto::INT8);
  m.output("y", onnx::TensorProto::FLOAT);
  auto attrs = [](onnx::NodeProto& n, std::initializer_list<std::pair<const char*, int64_t>> kv) {
    for (auto [name, v] : kv) {
      onnx::AttributeProto* a = n.add_attribute();
      a->set_name(name);
      a->set_type(onnx::AttributeProto::INT);
      a->set_i(v);
    }
  };
  attrs(m.node("QuantizeLinear", {"x", "scale", "zp"}, {"q"}),
        {{"axis", 1}, {"block_size", 3}, {"output_dtype", onnx::TensorProto::INT8}});
  attrs(m.node("DequantizeLinear", {"q", "scale", "zp"}, {"y"}), {{"axis", 1}, {"block_size", 3}});
  Session s = m.session();
  std::vector<float> x = random_floats(rows * cols, -20.f, 20.f);
  std::vector<float> scale = random_floats(rows * blocks, 0.05f, 0.3f);
  std::vector<int> zp = random_ints(rng, rows * blocks, -20, 20);
  auto out = s.run({{"x", f32({rows, cols}, x)},
                    {"scale", f32({rows, blocks}, scale)},
                    {"zp", i32({rows, blocks}, std::vector<int32_t>(zp.begin(), zp.end()))}});
  ASSERT_EQ(out.size(), 2u);
  ASSERT_EQ(out[0].dtype, DType::Int32);  // the frontend's widened int8
  for (int64_t i = 0; i < rows * cols; ++i) {
    const int64_t j = i / cols * blocks + i % cols / 3;
    const float q = x[i] / scale[j];
    const int want = quantize_ref(q, zp[j], DType::Int8);
    ASSERT_EQ(out[0].data<int32_t>()[i], want) << i;
    ASSERT_EQ(out[1].data<float>()[i], float(want - zp[j]) * scale[j]) << i;
  }
}

// ONNX INT4 / UINT4 (opset 21; numbered 22 / 21, newer than the onnx.proto vkgraph builds
// with): packed two per byte, low nibble first, in int32_data (onnx.helper's form) or
// raw_data. Blocked QuantizeLinear to int4 saturates to [-8, 7]; DequantizeLinear of it and of a
// uint4 weight feeding a MatMul, against C++ references.
onnx::TensorProto packed_4bit(const std::string& name, int type, const Shape& shape,
                              const std::vector<int>& values, bool raw) {
  onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(type);
  for (int64_t d : shape) t.add_dims(d);
  std::string bytes((values.size() + 1) / 2, '\0');
  for (size_t i = 0; i < values.size(); ++i)
    bytes[i / 2] = static_cast<char>(bytes[i / 2] | ((values[i] & 15) << (i % 2 ? 4 : 0)));
  if (raw)
    t.set_raw_data(bytes);
  else
    for (char c : bytes) t.add_int32_data(static_cast<uint8_t>(c));
  return t;
}

TEST_F(QuantTest, OnnxInt4BlockedQuantizeAndUInt4Weights) {
  constexpr int kInt4 = 22, kUInt4 = 21;
  const int64_t rows = 4, cols = 10, blocks = 3, n = 5;  // blocks of 4 along cols
  ModelBuilder m(21);
  m.input("x", onnx::TensorProto::FLOAT, {rows, cols});
  m.output("q", kInt4);
  m.output("y", onnx::TensorProto::FLOAT);
  m.output("mm", onnx::TensorProto::FLOAT);
  std::vector<float> scale = random_floats(rows * blocks, 0.1f, 0.3f);
  std::vector<int> zp = random_ints(rng, rows * blocks, -3, 3);
  std::vector<int> w = random_ints(rng, cols * n, 0, 15);
  std::vector<float> w_scale = random_floats(blocks * n, 0.02f, 0.05f);
  m.initializer("scale", Shape{rows, blocks}, scale);
  m.initializer(packed_4bit("zp", kInt4, {rows, blocks}, zp, false));
  m.initializer(packed_4bit("w", kUInt4, {cols, n}, w, true));  // 50 codes: 25 bytes
  m.initializer("w_scale", Shape{blocks, n}, w_scale);
  auto attrs = [](onnx::NodeProto& node,
                  std::initializer_list<std::pair<const char*, int64_t>> kv) {
    for (auto [name, v] : kv) {
      onnx::AttributeProto* a = node.add_attribute();
      a->set_name(name);
      a->set_type(onnx::AttributeProto::INT);
      a->set_i(v);
    }
  };
  attrs(m.node("QuantizeLinear", {"x", "scale", "zp"}, {"q"}), {{"axis", 1}, {"block_size", 4}});
  attrs(m.node("DequantizeLinear", {"q", "scale", "zp"}, {"y"}), {{"axis", 1}, {"block_size", 4}});
  attrs(m.node("DequantizeLinear", {"w", "w_scale"}, {"wd"}), {{"axis", 0}, {"block_size", 4}});
  m.node("MatMul", {"x", "wd"}, {"mm"});
  Session s = m.session();
  std::vector<float> x = random_floats(rows * cols, -3.f, 3.f);  // beyond 8 * scale: saturates
  auto out = s.run({{"x", f32({rows, cols}, x)}});
  ASSERT_EQ(out.size(), 3u);
  int saturated = 0;
  for (int64_t i = 0; i < rows * cols; ++i) {
    const int64_t j = i / cols * blocks + i % cols / 4;
    const double r = std::nearbyint(double(x[i] / scale[j])) + zp[j];
    const int want = static_cast<int>(std::clamp(r, -8.0, 7.0));
    saturated += r != want;
    ASSERT_EQ(out[0].data<int32_t>()[i], want) << i;
    ASSERT_EQ(out[1].data<float>()[i], float(want - zp[j]) * scale[j]) << i;
  }
  EXPECT_GT(saturated, 0) << "the test should reach int4's bounds";
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t c = 0; c < n; ++c) {
      double want = 0;
      for (int64_t k = 0; k < cols; ++k)
        want += double(x[i * cols + k]) * w[k * n + c] * w_scale[k / 4 * n + c];
      EXPECT_NEAR(out[2].data<float>()[i * n + c], want, 1e-4 * (1 + std::abs(want)));
    }
}

// A blocked low-bit constant weight dequantized into a MatMul (an LLM linear layer from opset
// 21's blocked DequantizeLinear) runs as one weight-only kernel (fuse_weight_only.h): int4,
// uint4, int8 and uint8 codes, with and without zero points, blocks of 16 and 32 along K = 70
// (the last partial), x with M = 1 (the GEMV), M = 6 (rank 3, the tiled GEMM) and M = 20 (the
// weights dequantized for the float GEMM), fp32 and fp16 mode; against a double reference and the
// unfused path. A weight also read as a model output keeps its DequantizeLinear (and the fusion
// does not fire).
TEST_F(QuantTest, BlockedLowBitWeightMatMulRunsAsWeightOnlyKernel) {
  constexpr int kInt4 = 22, kUInt4 = 21;
  const int64_t k = 70, n = 9;
  struct Case {
    int type;
    int64_t block;
    bool zero_point, weight_is_output;
  };
  for (const Case& c :
       {Case{kInt4, 32, false, false}, Case{kInt4, 16, true, false}, Case{kUInt4, 32, true, false},
        Case{kUInt4, 16, false, false}, Case{onnx::TensorProto::INT8, 16, true, false},
        Case{onnx::TensorProto::UINT8, 32, false, false}, Case{kInt4, 32, true, true}}) {
    const bool four = c.type == kInt4 || c.type == kUInt4;
    const bool is_signed = c.type == kInt4 || c.type == onnx::TensorProto::INT8;
    const int lo = is_signed ? (four ? -8 : -128) : 0;
    const int hi = (four ? 15 : 255) + lo;
    const int64_t blocks = (k + c.block - 1) / c.block;
    std::vector<int> w = random_ints(rng, k * n, lo, hi);
    std::vector<int> zp =
        c.zero_point ? random_ints(rng, blocks * n, lo, hi) : std::vector<int>(blocks * n, 0);
    std::vector<float> scale = random_floats(blocks * n, 0.01f, 0.05f);
    for (const Shape& x_shape : {Shape{1, k}, Shape{2, 3, k}, Shape{4, 5, k}}) {
      SCOPED_TRACE("type " + std::to_string(c.type) + " block " + std::to_string(c.block) +
                   (c.zero_point ? " zero points" : "") + " x rank " +
                   std::to_string(x_shape.size()));
      ModelBuilder m(21);
      if (x_shape.size() == 2)
        m.input("x", onnx::TensorProto::FLOAT, {1, k});
      else if (x_shape[0] == 2)
        m.input("x", onnx::TensorProto::FLOAT, {2, 3, k});
      else
        m.input("x", onnx::TensorProto::FLOAT, {4, 5, k});
      m.output("y", onnx::TensorProto::FLOAT);
      if (c.weight_is_output) m.output("wd", onnx::TensorProto::FLOAT);
      if (four)
        m.initializer(packed_4bit("w", c.type, {k, n}, w, true));
      else
        m.int_initializer("w", c.type, {k, n}, w);
      m.initializer("w_scale", Shape{blocks, n}, scale);
      if (c.zero_point) {
        if (four)
          m.initializer(packed_4bit("w_zero", c.type, {blocks, n}, zp, false));
        else
          m.int_initializer("w_zero", c.type, {blocks, n}, zp);
      }
      onnx::NodeProto& dq = c.zero_point
                                ? m.node("DequantizeLinear", {"w", "w_scale", "w_zero"}, {"wd"})
                                : m.node("DequantizeLinear", {"w", "w_scale"}, {"wd"});
      for (auto [name, v] : {std::pair{"axis", int64_t{0}}, {"block_size", c.block}}) {
        onnx::AttributeProto* a = dq.add_attribute();
        a->set_name(name);
        a->set_type(onnx::AttributeProto::INT);
        a->set_i(v);
      }
      m.node("MatMul", {"x", "wd"}, {"y"});
      const int64_t rows = numel(x_shape) / k;
      std::vector<float> x = random_floats(rows * k, -1.f, 1.f);
      for (bool fp16 : {false, true}) {
        SCOPED_TRACE(fp16 ? "fp16" : "fp32");
        Runs r = run_both(m, {{"x", f32(x_shape, x)}}, fp16);
        // Fused: the weight-only matmul alone (from M = 16: its dequantization pass and the
        // float GEMM); unfused: DequantizeLinear (and its zero point's widening), then MatMul.
        if (c.weight_is_output)
          EXPECT_EQ(r.fused_nodes, r.plain_nodes);
        else if (rows < 16)
          EXPECT_LT(r.fused_nodes, r.plain_nodes);
        else
          EXPECT_LE(r.fused_nodes, r.plain_nodes);
        // In fp16 mode the kernel reads and writes float16: x is cast once, as it enters.
        if (!c.weight_is_output) {
          EXPECT_EQ(r.fused_nodes, (rows >= 16 ? 2u : 1u) + input_casts(fp16, 1));
        }
        for (int64_t i = 0; i < rows; ++i)
          for (int64_t j = 0; j < n; ++j) {
            double want = 0, mag = 0;
            for (int64_t l = 0; l < k; ++l) {
              const int64_t blk = l / c.block * n + j;
              const double s = fp16 ? half_to_float(float_to_half(scale[blk])) : scale[blk];
              const double xv = fp16 ? half_to_float(float_to_half(x[i * k + l])) : x[i * k + l];
              const double term = xv * (w[l * n + j] - zp[blk]) * s;
              want += term;
              mag += std::abs(term);
            }
            const double tol = (fp16 ? 2e-3 : 2e-5) * (mag + 1e-3);
            EXPECT_NEAR(r.fused[0].as_double(i * n + j), want, tol) << i << ", " << j;
            EXPECT_NEAR(r.plain[0].as_double(i * n + j), want, tol) << i << ", " << j;
          }
      }
    }
  }
}

// MatMulNBits as onnxruntime's quantizers write it (weights, scales and zero points here as
// model inputs), fp32 and fp16 mode. In fp16 mode the node computes in float16: A and the scales
// enter as float16 (one cast each) and the result leaves as float16, so a 4-bit LLM's linear
// layers need no cast between them and their float16 neighbours. accuracy_level 4 (int8 a
// allowed) changes nothing at M > 1; a level outside 0..4 is an error naming it.
TEST_F(MatMulNBitsTest, OnnxLoweringComMicrosoft) {
  NBitsWeight wt(rng, 50, 12, 4, 16, Zeros::Packed, false, false);
  const int64_t m = 3, blob = wt.block / 2;
  ModelBuilder mb(17);
  mb.import_domain("com.microsoft", 1);
  mb.input("A", onnx::TensorProto::FLOAT, {m, wt.k});
  mb.input("B", onnx::TensorProto::UINT8, {wt.n, wt.blocks, blob});
  mb.input("scales", onnx::TensorProto::FLOAT, {wt.n * wt.blocks});
  mb.input("zp", onnx::TensorProto::UINT8, {int64_t(wt.zero_packed.size())});
  mb.output("Y", onnx::TensorProto::FLOAT);
  onnx::NodeProto& node = mb.node("MatMulNBits", {"A", "B", "scales", "zp"}, {"Y"});
  node.set_domain("com.microsoft");
  for (auto [name, v] : {std::pair{"K", wt.k},
                         {"N", wt.n},
                         {"bits", int64_t{4}},
                         {"block_size", wt.block},
                         {"accuracy_level", int64_t{4}}}) {
    onnx::AttributeProto* at = node.add_attribute();
    at->set_name(name);
    at->set_type(onnx::AttributeProto::INT);
    at->set_i(v);
  }
  std::vector<float> a = random_floats(m * wt.k);
  // The frontend holds uint8 model inputs widened to int32.
  auto widened = [](Shape sh, const std::vector<uint8_t>& v) {
    return HostTensor::from(DType::Int32, std::move(sh), std::vector<int32_t>(v.begin(), v.end()));
  };
  for (bool fp16 : {false, true}) {
    SCOPED_TRACE(fp16 ? "fp16" : "fp32");
    SessionOptions o;
    o.fp16 = fp16;
    o.graph.profile = true;
    Session s = mb.session(o);
    auto out = s.run({{"A", HostTensor::from(DType::Float32, {m, wt.k}, a)},
                      {"B", widened({wt.n, wt.blocks, blob}, wt.packed)},
                      {"scales", HostTensor::from(DType::Float32, {wt.n * wt.blocks}, wt.scales)},
                      {"zp", widened({int64_t(wt.zero_packed.size())}, wt.zero_packed)}});
    // The packed bytes narrowed from their widened int32 (B, zp), the float16 casts (A, scales).
    EXPECT_EQ(s.graph()->stats().nodes, 3u + input_casts(fp16, 2));
    ASSERT_EQ(out[0].shape, (Shape{m, wt.n}));
    // fp16: A, the scales and the result each rounded to float16, 2^-11 relative at most.
    const double tol = fp16 ? 2e-3 : 2e-5;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < wt.n; ++j) {
        double want = 0, mag = 0;
        for (int64_t l = 0; l < wt.k; ++l) {
          want += a[i * wt.k + l] * wt.w[j * wt.k + l];
          mag += std::abs(a[i * wt.k + l] * wt.w[j * wt.k + l]);
        }
        EXPECT_NEAR(out[0].data<float>()[i * wt.n + j], want, tol * (mag + 1e-3)) << i << "," << j;
      }
  }
  node.mutable_attribute(4)->set_i(5);
  try {
    mb.session({});
    ADD_FAILURE() << "accuracy_level 5 loaded";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("accuracy_level"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace vkgraph::testing
