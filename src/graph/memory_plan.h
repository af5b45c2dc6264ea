#pragma once
// Device memory of a graph's own tensors, made once at prepare().
#include <vector>

#include "graph/graph_state.h"

namespace vkgraph {

// Activations whose lifetimes (in step order, given the graph's input and output tensors)
// never overlap share one buffer; fills GraphState::activation_buffers and each
// Storage::slot. With options.plan_memory off, every activation gets its own buffer.
void plan_activations(GraphState& g, const std::vector<TensorRef>& inputs,
                      const std::vector<TensorRef>& outputs);

// Uploads every constant to its own device buffer (Storage::own).
void prepack_constants(GraphState& g);

}  // namespace vkgraph
