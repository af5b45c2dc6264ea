#include "vkgraph/vk/sync_trace.h"

#include <algorithm>
#include <sstream>

namespace vkgraph::vk {

void SyncTrace::begin_recording(uint64_t cb) {
  std::lock_guard<std::mutex> lock(mutex_);
  recordings_[cb].clear();
}

void SyncTrace::record(uint64_t cb, SyncEvent event) {
  std::lock_guard<std::mutex> lock(mutex_);
  recordings_[cb].push_back(std::move(event));
}

void SyncTrace::host(SyncEvent event) {
  std::lock_guard<std::mutex> lock(mutex_);
  timeline_.push_back(std::move(event));
}

std::vector<SyncEvent> SyncTrace::timeline() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return timeline_;
}

std::vector<SyncEvent> SyncTrace::recorded(uint64_t cb) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = recordings_.find(cb);
  return it == recordings_.end() ? std::vector<SyncEvent>{} : it->second;
}

void SyncTrace::clear() {
  std::lock_guard<std::mutex> lock(mutex_);
  timeline_.clear();
}

namespace {

// Where the last device write to one resource stands on its way to the host.
struct WriteState {
  enum Stage { None, Written, Available, Complete } stage = None;
  VkPipelineStageFlags write_stage = 0;
  VkAccessFlags write_access = 0;
  uint64_t submission = 0;  // the submission that made it available to the host
  std::vector<std::pair<uint64_t, uint64_t>> invalidated;  // ranges since Complete
};

// Host writes not yet flushed, per resource.
struct PendingFlush {
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
};

bool covers(const std::vector<std::pair<uint64_t, uint64_t>>& ranges, uint64_t off, uint64_t size) {
  // Ranges are few; sort a copy and sweep.
  auto r = ranges;
  std::sort(r.begin(), r.end());
  uint64_t pos = off, end = off + size;
  for (auto& [o, s] : r) {
    if (o > pos) break;
    pos = std::max(pos, o + s);
    if (pos >= end) return true;
  }
  return pos >= end;
}

bool stage_covers(VkPipelineStageFlags scope, VkPipelineStageFlags stage) {
  return (scope & VK_PIPELINE_STAGE_ALL_COMMANDS_BIT) || (scope & stage) == stage;
}

bool access_covers(VkAccessFlags scope, VkAccessFlags access) {
  return (scope & VK_ACCESS_MEMORY_WRITE_BIT) || (scope & access) == access;
}

std::string hex(uint64_t v) {
  std::ostringstream s;
  s << "0x" << std::hex << v;
  return s.str();
}

}  // namespace

std::vector<std::string> SyncTrace::audit() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<std::string> problems;
  std::map<uint64_t, WriteState> writes;
  std::map<uint64_t, PendingFlush> unflushed;
  std::map<uint64_t, uint64_t> fence_submission;  // fence -> last submission that signals it
  uint64_t submissions = 0, completed = 0;
  size_t index = 0;

  for (const SyncEvent& e : timeline_) {
    ++index;
    std::string where = "event " + std::to_string(index) + ": ";
    switch (e.type) {
      case SyncEvent::Type::Submit: {
        ++submissions;
        for (auto& [res, pending] : unflushed)
          if (!pending.ranges.empty())
            problems.push_back(where + "submission while host writes to " + hex(res) +
                               " in non-coherent memory were not flushed");
        unflushed.clear();
        for (uint64_t cb : e.command_buffers) {
          auto rec = recordings_.find(cb);
          if (rec == recordings_.end()) continue;
          for (const SyncEvent& r : rec->second) {
            if (r.type == SyncEvent::Type::DeviceWrite) {
              WriteState& w = writes[r.resource];
              w = WriteState{};
              w.stage = WriteState::Written;
              w.write_stage = r.src_stage;
              w.write_access = r.src_access;
            } else if (r.type == SyncEvent::Type::Barrier) {
              if (!(r.dst_stage & VK_PIPELINE_STAGE_HOST_BIT)) continue;
              for (auto& [res, w] : writes) {
                if (w.stage != WriteState::Written || !stage_covers(r.src_stage, w.write_stage))
                  continue;
                bool ok = (r.dst_access & VK_ACCESS_HOST_READ_BIT) &&
                          access_covers(r.src_access, w.write_access);
                for (size_t i = 0; !ok && i < r.buffers.size(); ++i)
                  ok = r.buffers[i] == res && (r.buffer_dst_access[i] & VK_ACCESS_HOST_READ_BIT) &&
                       access_covers(r.buffer_src_access[i], w.write_access);
                if (ok) w.stage = WriteState::Available, w.submission = submissions;
              }
            }
          }
        }
        if (e.fence) fence_submission[e.fence] = submissions;
        break;
      }
      case SyncEvent::Type::FenceWait: {
        auto it = fence_submission.find(e.fence);
        if (it == fence_submission.end()) {
          problems.push_back(where + "wait on fence " + hex(e.fence) + " never submitted");
          break;
        }
        completed = std::max(completed, it->second);
        for (auto& [res, w] : writes)
          if (w.stage == WriteState::Available && w.submission <= completed)
            w.stage = WriteState::Complete, w.invalidated.clear();
        break;
      }
      case SyncEvent::Type::Invalidate: {
        auto it = writes.find(e.resource);
        if (it != writes.end() && it->second.stage == WriteState::Complete)
          it->second.invalidated.emplace_back(e.offset, e.size);
        break;
      }
      case SyncEvent::Type::HostWrite:
        if (!e.coherent) unflushed[e.resource].ranges.emplace_back(e.offset, e.size);
        break;
      case SyncEvent::Type::Flush: {
        auto& r = unflushed[e.resource].ranges;
        r.erase(std::remove_if(r.begin(), r.end(),
                               [&](auto& w) {
                                 return covers({{e.offset, e.size}}, w.first, w.second);
                               }),
                r.end());
        break;
      }
      case SyncEvent::Type::HostRead: {
        auto it = writes.find(e.resource);
        if (it == writes.end()) break;  // never written by the device: nothing to make visible
        const WriteState& w = it->second;
        std::string what = "host read of " + hex(e.resource) + " [" + std::to_string(e.offset) +
                           ", +" + std::to_string(e.size) + ")";
        if (w.stage == WriteState::Written)
          problems.push_back(where + what +
                             ": the device write was not followed by a barrier to HOST/HOST_READ");
        else if (w.stage == WriteState::Available)
          problems.push_back(where + what + ": no fence wait after the device->host barrier");
        else if (!e.coherent && !covers(w.invalidated, e.offset, e.size))
          problems.push_back(where + what +
                             ": non-coherent memory not invalidated before the read");
        break;
      }
      default:
        break;
    }
  }
  return problems;
}

}  // namespace vkgraph::vk
