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
void write_file_bytes(const std::string& path, std::span<const uint8_t> bytes);

}  // namespace vkgraph
