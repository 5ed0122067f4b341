#pragma once
// A test seam: WIOLA_FAULT_INJECT makes one rank of wiola-train die abruptly
// (status 7, no MPI shutdown), so tests can check that the other ranks do not
// hang and that no half-written checkpoint is ever published:
//   WIOLA_FAULT_INJECT="rank=R,step=S"             at the first Backward of step S
//   WIOLA_FAULT_INJECT="checkpoint,rank=R,step=S"  while writing its file of step S's checkpoint
// R is the world rank. The tool installs it as the run's observer when the
// variable is set; the training loop itself has no fault branches.
#include <cstdint>
#include <memory>

#include "train/train_observer.hpp"

namespace wiola {

// Null when WIOLA_FAULT_INJECT is unset; throws wiola::Error when it is malformed.
std::unique_ptr<TrainObserver> fault_injector_from_env(int world_rank);

}  // namespace wiola
