#pragma once
// The on-disk form of a VkPipelineCache: where the file lives, what it is called, and how it
// is framed and checked. Drivers are not required to survive a damaged or foreign blob, so
// nothing reaches vkCreatePipelineCache unless its framing, checksum and Vulkan header match
// this device and driver.
//
// File: magic "VKGPCACH", u32 format version, u32 reserved (0), u64 payload bytes,
// u64 FNV-1a of the payload, then the payload: the driver's data, which starts with a
// VkPipelineCacheHeaderVersionOne. All integers little-endian.
#include <vulkan/vulkan.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace vkgraph::vk {

// Bumped whenever the framing above changes; part of the file name, so old files are ignored.
constexpr uint32_t kPipelineCacheFormatVersion = 1;

// The cache folder: `option` when given, else env VKGRAPH_PIPELINE_CACHE, else
// $XDG_CACHE_HOME/vkgraph, else $HOME/.cache/vkgraph. "off" (either way) gives "": no disk
// cache. Also "" when no folder can be derived (no HOME).
std::string pipeline_cache_dir(const std::optional<std::string>& option);

// File name for this device and driver: format version, vendor, device, driver version and
// pipelineCacheUUID, so a driver update or another GPU never reads a stale file.
std::string pipeline_cache_file_name(const VkPhysicalDeviceProperties& properties);

// The framed file for `payload`.
std::vector<uint8_t> encode_pipeline_cache_file(const std::vector<uint8_t>& payload);

struct DecodedPipelineCache {
  std::vector<uint8_t> payload;  // empty when rejected
  std::string problem;           // why it was rejected; empty when accepted
};
// Checks framing, checksum and the Vulkan header against `properties`.
DecodedPipelineCache decode_pipeline_cache_file(const std::vector<uint8_t>& file,
                                                const VkPhysicalDeviceProperties& properties);

// Writes through a temporary file in the same folder and a rename, so a reader (another
// process) sees the old file or the new one, never half of one. Creates the folder. Throws
// Error(Io) on failure.
void write_file_atomically(const std::string& path, const std::vector<uint8_t>& bytes);

}  // namespace vkgraph::vk
