#pragma once
// One exception type for every user-facing failure. The message names the thing
// that is wrong (a flag, a file, a tensor) and what is wrong with it; the tools
// print it and exit non-zero.
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

namespace wiola {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what) : std::runtime_error(what) {}
};

namespace detail {
template <class... Args>
std::string concat(Args&&... args) {
  std::ostringstream os;
  (os << ... << std::forward<Args>(args));
  return os.str();
}
}  // namespace detail

// fail("--micro-batch: ", n, " does not divide ", m) throws wiola::Error.
template <class... Args>
[[noreturn]] void fail(Args&&... args) {
  throw Error(detail::concat(std::forward<Args>(args)...));
}

// An error every rank of a job has seen (bad flags, a missing dataset, a
// world size that does not fit): the tools report it once and exit cleanly
// instead of aborting the whole job.
class CollectiveError : public Error {
 public:
  explicit CollectiveError(const std::string& what) : Error(what) {}
};

template <class... Args>
void require(bool ok, Args&&... args) {
  if (!ok) fail(std::forward<Args>(args)...);
}

}  // namespace wiola
