#pragma once
// Host memcpy split over a small persistent thread pool. One core reads mapped staging memory
// (uncached by the CPU until the copy touches it) far below what the memory system delivers,
// so large readbacks and uploads use a few cores; small ones stay on the calling thread and
// pay nothing.
#include <cstddef>

namespace vkgraph::vk {

// Copies of at least this many bytes are split; below it a thread handoff costs more than it
// saves.
inline constexpr size_t kParallelCopyThreshold = size_t{4} << 20;

// memcpy(dst, src, bytes), split over up to parallel_copy_threads() threads when bytes is at
// least kParallelCopyThreshold. The ranges must not overlap.
void parallel_copy(void* dst, const void* src, size_t bytes);
// The same with an explicit piece count (>= 1) and no threshold, for tests.
void parallel_copy(void* dst, const void* src, size_t bytes, unsigned pieces);
// Threads a large copy uses, the caller included: VKGRAPH_COPY_THREADS if set (1 = never
// split), else the hardware's, at most 8.
unsigned parallel_copy_threads();

}  // namespace vkgraph::vk
