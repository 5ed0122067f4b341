// wiola-fuzz-replay TARGET PATH...: runs every file under the PATHs (seed
// corpora, regression inputs, a crash libFuzzer found) through one fuzz target,
// so the normal suite holds each reader to its contract on them without
// libFuzzer. `wiola-fuzz-replay --list` names the targets.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>

#include "fuzz/fuzz_target.hpp"

namespace fs = std::filesystem;

int main(int argc, char** argv) {
  const auto& targets = wiola::fuzz::registry();
  if (argc == 2 && std::string(argv[1]) == "--list") {
    for (const auto& t : targets) std::printf("%s\n", t.name);
    return 0;
  }
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s TARGET PATH... | --list\n", argv[0]);
    return 2;
  }
  const auto it = std::find_if(targets.begin(), targets.end(),
                               [&](const auto& t) { return t.name == std::string(argv[1]); });
  if (it == targets.end()) {
    std::fprintf(stderr, "%s: no fuzz target '%s' (--list names them)\n", argv[0], argv[1]);
    return 2;
  }
  std::vector<fs::path> inputs;
  for (int i = 2; i < argc; ++i) {
    const fs::path p = argv[i];
    if (fs::is_regular_file(p)) {
      inputs.push_back(p);
    } else if (fs::is_directory(p)) {
      for (const auto& e : fs::recursive_directory_iterator(p))
        if (e.is_regular_file()) inputs.push_back(e.path());
    } else {
      std::fprintf(stderr, "%s: %s: no such file or folder\n", argv[0], argv[i]);
      return 2;
    }
  }
  // An empty corpus would make the test pass without testing anything.
  if (inputs.empty()) {
    std::fprintf(stderr, "%s: no inputs under the given paths\n", argv[0]);
    return 2;
  }
  std::sort(inputs.begin(), inputs.end());
  for (const auto& p : inputs) {
    std::ifstream in(p, std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const auto before = wiola::fuzz::outcomes();
    it->run(bytes);
    const auto after = wiola::fuzz::outcomes();
    std::fprintf(stderr, "replay %s: %s (%zu bytes): %s\n", it->name, p.c_str(), bytes.size(),
                 after.read > before.read ? "read" : after.refused > before.refused ? "refused" : "skipped");
  }
  std::printf("replay %s: %zu inputs, every one read or refused by name (%ld reads, %ld refusals)\n",
              it->name, inputs.size(), wiola::fuzz::outcomes().read, wiola::fuzz::outcomes().refused);
  return 0;
}
