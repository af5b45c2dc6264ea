#include "graph/memory_plan.h"

#include <algorithm>
#include <string>

#include "vk/parallel_copy.h"
#include "vkgraph/vk/command.h"

namespace vkgraph {

// Lifetimes in step order: input copies at -1, nodes 0..N-1, output copies at N. Activations
// whose lifetimes never overlap share one buffer (greedy, best fit by size).
void plan_activations(GraphState& g, const std::vector<TensorRef>& inputs,
                      const std::vector<TensorRef>& outputs) {
  // A prepare() retried after a failure (e.g. out of memory) plans from scratch; buffers kept
  // from the failed attempt would shift every slot index.
  g.activation_buffers.clear();
  g.stats.activation_bytes = g.stats.unplanned_activation_bytes = 0;
  const int n = static_cast<int>(g.nodes.size());
  auto use = [&](TensorRef t, int when) {
    Storage& s = g.storage_of(t);
    s.first_use = std::min(s.first_use, when);
    s.last_use = std::max(s.last_use, when);
  };
  for (TensorRef t : inputs) use(t, -1);
  for (int i = 0; i < n; ++i) {
    if (g.nodes[i].kind == Node::Kind::Copy) {
      use(g.nodes[i].src, i);
      use(g.nodes[i].dst, i);
    } else {
      for (auto& b : g.nodes[i].dispatch.bindings) use(b.tensor, i);
    }
  }
  for (TensorRef t : outputs) use(t, n);

  std::vector<Storage>& storages = g.storages;
  std::vector<int32_t> order;
  for (int32_t i = 0; i < static_cast<int32_t>(storages.size()); ++i)
    if (storages[i].kind == StorageKind::Activation && storages[i].last_use >= -1 &&
        storages[i].first_use != INT32_MAX)
      order.push_back(i);
  std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
    return storages[a].first_use < storages[b].first_use;
  });
  struct Slot {
    uint64_t bytes = 0;
    int busy_until = -2;
  };
  std::vector<Slot> slots;
  for (int32_t si : order) {
    Storage& s = storages[si];
    g.stats.unplanned_activation_bytes += s.bytes;
    int best = -1;
    if (g.options.plan_memory) {
      for (int j = 0; j < static_cast<int>(slots.size()); ++j) {
        if (slots[j].busy_until >= s.first_use) continue;
        // Prefer the smallest slot that fits, else the largest (it grows least).
        bool fits = slots[j].bytes >= s.bytes;
        if (best < 0) {
          best = j;
          continue;
        }
        bool best_fits = slots[best].bytes >= s.bytes;
        if (fits && (!best_fits || slots[j].bytes < slots[best].bytes)) best = j;
        if (!fits && !best_fits && slots[j].bytes > slots[best].bytes) best = j;
      }
    }
    if (best < 0) {
      slots.push_back({});
      best = static_cast<int>(slots.size() - 1);
    }
    slots[best].bytes = std::max(slots[best].bytes, s.bytes);
    slots[best].busy_until = s.last_use;
    s.slot = best;
  }
  for (size_t j = 0; j < slots.size(); ++j) {
    // Zero-element tensors still get a minimal buffer so descriptors stay valid.
    g.activation_buffers.emplace_back(*g.context, std::max<uint64_t>(slots[j].bytes, 16),
                                      vk::MemoryUsage::Device, kTensorUsage,
                                      "activation slot " + std::to_string(j));
    g.stats.activation_bytes += g.activation_buffers.back().size();
  }
  g.stats.activation_buffers = slots.size();
}

// Constants are uploaded once, through one staging buffer and one submission. One that no node,
// input or output reads (plan_activations found no use: say a weight an op replaced by a copy
// re-laid for its kernel) gets a minimal buffer and no upload.
void prepack_constants(GraphState& g) {
  g.stats.constant_bytes = 0;  // a retried prepare() uploads again
  auto unread = [](const Storage& s) { return s.first_use == INT32_MAX; };
  uint64_t total = 0;
  for (auto& s : g.storages)
    if (s.kind == StorageKind::Constant && !unread(s)) total += (s.bytes + 15) / 16 * 16;
  if (std::none_of(g.storages.begin(), g.storages.end(),
                   [](const Storage& s) { return s.kind == StorageKind::Constant; }))
    return;
  // Zero-element constants still get a (minimal) buffer so descriptors stay valid.
  vk::StagingBuffer staging(*g.context, std::max<uint64_t>(total, 16),
                            vk::StagingBuffer::Direction::ToDevice, "prepack staging");
  vk::OneShot shot(*g.context);
  uint64_t offset = 0;
  for (auto& s : g.storages) {
    if (s.kind != StorageKind::Constant) continue;
    s.own = vk::Buffer(*g.context, unread(s) ? 16 : std::max<uint64_t>(s.bytes, 16),
                       vk::MemoryUsage::Device, kTensorUsage, "constant '" + s.name + "'");
    g.stats.constant_bytes += s.own.size();
    if (s.bytes == 0 || unread(s)) continue;
    vk::parallel_copy(static_cast<uint8_t*>(staging.mapped()) + offset, s.value->bytes.data(),
                      s.bytes);
    shot.cmd().copy_buffer(staging, s.own, offset, 0, s.bytes);
    offset += (s.bytes + 15) / 16 * 16;
  }
  staging.flush(0, total);  // submission then makes the writes visible to the device
  shot.submit_and_wait();   // ends with a barrier covering all later reads
}

}  // namespace vkgraph
