#pragma once
// Shared by the runtime-core tests (hazards, memory, commands, sync trace, graph replay, bad
// input): a fixture for tests that make contexts of their own.
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "gpu_test.h"

namespace vkgraph::testing {

// GpuTest checks for validation messages in TearDown(), but only on contexts still alive then;
// a context held by the test body is gone by that time. Contexts made here live in the fixture
// until after TearDown(), so their messages fail the test like the shared context's do.
class OwnContextTest : public GpuTest {
 protected:
  std::shared_ptr<vk::Context> own_context(vk::ContextOptions options = {}) {
    contexts_.push_back(make_context(std::move(options)));
    return contexts_.back();
  }

  // Synchronization validation checks hazards between separately submitted command buffers
  // (the chunks of a large graph) only with this enable, which the 1.3.239 layer reads from
  // the environment (a ':'-separated list) while creating an instance. It is set only around
  // this context's creation, so other contexts keep the fixture's settings.
  std::shared_ptr<vk::Context> own_submit_validated_context(vk::ContextOptions options = {}) {
    constexpr const char* kVar = "VK_LAYER_ENABLES";
    constexpr const char* kEnable =
        "VALIDATION_CHECK_ENABLE_SYNCHRONIZATION_VALIDATION_QUEUE_SUBMIT";
    const char* old = std::getenv(kVar);
    const std::string saved = old ? old : "";
    setenv(kVar, (saved.empty() ? std::string(kEnable) : saved + ":" + kEnable).c_str(), 1);
    auto restore = [&] { old ? setenv(kVar, saved.c_str(), 1) : unsetenv(kVar); };
    try {
      auto ctx = own_context(std::move(options));
      restore();
      return ctx;
    } catch (...) {
      restore();
      throw;
    }
  }

 private:
  std::vector<std::shared_ptr<vk::Context>> contexts_;
};

}  // namespace vkgraph::testing
