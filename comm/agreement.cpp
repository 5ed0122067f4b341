#include "comm/agreement.hpp"

#include <cstdint>

#include "core/error.hpp"

namespace wiola::comm {

void agree(Communicator& world, const std::function<void()>& work, const std::string& elsewhere) {
  std::string error;
  try {
    work();
  } catch (const Error& e) {
    error = e.what();
  }
  // The lowest failing rank's message goes to every rank, so rank 0 (the one
  // that prints collective errors) can name what went wrong elsewhere.
  const int n = world.size();
  const int lowest = n - world.allreduce_value(error.empty() ? 0 : n - world.rank(), ReduceOp::Max);
  if (lowest == n) return;
  std::int64_t length = static_cast<std::int64_t>(error.size());
  world.broadcast(&length, sizeof length, lowest);
  std::string text = world.rank() == lowest ? error : std::string(static_cast<std::size_t>(length), '\0');
  if (length > 0) world.broadcast(text.data(), text.size(), lowest);
  if (text.empty()) text = elsewhere;
  throw CollectiveError(lowest == 0 || world.rank() == lowest
                            ? text
                            : "rank " + std::to_string(lowest) + ": " + text);
}

}  // namespace wiola::comm
