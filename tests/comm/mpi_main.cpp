// main of the multi-rank suite: every rank runs every test (collectives in
// the same order); rank 0 prints the normal report, the others only their
// failures, and the exit status is non-zero on every rank when any failed.
#include <gtest/gtest.h>

#include <cstdio>

#include "mpi_test_env.hpp"

namespace wiola::comm::test {

namespace {
MpiCommunicator* g_world = nullptr;

class FailurePrinter : public ::testing::EmptyTestEventListener {
 public:
  explicit FailurePrinter(int rank) : rank_(rank) {}
  void OnTestPartResult(const ::testing::TestPartResult& r) override {
    if (!r.failed()) return;
    std::fprintf(stderr, "[rank %d] %s:%d: failure\n%s\n", rank_,
                 r.file_name() ? r.file_name() : "?", r.line_number(), r.summary());
  }

 private:
  int rank_;
};
}  // namespace

MpiCommunicator& world() { return *g_world; }

}  // namespace wiola::comm::test

int main(int argc, char** argv) {
  using namespace wiola::comm;
  // A test that leaves its peers waiting (a failed ASSERT before a collective)
  // ends the run through the watchdog instead of hanging until ctest's timeout.
  MpiRuntime runtime(&argc, &argv, ThreadLevel::Funneled, 20.0);
  ::testing::InitGoogleTest(&argc, argv);
  test::g_world = &runtime.world();
  const int rank = runtime.world_rank();
  if (runtime.world_size() < 2) {
    std::fprintf(stderr, "wiola_test_mpi: run under mpirun with 2 or more ranks\n");
    return 1;
  }
  if (rank != 0) {
    auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
    listeners.Append(new test::FailurePrinter(rank));
  }
  const int failed = RUN_ALL_TESTS() != 0 ? 1 : 0;
  const int any = runtime.world().allreduce_value<std::int32_t>(failed, ReduceOp::Max);
  if (rank == 0)
    std::printf("%d ranks: %s\n", runtime.world_size(), any ? "FAILED on some rank" : "all passed");
  return any;
}
