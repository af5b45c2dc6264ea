#pragma once
// The tables a ComputeGraph is made of: tensors (views share a storage), storages (where the
// bytes live), nodes, and the activation buffers the memory plan allocates. Building fills
// them (compute_graph.cpp); memory_plan, graph_io and encoder read and complete them.
#include <climits>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "vkgraph/graph/compute_graph.h"
#include "vkgraph/vk/buffer.h"
#include "vkgraph/vk/context.h"
#include "vkgraph/vk/pipeline.h"

namespace vkgraph {

enum class StorageKind { Activation, Constant, External };

struct Storage {
  StorageKind kind;
  uint64_t bytes;
  std::string name;
  std::optional<HostTensor> value;  // constants, until prepacked (kept for folding/queries)
  bool state = false;               // Constant storage that dispatches write (add_state)
  vk::Buffer own;                   // constants
  int32_t slot = -1;                // activations: index into GraphState::activation_buffers
  ExternalBuffer external;          // External: the app's buffer (or a host binding)
  bool host_visible = false;        // External bound to host memory
  int first_use = INT32_MAX, last_use = -1;
};

struct Node {
  enum class Kind { Dispatch, Copy } kind;
  DispatchDesc dispatch;
  // Copy
  TensorRef src, dst;
  uint64_t src_offset = 0, dst_offset = 0, bytes = 0;
  std::string label;
  const vk::Pipeline* pipeline = nullptr;
  VkDescriptorSet set = VK_NULL_HANDLE;
};

// Where a tensor's bytes are at run time.
struct Bound {
  VkBuffer buffer;
  VkDeviceSize offset;
  bool host_visible;
};

// Graph tensors and activations are storage buffers that copies may read and write.
constexpr VkBufferUsageFlags kTensorUsage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT |
                                            VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
                                            VK_BUFFER_USAGE_TRANSFER_DST_BIT;

struct GraphState {
  GraphState(std::shared_ptr<vk::Context> context, GraphOptions options);

  std::shared_ptr<vk::Context> context;
  GraphOptions options;
  std::vector<TensorInfo> tensors;
  std::vector<Storage> storages;
  std::vector<Node> nodes;
  std::vector<vk::Buffer> activation_buffers;
  GraphStats stats;
  // Run state, shared by I/O (which must not rebind under a running execution) and encoder.
  bool in_flight = false, executed = false;

  // Checked, and without the copy ComputeGraph::info() makes: for per-execution paths. Do
  // not hold it across additions to the tables.
  const TensorInfo& tensor(TensorRef t) const;
  Storage& storage_of(TensorRef t) { return storages[tensor(t).storage]; }
  const Storage& storage_of(TensorRef t) const { return storages[tensor(t).storage]; }
  bool is_constant(TensorRef t) const {
    const Storage& s = storage_of(t);
    return s.kind == StorageKind::Constant && !s.state;
  }
  bool has_external() const;
  void require_idle(const char* what) const;
  Bound buffer_of(TensorRef t) const;  // valid after the memory plan and prepack
};

}  // namespace vkgraph
