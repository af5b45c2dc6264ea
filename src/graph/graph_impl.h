#pragma once
// What a ComputeGraph holds: its tables, its I/O and its encoder, in the order they must be
// destroyed backwards (the encoder waits for the GPU before staging and buffers go).
#include <atomic>
#include <string>
#include <thread>

#include "graph/encoder.h"
#include "graph/graph_io.h"
#include "graph/graph_state.h"

namespace vkgraph {

struct ComputeGraph::Impl {
  Impl(std::shared_ptr<vk::Context> context, GraphOptions options)
      : state(std::move(context), options), io(state), encoder(state, io) {}

  GraphState state;
  GraphIO io;
  Encoder encoder;
  std::string label_scope;
  bool prepared = false;
  std::atomic<std::thread::id> user{};  // the thread inside a running method, if any
};

}  // namespace vkgraph
