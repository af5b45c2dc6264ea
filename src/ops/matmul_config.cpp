#include "matmul_config.h"

#include <algorithm>
#include <string>

#include "vkgraph/error.h"

namespace vkgraph::ops {
namespace {

thread_local std::optional<MatmulConfig> g_override;
thread_local std::optional<SplitKPolicy> g_split_k_override;

bool power_of_two(uint32_t v) {
  return v != 0 && (v & (v - 1)) == 0;
}

uint32_t tiled_shared_bytes(const MatmulConfig& c) {
  // Each k-row of a tile carries one float of padding (see matmul_tiled.comp).
  return c.bk * (c.tile_m() + 1 + c.tile_n() + 1) * 4;
}

uint32_t gemv_shared_bytes(const MatmulConfig& c) {
  return c.gemv_rows * c.gemv_threads() * 4;
}

void check_config(const MatmulConfig& c, const vk::Context& context) {
  const VkPhysicalDeviceLimits& lim = context.limits();
  auto require = [](bool ok, const std::string& what) {
    check(ok, ErrorKind::Unsupported, "matmul config: " + what);
  };
  require(c.threads_x && c.threads_y && c.micro_m && c.micro_n && c.bk && c.gemv_rows,
          "sizes must be positive");
  require(c.threads_x * c.threads_y <= lim.maxComputeWorkGroupInvocations &&
              c.threads_x <= lim.maxComputeWorkGroupSize[0] &&
              c.threads_y <= lim.maxComputeWorkGroupSize[1],
          "tiled workgroup exceeds the device's workgroup limits");
  require(tiled_shared_bytes(c) <= lim.maxComputeSharedMemorySize,
          "tile needs " + std::to_string(tiled_shared_bytes(c)) + " bytes of shared memory");
  require(power_of_two(c.gemv_contig) && power_of_two(c.gemv_other),
          "GEMV thread counts must be powers of two");
  require(c.gemv_threads() <= lim.maxComputeWorkGroupInvocations &&
              c.gemv_contig <= lim.maxComputeWorkGroupSize[0] &&
              c.gemv_other <= lim.maxComputeWorkGroupSize[1],
          "GEMV workgroup exceeds the device's workgroup limits");
  require(gemv_shared_bytes(c) <= lim.maxComputeSharedMemorySize,
          "GEMV needs " + std::to_string(gemv_shared_bytes(c)) + " bytes of shared memory");
  if (c.gemv_subgroup)
    require(context.features().subgroup_arithmetic && power_of_two(c.subgroup_size) &&
                c.gemv_threads() % c.subgroup_size == 0 &&
                c.gemv_threads() <= lim.maxComputeWorkGroupSize[0],
            "subgroup GEMV needs subgroup arithmetic and whole subgroups in a 1-D workgroup");
}

}  // namespace

MatmulConfig choose_matmul_config(const vk::Context& context) {
  const VkPhysicalDeviceLimits& lim = context.limits();
  MatmulConfig c;
  // Vulkan guarantees only 128 invocations per workgroup; halve the tiles until they fit.
  while (c.threads_x * c.threads_y > lim.maxComputeWorkGroupInvocations) c.threads_y /= 2;
  // The subgroup GEMV lays its threads out in x alone.
  while (c.gemv_threads() >
         std::min(lim.maxComputeWorkGroupInvocations, lim.maxComputeWorkGroupSize[0]))
    c.gemv_other /= 2;
  const vk::DeviceFeatures& f = context.features();
  c.subgroup_size = f.subgroup_size;
  // Whole subgroups only: a partial one would skip the K elements of its missing lanes.
  c.gemv_subgroup = f.subgroup_arithmetic && power_of_two(f.subgroup_size) &&
                    c.gemv_threads() % f.subgroup_size == 0;
  return c;
}

void override_matmul_config(std::optional<MatmulConfig> config) {
  g_override = config;
}

MatmulConfig matmul_config(const vk::Context& context) {
  MatmulConfig c = g_override ? *g_override : choose_matmul_config(context);
  check_config(c, context);
  return c;
}

SplitK choose_split_k(uint64_t tiles, int64_t k) {
  const SplitKPolicy policy = g_split_k_override.value_or(SplitKPolicy{});
  SplitK s;
  if (k < policy.min_k || tiles == 0) return s;
  uint64_t by_groups = policy.target_groups / tiles;
  uint64_t by_depth = static_cast<uint64_t>(k / policy.min_slice);
  uint64_t splits = std::min({by_groups, by_depth, uint64_t{policy.max_splits}});
  if (splits < 2) return s;
  // Slices a multiple of 16 deep keep every slice but the last on whole K tiles of the kernels.
  constexpr int64_t kAlign = 16;
  int64_t chunk = (k + static_cast<int64_t>(splits) - 1) / static_cast<int64_t>(splits);
  s.k_chunk = (chunk + kAlign - 1) / kAlign * kAlign;
  s.splits = static_cast<uint32_t>((k + s.k_chunk - 1) / s.k_chunk);
  if (s.splits < 2) return SplitK{};
  return s;
}

void override_split_k_policy(std::optional<SplitKPolicy> policy) {
  g_split_k_override = policy;
}

}  // namespace vkgraph::ops
