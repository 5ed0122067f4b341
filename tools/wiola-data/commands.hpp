#pragma once
// The subcommands of wiola-data, one file each; every one takes the
// arguments after its name and returns the exit code (errors are thrown as
// wiola::Error and printed by main).
#include <boost/program_options.hpp>
#include <memory>
#include <string>
#include <vector>

#include "io/text_documents.hpp"
#include "io/tokenizer.hpp"

namespace wiola::data {

namespace po = boost::program_options;
using Args = std::vector<std::string>;

int build_embedded(const Args& args);
int inspect(const Args& args);
int train_tokenizer(const Args& args);
int encode(const Args& args);
int import_tokens(const Args& args);
int bench(const Args& args);

// Parses `args`; false after printing --help.
bool parse(const std::string& command, const po::options_description& opts,
           const po::positional_options_description& pos, const Args& args,
           po::variables_map& vm);

// The text-input options shared by encode and train-tokenizer.
struct TextArgs {
  std::vector<std::string> inputs;
  std::string format = "auto", field = "text", split = "file", separator;
  int threads = 0;
  bool skip_invalid = false, quiet = false;
  void add_to(po::options_description& opts);
  TextInputOptions resolve() const;  // checks the combination
};

// "byte" or a tokenizer file.
std::unique_ptr<Tokenizer> tokenizer_arg(const std::string& spec);

}  // namespace wiola::data
