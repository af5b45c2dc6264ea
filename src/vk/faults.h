#pragma once
// Test-only fault injection (set through tests/gpu/graph_testing.h), so that the error paths
// run on a healthy device: the N-th device memory allocation, the N-th Vulkan object creation
// or the N-th queue submission from now fails with a chosen VkResult instead of calling
// Vulkan. Each countdown fires once; 0 means off. Not part of the public API.
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "vkgraph/vk/context.h"
#include "vkgraph/vk/result.h"

namespace vkgraph::vk {

// The n-th call from now returns `result` instead of reaching Vulkan.
struct Countdown {
  std::atomic<uint64_t> remaining{0};
  std::atomic<VkResult> result{VK_ERROR_OUT_OF_DEVICE_MEMORY};
  std::atomic<uint64_t> calls{0};  // calls made or failed, counted

  void arm(uint64_t n, VkResult r) {
    result = r;
    remaining = n;
  }
  // Counts this call; true when it takes the countdown from 1 to 0.
  bool fires() {
    calls++;
    uint64_t n = remaining.load();
    while (n != 0 && !remaining.compare_exchange_weak(n, n - 1)) {
    }
    return n == 1;
  }
};

struct InjectedFaults {
  Countdown allocations;  // vkAllocateMemory by the MemoryAllocator
  Countdown creations;    // every create_object() below
  Countdown submissions;  // vkQueueSubmit (Context::submit)
  // Where the Context's unread validation messages go when it is destroyed, so that what the
  // layer reports at vkDestroyDevice (objects never destroyed) reaches a test; null: nowhere.
  std::shared_ptr<std::vector<std::string>> messages_at_destruction;
};

struct ContextInternals {
  static InjectedFaults& faults(Context& ctx) { return *ctx.faults_; }
};

// The one way vkgraph creates a Vulkan object on a device it holds (vkCreateBuffer,
// vkCreateShaderModule, ..., vkAllocateCommandBuffers, vkAllocateDescriptorSets): `create`
// (returning the VkResult of that call) runs unless an injected fault fires; a failure throws
// the error check_vk gives it, naming `what`.
template <class Create>
void create_object(Context& context, const std::string& what, Create&& create) {
  Countdown& c = ContextInternals::faults(context).creations;
  check_vk(c.fires() ? c.result.load() : create(), what.c_str());
}

}  // namespace vkgraph::vk
