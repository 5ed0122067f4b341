#pragma once
// Turning an error some ranks see into one every rank sees: run a piece of
// work on every rank, then agree (one all-reduce) whether it failed anywhere.
// Every rank then throws CollectiveError with the lowest failing rank's
// message ("rank R: ..." on the others when R is not 0), so bad input ends the
// job cleanly, named once by rank 0, instead of leaving the ranks that did not
// fail waiting in the next collective.
#include <functional>
#include <string>

#include "comm/communicator.hpp"

namespace wiola::comm {

void agree(Communicator& world, const std::function<void()>& work,
           const std::string& elsewhere = "another rank failed");

}  // namespace wiola::comm
