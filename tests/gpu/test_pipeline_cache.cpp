// The on-disk pipeline cache: a cold start writes the device's file, a warm start hands it to
// the driver, damaged or foreign files are ignored (the start is cold, results stay right and
// the file is rewritten), "off" writes nothing, and the folder follows option > environment >
// XDG default. Every test uses a folder of its own.
#include <filesystem>
#include <optional>

#include "foundation_test.h"
#include "graph_testing.h"
#include "vk/pipeline_disk_cache.h"
#include "vkgraph/file_io.h"
#include "vkgraph/ops.h"
#include "vkgraph/vk/pipeline.h"

namespace vkgraph::testing {
namespace {

namespace fs = std::filesystem;
using vk::DiskCacheState;

class PipelineDiskCache : public OwnContextTest {
 protected:
  void SetUp() override {
    OwnContextTest::SetUp();
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() /
           ("vkgraph-pcache-" + std::string(info->name()) + "-" + std::to_string(rng()));
    fs::remove_all(dir_);
  }
  void TearDown() override {
    OwnContextTest::TearDown();
    fs::remove_all(dir_);
  }

  std::shared_ptr<vk::Context> cached_context() {
    vk::ContextOptions o;
    o.pipeline_cache = dir_.string();
    return own_context(o);
  }

  // (a + b) * a on a size that is not a multiple of the workgroup: two pipelines.
  void run_graph(std::shared_ptr<vk::Context> ctx) {
    const int64_t n = 1000;
    ComputeGraph g(ctx);
    auto a = g.add_input({n}, DType::Float32, "a");
    auto b = g.add_input({n}, DType::Float32, "b");
    auto c = ops::binary(g, ops::BinaryOp::Mul, ops::binary(g, ops::BinaryOp::Add, a, b), a);
    g.add_output(c, "c");
    auto va = random_floats(n), vb = random_floats(n);
    g.copy_to_input(0, va.data(), n * 4);
    g.copy_to_input(1, vb.data(), n * 4);
    g.execute();
    std::vector<float> out(n, -12345.f);
    g.copy_from_output(0, out.data(), n * 4);
    for (int64_t i = 0; i < n; ++i) ASSERT_FLOAT_EQ(out[i], (va[i] + vb[i]) * va[i]) << i;
  }

  // A cold start that saves; returns the file's path.
  std::string write_valid_file() {
    auto ctx = cached_context();
    run_graph(ctx);
    EXPECT_TRUE(ctx->pipelines().save());
    return ctx->pipelines().stats().path;
  }

  // With `file` in place of the cache, the next start is cold for `reason`, still computes
  // right, and saving replaces the file with a valid one.
  void expect_ignored(const std::vector<uint8_t>& file, const std::string& reason) {
    SCOPED_TRACE(reason);
    write_file_bytes((dir_ / vk::pipeline_cache_file_name(context()->properties())).string(), file);
    auto ctx = cached_context();
    vk::PipelineCacheStats st = ctx->pipelines().stats();
    EXPECT_EQ(st.disk, DiskCacheState::Cold);
    EXPECT_NE(st.cold_reason.find(reason), std::string::npos) << st.cold_reason;
    EXPECT_EQ(st.loaded_bytes, 0u);
    run_graph(ctx);
    EXPECT_TRUE(ctx->pipelines().save());
    EXPECT_TRUE(vk::decode_pipeline_cache_file(read_file_bytes(st.path), ctx->properties())
                    .problem.empty());
  }

  fs::path dir_;
};

TEST_F(PipelineDiskCache, ColdStartWritesTheFileAndAWarmStartReadsIt) {
  auto cold = cached_context();
  vk::PipelineCacheStats st = cold->pipelines().stats();
  EXPECT_EQ(st.disk, DiskCacheState::Cold);
  EXPECT_EQ(st.cold_reason, "no file");
  EXPECT_EQ(fs::path(st.path).parent_path(), dir_);
  EXPECT_EQ(fs::path(st.path).filename().string(),
            vk::pipeline_cache_file_name(cold->properties()));
  EXPECT_FALSE(fs::exists(st.path));
  run_graph(cold);
  EXPECT_GE(cold->pipelines().stats().pipelines, 2u);
  EXPECT_TRUE(cold->pipelines().save());
  ASSERT_TRUE(fs::exists(st.path));
  EXPECT_FALSE(cold->pipelines().save()) << "nothing new to write";
  for (auto& entry : fs::directory_iterator(dir_))
    EXPECT_EQ(entry.path().string(), st.path) << "temporary file left behind";

  auto warm = cached_context();
  vk::PipelineCacheStats ws = warm->pipelines().stats();
  EXPECT_EQ(ws.disk, DiskCacheState::Warm);
  EXPECT_EQ(ws.path, st.path);
  EXPECT_GT(ws.loaded_bytes, 0u);
  run_graph(warm);
  EXPECT_FALSE(warm->pipelines().save()) << "a warm start of the same graphs adds nothing";
}

TEST_F(PipelineDiskCache, ContextDestructionSaves) {
  std::string path;
  {
    // Not own_context(): this one must be destroyed inside the test.
    vk::ContextOptions o;
    o.pipeline_cache = dir_.string();
    const char* v = std::getenv("VKGRAPH_VALIDATION");
    o.validation = !(v && std::string(v) == "0");
    auto ctx = vk::Context::create(o);
    run_graph(ctx);
    path = ctx->pipelines().stats().path;
    expect_no_validation_messages(*ctx);
  }
  ASSERT_TRUE(fs::exists(path));
  EXPECT_EQ(cached_context()->pipelines().stats().disk, DiskCacheState::Warm);
}

TEST_F(PipelineDiskCache, DamagedOrForeignFilesAreIgnored) {
  std::vector<uint8_t> good = read_file_bytes(write_valid_file());

  std::vector<uint8_t> short_file(good.begin(), good.end() - 1);
  expect_ignored(short_file, "truncated");
  expect_ignored(std::vector<uint8_t>(good.begin(), good.begin() + 10), "truncated");
  expect_ignored({}, "truncated");

  std::vector<uint8_t> flipped = good;
  flipped.back() ^= 0x5a;
  expect_ignored(flipped, "checksum");

  std::vector<uint8_t> noise(good.size());
  for (auto& b : noise) b = static_cast<uint8_t>(rng());
  expect_ignored(noise, "not a vkgraph pipeline cache");

  // Well framed, but made by another driver: only the Vulkan header says so.
  std::vector<uint8_t> payload =
      vk::decode_pipeline_cache_file(good, context()->properties()).payload;
  ASSERT_GE(payload.size(), 32u);
  std::vector<uint8_t> foreign = payload;
  foreign[16] ^= 0xff;  // first byte of pipelineCacheUUID
  expect_ignored(vk::encode_pipeline_cache_file(foreign), "pipelineCacheUUID differs");
  std::vector<uint8_t> vendor = payload;
  vendor[8] ^= 0xff;
  expect_ignored(vk::encode_pipeline_cache_file(vendor), "vendorID differs");
  std::vector<uint8_t> version = payload;
  version[4] = 7;
  expect_ignored(vk::encode_pipeline_cache_file(version), "header version");
  std::vector<uint8_t> length = payload;
  length[0] = 4, length[1] = length[2] = length[3] = 0;
  expect_ignored(vk::encode_pipeline_cache_file(length), "header length");
}

TEST_F(PipelineDiskCache, OffWritesNothing) {
  vk::ContextOptions o;
  o.pipeline_cache = "off";
  ScopedEnv env("VKGRAPH_PIPELINE_CACHE", dir_.c_str());  // the option wins
  auto ctx = own_context(o);
  vk::PipelineCacheStats st = ctx->pipelines().stats();
  EXPECT_EQ(st.disk, DiskCacheState::Off);
  EXPECT_TRUE(st.path.empty());
  run_graph(ctx);
  EXPECT_FALSE(ctx->pipelines().save());
  EXPECT_FALSE(fs::exists(dir_));
}

TEST_F(PipelineDiskCache, EnvironmentChoosesFolderOrOff) {
  {
    ScopedEnv env("VKGRAPH_PIPELINE_CACHE", "off");
    EXPECT_EQ(own_context()->pipelines().stats().disk, DiskCacheState::Off);
  }
  ScopedEnv env("VKGRAPH_PIPELINE_CACHE", dir_.c_str());
  auto ctx = own_context();
  EXPECT_EQ(fs::path(ctx->pipelines().stats().path).parent_path(), dir_);
  run_graph(ctx);
  EXPECT_TRUE(ctx->pipelines().save());
}

TEST(PipelineCacheDir, DefaultsFollowXdgThenHome) {
  ScopedEnv unset("VKGRAPH_PIPELINE_CACHE", nullptr);
  {
    ScopedEnv xdg("XDG_CACHE_HOME", "/x/cache");
    EXPECT_EQ(vk::pipeline_cache_dir(std::nullopt), "/x/cache/vkgraph");
    EXPECT_EQ(vk::pipeline_cache_dir(std::string("/elsewhere")), "/elsewhere");
    EXPECT_EQ(vk::pipeline_cache_dir(std::string("off")), "");
  }
  ScopedEnv xdg("XDG_CACHE_HOME", nullptr);
  ScopedEnv home("HOME", "/home/u");
  EXPECT_EQ(vk::pipeline_cache_dir(std::nullopt), "/home/u/.cache/vkgraph");
  ScopedEnv no_home("HOME", nullptr);
  EXPECT_EQ(vk::pipeline_cache_dir(std::nullopt), "");
}

TEST(PipelineCacheFileName, NamesFormatVendorDeviceDriverAndUuid) {
  VkPhysicalDeviceProperties p{};
  p.vendorID = 0x10de;
  p.deviceID = 0x2335;
  p.driverVersion = 0x91280100;
  for (uint32_t i = 0; i < VK_UUID_SIZE; ++i) p.pipelineCacheUUID[i] = static_cast<uint8_t>(i);
  EXPECT_EQ(vk::pipeline_cache_file_name(p),
            "pipelines-v1-10de-2335-91280100-000102030405060708090a0b0c0d0e0f.bin");
}

}  // namespace
}  // namespace vkgraph::testing

namespace vkgraph::testing {
namespace {

// A graph's pipelines come in one batch (PipelineCache::get_all): the distinct keys not made
// yet compile on several threads, once each, and land in the disk cache like any other.
class PipelineBatch : public PipelineDiskCache {
 protected:
  static vk::PipelineKey unary_key(const std::string& op, uint32_t local_x = 64) {
    return {"unary_" + op + "_f32", 2, 64, {local_x, 1, 1}};
  }
};

TEST_F(PipelineBatch, DistinctKeysCompileOnceEachInOrder) {
  auto ctx = cached_context();
  vk::PipelineCache& cache = ctx->pipelines();
  const size_t before = cache.size();
  const std::vector<vk::PipelineKey> keys = {
      unary_key("exp"),      unary_key("abs"),  unary_key("exp"), unary_key("ceil"),
      unary_key("exp", 128), unary_key("acos"), unary_key("abs"),
  };
  const std::vector<const vk::Pipeline*> got = cache.get_all(keys);
  ASSERT_EQ(got.size(), keys.size());
  EXPECT_EQ(cache.size() - before, 5u);  // exp, abs, ceil, exp at 128, acos
  EXPECT_EQ(cache.stats().pipelines, cache.size());
  for (size_t i = 0; i < keys.size(); ++i) {
    SCOPED_TRACE(i);
    ASSERT_NE(got[i]->pipeline, VK_NULL_HANDLE);
    EXPECT_EQ(got[i], &cache.get(keys[i]));  // the same object, one at a time too
    for (size_t j = 0; j < keys.size(); ++j)
      EXPECT_EQ(got[i] == got[j], !(keys[i] < keys[j]) && !(keys[j] < keys[i])) << j;
  }
  // Asked again, with one new key among them: only that one is made.
  const size_t made = cache.size();
  cache.get_all({unary_key("abs"), unary_key("floor"), unary_key("exp")});
  EXPECT_EQ(cache.size(), made + 1);
  run_graph(ctx);  // graphs built on the context still run
}

TEST_F(PipelineBatch, AFailedCompileKeepsTheOthers) {
  auto ctx = cached_context();
  vk::PipelineCache& cache = ctx->pipelines();
  const std::vector<vk::PipelineKey> keys = {unary_key("exp"), unary_key("abs"), unary_key("ceil"),
                                             unary_key("acos")};
  // Layouts and modules first (the same shaders at another local size), so that the next
  // creations are the four compiles.
  cache.get_all(
      {unary_key("exp", 32), unary_key("abs", 32), unary_key("ceil", 32), unary_key("acos", 32)});
  const size_t before = cache.size();
  fail_creation(*ctx, 2, VK_ERROR_OUT_OF_HOST_MEMORY);  // one of them, on whichever thread
  expect_error([&] { cache.get_all(keys); }, ErrorKind::OutOfMemory, {"vkCreateComputePipelines"});
  fail_creation(*ctx, 0);
  EXPECT_EQ(cache.size(), before + 3);  // the other three were kept
  const std::vector<const vk::Pipeline*> got = cache.get_all(keys);
  EXPECT_EQ(cache.size(), before + 4);
  for (const vk::Pipeline* p : got) EXPECT_NE(p->pipeline, VK_NULL_HANDLE);
}

}  // namespace
}  // namespace vkgraph::testing
