#include "core/parallel_for.h"

#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

namespace vkgraph {
namespace {

unsigned threads_from_environment() {
  if (const char* env = std::getenv("VKGRAPH_COPY_THREADS")) {
    char* end = nullptr;
    unsigned long n = std::strtoul(env, &end, 10);
    if (end != env && *end == '\0' && n >= 1) return static_cast<unsigned>(std::min(n, 64ul));
  }
  return std::clamp(std::thread::hardware_concurrency(), 1u, 8u);
}

struct Job {
  detail::RangeFn fn = nullptr;
  const void* body = nullptr;
  size_t count = 0;
  size_t piece = 0;  // elements per piece; the last may be shorter or empty
  unsigned pieces = 0;

  void run_piece(unsigned k) const {
    const size_t begin = std::min(count, k * piece);
    const size_t end = std::min(count, begin + piece);
    if (end > begin) fn(body, begin, end);
  }
};

// Workers 1..n-1 each take piece k of a job; the calling thread takes piece 0 and waits for
// the rest.
class Pool {
 public:
  explicit Pool(unsigned threads) : owner_(getpid()) {
    for (unsigned k = 1; k < threads; ++k) workers_.emplace_back([this, k] { work(k); });
    // Never joined: the pool lives as long as the process, and joining at exit would race
    // with other static destructors that might still use it.
    for (auto& w : workers_) w.detach();
  }

  unsigned threads() const { return static_cast<unsigned>(workers_.size()) + 1; }

  void run(Job job) {
    job.pieces = std::min(job.pieces, threads());
    std::unique_lock busy(use_, std::try_to_lock);
    if (job.pieces <= 1 || !busy.owns_lock() || getpid() != owner_) {
      job.fn(job.body, 0, job.count);
      return;
    }
    {
      std::lock_guard lock(m_);
      job_ = job;
      pending_ = job.pieces - 1;
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
      Job job;
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
  Job job_;
  uint64_t generation_ = 0;
  unsigned pending_ = 0;
  std::vector<std::thread> workers_;
};

Pool& pool() {
  // Created on the first split job and never destroyed (the workers are detached).
  static Pool* p = new Pool(host_threads());
  return *p;
}

}  // namespace

unsigned host_threads() {
  static const unsigned n = threads_from_environment();
  return n;
}

namespace detail {
void run_ranges(size_t count, unsigned pieces, size_t align, RangeFn fn, const void* body) {
  if (count == 0) return;
  Job job{fn, body, count, 0, std::max(pieces, 1u)};
  if (job.pieces == 1 || host_threads() == 1) {
    fn(body, 0, count);
    return;
  }
  job.pieces = std::min(job.pieces, host_threads());
  align = std::max<size_t>(align, 1);
  job.piece = (count + job.pieces - 1) / job.pieces;
  job.piece = (job.piece + align - 1) / align * align;
  pool().run(job);
}
}  // namespace detail

void parallel_memcpy(void* dst, const void* src, size_t bytes) {
  if (bytes < kParallelCopyThreshold || host_threads() == 1) {
    if (bytes) std::memcpy(dst, src, bytes);  // memcpy needs non-null pointers, even for 0
    return;
  }
  auto* d = static_cast<uint8_t*>(dst);
  const auto* s = static_cast<const uint8_t*>(src);
  parallel_for(bytes, size_t{1} << 20, 4096,
               [&](size_t begin, size_t end) { std::memcpy(d + begin, s + begin, end - begin); });
}

}  // namespace vkgraph
