#pragma once
// Host work split over a small persistent thread pool: large copies of mapped staging memory
// (one core reads it far below what the memory system delivers) and the float16 conversion of
// a model's weights at load. Small jobs stay on the calling thread and pay nothing.
//
// One job at a time: a second caller meanwhile, a job started from inside a job, and a forked
// child (the workers live in the parent) run their whole range on their own thread rather than
// queueing or deadlocking.
#include <cstddef>

namespace vkgraph {

// Threads a split job uses, the caller included: VKGRAPH_COPY_THREADS if set (1 = never split),
// else the hardware's, at most 8 (a 2-core CI machine gets 2).
unsigned host_threads();

namespace detail {
using RangeFn = void (*)(const void* body, size_t begin, size_t end);
void run_ranges(size_t count, unsigned pieces, size_t align, RangeFn fn, const void* body);
}  // namespace detail

// body(begin, end) over [0, count) in at most `pieces` ranges (capped at host_threads()), each
// but the first starting at a multiple of `align`; returns when every range is done. Ranges
// never overlap, so bodies writing disjoint outputs need no locks. Exceptions must not leave
// `body`.
template <class Body>
void parallel_ranges(size_t count, unsigned pieces, size_t align, const Body& body) {
  detail::run_ranges(
      count, pieces, align,
      [](const void* b, size_t begin, size_t end) { (*static_cast<const Body*>(b))(begin, end); },
      &body);
}

// memcpy(dst, src, bytes), split over the pool from kParallelCopyThreshold bytes up in pieces of
// at least 1 MiB starting on page multiples. The ranges must not overlap.
inline constexpr size_t kParallelCopyThreshold = size_t{4} << 20;
void parallel_memcpy(void* dst, const void* src, size_t bytes);

// parallel_ranges with as many pieces as threads, but none below `min_piece` elements: below
// that a thread's wake-up is a large part of its work.
template <class Body>
void parallel_for(size_t count, size_t min_piece, size_t align, const Body& body) {
  const size_t by_size = min_piece ? count / min_piece : count;
  const unsigned threads = host_threads();
  const unsigned pieces = by_size < threads ? static_cast<unsigned>(by_size) : threads;
  parallel_ranges(count, pieces < 1 ? 1 : pieces, align, body);
}

}  // namespace vkgraph
