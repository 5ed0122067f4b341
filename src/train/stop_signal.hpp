#pragma once
// SIGUSR1 and SIGTERM — what Slurm sends before a time limit or on
// preemption — ask the run to stop: every rank finishes the current step, the
// ranks agree, write a checkpoint together and exit with kExitRequeue.
namespace wiola {

// Exit status of a run that stopped on a signal after writing a checkpoint:
// "try again" (EX_TEMPFAIL), for batch scripts that requeue themselves.
inline constexpr int kExitRequeue = 75;

void install_stop_handlers();
// The signal received since start (0: none).
int stop_signal();
// For tests: behave as if `sig` had arrived.
void request_stop(int sig);

}  // namespace wiola
