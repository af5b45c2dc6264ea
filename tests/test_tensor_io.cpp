// .npy and TensorProto I/O: round trips for every dtype, and malformed inputs, each of which
// must surface as a vkgraph::Error of the right kind rather than a crash.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "expect_error.h"
#include "vkgraph/error.h"
#include "vkgraph/file_io.h"
#include "vkgraph/onnx_tensor.h"
#include "vkgraph/tensor_io.h"
#include "vkgraph/types.h"

namespace vkgraph {
namespace {

namespace fs = std::filesystem;
using vkgraph::testing::expect_error;

const std::string kTestData = VKGRAPH_ONNX_TESTDATA_DIR;

// A per-test scratch directory, removed afterwards.
class TempDir {
 public:
  TempDir() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    path_ = fs::temp_directory_path() /
            ("vkgraph_" + std::string(info->name()) + "_" + std::to_string(::getpid()));
    fs::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  fs::path path_;
};

// One small tensor per dtype, with values that exercise sign and (for Float16) subnormals.
std::vector<HostTensor> sample_tensors() {
  return {
      HostTensor::from(DType::Float32, {2, 3},
                       std::vector<float>{0.f, -1.5f, 3.25f, 1e-30f, 7.f, -0.f}),
      HostTensor::from(DType::Float16, {3}, std::vector<uint16_t>{0x3c00, 0x8001, 0x7bff}),
      HostTensor::from(DType::Int32, {2, 1, 2},
                       std::vector<int32_t>{-2147483647 - 1, -1, 0, 2147483647}),
      HostTensor::from(DType::Int64, {}, std::vector<int64_t>{-9000000000000000000}),
      HostTensor::from(DType::Bool, {4}, std::vector<uint8_t>{1, 0, 0, 1}),
      HostTensor(DType::Float32, {0, 5}),  // empty
  };
}

void expect_same(const HostTensor& a, const HostTensor& b) {
  EXPECT_EQ(a.dtype, b.dtype);
  EXPECT_EQ(a.shape, b.shape);
  EXPECT_EQ(a.bytes, b.bytes);
}

std::vector<uint8_t> to_bytes(const std::string& s) {
  return {s.begin(), s.end()};
}

// A format 1.0 .npy with an arbitrary header text and data payload.
std::vector<uint8_t> npy_v1(const std::string& header, size_t data_bytes) {
  std::string file = "\x93NUMPY";
  file += '\x01';
  file += '\x00';
  file += static_cast<char>(header.size() & 0xff);
  file += static_cast<char>(header.size() >> 8);
  file += header;
  file.append(data_bytes, '\0');
  return to_bytes(file);
}

// ---- core types -------------------------------------------------------------------------------

TEST(Types, NumelAndShapeStr) {
  EXPECT_EQ(numel({}), 1);
  EXPECT_EQ(numel({2, 3, 4}), 24);
  EXPECT_EQ(numel({5, 0}), 0);
  EXPECT_EQ(shape_str({2, 3, 4}), "[2, 3, 4]");
  EXPECT_EQ(shape_str({}), "[]");
  expect_error([] { numel({2, -1}); }, ErrorKind::InvalidArgument, "negative");
  expect_error(
      [] {
        numel({int64_t{1} << 40, int64_t{1} << 40});
      },
      ErrorKind::InvalidArgument, "overflow");
}

TEST(Types, ErrorMessageHasKind) {
  const Error e(ErrorKind::ModelFormat, "bad file");
  EXPECT_STREQ(e.what(), "ModelFormat: bad file");
  EXPECT_EQ(e.kind(), ErrorKind::ModelFormat);
  EXPECT_STREQ(to_string(ErrorKind::DeviceLost), "DeviceLost");
}

TEST(Types, HostTensorAccessors) {
  const HostTensor t(DType::Int32, {2, 2});
  EXPECT_EQ(t.nbytes(), 16u);
  EXPECT_EQ(t.as_int(3), 0);
  const auto f = HostTensor::from(DType::Float32, {2}, std::vector<float>{-2.7f, 1e30f});
  EXPECT_EQ(f.as_int(0), -2);                                   // truncates toward zero
  EXPECT_EQ(f.as_int(1), std::numeric_limits<int64_t>::max());  // saturates
  EXPECT_FLOAT_EQ(static_cast<float>(f.as_double(0)), -2.7f);
  const auto b = HostTensor::from(DType::Bool, {1}, std::vector<uint8_t>{1});
  EXPECT_EQ(b.as_double(0), 1.0);
  expect_error([&] { f.as_double(2); }, ErrorKind::InvalidArgument, "out of range");
}

TEST(Types, HalfConversion) {
  EXPECT_EQ(half_to_float(0x3c00), 1.0f);
  EXPECT_EQ(half_to_float(0xc000), -2.0f);
  EXPECT_EQ(half_to_float(0x7bff), 65504.0f);
  EXPECT_EQ(half_to_float(0x0001), std::ldexp(1.0f, -24));
  EXPECT_TRUE(std::isinf(half_to_float(0x7c00)));
  EXPECT_TRUE(std::isnan(half_to_float(0x7e00)));
  EXPECT_EQ(float_to_half(1.0f), 0x3c00);
  EXPECT_EQ(float_to_half(65504.0f), 0x7bff);
  EXPECT_EQ(float_to_half(65520.0f), 0x7c00);                // rounds up to infinity
  EXPECT_EQ(float_to_half(1.0f + 1.0f / 2048), 0x3c00);      // tie rounds to even
  EXPECT_EQ(float_to_half(std::ldexp(1.0f, -25)), 0x0000);   // tie to even: zero
  EXPECT_EQ(float_to_half(std::ldexp(3.0f, -25)), 0x0002);   // 1.5 units: to even, 2
  EXPECT_EQ(float_to_half(-std::ldexp(1.0f, -14)), 0x8400);  // smallest normal
  EXPECT_EQ(float_to_half(std::nanf("")) & 0x7c00, 0x7c00);
  // Every half value survives a round trip through float.
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const float f = half_to_float(static_cast<uint16_t>(h));
    if (std::isnan(f)) continue;
    ASSERT_EQ(float_to_half(f), h) << std::hex << h;
  }
}

// ---- npy --------------------------------------------------------------------------------------

TEST(Npy, RoundTripEveryDtypeInMemory) {
  for (const HostTensor& t : sample_tensors()) {
    SCOPED_TRACE(std::string(dtype_name(t.dtype)) + " " + shape_str(t.shape));
    const std::vector<uint8_t> file = encode_npy(t);
    // NumPy layout: v1.0 and data starting on a 64-byte boundary after a '\n'-ended header.
    ASSERT_GE(file.size(), 10u);
    EXPECT_EQ(file[6], 1);
    const size_t data_offset = 10 + (file[8] | (file[9] << 8));
    EXPECT_EQ(data_offset % 64, 0u);
    EXPECT_EQ(file[data_offset - 1], '\n');
    expect_same(decode_npy(file), t);
  }
}

TEST(Npy, RoundTripEveryDtypeThroughFiles) {
  TempDir dir;
  for (const HostTensor& t : sample_tensors()) {
    const std::string path = dir.file(std::string(dtype_name(t.dtype)) + ".npy");
    write_npy(path, t);
    expect_same(read_npy(path), t);
  }
}

TEST(Npy, HeaderTextMatchesNumpy) {
  const auto t = HostTensor::from(DType::Int64, {3}, std::vector<int64_t>{1, 2, 3});
  const std::vector<uint8_t> file = encode_npy(t);
  const std::string header(file.begin() + 10, file.end() - 24);
  EXPECT_EQ(header.rfind("{'descr': '<i8', 'fortran_order': False, 'shape': (3,), }", 0), 0u)
      << header;
}

TEST(Npy, ReadsVersions2And3AndOldStyleHeaders) {
  const std::string header =
      "{\"shape\": (2L, 1L), \"fortran_order\": False, \"descr\": \"<i4\"}\n";
  for (uint8_t major : {2, 3}) {
    std::string file = "\x93NUMPY";
    file += static_cast<char>(major);
    file += '\0';
    const uint32_t len = static_cast<uint32_t>(header.size());
    for (int i = 0; i < 4; ++i) file += static_cast<char>((len >> (8 * i)) & 0xff);
    file += header;
    const int32_t values[] = {7, -8};
    file.append(reinterpret_cast<const char*>(values), sizeof(values));
    const HostTensor t = decode_npy(to_bytes(file));
    EXPECT_EQ(t.dtype, DType::Int32);
    EXPECT_EQ(t.shape, (Shape{2, 1}));
    EXPECT_EQ(t.as_int(1), -8);
  }
}

TEST(Npy, BoolBytesAreNormalised) {
  std::vector<uint8_t> file =
      npy_v1("{'descr': '|b1', 'fortran_order': False, 'shape': (3,), }\n", 0);
  file.insert(file.end(), {0, 2, 255});
  const HostTensor t = decode_npy(file);
  EXPECT_EQ(t.bytes, (std::vector<uint8_t>{0, 1, 1}));
}

TEST(Npy, MalformedFilesAreRejected) {
  const std::string ok_dict = "'fortran_order': False, 'shape': (2, 3), }\n";
  struct Case {
    const char* what;
    std::vector<uint8_t> bytes;
    const char* fragment;
  };
  const std::vector<Case> cases = {
      {"empty", {}, "magic"},
      {"truncated magic", to_bytes("\x93NUM"), "magic"},
      {"bad magic", to_bytes("\x93NUMPX\x01\x00\x00\x00"), "magic"},
      {"version 4", to_bytes(std::string("\x93NUMPY\x04\x00\x00\x00", 10)), "version 4.0"},
      {"truncated length", to_bytes(std::string("\x93NUMPY\x02\x00\x10\x00", 10)), "truncated"},
      {"header longer than file", to_bytes(std::string("\x93NUMPY\x01\x00\xff\x00{}", 12)),
       "exceeds"},
      {"not a dict", npy_v1("['descr']\n", 0), "expected '{'"},
      {"missing shape", npy_v1("{'descr': '<f4', 'fortran_order': False}\n", 0), "'shape'"},
      {"unknown key", npy_v1("{'descr': '<f4', 'bogus': 1, " + ok_dict, 24), "'bogus'"},
      {"duplicate key", npy_v1("{'descr': '<f4', 'descr': '<f4', " + ok_dict, 24), "duplicate"},
      {"broken quoting", npy_v1("{'descr: '<f4'}\n", 0), "expected ':'"},
      {"garbage after dict", npy_v1("{'descr': '<f4', " + ok_dict + "x", 24), "after"},
      {"float64", npy_v1("{'descr': '<f8', " + ok_dict, 48), "'<f8'"},
      {"uint8", npy_v1("{'descr': '|u1', " + ok_dict, 6), "'|u1'"},
      {"big-endian", npy_v1("{'descr': '>f4', " + ok_dict, 24), "big-endian"},
      {"fortran order", npy_v1("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }\n", 24),
       "fortran"},
      {"bad bool", npy_v1("{'descr': '<f4', 'fortran_order': 0, 'shape': (2,)}\n", 8), "True"},
      {"negative dim", npy_v1("{'descr': '<f4', 'fortran_order': False, 'shape': (-2,)}\n", 0),
       "negative"},
      {"dim overflows int64",
       npy_v1("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,)}\n", 0),
       "int64"},
      {"element count overflows",
       npy_v1("{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296)}\n", 16),
       "overflow"},
      {"huge dim, little data",
       npy_v1("{'descr': '<i8', 'fortran_order': False, 'shape': (2305843009213693952,)}\n", 8),
       "mismatch"},
      {"data too short", npy_v1("{'descr': '<f4', " + ok_dict, 20), "mismatch"},
      {"data too long", npy_v1("{'descr': '<f4', " + ok_dict, 28), "mismatch"},
      {"unterminated string", npy_v1("{'descr': '<f4", 0), "unterminated"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    expect_error([&] { decode_npy(c.bytes, "case.npy"); }, ErrorKind::ModelFormat, c.fragment);
    expect_error([&] { decode_npy(c.bytes, "case.npy"); }, ErrorKind::ModelFormat, "case.npy");
  }
}

TEST(Npy, RankLimit) {
  std::string dims;
  for (int i = 0; i < 65; ++i) dims += "1, ";
  expect_error(
      [&] {
        decode_npy(
            npy_v1("{'descr': '<f4', 'fortran_order': False, 'shape': (" + dims + ")}\n", 4));
      },
      ErrorKind::ModelFormat, "dimensions");
}

// Every truncation and many random corruptions of a valid file either decode or throw a
// vkgraph::Error; nothing else (no crash, no std::bad_alloc from a trusted size).
TEST(Npy, TruncatedAndCorruptedFilesNeverCrash) {
  const std::vector<uint8_t> good = encode_npy(sample_tensors()[0]);
  for (size_t n = 0; n < good.size(); ++n) {
    const std::vector<uint8_t> prefix(good.begin(), good.begin() + n);
    EXPECT_THROW(decode_npy(prefix), Error) << "prefix of " << n << " bytes";
  }
  std::mt19937 rng(1234);
  for (int trial = 0; trial < 3000; ++trial) {
    std::vector<uint8_t> bad = good;
    for (int k = 0; k < 1 + trial % 4; ++k) bad[rng() % bad.size()] = static_cast<uint8_t>(rng());
    try {
      decode_npy(bad);
    } catch (const Error&) {
    }
  }
}

TEST(Npy, FileErrors) {
  TempDir dir;
  expect_error([&] { read_npy(dir.file("missing.npy")); }, ErrorKind::Io, "missing.npy");
  expect_error([&] { read_npy(dir.file("")); }, ErrorKind::Io, "not a regular file");
  expect_error([&] { write_npy(dir.file("no/such/dir.npy"), sample_tensors()[0]); }, ErrorKind::Io,
               "dir.npy");
  write_file_bytes(dir.file("junk.npy"), to_bytes("hello"));
  expect_error([&] { read_npy(dir.file("junk.npy")); }, ErrorKind::ModelFormat, "junk.npy");
  HostTensor inconsistent(DType::Float32, {4});
  inconsistent.bytes.resize(3);
  expect_error([&] { encode_npy(inconsistent); }, ErrorKind::InvalidArgument, "holds 3 bytes");
}

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
  EXPECT_EQ(t.bytes, (std::vector<uint8_t>{0, 1}));
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
  p.set_data_type(TP::DOUBLE);
  p.add_dims(2);
  const double d[] = {0.1, 1e300};
  p.set_raw_data(d, sizeof(d));
  t = onnx_io::tensor_from_proto(p);
  EXPECT_EQ(t.dtype, DType::Float32);
  EXPECT_EQ(t.data<float>()[0], 0.1f);
  EXPECT_TRUE(std::isinf(t.data<float>()[1]));

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
  TP bf;
  bf.set_data_type(TP::BFLOAT16);
  expect_error([&] { onnx_io::tensor_from_proto(bf); }, ErrorKind::Unsupported, "BFLOAT16");
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
