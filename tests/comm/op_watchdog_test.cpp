// The NCCL watchdog's decision logic with a scripted probe: injected times,
// operation states and communicator errors.
#include "comm/op_watchdog.hpp"

#include <gtest/gtest.h>

#include <set>

#include "comm/mpi_communicator.hpp"
#include "core/error.hpp"

namespace wiola::comm {
namespace {

using OpId = OpWatchdog::OpId;
using OpState = OpWatchdog::OpState;

// Everything the watchdog observes, set by the test; records what it asks.
struct ScriptedProbe final : OpWatchdog::Probe {
  double t = 0;
  std::map<OpId, OpWatchdog::OpStatus> states;  // absent: pending
  std::set<OpId> reached;
  std::map<OpWatchdog::CommId, std::string> comm_errors;
  std::multiset<OpId> asked;

  double now() override { return t; }
  OpWatchdog::OpStatus status(OpId op) override {
    asked.insert(op);
    auto it = states.find(op);
    return it == states.end() ? OpWatchdog::OpStatus{} : it->second;
  }
  bool wait_reached(OpId op) override { return reached.count(op) > 0; }
  std::optional<std::string> comm_error(OpWatchdog::CommId c) override {
    auto it = comm_errors.find(c);
    if (it == comm_errors.end()) return std::nullopt;
    return it->second;
  }
  void done(OpId op) { states[op] = {OpState::Done, ""}; }
};

TEST(commWatchdog, CompletedOperationsAreForgotten) {
  ScriptedProbe p;
  OpWatchdog w(p);
  const auto c = w.add_comm("data", 5);
  const OpId a = w.begin(c, "ncclAllReduce of 4 fp32 (sum)");
  const OpId b = w.begin(c, "ncclBroadcast of 8 bytes from rank 0");
  EXPECT_EQ(w.outstanding(), 2u);
  EXPECT_FALSE(w.poll());
  p.done(a);
  EXPECT_FALSE(w.poll());
  EXPECT_EQ(w.outstanding(), 1u);
  p.asked.clear();
  EXPECT_FALSE(w.poll());
  EXPECT_EQ(p.asked.count(a), 0u);  // never asked about again
  EXPECT_EQ(p.asked.count(b), 1u);
  p.done(b);
  EXPECT_FALSE(w.poll());
  EXPECT_EQ(w.outstanding(), 0u);
  w.waited(a);  // waiting on a forgotten operation is harmless
  EXPECT_FALSE(w.poll());
}

TEST(commWatchdog, TimeoutCountsFromTheReachedWaitAndNamesTheOperation) {
  ScriptedProbe p;
  OpWatchdog w(p);
  const auto c = w.add_comm("pipeline", 5);
  const OpId recv = w.begin(c, "ncclRecv of 64 bytes from rank 1");
  // Not waited for: never timed out, however long it is outstanding.
  p.t = 100;
  EXPECT_FALSE(w.poll());
  // Waited, but the compute stream has not reached the wait yet.
  w.waited(recv);
  p.t = 200;
  EXPECT_FALSE(w.poll());
  // Reached at t = 200: the clock starts at the poll that sees it.
  p.reached.insert(recv);
  EXPECT_FALSE(w.poll());
  p.t = 204.9;
  EXPECT_FALSE(w.poll());
  p.t = 205;
  const auto v = w.poll();
  ASSERT_TRUE(v);
  EXPECT_EQ(v->message, "ncclRecv of 64 bytes from rank 1 on 'pipeline' timed out after 5 s");
  EXPECT_EQ(v->code, kAbortTimeout);
  EXPECT_EQ(v->op, recv);
  EXPECT_EQ(v->comm, c);
}

TEST(commWatchdog, FiresOnce) {
  ScriptedProbe p;
  OpWatchdog w(p);
  const auto c = w.add_comm("world", 1);
  const OpId a = w.begin(c, "ncclAllReduce of 3 fp64 (sum)");
  w.waited(a);
  p.reached.insert(a);
  EXPECT_FALSE(w.poll());
  p.t = 10;
  ASSERT_TRUE(w.poll());
  EXPECT_TRUE(w.fired());
  p.comm_errors[c] = "remote process exited";
  for (int i = 0; i < 3; ++i) EXPECT_FALSE(w.poll());
  const OpId b = w.begin(c, "ncclBroadcast of 1 bytes from rank 0");  // still accepted
  w.waited(b);
  EXPECT_FALSE(w.poll());
}

TEST(commWatchdog, LongestOverdueWaitIsNamedAcrossCommunicators) {
  ScriptedProbe p;
  OpWatchdog w(p);
  const auto data = w.add_comm("data", 10);
  const auto pipe = w.add_comm("pipeline", 2);
  const OpId rs = w.begin(data, "ncclReduceScatter of 8 fp32 (sum)");
  const OpId send = w.begin(pipe, "ncclSend of 4 bytes to rank 1");
  w.waited(rs);
  w.waited(send);
  p.reached = {rs, send};
  EXPECT_FALSE(w.poll());  // both clocks start at 0
  p.t = 11;                // data: 1 s over; pipeline: 9 s over
  const auto v = w.poll();
  ASSERT_TRUE(v);
  EXPECT_EQ(v->message, "ncclSend of 4 bytes to rank 1 on 'pipeline' timed out after 2 s");
}

TEST(commWatchdog, ZeroTimeoutWaitsForeverAndTimeoutChangesApply) {
  ScriptedProbe p;
  OpWatchdog w(p);
  const auto c = w.add_comm("data", 0);
  const OpId a = w.begin(c, "ncclAllGather of 2 bytes");
  w.waited(a);
  p.reached.insert(a);
  EXPECT_FALSE(w.poll());
  p.t = 1e6;
  EXPECT_FALSE(w.poll());
  w.set_timeout(c, 30);  // read at every poll: applies to the pending wait
  const auto v = w.poll();
  ASSERT_TRUE(v);
  EXPECT_EQ(v->message, "ncclAllGather of 2 bytes on 'data' timed out after 30 s");
  EXPECT_THROW(w.set_timeout(c, -1), Error);
  EXPECT_THROW(w.add_comm("x", -1), Error);
}

TEST(commWatchdog, FailedOperationIsNamedBeforeAnyTimeout) {
  ScriptedProbe p;
  OpWatchdog w(p);
  const auto c = w.add_comm("world", 1);
  const OpId late = w.begin(c, "ncclAllReduce of 1 fp32 (max)");
  const OpId bad = w.begin(c, "ncclBroadcast of 16 bytes from rank 0");
  w.waited(late);
  p.reached.insert(late);
  EXPECT_FALSE(w.poll());
  p.t = 50;
  p.states[bad] = {OpState::Failed, "cudaErrorLaunchFailure: unspecified launch failure"};
  const auto v = w.poll();
  ASSERT_TRUE(v);
  EXPECT_EQ(v->message,
            "ncclBroadcast of 16 bytes from rank 0 on 'world' failed: cudaErrorLaunchFailure: "
            "unspecified launch failure");
  EXPECT_EQ(v->code, kAbortNcclError);
  EXPECT_EQ(v->op, bad);
}

TEST(commWatchdog, AsyncCommunicatorErrorNamesItsOldestOperation) {
  ScriptedProbe p;
  OpWatchdog w(p);
  const auto world = w.add_comm("world", 5);
  const auto data = w.add_comm("data", 5);
  w.begin(world, "ncclAllReduce of 3 fp64 (sum)");
  const OpId first = w.begin(data, "ncclReduceScatter of 12 fp32 (sum)");
  w.begin(data, "ncclAllGather of 24 bytes");
  p.comm_errors[data] = "ncclRemoteError: remote process exited or there was a network error";
  const auto v = w.poll();
  ASSERT_TRUE(v);
  EXPECT_EQ(v->message,
            "ncclReduceScatter of 12 fp32 (sum) on 'data' failed: ncclRemoteError: remote process "
            "exited or there was a network error");
  EXPECT_EQ(v->op, first);
  EXPECT_EQ(v->code, kAbortNcclError);
}

TEST(commWatchdog, AsyncErrorWithNothingOutstandingNamesTheCommunicator) {
  ScriptedProbe p;
  OpWatchdog w(p);
  const auto c = w.add_comm("embedding", 5);
  p.comm_errors[c] = "ncclSystemError: system call failed";
  const auto v = w.poll();
  ASSERT_TRUE(v);
  EXPECT_EQ(v->message, "NCCL communicator 'embedding' failed: ncclSystemError: system call failed");
  EXPECT_EQ(v->op, 0u);
}

TEST(commWatchdog, RemovedCommunicatorKeepsItsOperationsUntilDone) {
  ScriptedProbe p;
  OpWatchdog w(p);
  const auto c = w.add_comm("pipeline", 1);
  const OpId a = w.begin(c, "ncclSend of 8 bytes to rank 0");
  w.remove_comm(c);
  p.comm_errors[c] = "ignored: the communicator is gone";
  w.waited(a);
  p.reached.insert(a);
  EXPECT_FALSE(w.poll());
  p.t = 2;
  const auto v = w.poll();
  ASSERT_TRUE(v);
  EXPECT_EQ(v->message, "ncclSend of 8 bytes to rank 0 on 'pipeline' timed out after 1 s");
  // A removed communicator with nothing outstanding is dropped.
  ScriptedProbe q;
  OpWatchdog x(q);
  const auto d = x.add_comm("data", 1);
  const OpId b = x.begin(d, "ncclAllReduce of 1 i32 (max)");
  x.remove_comm(d);
  q.done(b);
  EXPECT_FALSE(x.poll());
  EXPECT_EQ(x.outstanding(), 0u);
  EXPECT_THROW(x.begin(d, "late"), Error);
}

}  // namespace
}  // namespace wiola::comm
