#pragma once
// Every op of the Backend (src/backend/op_table.hpp) has a device test case:
// a case declares the ops it compares against the CPU with
// WIOLA_DEVICE_OP_TEST instead of TEST_P; the test DeviceOpTable.
// EveryOpHasADeviceCase walks kOps and fails for an op that no case declares,
// and each case fails if it did not call every op it declares on the device
// (DeviceOpTest observes the device backend).
#include <gtest/gtest.h>

#include <initializer_list>
#include <set>
#include <string>
#include <vector>

#include "backend/backend.hpp"

namespace wiola::test {

struct OpCase {
  std::string suite, test;
  std::vector<Op> ops;
};

// Registers a case (at static initialisation); returns true.
bool register_op_case(const char* suite, const char* test, std::initializer_list<Op> ops);
const std::vector<OpCase>& op_cases();
// The case registered for a test suite and test name as gtest reports them
// ("Dtypes/CudaLinearOps", "Forward.../BF16"); nullptr if none.
const OpCase* op_case_of(const std::string& suite, const std::string& test);

// The ops a backend ran (the outermost call of each).
class OpRecorder final : public OpObserver {
 public:
  void op_begins(Op op) override { seen.insert(op); }
  void op_ends(Op) override {}
  std::set<Op> seen;
};

}  // namespace wiola::test

#define WIOLA_DEVICE_OP_TEST(suite, name, ...)                        \
  [[maybe_unused]] static const bool wiola_op_case_##suite##_##name = \
      ::wiola::test::register_op_case(#suite, #name, {__VA_ARGS__});  \
  TEST_P(suite, name)
