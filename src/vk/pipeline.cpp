#include "vkgraph/vk/pipeline.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <exception>
#include <filesystem>
#include <set>

#include "core/parallel_for.h"
#include "vk/faults.h"
#include "vk/pipeline_disk_cache.h"
#include "vkgraph/error.h"
#include "vkgraph/file_io.h"
#include "vkgraph/vk/context.h"
#include "vkgraph/vk/result.h"

namespace vkgraph::vk {

const char* disk_cache_state_name(DiskCacheState state) {
  switch (state) {
    case DiskCacheState::Off:
      return "off";
    case DiskCacheState::Cold:
      return "cold";
    case DiskCacheState::Warm:
      return "warm";
  }
  return "?";
}

PipelineCache::PipelineCache(Context& context, const std::string& directory) : context_(context) {
  std::vector<uint8_t> initial = load(directory);
  VkPipelineCacheCreateInfo ci{VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO};
  ci.initialDataSize = initial.size();
  ci.pInitialData = initial.data();
  VkResult r = vkCreatePipelineCache(context.device(), &ci, nullptr, &cache_);
  if (r != VK_SUCCESS && !initial.empty()) {
    // The header matched, yet the driver refused the data: start empty instead.
    stats_.disk = DiskCacheState::Cold;
    stats_.cold_reason = std::string("driver rejected the data: ") + vk_result_name(r);
    stats_.loaded_bytes = saved_bytes_ = 0;
    ci.initialDataSize = 0;
    ci.pInitialData = nullptr;
    r = vkCreatePipelineCache(context.device(), &ci, nullptr, &cache_);
  }
  check_vk(r, "vkCreatePipelineCache");
}

// Returns the validated driver data of the device's file, or nothing (Cold, with the reason).
std::vector<uint8_t> PipelineCache::load(const std::string& directory) {
  if (directory.empty()) return {};
  stats_.path =
      (std::filesystem::path(directory) / pipeline_cache_file_name(context_.properties())).string();
  stats_.disk = DiskCacheState::Cold;
  std::error_code ec;
  if (!std::filesystem::exists(stats_.path, ec)) {
    stats_.cold_reason = "no file";
    return {};
  }
  DecodedPipelineCache decoded;
  try {
    decoded = decode_pipeline_cache_file(read_file_bytes(stats_.path), context_.properties());
  } catch (const Error& e) {
    decoded.problem = e.message();
  }
  if (!decoded.problem.empty()) {
    stats_.cold_reason = decoded.problem;
    return {};
  }
  stats_.disk = DiskCacheState::Warm;
  stats_.loaded_bytes = saved_bytes_ = decoded.payload.size();
  return std::move(decoded.payload);
}

bool PipelineCache::save() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (stats_.disk == DiskCacheState::Off) return false;
  size_t size = 0;
  check_vk(vkGetPipelineCacheData(context_.device(), cache_, &size, nullptr),
           "vkGetPipelineCacheData");
  if (size <= saved_bytes_) return false;
  std::vector<uint8_t> data(size);
  check_vk(vkGetPipelineCacheData(context_.device(), cache_, &size, data.data()),
           "vkGetPipelineCacheData");
  data.resize(size);
  write_file_atomically(stats_.path, encode_pipeline_cache_file(data));
  saved_bytes_ = size;
  return true;
}

PipelineCacheStats PipelineCache::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  PipelineCacheStats s = stats_;
  s.pipelines = pipelines_.size();
  return s;
}

PipelineCache::~PipelineCache() {
  try {
    save();
  } catch (const std::exception&) {
    // A cache that cannot be written (read-only home, full disk) only costs the next start.
  }
  VkDevice d = context_.device();
  for (auto& [k, p] : pipelines_) vkDestroyPipeline(d, p.pipeline, nullptr);
  for (auto& [k, l] : layouts_) vkDestroyPipelineLayout(d, l, nullptr);
  for (auto& [k, l] : set_layouts_) vkDestroyDescriptorSetLayout(d, l, nullptr);
  for (auto& [k, m] : modules_) vkDestroyShaderModule(d, m, nullptr);
  vkDestroyPipelineCache(d, cache_, nullptr);
}

const ShaderInfo& ShaderRef::resolve() const {
  if (!by_id_) return find_shader(name_);
  const ShaderInfo* info = shader_info(id_);
  if (!info)
    throw Error(ErrorKind::Unsupported,
                "no shader with id " + std::to_string(static_cast<unsigned>(id_)));
  return *info;
}

size_t PipelineCache::size() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return pipelines_.size();
}

VkDescriptorSetLayout PipelineCache::set_layout(uint32_t n) {
  auto it = set_layouts_.find(n);
  if (it != set_layouts_.end()) return it->second;
  std::vector<VkDescriptorSetLayoutBinding> bindings(n);
  for (uint32_t i = 0; i < n; ++i)
    bindings[i] = {i, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1, VK_SHADER_STAGE_COMPUTE_BIT, nullptr};
  VkDescriptorSetLayoutCreateInfo ci{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
  ci.bindingCount = n;
  ci.pBindings = bindings.data();
  VkDescriptorSetLayout layout;
  create_object(context_, "vkCreateDescriptorSetLayout", [&] {
    return vkCreateDescriptorSetLayout(context_.device(), &ci, nullptr, &layout);
  });
  return set_layouts_[n] = layout;
}

VkShaderModule PipelineCache::module(const std::string& name) {
  auto it = modules_.find(name);
  if (it != modules_.end()) return it->second;
  const ShaderInfo& info = find_shader(name);
  VkShaderModuleCreateInfo ci{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
  ci.codeSize = info.words * 4;
  ci.pCode = info.spirv;
  VkShaderModule m;
  create_object(context_, "vkCreateShaderModule(" + name + ")",
                [&] { return vkCreateShaderModule(context_.device(), &ci, nullptr, &m); });
  return modules_[name] = m;
}

const Pipeline& PipelineCache::get(const PipelineKey& key) {
  return *get_all({key}).front();
}

// The create info of one pipeline, with the storage it points into.
struct PipelineCache::Pending {
  const PipelineKey* key;
  Pipeline pipeline;
  std::vector<VkSpecializationMapEntry> entries;
  VkSpecializationInfo spec{};
  VkComputePipelineCreateInfo info{VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
  std::exception_ptr error;
};

void PipelineCache::describe(Pending& p) {
  const PipelineKey& key = *p.key;
  uint32_t max_push = context_.limits().maxPushConstantsSize;
  if (key.push_size > max_push)
    throw Error(ErrorKind::Unsupported,
                "shader " + key.shader + " needs " + std::to_string(key.push_size) +
                    " bytes of push constants; device allows " + std::to_string(max_push));
  p.pipeline.set_layout = set_layout(key.bindings);
  auto lk = std::make_pair(key.bindings, key.push_size);
  if (!layouts_.count(lk)) {
    VkPushConstantRange range{VK_SHADER_STAGE_COMPUTE_BIT, 0, key.push_size};
    VkPipelineLayoutCreateInfo ci{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
    ci.setLayoutCount = 1;
    ci.pSetLayouts = &p.pipeline.set_layout;
    ci.pushConstantRangeCount = key.push_size ? 1 : 0;
    ci.pPushConstantRanges = &range;
    VkPipelineLayout layout;
    create_object(context_, "vkCreatePipelineLayout",
                  [&] { return vkCreatePipelineLayout(context_.device(), &ci, nullptr, &layout); });
    layouts_[lk] = layout;
  }
  p.pipeline.layout = layouts_[lk];

  p.entries.resize(key.spec.size());
  for (uint32_t i = 0; i < key.spec.size(); ++i) p.entries[i] = {i, i * 4, 4};
  p.spec = {static_cast<uint32_t>(p.entries.size()), p.entries.data(), key.spec.size() * 4,
            key.spec.data()};
  p.info.stage = {VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO};
  p.info.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
  p.info.stage.module = module(key.shader);
  p.info.stage.pName = "main";
  p.info.stage.pSpecializationInfo = key.spec.empty() ? nullptr : &p.spec;
  p.info.layout = p.pipeline.layout;
}

std::vector<const Pipeline*> PipelineCache::get_all(const std::vector<PipelineKey>& keys) {
  std::lock_guard<std::mutex> lock(mutex_);
  // The distinct keys not created yet; layouts and modules first, on this thread (cheap, and
  // their maps are not shared with the workers).
  std::vector<Pending> pending;
  std::set<const PipelineKey*, bool (*)(const PipelineKey*, const PipelineKey*)> seen(
      [](const PipelineKey* a, const PipelineKey* b) { return *a < *b; });
  for (const PipelineKey& key : keys)
    if (!pipelines_.count(key) && seen.insert(&key).second) pending.push_back(Pending{&key});
  for (Pending& p : pending) describe(p);

  // The compiles on several threads, each taking the next one left: they differ widely in
  // cost. The driver synchronises the shared VkPipelineCache itself (it is not created
  // externally synchronized), so the disk cache gets every thread's pipelines.
  auto t0 = std::chrono::steady_clock::now();
  std::atomic<size_t> next{0};
  const auto threads = static_cast<unsigned>(std::min<size_t>(pending.size(), host_threads()));
  parallel_ranges(threads, threads, 1, [&](size_t, size_t) {
    for (size_t i; (i = next++) < pending.size();) {
      Pending& p = pending[i];
      try {
        create_object(context_, "vkCreateComputePipelines(" + p.key->shader + ")", [&] {
          return vkCreateComputePipelines(context_.device(), cache_, 1, &p.info, nullptr,
                                          &p.pipeline.pipeline);
        });
      } catch (...) {
        p.error = std::current_exception();
      }
    }
  });
  stats_.create_ms +=
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  // Kept even when another failed, so that the destructor destroys them.
  for (Pending& p : pending)
    if (!p.error) pipelines_[*p.key] = p.pipeline;
  for (Pending& p : pending)
    if (p.error) std::rethrow_exception(p.error);

  std::vector<const Pipeline*> result;
  result.reserve(keys.size());
  for (const PipelineKey& key : keys) result.push_back(&pipelines_.at(key));
  return result;
}

DescriptorPool::DescriptorPool(Context& context, uint32_t max_sets, uint32_t max_buffers)
    : context_(context) {
  VkDescriptorPoolSize size{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, std::max(1u, max_buffers)};
  VkDescriptorPoolCreateInfo ci{VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
  ci.maxSets = std::max(1u, max_sets);
  ci.poolSizeCount = 1;
  ci.pPoolSizes = &size;
  create_object(context, "vkCreateDescriptorPool",
                [&] { return vkCreateDescriptorPool(context.device(), &ci, nullptr, &pool_); });
}

DescriptorPool::~DescriptorPool() {
  vkDestroyDescriptorPool(context_.device(), pool_, nullptr);
}

VkDescriptorSet DescriptorPool::allocate(VkDescriptorSetLayout layout,
                                         const std::vector<VkBuffer>& buffers,
                                         const std::vector<VkDeviceSize>& offsets,
                                         const std::vector<VkDeviceSize>& sizes) {
  VkDescriptorSetAllocateInfo ai{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO};
  ai.descriptorPool = pool_;
  ai.descriptorSetCount = 1;
  ai.pSetLayouts = &layout;
  VkDescriptorSet set;
  create_object(context_, "vkAllocateDescriptorSets",
                [&] { return vkAllocateDescriptorSets(context_.device(), &ai, &set); });
  write(set, buffers, offsets, sizes);
  return set;
}

void DescriptorPool::write(VkDescriptorSet set, const std::vector<VkBuffer>& buffers,
                           const std::vector<VkDeviceSize>& offsets,
                           const std::vector<VkDeviceSize>& sizes) {
  std::vector<VkDescriptorBufferInfo> infos(buffers.size());
  std::vector<VkWriteDescriptorSet> writes(buffers.size());
  for (uint32_t i = 0; i < buffers.size(); ++i) {
    infos[i] = {buffers[i], offsets[i], sizes[i]};
    writes[i] = {VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
    writes[i].dstSet = set;
    writes[i].dstBinding = i;
    writes[i].descriptorCount = 1;
    writes[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    writes[i].pBufferInfo = &infos[i];
  }
  vkUpdateDescriptorSets(context_.device(), static_cast<uint32_t>(writes.size()), writes.data(), 0,
                         nullptr);
}

TimestampPool::TimestampPool(Context& context, uint32_t count) : context_(context), count_(count) {
  check(context.features().timestamps, ErrorKind::Unsupported,
        "device does not support timestamps on its compute queue");
  VkQueryPoolCreateInfo ci{VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO};
  ci.queryType = VK_QUERY_TYPE_TIMESTAMP;
  ci.queryCount = count;
  create_object(context, "vkCreateQueryPool",
                [&] { return vkCreateQueryPool(context.device(), &ci, nullptr, &pool_); });
}

TimestampPool::~TimestampPool() {
  vkDestroyQueryPool(context_.device(), pool_, nullptr);
}

std::vector<double> TimestampPool::read_ns() {
  std::vector<uint64_t> raw(count_);
  check_vk(vkGetQueryPoolResults(context_.device(), pool_, 0, count_, raw.size() * 8, raw.data(), 8,
                                 VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT),
           "vkGetQueryPoolResults");
  std::vector<double> ns(count_);
  for (uint32_t i = 0; i < count_; ++i)
    ns[i] = static_cast<double>(raw[i]) * context_.features().timestamp_period_ns;
  return ns;
}

}  // namespace vkgraph::vk
