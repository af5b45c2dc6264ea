#pragma once
// A graph's inputs and outputs: staged (graph-owned tensors and staging buffers), or External,
// bound to an app's buffer (with its queue-family ownership transfer) or host memory
// (imported, or copied through a graph-owned host-visible buffer).
#include <memory>
#include <string>
#include <vector>

#include "graph/graph_state.h"
#include "vkgraph/vk/buffer.h"
#include "vkgraph/vk/host_import.h"

namespace vkgraph {

struct GraphPort {
  TensorRef tensor;
  std::string name;
  IOMode mode = IOMode::Staged;
  std::unique_ptr<vk::StagingBuffer> staging;  // Staged, from prepare()
  // Host pointer bindings of External IO.
  void* host = nullptr;
  std::unique_ptr<vk::HostImport> import;
  std::unique_ptr<vk::StagingBuffer> host_copy;  // fallback when import is impossible
};

class GraphIO {
 public:
  explicit GraphIO(GraphState& graph) : g_(graph) {}

  void require_new_input_name(const std::string& name) const;
  // Declares existing tensors as input or output; External ones become External storage.
  void add_input(TensorRef tensor, std::string name, IOMode mode);
  void add_output(TensorRef tensor, std::string name, IOMode mode);

  const std::vector<GraphPort>& inputs() const { return inputs_; }
  const std::vector<GraphPort>& outputs() const { return outputs_; }
  const GraphPort& input(size_t i) const;  // checked: the index comes from the app
  const GraphPort& output(size_t i) const;
  std::vector<TensorRef> input_tensors() const;
  std::vector<TensorRef> output_tensors() const;

  // The caller re-records the command buffers after either: they name the old buffer.
  void bind_external(const std::string& name, const ExternalBuffer& buffer);
  HostIOPath bind_host_pointer(const std::string& name, void* pointer, size_t bytes);
  VkBufferMemoryBarrier app_release(const std::string& name, VkAccessFlags app_access) const;
  VkBufferMemoryBarrier app_acquire(const std::string& name, VkAccessFlags app_access) const;

  void allocate_staging();     // prepare()
  void require_bound() const;  // before recording: every External port has a buffer
  void copy_to_input(size_t i, const void* data, size_t bytes);
  // `as` is the port's dtype, or Float32 for a Float16 port (widened on the host).
  void copy_from_output(size_t i, void* data, size_t bytes, DType as) const;
  void before_submit();  // host-pointer inputs -> device
  void after_wait();     // device -> host-pointer outputs

 private:
  GraphPort& find(const std::string& name);
  const GraphPort& find(const std::string& name) const;
  // The binding of an External port whose buffer another queue family owns between
  // executions.
  const ExternalBuffer& foreign_binding(const std::string& name) const;

  GraphState& g_;
  std::vector<GraphPort> inputs_, outputs_;
};

}  // namespace vkgraph
