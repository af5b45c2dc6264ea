// The ONNX lowerings of the quantization ops beyond the conformance data: opset 21 blocked
// QuantizeLinear / DequantizeLinear and com.microsoft MatMulNBits, against C++ references.
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
