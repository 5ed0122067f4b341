// Failure scenarios, one per run: `wiola_test_mpi_fail <scenario>` under
// mpirun. Each must end the whole job with a non-zero status; expect_abort.sh
// checks the status, the duration and the message.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "comm/mpi_communicator.hpp"
#include "comm/process_grid.hpp"
#include "core/error.hpp"

using namespace wiola::comm;

namespace {

void pause_ms(int ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }

// The ranks that are not the subject of a scenario park here with a long
// watchdog, so the subject's message is the one that ends the job.
void park(MpiCommunicator& w) {
  w.set_timeout(30);
  w.barrier();
}

int run(MpiCommunicator& w, const std::string& scenario) {
  const int r = w.rank();
  if (scenario == "exit") {
    // A rank dies mid-run while the others wait for its message.
    w.set_timeout(5);
    w.barrier();
    if (r == 1) {
      pause_ms(200);
      std::fprintf(stderr, "rank 1 exits with status 3\n");
      std::exit(3);
    }
    int x = 0;
    w.recv(&x, sizeof x, 1, 1);
    std::fprintf(stderr, "rank %d: received from a dead rank?\n", r);
    return 0;
  }
  if (scenario == "recv_timeout") {
    w.barrier();
    if (r != 0) park(w);
    w.set_timeout(2);
    int x = 0;
    w.recv(&x, sizeof x, 1, 7);  // never sent
    return 0;
  }
  if (scenario == "collective_timeout") {
    w.barrier();
    if (r == 0) {
      // Never joins the allreduce; waits in a receive (a collective here
      // would be matched against the others' allreduce).
      w.set_timeout(30);
      int x = 0;
      w.recv(&x, sizeof x, 1, 99);
      return 0;
    }
    w.set_timeout(2);
    float v[4] = {1, 2, 3, 4};
    w.allreduce(v, 4, wiola::DType::F32, ReduceOp::Sum);
    return 0;
  }
  if (scenario == "group_timeout") {
    // pp 2 x dp 2: world rank 3 is stage 1, dp index 1; its stage-0 peer is world rank 1.
    const ProcessGrid g = ProcessGrid::make(w.size(), 2, 2, r);
    GridGroups groups = make_groups(w, g);
    if (r != 3) park(w);
    dynamic_cast<MpiCommunicator&>(*groups.pipeline).set_timeout(2);
    int x = 0;
    groups.pipeline->recv(&x, sizeof x, 0, 3);
    return 0;
  }
  if (scenario == "truncated" || scenario == "short_message") {
    // 16 bytes into an 8-byte receive (MPI error), or 8 into 16 (size check).
    const bool truncated = scenario == "truncated";
    w.set_timeout(10);
    char buf[16] = {};
    if (r == 1) w.send(buf, truncated ? 16 : 8, 0, 5);
    if (r == 0) w.recv(buf, truncated ? 8 : 16, 1, 5);
    park(w);
    return 0;
  }
  if (scenario == "abort") {
    w.set_timeout(10);
    w.barrier();
    if (r == 2) w.abort("giving up on purpose", 5);
    park(w);
    return 0;
  }
  if (scenario == "grid_mismatch") {
    // Every rank refuses before any work; rank 0 reports.
    ProcessGrid::make(w.size(), 2, 2, r);
    return 0;
  }
  std::fprintf(stderr, "unknown scenario '%s'\n", scenario.c_str());
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  MpiRuntime runtime(&argc, &argv);
  const std::string scenario = argc > 1 ? argv[1] : "";
  try {
    return run(runtime.world(), scenario);
  } catch (const wiola::Error& e) {
    if (runtime.world_rank() == 0) std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
