#pragma once
// Runs work over the documents of a DocumentReader on several threads and
// hands the results back in input order: a reader thread cuts the input into
// batches of about `batch_bytes` (text plus each document's own size, so a
// run of empty lines does not make a batch of millions of documents),
// `threads` workers process whole batches,
// and the calling thread consumes each batch's result in order, so the output
// does not depend on the thread count. At most 2 * threads + 2 batches are in
// flight. An exception anywhere stops every thread and is rethrown here.
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "io/text_documents.hpp"

namespace wiola {

template <class Result>
void run_document_pipeline(DocumentReader& reader, int threads, std::size_t batch_bytes,
                           const std::function<Result(int, std::vector<RawDocument>&&)>& work,
                           const std::function<void(Result&&)>& consume) {
  if (threads < 1) threads = 1;
  std::mutex m;
  std::condition_variable cv;
  std::deque<std::pair<std::int64_t, std::vector<RawDocument>>> todo;
  std::map<std::int64_t, Result> done;
  std::int64_t produced = 0, consumed = 0;
  bool reader_done = false, abort = false;
  std::exception_ptr error;
  const std::int64_t limit = 2 * static_cast<std::int64_t>(threads) + 2;
  const auto stop_with = [&](std::exception_ptr e) {
    std::lock_guard<std::mutex> lock(m);
    if (!error) error = e;
    abort = true;
    cv.notify_all();
  };

  std::thread read_thread([&] {
    try {
      while (true) {
        std::vector<RawDocument> batch;
        std::size_t bytes = 0;
        RawDocument doc;
        while (bytes < batch_bytes && reader.next(doc)) {
          bytes += doc.text.size() + sizeof(RawDocument);
          batch.push_back(std::move(doc));
        }
        if (batch.empty()) break;
        std::unique_lock<std::mutex> lock(m);
        cv.wait(lock, [&] { return abort || produced - consumed < limit; });
        if (abort) return;
        todo.emplace_back(produced++, std::move(batch));
        cv.notify_all();
      }
    } catch (...) {
      stop_with(std::current_exception());
      return;
    }
    std::lock_guard<std::mutex> lock(m);
    reader_done = true;
    cv.notify_all();
  });

  std::vector<std::thread> workers;
  for (int w = 0; w < threads; ++w)
    workers.emplace_back([&, w] {
      while (true) {
        std::pair<std::int64_t, std::vector<RawDocument>> job;
        {
          std::unique_lock<std::mutex> lock(m);
          cv.wait(lock, [&] { return abort || !todo.empty() || reader_done; });
          if (abort || todo.empty()) return;
          job = std::move(todo.front());
          todo.pop_front();
        }
        try {
          Result r = work(w, std::move(job.second));
          std::lock_guard<std::mutex> lock(m);
          done.emplace(job.first, std::move(r));
          cv.notify_all();
        } catch (...) {
          stop_with(std::current_exception());
          return;
        }
      }
    });

  std::int64_t next = 0;
  while (true) {
    Result r;
    {
      std::unique_lock<std::mutex> lock(m);
      cv.wait(lock, [&] {
        return abort || done.count(next) > 0 || (reader_done && next == produced);
      });
      if (abort || done.count(next) == 0) break;
      r = std::move(done.at(next));
      done.erase(next);
      ++consumed;
      cv.notify_all();
    }
    ++next;
    try {
      consume(std::move(r));
    } catch (...) {
      stop_with(std::current_exception());
      break;
    }
  }
  {
    std::lock_guard<std::mutex> lock(m);
    abort = true;  // releases a reader or worker still waiting
    cv.notify_all();
  }
  read_thread.join();
  for (auto& t : workers) t.join();
  if (error) std::rethrow_exception(error);
}

}  // namespace wiola
