#pragma once
// Shared by the host tests of .npy (test_tensor_io.cpp) and TensorProto (test_tensor_proto.cpp)
// I/O: a scratch directory and one sample tensor per dtype.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "vkgraph/types.h"

namespace vkgraph::testing {

namespace fs = std::filesystem;

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
inline std::vector<HostTensor> sample_tensors() {
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

inline void expect_same(const HostTensor& a, const HostTensor& b) {
  EXPECT_EQ(a.dtype, b.dtype);
  EXPECT_EQ(a.shape, b.shape);
  EXPECT_EQ(a.bytes, b.bytes);
}

inline std::vector<uint8_t> to_bytes(const std::string& s) {
  return {s.begin(), s.end()};
}

}  // namespace vkgraph::testing
