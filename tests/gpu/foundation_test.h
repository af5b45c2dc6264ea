#pragma once
// Shared by the runtime-core tests (hazards, memory, commands, sync trace, graph replay, bad
// input): a fixture for tests that make contexts of their own.
#include <memory>
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

 private:
  std::vector<std::shared_ptr<vk::Context>> contexts_;
};

}  // namespace vkgraph::testing
