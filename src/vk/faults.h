#pragma once
// Test-only fault injection (set through tests/gpu/graph_testing.h): the N-th device memory
// allocation from now fails as VK_ERROR_OUT_OF_DEVICE_MEMORY, or the N-th queue submission
// reports VK_ERROR_DEVICE_LOST, so that the error paths run on a healthy device. Each countdown
// fires once; 0 means off. Not part of the public API.
#include <atomic>
#include <cstdint>

namespace vkgraph::vk {

struct InjectedFaults {
  std::atomic<uint64_t> allocations_until_failure{0};
  std::atomic<uint64_t> submits_until_device_loss{0};
  std::atomic<uint64_t> allocations{0};  // device memory allocations made or failed, counted

  // True when this call takes the countdown from 1 to 0.
  static bool fires(std::atomic<uint64_t>& countdown) {
    uint64_t n = countdown.load();
    while (n != 0 && !countdown.compare_exchange_weak(n, n - 1)) {
    }
    return n == 1;
  }
};

}  // namespace vkgraph::vk
