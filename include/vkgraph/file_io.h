#pragma once
// Whole-file reads and writes, for every layer that keeps bytes in files (tensors, models,
// the pipeline cache). Lives in the core so that no layer depends on another's file format
// just to open a file. Errors are Error(Io, ...) naming the path and the OS reason.
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace vkgraph {

std::vector<uint8_t> read_file_bytes(const std::string& path);

// A whole file mapped read-only, for a large file parsed in place (a model): no zero-filled
// buffer to read into and no copy out of the page cache.
class MappedFile {
 public:
  explicit MappedFile(const std::string& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const uint8_t* data() const { return static_cast<const uint8_t*>(data_); }
  size_t size() const { return size_; }

 private:
  void* data_ = nullptr;  // null for an empty file
  size_t size_ = 0;
};
void write_file_bytes(const std::string& path, std::span<const uint8_t> bytes);

}  // namespace vkgraph
