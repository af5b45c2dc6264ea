// TensorProto I/O: round trips for every dtype, and malformed inputs, each of which
// must surface as a vkgraph::Error of the right kind rather than a crash.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "expect_error.h"
#include "tensor_test_util.h"
#include "vkgraph/error.h"
#include "vkgraph/file_io.h"
#include "vkgraph/onnx_tensor.h"
#include "vkgraph/tensor_io.h"
#include "vkgraph/types.h"

namespace vkgraph {
namespace {

namespace fs = std::filesystem;
using namespace vkgraph::testing;

const std::string kTestData = VKGRAPH_ONNX_TESTDATA_DIR;

// ---- TensorProto ------------------------------------------------------------------------------

TEST(TensorProto, RoundTripEveryDtype) {
  TempDir dir;
  for (const HostTensor& t : sample_tensors()) {
    SCOPED_TRACE(dtype_name(t.dtype));
    const onnx::TensorProto proto = onnx_io::tensor_to_proto(t, "x");
    EXPECT_EQ(proto.name(), "x");
    EXPECT_TRUE(onnx_io::is_native_onnx_type(proto.data_type()));
    expect_same(onnx_io::tensor_from_proto(proto), t);
    const std::string path = dir.file(std::string(dtype_name(t.dtype)) + ".pb");
    onnx_io::write_tensor_pb(path, t, "y");
    std::string name;
    expect_same(onnx_io::read_tensor_pb(path, &name), t);
    EXPECT_EQ(name, "y");
  }
}

TEST(TensorProto, TypedFields) {
  using TP = onnx::TensorProto;
  TP p;
  p.set_data_type(TP::FLOAT);
  p.add_dims(2);
  p.add_float_data(1.5f);
  p.add_float_data(-2.f);
  HostTensor t = onnx_io::tensor_from_proto(p);
  EXPECT_EQ(t.dtype, DType::Float32);
  EXPECT_EQ(t.as_double(1), -2.0);

  p.Clear();
  p.set_data_type(TP::FLOAT16);
  p.add_int32_data(0x3c00);  // bit patterns in the low 16 bits
  t = onnx_io::tensor_from_proto(p);
  EXPECT_EQ(t.shape, Shape{});
  EXPECT_EQ(t.as_double(0), 1.0);

  p.Clear();
  p.set_data_type(TP::INT64);
  p.add_dims(1);
  p.add_int64_data(-5);
  EXPECT_EQ(onnx_io::tensor_from_proto(p).as_int(0), -5);

  p.Clear();
  p.set_data_type(TP::BOOL);
  p.add_dims(2);
  p.add_int32_data(0);
  p.add_int32_data(7);
  t = onnx_io::tensor_from_proto(p);
  EXPECT_EQ(t.bytes, (TensorBytes{0, 1}));
}

TEST(TensorProto, ConvertedTypes) {
  using TP = onnx::TensorProto;
  TP p;
  p.set_data_type(TP::INT8);
  p.add_dims(2);
  p.add_int32_data(-128);
  p.add_int32_data(127);
  HostTensor t = onnx_io::tensor_from_proto(p);
  EXPECT_EQ(t.dtype, DType::Int32);
  EXPECT_EQ(t.as_int(0), -128);

  p.Clear();
  p.set_data_type(TP::UINT16);
  p.add_dims(2);
  const uint16_t u16[] = {65535, 1};
  p.set_raw_data(u16, sizeof(u16));
  t = onnx_io::tensor_from_proto(p);
  EXPECT_EQ(t.dtype, DType::Int32);
  EXPECT_EQ(t.as_int(0), 65535);

  p.Clear();
  p.set_data_type(TP::UINT32);
  p.add_uint64_data(4294967295u);
  t = onnx_io::tensor_from_proto(p);
  EXPECT_EQ(t.dtype, DType::Int64);
  EXPECT_EQ(t.as_int(0), 4294967295);

  p.Clear();
  p.set_data_type(TP::UINT64);
  p.add_uint64_data(uint64_t{1} << 63);
  expect_error([&] { onnx_io::tensor_from_proto(p); }, ErrorKind::Unsupported, "int64");
}

// float64 narrows to float32 rounding, NaN and +-inf kept; a finite value beyond float32's
// range would become inf, a silent wrong answer, so it is refused naming the tensor and the
// value: Unsupported in a model constant, InvalidArgument in a .pb file of data to run on.
TEST(TensorProto, Float64NarrowsOrIsRefusedBeyondFloat32Range) {
  using TP = onnx::TensorProto;
  TP p;
  p.set_name("w");
  p.set_data_type(TP::DOUBLE);
  p.add_dims(5);
  const double fine[] = {0.1, -3.4e38, 1e-310, std::numeric_limits<double>::infinity(),
                         std::numeric_limits<double>::quiet_NaN()};
  p.set_raw_data(fine, sizeof(fine));
  HostTensor t = onnx_io::tensor_from_proto(p);
  EXPECT_EQ(t.dtype, DType::Float32);
  EXPECT_EQ(t.data<float>()[0], 0.1f);
  EXPECT_EQ(t.data<float>()[1], -3.4e38f);
  EXPECT_EQ(t.data<float>()[2], 0.f);
  EXPECT_EQ(t.data<float>()[3], std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(t.data<float>()[4]));

  for (double beyond : {2.4e198, -3.5e38}) {
    p.clear_raw_data();
    p.clear_dims();
    p.add_dims(2);
    p.add_double_data(1.0);
    p.add_double_data(beyond);
    const std::string value = beyond > 0 ? "2.4e+198" : "-3.5e+38";
    expect_error([&] { onnx_io::tensor_from_proto(p); }, ErrorKind::Unsupported, "'w'");
    expect_error([&] { onnx_io::tensor_from_proto(p); }, ErrorKind::Unsupported,
                 "float64 value " + value + " is beyond float32's range");
    p.clear_double_data();
  }

  TempDir dir;
  const double huge[] = {1.0, 5.9e199};
  p.clear_dims();
  p.add_dims(2);
  p.set_raw_data(huge, sizeof(huge));
  write_file_bytes(dir.file("input_0.pb"), to_bytes(p.SerializeAsString()));
  expect_error([&] { onnx_io::read_tensor_pb(dir.file("input_0.pb")); }, ErrorKind::InvalidArgument,
               "5.9e+199 is beyond float32's range");
}

// bfloat16 is a float32's top half: it reads exactly into Float32, from raw_data or from the
// low 16 bits of int32_data, and converting back truncates (NaN stays NaN).
TEST(TensorProto, Bfloat16ReadsAsFloat32) {
  using TP = onnx::TensorProto;
  TP p;
  p.set_data_type(TP::BFLOAT16);
  p.add_dims(3);
  const uint16_t bits[] = {0x3f80, 0xc049, 0x7f80};  // 1, -3.140625, inf
  p.set_raw_data(bits, sizeof(bits));
  HostTensor t = onnx_io::tensor_from_proto(p);
  ASSERT_EQ(t.dtype, DType::Float32);
  EXPECT_EQ(t.data<float>()[0], 1.f);
  EXPECT_EQ(t.data<float>()[1], -3.140625f);
  EXPECT_TRUE(std::isinf(t.data<float>()[2]));
  p.clear_raw_data();
  for (uint16_t b : bits) p.add_int32_data(b);
  expect_same(onnx_io::tensor_from_proto(p), t);
  p.clear_int32_data();
  p.set_raw_data(bits, 4);  // 2 elements' bytes for 3
  expect_error([&] { onnx_io::tensor_from_proto(p); }, ErrorKind::ModelFormat, "raw_data");

  const uint32_t almost_next_bits = 0x3f80ffffu;  // just below bfloat16 0x3f81
  float almost_next;
  std::memcpy(&almost_next, &almost_next_bits, 4);
  EXPECT_EQ(onnx_io::float_to_bfloat16(almost_next), 0x3f80);  // truncated, not rounded up
  EXPECT_EQ(onnx_io::float_to_bfloat16(1.f), 0x3f80);
  uint32_t low_nan_bits = 0x7f800001u;  // a NaN with only a low payload bit
  float low_nan;
  std::memcpy(&low_nan, &low_nan_bits, 4);
  EXPECT_TRUE(std::isnan(onnx_io::bfloat16_to_float(onnx_io::float_to_bfloat16(low_nan))));
}

TEST(TensorProto, MalformedProtosAreRejected) {
  using TP = onnx::TensorProto;
  TP p;
  p.set_name("w");
  p.set_data_type(TP::FLOAT);
  p.add_dims(3);
  p.set_raw_data(std::string(8, '\0'));
  expect_error([&] { onnx_io::tensor_from_proto(p); }, ErrorKind::ModelFormat, "raw_data holds 8");
  expect_error([&] { onnx_io::tensor_from_proto(p); }, ErrorKind::ModelFormat, "'w'");

  p.set_raw_data(std::string(12, '\0'));
  p.add_float_data(1.f);
  expect_error([&] { onnx_io::tensor_from_proto(p); }, ErrorKind::ModelFormat, "both");

  p.clear_raw_data();
  expect_error([&] { onnx_io::tensor_from_proto(p); }, ErrorKind::ModelFormat, "holds 1 values");

  p.clear_float_data();
  p.clear_dims();
  p.add_dims(-1);
  expect_error([&] { onnx_io::tensor_from_proto(p); }, ErrorKind::ModelFormat, "invalid dims");
  p.clear_dims();
  for (int i = 0; i < 3; ++i) p.add_dims(int64_t{1} << 30);
  p.set_raw_data(std::string(4, '\0'));
  expect_error([&] { onnx_io::tensor_from_proto(p); }, ErrorKind::ModelFormat, "invalid dims");
  p.clear_dims();
  p.add_dims(int64_t{1} << 60);  // fits int64 but not the 4 bytes present
  expect_error([&] { onnx_io::tensor_from_proto(p); }, ErrorKind::ModelFormat, "raw_data");

  TP ext;
  ext.set_data_type(TP::FLOAT);
  ext.set_data_location(TP::EXTERNAL);
  auto* entry = ext.add_external_data();
  entry->set_key("location");
  entry->set_value("weights.bin");
  expect_error([&] { onnx_io::tensor_from_proto(ext); }, ErrorKind::Unsupported, "external");

  TP str;
  str.set_data_type(TP::STRING);
  str.add_string_data("a");
  expect_error([&] { onnx_io::tensor_from_proto(str); }, ErrorKind::Unsupported, "STRING");
  TP complex;  // BFLOAT16 reads since bfloat16 support; complex types still do not
  complex.set_data_type(TP::COMPLEX64);
  expect_error([&] { onnx_io::tensor_from_proto(complex); }, ErrorKind::Unsupported, "COMPLEX64");
  TP untyped;
  expect_error([&] { onnx_io::tensor_from_proto(untyped); }, ErrorKind::ModelFormat, "data_type");
}

// Corrupted serialized protos either parse into something tensor_from_proto accepts or
// rejects, or fail to parse; never a crash or an allocation sized by a corrupt dim.
TEST(TensorProto, CorruptedProtosNeverCrash) {
  const std::string good =
      onnx_io::tensor_to_proto(sample_tensors()[2], "tensor").SerializeAsString();
  std::mt19937 rng(99);
  int parsed = 0;
  for (int trial = 0; trial < 3000; ++trial) {
    std::string bad = good;
    for (int k = 0; k < 1 + trial % 3; ++k) bad[rng() % bad.size()] = static_cast<char>(rng());
    onnx::TensorProto proto;
    if (!proto.ParseFromString(bad)) continue;
    ++parsed;
    try {
      onnx_io::tensor_from_proto(proto);
    } catch (const Error&) {
    }
  }
  EXPECT_GT(parsed, 0);
}

TEST(TensorProto, FileErrors) {
  TempDir dir;
  expect_error([&] { onnx_io::read_tensor_pb(dir.file("none.pb")); }, ErrorKind::Io, "none.pb");
  write_file_bytes(dir.file("junk.pb"), to_bytes("\xff\xff\xff\xff junk"));
  expect_error([&] { onnx_io::read_tensor_pb(dir.file("junk.pb")); }, ErrorKind::ModelFormat,
               "junk.pb");
}

TEST(TensorProto, DecodesBytesAsTheFileReaderDoes) {
  for (const HostTensor& t : sample_tensors()) {
    SCOPED_TRACE(dtype_name(t.dtype));
    const std::string bytes = onnx_io::tensor_to_proto(t, "z").SerializeAsString();
    std::string name;
    expect_same(onnx_io::decode_tensor_pb(to_bytes(bytes), "mem", &name), t);
    EXPECT_EQ(name, "z");
  }
  expect_error([] { onnx_io::decode_tensor_pb(to_bytes("\xff\xff\xff\xff junk"), "label"); },
               ErrorKind::ModelFormat, "label: not a valid serialized onnx.TensorProto");
}

// fuzz_pb in the CI run: an int4 tensor of INT64_MAX elements overflowed (count + 1) / 2, the
// packed byte count, and the error named a negative size.
TEST(TensorProto, Int4WithTheLargestDimension) {
  onnx::TensorProto proto;
  proto.add_dims(std::numeric_limits<int64_t>::max());
  proto.set_data_type(22);  // INT4
  proto.set_raw_data(std::string(1, '\0'));
  expect_error([&] { onnx_io::decode_tensor_pb(to_bytes(proto.SerializeAsString()), "big"); },
               ErrorKind::ModelFormat, "need 4611686018427387904");
}

TEST(TensorProto, ReadsOnnxTestData) {
  const std::string dir = kTestData + "/node/test_add/test_data_set_0/";
  if (!fs::exists(dir)) GTEST_SKIP() << "no ONNX test data at " << kTestData;
  const HostTensor a = onnx_io::read_tensor_pb(dir + "input_0.pb");
  const HostTensor b = onnx_io::read_tensor_pb(dir + "input_1.pb");
  const HostTensor sum = onnx_io::read_tensor_pb(dir + "output_0.pb");
  EXPECT_EQ(a.dtype, DType::Float32);
  EXPECT_EQ(a.shape, (Shape{3, 4, 5}));
  ASSERT_EQ(sum.shape, a.shape);
  for (int64_t i = 0; i < a.numel(); ++i) {
    EXPECT_NEAR(a.as_double(i) + b.as_double(i), sum.as_double(i), 1e-5);
  }
  const HostTensor shape = onnx_io::read_tensor_pb(
      kTestData + "/node/test_reshape_negative_dim/test_data_set_0/input_1.pb");
  EXPECT_EQ(shape.dtype, DType::Int64);
  EXPECT_EQ(shape.shape, Shape{3});
}

// Every tensor file of the node tests reads or fails with a vkgraph::Error (sequence and
// optional inputs are other message types; string and bfloat16 are Unsupported).
TEST(TensorProto, EveryNodeTestFileReadsOrFailsCleanly) {
  const fs::path root = kTestData + "/node";
  if (!fs::exists(root)) GTEST_SKIP() << "no ONNX test data at " << kTestData;
  int read = 0, rejected = 0;
  for (const auto& entry : fs::recursive_directory_iterator(root)) {
    if (entry.path().extension() != ".pb") continue;
    try {
      onnx_io::read_tensor_pb(entry.path().string());
      ++read;
    } catch (const Error&) {
      ++rejected;
    }
  }
  std::printf("[          ] tensor files read: %d, rejected with Error: %d\n", read, rejected);
  EXPECT_GT(read, 1500);
}

}  // namespace
}  // namespace vkgraph
