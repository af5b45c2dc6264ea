#include "vkgraph/error.h"

namespace vkgraph {

const char* to_string(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::InvalidArgument:
      return "InvalidArgument";
    case ErrorKind::Unsupported:
      return "Unsupported";
    case ErrorKind::OutOfMemory:
      return "OutOfMemory";
    case ErrorKind::DeviceLost:
      return "DeviceLost";
    case ErrorKind::Vulkan:
      return "Vulkan";
    case ErrorKind::InvalidState:
      return "InvalidState";
    case ErrorKind::Io:
      return "Io";
    case ErrorKind::ModelFormat:
      return "ModelFormat";
  }
  // Only reachable with a value cast from outside the enum; still give a printable name.
  return "Unknown";
}

Error::Error(ErrorKind kind, const std::string& message)
    : std::runtime_error(std::string(to_string(kind)) + ": " + message),
      kind_(kind),
      message_(message) {}

}  // namespace vkgraph
