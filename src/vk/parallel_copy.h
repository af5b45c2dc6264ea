#pragma once
// Host memcpy split over the host thread pool (core/parallel_for.h). One core reads mapped
// staging memory (uncached by the CPU until the copy touches it) far below what the memory
// system delivers, so large readbacks and uploads use a few cores; small ones stay on the
// calling thread and pay nothing.
#include <cstddef>

#include "core/parallel_for.h"

namespace vkgraph::vk {

// Copies of at least this many bytes are split; below it a thread handoff costs more than it
// saves.
using vkgraph::kParallelCopyThreshold;

// memcpy(dst, src, bytes), split over up to parallel_copy_threads() threads when bytes is at
// least kParallelCopyThreshold. The ranges must not overlap.
void parallel_copy(void* dst, const void* src, size_t bytes);
// The same with an explicit piece count (>= 1) and no threshold, for tests.
void parallel_copy(void* dst, const void* src, size_t bytes, unsigned pieces);
// Threads a large copy uses, the caller included: host_threads() (VKGRAPH_COPY_THREADS).
unsigned parallel_copy_threads();

}  // namespace vkgraph::vk
