#include "comm/agreement.hpp"

#include "core/error.hpp"

namespace wiola::comm {

void agree(Communicator& world, const std::function<void()>& work, const std::string& elsewhere) {
  std::string error;
  try {
    work();
  } catch (const Error& e) {
    error = e.what();
  }
  if (world.allreduce_value(error.empty() ? 0 : 1, ReduceOp::Max))
    throw CollectiveError(error.empty() ? elsewhere : error);
}

}  // namespace wiola::comm
