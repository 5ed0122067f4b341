// wiola-data: the data tools (docs/data-format.md).
#include <iostream>

#include "commands.hpp"
#include "core/error.hpp"
#include "core/text.hpp"
#include "core/version.hpp"
#include "core/option_errors.hpp"

namespace {

const char* const kUsage =
    "usage: wiola-data <command> [options]\n"
    "commands:\n"
    "  train-tokenizer INPUT... --out FILE   train a byte-level BPE tokenizer on text\n"
    "  encode INPUT... --tokenizer T --out F  text or JSON lines -> token file(s), in parallel\n"
    "  import INPUT... --out PATH             .bin / .npy / raw token ids -> token file(s)\n"
    "  inspect FILE...                        attributes, counts, id histogram, decoded text\n"
    "  build-embedded --out DIR               the embedded fortunes dataset (run by the build)\n"
    "  bench                                  encode and reader throughput figures\n"
    "Run 'wiola-data <command> --help' for the options of a command; --version prints the version.\n";

}  // namespace

int main(int argc, char** argv) {
  namespace d = wiola::data;
  try {
    const d::Args all(argv + 1, argv + argc);
    if (all.empty()) {
      std::cerr << kUsage;
      return 2;
    }
    const std::string& command = all[0];
    const d::Args rest(all.begin() + 1, all.end());
    if (command == "--help" || command == "-h" || command == "help") {
      std::cout << kUsage;
      return 0;
    }
    if (command == "--version") {
      wiola::print_version(std::cout, "wiola-data");
      return 0;
    }
    if (command == "train-tokenizer") return d::train_tokenizer(rest);
    if (command == "encode") return d::encode(rest);
    if (command == "import") return d::import_tokens(rest);
    if (command == "inspect") return d::inspect(rest);
    if (command == "build-embedded") return d::build_embedded(rest);
    if (command == "bench") return d::bench(rest);
    wiola::fail("unknown command '", command,
                "' (expected train-tokenizer, encode, import, inspect, build-embedded or bench; "
                "see --help)");
  } catch (const std::exception& e) {
    std::cerr << "wiola-data: " << wiola::printable_lines(wiola::error_text(e)) << "\n";
    return 1;
  }
}
