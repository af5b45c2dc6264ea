// The host thread pool (core/parallel_for.h): every element of a range is visited exactly once,
// pieces start where asked, and a job started inside a job runs inline instead of waiting.
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <mutex>
#include <numeric>
#include <utility>
#include <vector>

#include "core/parallel_for.h"

namespace vkgraph {
namespace {

// Visits of each index, and the ranges handed out.
struct Visits {
  explicit Visits(size_t n) : count(n) {}
  std::vector<std::atomic<int>> count;
  std::mutex m;
  std::vector<std::pair<size_t, size_t>> ranges;
  void operator()(size_t begin, size_t end) {
    for (size_t i = begin; i < end; ++i) count[i]++;
    std::lock_guard lock(m);
    ranges.emplace_back(begin, end);
  }
};

TEST(ParallelFor, EveryIndexOnceWithAlignedPieces) {
  for (size_t n : {size_t{1}, size_t{4095}, size_t{4096}, size_t{100000}, size_t{1} << 20}) {
    for (unsigned pieces : {1u, 2u, 3u, 8u, 64u}) {
      SCOPED_TRACE(std::to_string(n) + " in " + std::to_string(pieces));
      Visits v(n);
      parallel_ranges(n, pieces, 4096, [&](size_t b, size_t e) { v(b, e); });
      for (size_t i = 0; i < n; ++i) ASSERT_EQ(v.count[i].load(), 1) << i;
      EXPECT_LE(v.ranges.size(), std::min<size_t>(pieces, host_threads()));
      for (auto [b, e] : v.ranges) {
        EXPECT_LT(b, e);
        EXPECT_EQ(b % 4096, 0u);
      }
    }
  }
}

TEST(ParallelFor, SmallJobsStayWholeAndEmptyOnesRunNothing) {
  Visits v(1000);
  parallel_for(1000, 4096, 1, [&](size_t b, size_t e) { v(b, e); });
  ASSERT_EQ(v.ranges.size(), 1u);
  EXPECT_EQ(v.ranges[0], std::make_pair(size_t{0}, size_t{1000}));
  bool ran = false;
  parallel_for(0, 1, 1, [&](size_t, size_t) { ran = true; });
  parallel_ranges(0, 4, 1, [&](size_t, size_t) { ran = true; });
  EXPECT_FALSE(ran);
}

TEST(ParallelFor, NestedJobsRunInline) {
  // Each outer piece starts an inner job while the pool is busy with the outer one: the inner
  // one must run on the calling thread rather than wait for the pool.
  const size_t n = 64;
  Visits inner(n * n);
  parallel_ranges(n, 8, 1, [&](size_t b, size_t e) {
    for (size_t i = b; i < e; ++i)
      parallel_ranges(n, 8, 1, [&](size_t ib, size_t ie) { inner(i * n + ib, i * n + ie); });
  });
  for (size_t i = 0; i < n * n; ++i) ASSERT_EQ(inner.count[i].load(), 1) << i;
}

TEST(ParallelFor, MemcpyMatchesAtEveryOffset) {
  // Above the split threshold, with odd lengths and misaligned ends.
  const size_t bytes = kParallelCopyThreshold * 2 + 12345;
  std::vector<uint8_t> src(bytes + 7), dst(bytes + 7, 0xEE);
  std::iota(src.begin(), src.end(), uint8_t{3});
  parallel_memcpy(dst.data() + 1, src.data() + 5, bytes);
  EXPECT_EQ(dst[0], 0xEE);
  EXPECT_EQ(std::memcmp(dst.data() + 1, src.data() + 5, bytes), 0);
  EXPECT_EQ(dst[bytes + 1], 0xEE);
  parallel_memcpy(nullptr, nullptr, 0);  // no bytes: no access
}

}  // namespace
}  // namespace vkgraph
