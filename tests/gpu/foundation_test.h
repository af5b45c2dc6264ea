#pragma once
// Shared by the runtime-core tests (hazards, memory, commands, sync trace, graph replay, bad
// input): a fixture for tests that make contexts of their own.
#include <cstdlib>
#include <memory>
#include <optional>
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

 private:
  std::vector<std::shared_ptr<vk::Context>> contexts_;
};

// Sets (or, with nullptr, unsets) an environment variable for one scope, then restores what
// was there.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    value ? setenv(name, value, 1) : unsetenv(name);
  }
  ~ScopedEnv() { old_ ? setenv(name_, old_->c_str(), 1) : unsetenv(name_); }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

}  // namespace vkgraph::testing
