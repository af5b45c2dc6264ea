#include "vk/parallel_copy.h"

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "core/parallel_for.h"

namespace vkgraph::vk {

unsigned parallel_copy_threads() {
  return host_threads();
}

void parallel_copy(void* dst, const void* src, size_t bytes, unsigned pieces) {
  if (bytes == 0) return;
  auto* d = static_cast<uint8_t*>(dst);
  const auto* s = static_cast<const uint8_t*>(src);
  // Pieces start on page multiples so that no two threads write one cache line.
  parallel_ranges(bytes, std::max(pieces, 1u), 4096, [&](size_t begin, size_t end) {
    std::memcpy(d + begin, s + begin, end - begin);
  });
}

void parallel_copy(void* dst, const void* src, size_t bytes) {
  parallel_memcpy(dst, src, bytes);
}

}  // namespace vkgraph::vk
