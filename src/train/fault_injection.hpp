#pragma once
// A test seam: WIOLA_FAULT_INJECT makes one rank of wiola-train fail at a
// chosen moment, so tests can check that the other ranks do not hang, that no
// half-written or half-deleted checkpoint is ever published, and that a run
// whose numbers turned NaN stops without saving them:
//   WIOLA_FAULT_INJECT="rank=R,step=S"             die at the first Backward of step S
//   WIOLA_FAULT_INJECT="sigkill,rank=R,step=S"     the same, killed by SIGKILL
//   WIOLA_FAULT_INJECT="checkpoint,rank=R,step=S"  die while writing its file of step S's checkpoint
//   WIOLA_FAULT_INJECT="prune,rank=0,step=S"       die between renaming the checkpoints that step
//                                                  S's save retires and deleting them
//   WIOLA_FAULT_INJECT="nan,rank=R,step=S"         set the rank's parameters to NaN before step S
// R is the world rank; dying is an abrupt exit with status 7 (no MPI
// shutdown), or SIGKILL. The tool installs it as the run's observer when the variable is
// set; the training loop itself has no fault branches.
#include <cstdint>
#include <memory>

#include "train/train_observer.hpp"

namespace wiola {

// Null when WIOLA_FAULT_INJECT is unset or names another rank; throws
// wiola::Error when it is malformed.
std::unique_ptr<TrainObserver> fault_injector_from_env(int world_rank);

}  // namespace wiola
