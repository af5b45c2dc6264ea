#pragma once
// ShaderRef names the shader of a dispatch. Its own header, apart from pipeline.h, so that the
// graph's public header (DispatchDesc) needs no Vulkan object of vkgraph's.
#include <string>

#include "vkgraph/vk/shader_id.h"  // generated: one enumerator per embedded shader

namespace vkgraph::vk {

struct ShaderInfo;

// The shader a dispatch runs: a generated id (op families declared with vkgraph_variant pick
// theirs from the family's table, vkgraph/shaders/<family>.h), or a name, for shaders
// declared with the older vkgraph_shader() and for raw dispatches, looked up by resolve().
class ShaderRef {
 public:
  ShaderRef() = default;
  ShaderRef(ShaderId id) : id_(id), by_id_(true) {}
  ShaderRef(std::string name) : name_(std::move(name)) {}
  ShaderRef(const char* name) : name_(name) {}
  // Throws Unsupported for an unknown name or id.
  const ShaderInfo& resolve() const;

 private:
  ShaderId id_{};
  bool by_id_ = false;
  std::string name_;
};

}  // namespace vkgraph::vk
