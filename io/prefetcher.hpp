#pragma once
// Reads ahead: after each request, a background thread fetches the next
// `depth` requests the AccessPredictor expects, so the consumer (the training
// loop, busy computing) usually finds its next micro-batch ready. The result
// of get(first, count) is always fetch(first, count): a hit hands over the
// prefetched value, a miss fetches in the caller's thread, and an error met
// while prefetching is rethrown by the get() that asks for that range (never
// for a range nobody asks for). depth 0: no thread, every get fetches.
#include <algorithm>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <list>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include "io/access_predictor.hpp"

namespace wiola {

template <class Batch>
class Prefetcher {
 public:
  using Fetch = std::function<Batch(std::int64_t first, int count)>;
  struct Stats {
    std::int64_t hits = 0, misses = 0;
  };

  Prefetcher(Fetch fetch, int depth) : fetch_(std::move(fetch)), depth_(depth < 0 ? 0 : depth) {
    if (depth_ > 0) thread_ = std::thread([this] { work(); });
  }
  Prefetcher(const Prefetcher&) = delete;
  Prefetcher& operator=(const Prefetcher&) = delete;
  ~Prefetcher() {
    {
      std::lock_guard<std::mutex> lock(m_);
      stop_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
  }

  Batch get(std::int64_t first, int count) {
    if (depth_ == 0) return fetch_(first, count);
    std::unique_lock<std::mutex> lock(m_);
    std::optional<Batch> value;
    std::exception_ptr error;
    auto it = find(first, count);
    if (it != slots_.end() && it->state != State::Queued) {
      it->claimed = true;  // kept by plan() of any other caller
      cv_.wait(lock, [&] { return it->state == State::Done; });
      value = std::move(it->value);
      error = it->error;
      slots_.erase(it);
      ++stats_.hits;
    } else {
      if (it != slots_.end()) slots_.erase(it);  // not started: read it here
      ++stats_.misses;
      lock.unlock();
      value.emplace(fetch_(first, count));  // errors propagate as they are
      lock.lock();
    }
    plan(first, count);
    lock.unlock();
    cv_.notify_all();
    if (error) std::rethrow_exception(error);
    return std::move(*value);
  }

  // Tell the access pattern (else the predictor assumes contiguous reads).
  void set_pattern(std::int64_t period, std::int64_t offset, std::int64_t span) {
    std::lock_guard<std::mutex> lock(m_);
    predictor_.set_pattern(period, offset, span);
  }
  Stats stats() const {
    std::lock_guard<std::mutex> lock(m_);
    return stats_;
  }
  int depth() const { return depth_; }

 private:
  enum class State { Queued, Running, Done };
  struct Slot {
    std::int64_t first = 0;
    int count = 0;
    State state = State::Queued;
    bool dropped = false;  // no longer wanted; the worker discards it when done
    bool claimed = false;  // a get() waits for it
    std::optional<Batch> value;
    std::exception_ptr error;
  };
  using Iter = typename std::list<Slot>::iterator;

  Iter find(std::int64_t first, int count) {
    for (auto it = slots_.begin(); it != slots_.end(); ++it)
      if (!it->dropped && !it->claimed && it->first == first && it->count == count) return it;
    return slots_.end();
  }

  // Keeps the slots still predicted, drops the others, queues the new ones.
  void plan(std::int64_t first, int count) {
    predictor_.observe(first, count);
    const std::vector<std::int64_t> next = predictor_.predict(depth_);
    for (auto it = slots_.begin(); it != slots_.end();) {
      const bool wanted = it->count == count &&
                          std::find(next.begin(), next.end(), it->first) != next.end();
      if (wanted || it->dropped || it->claimed) {
        ++it;
      } else if (it->state == State::Running) {
        it->dropped = true;
        ++it;
      } else {
        it = slots_.erase(it);
      }
    }
    for (const std::int64_t f : next)
      if (find(f, count) == slots_.end()) {
        Slot slot;
        slot.first = f;
        slot.count = count;
        slots_.push_back(std::move(slot));
      }
  }

  void work() {
    std::unique_lock<std::mutex> lock(m_);
    while (true) {
      Iter job = slots_.end();
      cv_.wait(lock, [&] {
        if (stop_) return true;
        for (auto it = slots_.begin(); it != slots_.end(); ++it)
          if (it->state == State::Queued) {
            job = it;
            return true;
          }
        return false;
      });
      if (stop_) return;
      job->state = State::Running;
      const std::int64_t first = job->first;
      const int count = job->count;
      lock.unlock();
      std::optional<Batch> value;
      std::exception_ptr error;
      try {
        value.emplace(fetch_(first, count));
      } catch (...) {
        error = std::current_exception();
      }
      lock.lock();
      if (job->dropped) {
        slots_.erase(job);
      } else {
        job->value = std::move(value);
        job->error = error;
        job->state = State::Done;
      }
      cv_.notify_all();
    }
  }

  Fetch fetch_;
  int depth_;
  mutable std::mutex m_;
  std::condition_variable cv_;
  std::list<Slot> slots_;
  AccessPredictor predictor_;
  Stats stats_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace wiola
