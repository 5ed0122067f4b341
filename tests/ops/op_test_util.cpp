#include "op_test_util.hpp"

#include <cstdio>
#include <map>
#include <sstream>

namespace wiola::test {
namespace {

struct Worst {
  double rel = 0.0;
  std::string what;
};

std::map<std::string, Worst>& table() {
  static std::map<std::string, Worst> t;
  return t;
}

// Prints the largest gradient-check error of every op once all tests ran.
class GradcheckSummary : public ::testing::Environment {
 public:
  void TearDown() override {
    if (table().empty()) return;
    std::printf("\n[gradcheck] largest fp64 finite-difference relative error per op (step %.0e):\n",
                kDefaultStep);
    for (const auto& [op, w] : table())
      std::printf("[gradcheck]   %-18s %.3e  (%s)\n", op.c_str(), w.rel, w.what.c_str());
  }
};

[[maybe_unused]] ::testing::Environment* const summary_env =
    ::testing::AddGlobalTestEnvironment(new GradcheckSummary);

}  // namespace

void record_gradcheck(const std::string& op, const std::string& what, const GradCheckResult& r) {
  std::printf("[gradcheck] %s %s: rel %.3e, max abs %.3e, |g| %.3e, %lld elements\n", op.c_str(),
              what.c_str(), r.rel_error, r.max_abs_error, r.analytic_norm,
              static_cast<long long>(r.checked));
  Worst& w = table()[op];
  if (r.rel_error >= w.rel) w = {r.rel_error, what};
  std::ostringstream key;
  key << op << "." << what << ".rel_error";
  ::testing::Test::RecordProperty(key.str(), std::to_string(r.rel_error));
}

}  // namespace wiola::test
