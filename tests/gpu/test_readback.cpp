// The host halves of staged I/O at speed: parallel_copy split over threads matches memcpy at
// every size around its threshold, and readbacks (read_output into fresh, uninitialised
// tensors; copy_from_output into reused buffers) and uploads carry every dtype intact, with
// coherent and non-coherent staging, keeping the invalidate before the host read.
#include <algorithm>
#include <cstring>
#include <numeric>
#include <vector>

#include "foundation_test.h"
#include "vk/parallel_copy.h"
#include "vkgraph/ops.h"
#include "vkgraph/vk/sync_trace.h"

namespace vkgraph::testing {
namespace {

using vk::kParallelCopyThreshold;

std::vector<uint8_t> pattern(size_t n, uint32_t seed) {
  std::vector<uint8_t> v(n);
  uint32_t s = seed;
  for (auto& b : v) {
    s = s * 1664525u + 1013904223u;
    b = static_cast<uint8_t>(s >> 24);
  }
  return v;
}

// Sizes either side of the threshold and of piece boundaries, none a multiple of a page.
const size_t kSizes[] = {1,
                         4095,
                         kParallelCopyThreshold - 1,
                         kParallelCopyThreshold,
                         kParallelCopyThreshold + 1,
                         kParallelCopyThreshold + 4097,
                         3 * kParallelCopyThreshold + 13};

void expect_copied(size_t bytes, unsigned pieces, bool automatic) {
  SCOPED_TRACE("bytes " + std::to_string(bytes) + " pieces " + std::to_string(pieces));
  // Odd offsets into both buffers, and guard bytes after the destination range.
  const size_t guard = 64;
  std::vector<uint8_t> src = pattern(bytes + 3, 7 + static_cast<uint32_t>(bytes));
  std::vector<uint8_t> dst(bytes + 1 + guard, 0xA5);
  if (automatic)
    vk::parallel_copy(dst.data() + 1, src.data() + 3, bytes);
  else
    vk::parallel_copy(dst.data() + 1, src.data() + 3, bytes, pieces);
  EXPECT_EQ(dst[0], 0xA5);
  EXPECT_EQ(std::memcmp(dst.data() + 1, src.data() + 3, bytes), 0);
  EXPECT_TRUE(std::all_of(dst.end() - guard, dst.end(), [](uint8_t b) { return b == 0xA5; }));
}

TEST(ParallelCopy, MatchesMemcpyAroundTheThreshold) {
  for (size_t bytes : kSizes) expect_copied(bytes, 0, true);
}

TEST(ParallelCopy, MatchesMemcpyForEveryPieceCount) {
  // More pieces than threads (or than pages) are clamped; every count must still copy all.
  for (size_t bytes : kSizes)
    for (unsigned pieces : {1u, 2u, 3u, 7u, 64u}) expect_copied(bytes, pieces, false);
}

TEST(ParallelCopy, ZeroBytesTouchesNothing) {
  uint8_t dst = 0x5A, src = 0;
  vk::parallel_copy(&dst, &src, 0);
  vk::parallel_copy(&dst, &src, 0, 4);
  EXPECT_EQ(dst, 0x5A);
}

TEST(HostTensorBytes, ZeroFilledUnlessAskedNotTo) {
  // The large size takes the huge-page allocation path.
  for (int64_t n : {int64_t{5}, int64_t{(8 << 20) + 3}}) {
    HostTensor t(DType::Int32, {n});
    ASSERT_EQ(t.nbytes(), static_cast<size_t>(n) * 4);
    EXPECT_TRUE(std::all_of(t.bytes.begin(), t.bytes.end(), [](uint8_t b) { return b == 0; }));
    HostTensor u = HostTensor::uninitialized(DType::Int32, {n});
    EXPECT_EQ(u.nbytes(), t.nbytes());
    EXPECT_EQ(u.shape, t.shape);
    u.bytes.back() = 1;  // writable to the end
  }
}

struct Case {
  DType dtype;
  size_t min_bytes;
  bool non_coherent;
};

std::string case_name(const ::testing::TestParamInfo<Case>& info) {
  return std::string(dtype_name(info.param.dtype)) + "_" + std::to_string(info.param.min_bytes) +
         (info.param.non_coherent ? "_noncoherent" : "_coherent");
}

// y = transpose(x) over [3, cols]: a real device copy of every element, whatever the dtype.
class StagedIO : public OwnContextTest, public ::testing::WithParamInterface<Case> {
 protected:
  HostTensor random_input(DType dtype, const Shape& shape, uint32_t seed) {
    HostTensor t = HostTensor::uninitialized(dtype, shape);
    std::vector<uint8_t> p = pattern(t.nbytes(), seed);
    std::copy(p.begin(), p.end(), t.bytes.begin());
    if (dtype == DType::Bool)
      for (auto& b : t.bytes) b &= 1;
    if (dtype == DType::Float32 || dtype == DType::Float16) {
      // Finite values only, so byte equality is the check (no NaN payload questions).
      for (int64_t i = 0; i < t.numel(); ++i) {
        if (dtype == DType::Float32)
          t.data<float>()[i] = static_cast<float>(p[i % p.size()]) / 7.f - 18.f;
        else
          t.data<uint16_t>()[i] = float_to_half(static_cast<float>(p[i % p.size()]) / 7.f - 18.f);
      }
    }
    return t;
  }
  static HostTensor transposed(const HostTensor& x) {
    int64_t rows = x.shape[0], cols = x.shape[1];
    size_t e = dtype_size(x.dtype);
    HostTensor y(x.dtype, {cols, rows});
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c)
        std::memcpy(&y.bytes[(c * rows + r) * e], &x.bytes[(r * cols + c) * e], e);
    return y;
  }
};

TEST_P(StagedIO, ReadbackAndUploadCarryEveryByte) {
  const Case& tc = GetParam();
  vk::ContextOptions options;
  options.sync_trace = true;
  options.force_non_coherent = tc.non_coherent;
  auto ctx = own_context(options);
  const size_t elem = dtype_size(tc.dtype);
  const int64_t rows = 3;
  const int64_t cols = static_cast<int64_t>(tc.min_bytes / (rows * elem)) + 1;
  const size_t bytes = static_cast<size_t>(rows * cols) * elem;

  ComputeGraph g(ctx);
  TensorRef x = g.add_input({rows, cols}, tc.dtype, "x");
  g.add_output(ops::transpose(g, x, {1, 0}), "y");
  std::vector<uint8_t> reused(bytes + 16, 0xCD);  // poisoned, with a guard tail
  for (uint32_t run = 0; run < 2; ++run) {
    SCOPED_TRACE("run " + std::to_string(run));
    HostTensor in = random_input(tc.dtype, {rows, cols}, 11 + run);
    HostTensor want = transposed(in);
    ctx->trace()->clear();  // audits this run alone, its upload included
    g.copy_to_input(0, in.bytes.data(), in.nbytes());
    g.execute();
    HostTensor fresh = g.read_output(0);
    ASSERT_EQ(fresh.dtype, tc.dtype);
    ASSERT_EQ(fresh.shape, (Shape{cols, rows}));
    ASSERT_EQ(fresh.nbytes(), bytes);
    EXPECT_EQ(std::memcmp(fresh.bytes.data(), want.bytes.data(), bytes), 0);
    g.copy_from_output(0, reused.data(), bytes);
    EXPECT_EQ(std::memcmp(reused.data(), want.bytes.data(), bytes), 0);
    EXPECT_TRUE(std::all_of(reused.end() - 16, reused.end(), [](uint8_t b) { return b == 0xCD; }));
    std::fill(reused.begin(), reused.begin() + bytes, 0xCD);

    auto problems = ctx->trace()->audit();
    EXPECT_TRUE(problems.empty()) << problems[0];
    // Each read is preceded, since the fence wait, by an invalidate covering it.
    auto timeline = ctx->trace()->timeline();
    size_t reads = 0, fence = 0;
    for (size_t i = 0; i < timeline.size(); ++i) {
      const vk::SyncEvent& e = timeline[i];
      if (e.type == vk::SyncEvent::Type::FenceWait) fence = i;
      if (e.type != vk::SyncEvent::Type::HostRead) continue;
      ++reads;
      EXPECT_EQ(e.coherent, !tc.non_coherent);
      if (!tc.non_coherent) continue;
      bool invalidated = false;
      for (size_t j = fence; j < i; ++j)
        invalidated |= timeline[j].type == vk::SyncEvent::Type::Invalidate &&
                       timeline[j].resource == e.resource && timeline[j].offset <= e.offset &&
                       timeline[j].offset + timeline[j].size >= e.offset + e.size;
      EXPECT_TRUE(invalidated) << "host read " << i << " without an invalidate after the fence";
    }
    EXPECT_EQ(reads, 2u);
  }
}

std::vector<Case> cases() {
  std::vector<Case> out;
  for (DType d : {DType::Float32, DType::Float16, DType::Int32, DType::Int64, DType::Bool})
    for (bool nc : {false, true}) {
      out.push_back({d, 40, nc});
      out.push_back({d, kParallelCopyThreshold, nc});
    }
  // Just below the threshold, on the single-threaded path.
  out.push_back({DType::Float32, kParallelCopyThreshold - 64, true});
  return out;
}

INSTANTIATE_TEST_SUITE_P(Sizes, StagedIO, ::testing::ValuesIn(cases()), case_name);

}  // namespace
}  // namespace vkgraph::testing
