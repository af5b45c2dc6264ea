#pragma once
// One error type for the whole library. The kind lets callers react (retry with a smaller
// batch on OutOfMemory, recreate the device on DeviceLost); the message names the object and
// the problem.
#include <stdexcept>
#include <string>

namespace vkgraph {

enum class ErrorKind {
  InvalidArgument,  // caller passed something wrong: shape, size, name, index
  Unsupported,      // op, attribute, dtype or device feature we do not handle
  OutOfMemory,      // device or host allocation failed, or the memory budget is exceeded
  DeviceLost,       // VK_ERROR_DEVICE_LOST
  Vulkan,           // any other failing VkResult
  InvalidState,     // API called in the wrong order (e.g. reading outputs before a wait)
  Io,               // file could not be read or written
  ModelFormat,      // malformed model or tensor file
};

const char* to_string(ErrorKind kind);

class Error : public std::runtime_error {
 public:
  Error(ErrorKind kind, const std::string& message);
  ErrorKind kind() const { return kind_; }
  // The message without the "<kind>: " prefix that what() carries; for re-wrapping.
  const std::string& message() const { return message_; }

 private:
  ErrorKind kind_;
  std::string message_;
};

// Throws Error(kind, message) when the condition is false.
inline void check(bool condition, ErrorKind kind, const std::string& message) {
  if (!condition) throw Error(kind, message);
}

}  // namespace vkgraph
