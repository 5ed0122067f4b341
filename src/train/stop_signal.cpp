#include "train/stop_signal.hpp"

#include <csignal>

namespace wiola {

namespace {
volatile std::sig_atomic_t g_stop = 0;
// The first signal is the one reported (a preemption's TERM may be followed
// by the USR1 a batch script passes on).
extern "C" void on_stop_signal(int sig) {
  if (!g_stop) g_stop = sig;
}
}  // namespace

void install_stop_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  sigaction(SIGUSR1, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

int stop_signal() { return g_stop; }

void request_stop(int sig) { g_stop = sig; }

}  // namespace wiola
