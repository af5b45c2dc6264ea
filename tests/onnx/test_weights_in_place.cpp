// Weights read in place (weights_in_place.h): a model from a file is parsed with its large
// initializers' raw_data cut out and read from the file's bytes. The cut must change nothing
// but where the bytes are read from, and anything unusual in the bytes must fall back to
// protobuf's own parse.
#include <onnx/onnx_pb.h>
#include <unistd.h>

#include <filesystem>
#include <random>

#include "gpu_test.h"
#include "model_builder.h"
#include "onnx/host_constant.h"
#include "onnx/load.h"
#include "onnx/weights_in_place.h"
#include "vkgraph/file_io.h"
#include "vkgraph/onnx_tensor.h"
#include "vkgraph/session.h"

namespace vkgraph::testing {
namespace {

using onnx_import::excise_initializer_data;
using onnx_import::kInPlaceMinBytes;

std::vector<float> random_floats(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  std::vector<float> v(n);
  for (float& x : v) x = u(rng);
  return v;
}

// A float32 initializer of `dims` with random values in raw_data (where the cut applies; the
// typed float_data field of ModelBuilder's initializer is never cut).
onnx::TensorProto raw_tensor(const std::string& name, const Shape& dims, uint32_t seed) {
  onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(onnx::TensorProto::FLOAT);
  for (int64_t d : dims) t.add_dims(d);
  const std::vector<float> v = random_floats(static_cast<size_t>(numel(dims)), seed);
  t.set_raw_data(v.data(), v.size() * sizeof(float));
  return t;
}

// Y = (X @ (W + C)) + B with W [64, 32] (8 KiB: read in place), B [32] (128 bytes: kept in the
// proto) and C a Constant node's tensor as large as W (attributes are never cut).
onnx::ModelProto model() {
  ModelBuilder m(13);
  m.input("X", onnx::TensorProto::FLOAT, {3, 64});
  m.output("Y", onnx::TensorProto::FLOAT);
  m.initializer(raw_tensor("W", {64, 32}, 1));
  m.initializer(raw_tensor("B", {32}, 2));
  onnx::AttributeProto& a = *m.node("Constant", {}, {"C"}).add_attribute();
  a.set_name("value");
  a.set_type(onnx::AttributeProto::TENSOR);
  *a.mutable_t() = raw_tensor("C", {64, 32}, 3);
  m.node("Add", {"W", "C"}, {"WC"});
  m.node("MatMul", {"X", "WC"}, {"XW"});
  m.node("Add", {"XW", "B"}, {"Y"});
  return m.proto();
}

// A protobuf length-delimited field: tag, length, payload.
std::string length_delimited(uint32_t field, const std::string& payload) {
  std::string out(1, static_cast<char>(field << 3 | 2));
  for (size_t v = payload.size();; v >>= 7) {
    out.push_back(static_cast<char>(v >= 0x80 ? (v & 0x7f) | 0x80 : v));
    if (v < 0x80) break;
  }
  return out + payload;
}

std::span<const uint8_t> span_of(const std::string& s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

TEST(WeightsInPlace, CutsOnlyLargeInitializersAndChangesNothingElse) {
  const onnx::ModelProto original = model();
  const std::string bytes = original.SerializeAsString();
  const auto cut = excise_initializer_data(span_of(bytes), kInPlaceMinBytes);
  ASSERT_TRUE(cut.has_value());
  ASSERT_EQ(cut->excisions.size(), 1u);  // W; not B (small), not the Constant's (an attribute)
  const onnx_import::Excision& e = cut->excisions[0];
  EXPECT_EQ(e.initializer, 0);
  EXPECT_EQ(bytes.substr(e.offset, e.size), original.graph().initializer(0).raw_data());
  EXPECT_LT(cut->bytes.size(), bytes.size() - 8000);

  onnx::ModelProto parsed;
  ASSERT_TRUE(parsed.ParseFromString(cut->bytes));
  EXPECT_EQ(parsed.graph().initializer(0).raw_data().size(), 1u);
  // Put the bytes back: the very same model.
  parsed.mutable_graph()->mutable_initializer(0)->set_raw_data(bytes.substr(e.offset, e.size));
  EXPECT_EQ(parsed.SerializeAsString(), bytes);
}

TEST(WeightsInPlace, NothingLargeOrAnythingUnusualFallsBack) {
  const std::string bytes = model().SerializeAsString();
  EXPECT_FALSE(excise_initializer_data(span_of(bytes), 1 << 20).has_value());  // none that large
  // Truncated anywhere: a cut only where the rest is whole fields, never of bytes past the end.
  for (size_t n = 0; n < bytes.size(); n += 7) {
    const auto cut = excise_initializer_data(span_of(bytes.substr(0, n)), kInPlaceMinBytes);
    if (!cut) continue;
    onnx::ModelProto parsed;
    EXPECT_TRUE(parsed.ParseFromString(cut->bytes)) << "truncated to " << n;
    for (const auto& e : cut->excisions) EXPECT_LE(e.offset + e.size, n) << "truncated to " << n;
  }
  // A second graph field (protobuf merges the two) or a second raw_data (the last one counts):
  // the cut would have to follow protobuf's merge rules, so it leaves them to protobuf.
  onnx::ModelProto second_graph;
  second_graph.mutable_graph()->set_name("more");
  EXPECT_FALSE(
      excise_initializer_data(span_of(bytes + second_graph.SerializeAsString()), kInPlaceMinBytes));
  // W's TensorProto with a second raw_data field, spliced by hand (serializing a parsed proto
  // would write one).
  onnx::ModelProto m = model();
  onnx::TensorProto extra;
  extra.set_raw_data(std::string(8, 'x'));
  const std::string doubled =
      m.graph().initializer(0).SerializeAsString() + extra.SerializeAsString();
  m.mutable_graph()->clear_initializer();
  const std::string graph = m.graph().SerializeAsString() + length_delimited(5, doubled);
  m.clear_graph();
  const std::string twice_bytes = m.SerializeAsString() + length_delimited(7, graph);
  onnx::ModelProto check;
  ASSERT_TRUE(check.ParseFromString(twice_bytes));
  EXPECT_EQ(check.graph().initializer(0).raw_data(), std::string(8, 'x'));  // the last one
  const auto cut = excise_initializer_data(span_of(twice_bytes), kInPlaceMinBytes);
  EXPECT_FALSE(cut.has_value());
  // A group (wire type 3), which the cut does not parse.
  EXPECT_FALSE(
      excise_initializer_data(span_of(bytes + std::string("\x0b\x0c", 2)), kInPlaceMinBytes));
}

// parse_model with an owner of the bytes reads W through initializer_data, with the same
// values and the same checks as from the proto.
TEST(WeightsInPlace, InitializersReadFromTheBytesEqualTheProtos) {
  const onnx::ModelProto original = model();
  auto bytes = std::make_shared<const std::string>(original.SerializeAsString());
  const onnx_import::ParsedModel m =
      onnx_import::parse_model(bytes->data(), bytes->size(), "test", "", bytes);
  ASSERT_TRUE(m.raw_data_of(0).has_value());
  EXPECT_FALSE(m.raw_data_of(1).has_value());
  EXPECT_EQ(m.proto.graph().initializer(0).raw_data().size(), 1u);
  for (int i = 0; i < 2; ++i) {
    const HostTensor want = onnx_io::tensor_from_proto(original.graph().initializer(i));
    const auto c =
        onnx_import::HostConstant::of_initializer(m.proto.graph().initializer(i), m.raw_data_of(i));
    EXPECT_EQ(c.shape(), want.shape);
    EXPECT_EQ(c.copy().bytes, want.bytes) << i;
    EXPECT_EQ(c.half().bytes, onnx_import::half_of(want).bytes) << i;
    EXPECT_EQ(c->bytes, want.bytes) << i;
  }
  // Dims that ask for more than the file holds: the error counts the real bytes, not the
  // placeholder's one.
  onnx::ModelProto bad = original;
  bad.mutable_graph()->mutable_initializer(0)->set_dims(0, 65);
  auto bad_bytes = std::make_shared<const std::string>(bad.SerializeAsString());
  const onnx_import::ParsedModel bm =
      onnx_import::parse_model(bad_bytes->data(), bad_bytes->size(), "test", "", bad_bytes);
  expect_error(
      [&] {
        onnx_import::HostConstant::of_initializer(bm.proto.graph().initializer(0),
                                                  bm.raw_data_of(0));
      },
      ErrorKind::ModelFormat, "raw_data holds 8192 bytes");
}

// A Session from the file (weights in place) and one from the bytes (parsed as they are) give
// the same outputs.
class WeightsInPlaceSession : public GpuTest {};

TEST_F(WeightsInPlaceSession, FileAndBytesGiveTheSameOutputs) {
  const std::string bytes = model().SerializeAsString();
  const std::filesystem::path path = std::filesystem::temp_directory_path() /
                                     ("vkgraph_in_place_" + std::to_string(::getpid()) + ".onnx");
  write_file_bytes(path.string(), span_of(bytes));
  HostTensor x(DType::Float32, {3, 64});
  const std::vector<float> xs = random_floats(3 * 64, 4);
  std::copy(xs.begin(), xs.end(), x.data<float>());
  SessionOptions options;
  options.context = context();
  Session from_file(path.string(), options);
  std::filesystem::remove(path);  // the mapping stays valid: the bytes are still read in place
  Session from_bytes(bytes.data(), bytes.size(), options);
  const HostTensor a = from_file.run({{"X", x}}).at(0);
  const HostTensor b = from_bytes.run({{"X", x}}).at(0);
  ASSERT_EQ(a.shape, (Shape{3, 32}));
  EXPECT_EQ(a.bytes, b.bytes);
  // And against a float64 reference of the model's arithmetic.
  const onnx::ModelProto m = model();
  const auto tensor = [&](const onnx::TensorProto& t) { return onnx_io::tensor_from_proto(t); };
  const HostTensor w = tensor(m.graph().initializer(0)), bias = tensor(m.graph().initializer(1));
  const HostTensor c = tensor(m.graph().node(0).attribute(0).t());
  double worst = 0;
  for (int r = 0; r < 3; ++r)
    for (int j = 0; j < 32; ++j) {
      double want = bias.data<float>()[j];
      for (int k = 0; k < 64; ++k)
        want += double(xs[r * 64 + k]) *
                (double(w.data<float>()[k * 32 + j]) + double(c.data<float>()[k * 32 + j]));
      worst = std::max(worst, std::abs(want - a.data<float>()[r * 32 + j]));
    }
  EXPECT_LT(worst, 1e-4);
}

}  // namespace
}  // namespace vkgraph::testing
