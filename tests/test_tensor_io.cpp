// .npy I/O and the core types (TensorProto I/O: test_tensor_proto.cpp): round trips for every
// dtype, and malformed inputs, each of which must surface as a vkgraph::Error of the right kind
// rather than a crash.
#include <gtest/gtest.h>
#include <unistd.h>

#include <bit>
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
#include "vkgraph/tensor_io.h"
#include "vkgraph/types.h"

namespace vkgraph {
namespace {

namespace fs = std::filesystem;
using namespace vkgraph::testing;

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

TEST(Types, HostTensorSetConvertsToEveryDtype) {
  for (DType d : {DType::Float32, DType::Float16, DType::Int32, DType::Int64, DType::Bool,
                  DType::Int8, DType::UInt8}) {
    HostTensor t(d, {3});
    t.set(1, 2.75);
    const bool is_float = d == DType::Float32 || d == DType::Float16;
    EXPECT_EQ(t.as_double(0), 0.0) << dtype_name(d);
    EXPECT_EQ(t.as_double(1), d == DType::Bool ? 1.0 : is_float ? 2.75 : 2.0) << dtype_name(d);
    EXPECT_EQ(t.as_double(2), 0.0) << dtype_name(d);
    expect_error([&] { t.set(3, 1.0); }, ErrorKind::InvalidArgument, "out of range");
  }
  HostTensor h(DType::Float16, {1});
  h.set(0, 1.0 + 1.0 / 2048);  // a tie: rounds to even
  EXPECT_EQ(h.data<uint16_t>()[0], 0x3c00);
}

// Values no cast could convert (out of range, NaN) still get a defined result: floats go to
// infinity, integers saturate, NaN becomes 0; set_int narrows with wrap-around.
TEST(Types, HostTensorSetIsDefinedForEveryDouble) {
  HostTensor f(DType::Float32, {2});
  f.set(0, 1e300);
  f.set(1, -1e300);
  EXPECT_EQ(f.data<float>()[0], std::numeric_limits<float>::infinity());
  EXPECT_EQ(f.data<float>()[1], -std::numeric_limits<float>::infinity());
  HostTensor i32(DType::Int32, {3});
  i32.set(0, 1e10);
  i32.set(1, -1e10);
  i32.set(2, std::nan(""));
  EXPECT_EQ(i32.data<int32_t>()[0], std::numeric_limits<int32_t>::max());
  EXPECT_EQ(i32.data<int32_t>()[1], std::numeric_limits<int32_t>::min());
  EXPECT_EQ(i32.data<int32_t>()[2], 0);
  HostTensor i64(DType::Int64, {2});
  i64.set(0, 1e30);
  i64.set(1, -2.9);
  EXPECT_EQ(i64.data<int64_t>()[0], std::numeric_limits<int64_t>::max());
  EXPECT_EQ(i64.data<int64_t>()[1], -2);
  HostTensor u8(DType::UInt8, {2});
  u8.set(0, 300.0);
  u8.set_int(1, -1);
  EXPECT_EQ(u8.data<uint8_t>()[0], 44);
  EXPECT_EQ(u8.data<uint8_t>()[1], 255);
  HostTensor b(DType::Bool, {1});
  b.set(0, std::nan(""));
  EXPECT_EQ(b.data<uint8_t>()[0], 1);
  HostTensor i32w(DType::Int32, {1});
  i32w.set_int(0, int64_t{1} << 32 | 5);
  EXPECT_EQ(i32w.data<int32_t>()[0], 5);
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

// The bulk conversion (hardware F16C where the CPU has it) matches float_to_half bit for bit:
// every exponent with edge and random mantissas, both signs, NaNs with payloads, and a length
// that leaves a scalar tail.
TEST(Float16, BulkConversionMatchesScalar) {
  std::vector<uint32_t> bits;
  std::mt19937 rng(7);
  for (uint32_t sign : {0u, 0x80000000u})
    for (uint32_t exponent = 0; exponent < 256; ++exponent)
      for (uint32_t mantissa : {0u, 1u, 0xfffu, 0x1000u, 0x1001u, 0x2000u, 0x3000u, 0x7fffffu,
                                static_cast<uint32_t>(rng()) & 0x7fffffu})
        bits.push_back(sign | (exponent << 23) | mantissa);
  for (int i = 0; i < 100000; ++i) bits.push_back(static_cast<uint32_t>(rng()));
  bits.push_back(0x7fc00001u);  // quiet NaN, low payload
  bits.push_back(0xff812345u);  // signalling NaN, negative
  bits.push_back(0x477ff000u);  // 65520: rounds to infinity
  bits.push_back(0x477fefffu);  // just below: 65504
  bits.push_back(0x3f800000u);  // 1.0, left out of the count
  std::vector<float> in(bits.size());
  std::memcpy(in.data(), bits.data(), bits.size() * sizeof(float));
  std::vector<uint16_t> out(in.size() + 1, 0xabcd);
  const size_t count = in.size() - 1;  // 104612: not a multiple of 8, so a scalar tail
  floats_to_halves(in.data(), out.data(), count);
  for (size_t i = 0; i < count; ++i) ASSERT_EQ(out[i], float_to_half(in[i])) << std::hex << bits[i];
  EXPECT_EQ(out[count], 0xabcd);  // nothing written past the count
}

TEST(Float16, BulkWideningMatchesScalar) {
  // Every half pattern, twice over (a count that is no multiple of 8 leaves a scalar tail).
  std::vector<uint16_t> in(2 * 65536 + 3);
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<uint16_t>(i * 40503u);
  std::vector<float> out(in.size() + 1, 7.f);
  halves_to_floats(in.data(), out.data(), in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    const float want = half_to_float(in[i]);
    if (std::isnan(want))
      ASSERT_TRUE(std::isnan(out[i])) << std::hex << in[i];  // F16C may quiet a signalling NaN
    else
      ASSERT_EQ(std::bit_cast<uint32_t>(out[i]), std::bit_cast<uint32_t>(want))
          << std::hex << in[i];
  }
  EXPECT_EQ(out[in.size()], 7.f);  // nothing written past the count
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
  EXPECT_EQ(t.bytes, (TensorBytes{0, 1, 1}));
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

}  // namespace
}  // namespace vkgraph
