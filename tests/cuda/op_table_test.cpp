// The op table walked: every op of src/backend/op_table.hpp has a device test
// case (tests/cuda/op_coverage.hpp). Built into the emulated op tests only:
// the check is the same for every CUDA build, and the device binary's tests
// must all skip where no GPU is present.
#include <algorithm>

#include "op_coverage.hpp"

namespace wiola::test {

TEST(DeviceOpTable, EveryOpHasADeviceCase) {
  for (const OpInfo& info : kOps) {
    const bool covered = std::any_of(op_cases().begin(), op_cases().end(), [&](const OpCase& c) {
      return std::find(c.ops.begin(), c.ops.end(), info.op) != c.ops.end();
    });
    EXPECT_TRUE(covered) << "op " << info.name
                         << " has no device test case (declare it with WIOLA_DEVICE_OP_TEST, "
                            "tests/cuda/op_coverage.hpp)";
  }
}

}  // namespace wiola::test
