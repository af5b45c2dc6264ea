#include "vk/parallel_copy.h"

#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace vkgraph::vk {
namespace {

// Pieces start on cache-line multiples so that no two threads write one line.
constexpr size_t kPieceAlign = 4096;

unsigned threads_from_environment() {
  if (const char* env = std::getenv("VKGRAPH_COPY_THREADS")) {
    char* end = nullptr;
    unsigned long n = std::strtoul(env, &end, 10);
    if (end != env && *end == '\0' && n >= 1) return static_cast<unsigned>(std::min(n, 64ul));
  }
  return std::clamp(std::thread::hardware_concurrency(), 1u, 8u);
}

struct CopyJob {
  uint8_t* dst = nullptr;
  const uint8_t* src = nullptr;
  size_t bytes = 0;
  size_t piece = 0;  // bytes per piece; the last may be shorter or empty
  unsigned pieces = 0;

  void run_piece(unsigned k) const {
    size_t begin = std::min(bytes, k * piece);
    size_t end = std::min(bytes, begin + piece);
    if (end > begin) std::memcpy(dst + begin, src + begin, end - begin);
  }
};

// Workers 1..n-1 each take piece k of a job; the calling thread takes piece 0 and waits for
// the rest. One job at a time: a second caller meanwhile copies on its own thread rather than
// queueing behind the first.
class CopyPool {
 public:
  explicit CopyPool(unsigned threads) : owner_(getpid()) {
    for (unsigned k = 1; k < threads; ++k) workers_.emplace_back([this, k] { work(k); });
    // Never joined: the pool lives as long as the process, and joining at exit would race
    // with other static destructors that might still copy.
    for (auto& w : workers_) w.detach();
  }

  unsigned threads() const { return static_cast<unsigned>(workers_.size()) + 1; }

  void copy(uint8_t* dst, const uint8_t* src, size_t bytes, unsigned pieces) {
    pieces = std::min(pieces, threads());
    std::unique_lock busy(use_, std::try_to_lock);
    // After fork() the workers exist only in the parent.
    if (pieces <= 1 || !busy.owns_lock() || getpid() != owner_) {
      std::memcpy(dst, src, bytes);
      return;
    }
    CopyJob job{dst, src, bytes, 0, pieces};
    job.piece = (bytes + pieces - 1) / pieces;
    job.piece = (job.piece + kPieceAlign - 1) / kPieceAlign * kPieceAlign;
    {
      std::lock_guard lock(m_);
      job_ = job;
      pending_ = pieces - 1;
      ++generation_;
    }
    start_.notify_all();
    job.run_piece(0);
    std::unique_lock lock(m_);
    done_.wait(lock, [&] { return pending_ == 0; });
  }

 private:
  void work(unsigned k) {
    uint64_t seen = 0;
    for (;;) {
      CopyJob job;
      {
        std::unique_lock lock(m_);
        start_.wait(lock, [&] { return generation_ != seen; });
        seen = generation_;
        if (k >= job_.pieces) continue;
        job = job_;
      }
      job.run_piece(k);
      std::lock_guard lock(m_);
      if (--pending_ == 0) done_.notify_one();
    }
  }

  const pid_t owner_;
  std::mutex use_;  // held by the caller whose job the workers run
  std::mutex m_;
  std::condition_variable start_, done_;
  CopyJob job_;
  uint64_t generation_ = 0;
  unsigned pending_ = 0;
  std::vector<std::thread> workers_;
};

CopyPool& pool() {
  // Created on the first large copy and never destroyed (the workers are detached).
  static CopyPool* p = new CopyPool(threads_from_environment());
  return *p;
}

}  // namespace

unsigned parallel_copy_threads() {
  static const unsigned n = threads_from_environment();
  return n;
}

void parallel_copy(void* dst, const void* src, size_t bytes, unsigned pieces) {
  if (bytes == 0) return;
  pool().copy(static_cast<uint8_t*>(dst), static_cast<const uint8_t*>(src), bytes,
              std::max(pieces, 1u));
}

void parallel_copy(void* dst, const void* src, size_t bytes) {
  if (bytes < kParallelCopyThreshold || parallel_copy_threads() == 1) {
    std::memcpy(dst, src, bytes);
    return;
  }
  // Pieces of at least 1 MiB: below that a thread's wake-up is a large part of its work.
  unsigned pieces =
      static_cast<unsigned>(std::min<size_t>(parallel_copy_threads(), bytes / (size_t{1} << 20)));
  parallel_copy(dst, src, bytes, pieces);
}

}  // namespace vkgraph::vk
