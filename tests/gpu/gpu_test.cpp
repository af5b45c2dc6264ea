#include "gpu_test.h"

#include <cstdlib>

namespace vkgraph::testing {

namespace {
std::vector<std::weak_ptr<vk::Context>>& live_contexts() {
  static std::vector<std::weak_ptr<vk::Context>> v;
  return v;
}
// Contexts made during a test stay alive until its TearDown has read their validation
// messages; otherwise one released inside the test body would escape the check.
std::vector<std::shared_ptr<vk::Context>>& held_contexts() {
  static std::vector<std::shared_ptr<vk::Context>> v;
  return v;
}
}  // namespace

std::shared_ptr<vk::Context> make_context(vk::ContextOptions options) {
  // Validation is on unless VKGRAPH_VALIDATION=0 says otherwise (e.g. under a sanitizer).
  const char* v = std::getenv("VKGRAPH_VALIDATION");
  if (!options.validation) options.validation = !(v && std::string(v) == "0");
  // Tests never write the user's pipeline cache unless asked to (by option or environment).
  if (!options.pipeline_cache && !std::getenv("VKGRAPH_PIPELINE_CACHE"))
    options.pipeline_cache = "off";
  auto ctx = vk::Context::create(options);
  live_contexts().push_back(ctx);
  held_contexts().push_back(ctx);
  return ctx;
}

// The shared context is released when the test environment is torn down, not by a static
// destructor during exit(), where the 1.3.239 validation layer's vkDeviceWaitIdle can hang.
std::shared_ptr<vk::Context>& shared_context() {
  static std::shared_ptr<vk::Context> ctx;
  return ctx;
}

std::shared_ptr<vk::Context> context() {
  if (!shared_context()) shared_context() = make_context({});
  return shared_context();
}

class ReleaseSharedContext : public ::testing::Environment {
 public:
  void TearDown() override { shared_context().reset(); }
};

void GpuTest::SetUp() {
  for (auto& w : live_contexts())
    if (auto c = w.lock()) c->clear_validation_messages();
}

void GpuTest::TearDown() {
  for (auto& w : live_contexts())
    if (auto c = w.lock()) expect_no_validation_messages(*c);
  held_contexts().clear();
  std::erase_if(live_contexts(), [](auto& w) { return w.expired(); });
}

void GpuTest::expect_no_validation_messages(vk::Context& ctx) {
  auto messages = ctx.validation_messages();
  for (auto& m : messages) ADD_FAILURE() << "validation: " << m;
  ctx.clear_validation_messages();
}

std::vector<float> GpuTest::random_floats(size_t n, float lo, float hi) {
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

}  // namespace vkgraph::testing

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  ::testing::AddGlobalTestEnvironment(new vkgraph::testing::ReleaseSharedContext);
  return RUN_ALL_TESTS();
}
