#include "vk/pipeline_disk_cache.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <random>

#include "vkgraph/error.h"
#include "vkgraph/file_io.h"

namespace vkgraph::vk {

namespace {

constexpr char kMagic[8] = {'V', 'K', 'G', 'P', 'C', 'A', 'C', 'H'};
constexpr size_t kFrameBytes = 8 + 4 + 4 + 8 + 8;
// VkPipelineCacheHeaderVersionOne: headerSize, headerVersion, vendorID, deviceID, UUID.
constexpr size_t kVulkanHeaderBytes = 4 * 4 + VK_UUID_SIZE;

uint64_t fnv1a(const uint8_t* data, size_t n) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < n; ++i) h = (h ^ data[i]) * 0x100000001b3ull;
  return h;
}

// The host is little-endian (tensor_io.cpp asserts it), like the file.
template <typename T>
T load(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

template <typename T>
void append(std::vector<uint8_t>& out, T v) {
  const auto* p = reinterpret_cast<const uint8_t*>(&v);
  out.insert(out.end(), p, p + sizeof v);
}

std::string hex(uint64_t v, int digits) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%0*llx", digits, static_cast<unsigned long long>(v));
  return buf;
}

}  // namespace

std::string pipeline_cache_dir(const std::optional<std::string>& option) {
  const char* env = std::getenv("VKGRAPH_PIPELINE_CACHE");
  std::string choice = option ? *option : (env ? env : "");
  if (choice == "off") return "";
  if (!choice.empty()) return choice;
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg)
    return (std::filesystem::path(xdg) / "vkgraph").string();
  if (const char* home = std::getenv("HOME"); home && *home)
    return (std::filesystem::path(home) / ".cache" / "vkgraph").string();
  return "";
}

std::string pipeline_cache_file_name(const VkPhysicalDeviceProperties& p) {
  std::string uuid;
  for (uint8_t b : p.pipelineCacheUUID) uuid += hex(b, 2);
  return "pipelines-v" + std::to_string(kPipelineCacheFormatVersion) + "-" + hex(p.vendorID, 4) +
         "-" + hex(p.deviceID, 4) + "-" + hex(p.driverVersion, 8) + "-" + uuid + ".bin";
}

std::vector<uint8_t> encode_pipeline_cache_file(const std::vector<uint8_t>& payload) {
  std::vector<uint8_t> out(kMagic, kMagic + sizeof kMagic);
  append<uint32_t>(out, kPipelineCacheFormatVersion);
  append<uint32_t>(out, 0);
  append<uint64_t>(out, payload.size());
  append<uint64_t>(out, fnv1a(payload.data(), payload.size()));
  out.insert(out.end(), payload.begin(), payload.end());
  return out;
}

DecodedPipelineCache decode_pipeline_cache_file(const std::vector<uint8_t>& file,
                                                const VkPhysicalDeviceProperties& p) {
  auto reject = [](std::string why) { return DecodedPipelineCache{{}, std::move(why)}; };
  if (file.size() < kFrameBytes) return reject("truncated (no complete vkgraph header)");
  const uint8_t* f = file.data();
  if (std::memcmp(f, kMagic, sizeof kMagic) != 0) return reject("not a vkgraph pipeline cache");
  if (load<uint32_t>(f + 8) != kPipelineCacheFormatVersion)
    return reject("format version " + std::to_string(load<uint32_t>(f + 8)));
  const uint64_t size = load<uint64_t>(f + 16);
  if (size != file.size() - kFrameBytes)
    return reject("truncated (" + std::to_string(file.size() - kFrameBytes) + " of " +
                  std::to_string(size) + " payload bytes)");
  const uint8_t* data = f + kFrameBytes;
  if (load<uint64_t>(f + 24) != fnv1a(data, size)) return reject("checksum mismatch");
  if (size < kVulkanHeaderBytes) return reject("payload shorter than a Vulkan cache header");
  const uint32_t header_size = load<uint32_t>(data);
  if (header_size < kVulkanHeaderBytes || header_size > size)
    return reject("Vulkan header length " + std::to_string(header_size));
  if (load<uint32_t>(data + 4) != VK_PIPELINE_CACHE_HEADER_VERSION_ONE)
    return reject("Vulkan header version " + std::to_string(load<uint32_t>(data + 4)));
  if (load<uint32_t>(data + 8) != p.vendorID) return reject("vendorID differs");
  if (load<uint32_t>(data + 12) != p.deviceID) return reject("deviceID differs");
  if (std::memcmp(data + 16, p.pipelineCacheUUID, VK_UUID_SIZE) != 0)
    return reject("pipelineCacheUUID differs");
  return {std::vector<uint8_t>(data, data + size), {}};
}

void write_file_atomically(const std::string& path, const std::vector<uint8_t>& bytes) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path target(path);
  if (target.has_parent_path()) fs::create_directories(target.parent_path(), ec);
  if (ec)
    throw Error(ErrorKind::Io,
                "cannot create folder " + target.parent_path().string() + ": " + ec.message());
  // Unique per writer: several processes may save the same cache at once.
  std::string temp = path + ".tmp-" + hex(std::random_device{}(), 8);
  try {
    write_file_bytes(temp, bytes);
  } catch (...) {
    fs::remove(temp, ec);
    throw;
  }
  fs::rename(temp, target, ec);
  if (ec) {
    std::error_code ignored;
    fs::remove(temp, ignored);
    throw Error(ErrorKind::Io, "cannot rename " + temp + " to " + path + ": " + ec.message());
  }
}

}  // namespace vkgraph::vk
