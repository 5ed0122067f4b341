#include "op_coverage.hpp"

namespace wiola::test {

namespace {

std::vector<OpCase>& registry() {
  static std::vector<OpCase> cases;
  return cases;
}

// "Dtypes/CudaLinearOps" -> "CudaLinearOps"; "Name/BF16" -> "Name".
std::string after_slash(const std::string& s) {
  const auto i = s.find('/');
  return i == std::string::npos ? s : s.substr(i + 1);
}
std::string before_slash(const std::string& s) { return s.substr(0, s.find('/')); }

}  // namespace

bool register_op_case(const char* suite, const char* test, std::initializer_list<Op> ops) {
  registry().push_back({suite, test, ops});
  return true;
}

const std::vector<OpCase>& op_cases() { return registry(); }

const OpCase* op_case_of(const std::string& suite, const std::string& test) {
  const std::string s = after_slash(suite), t = before_slash(test);
  for (const OpCase& c : registry())
    if (c.suite == s && c.test == t) return &c;
  return nullptr;
}

}  // namespace wiola::test
