#include <iostream>

#include "commands.hpp"
#include "core/error.hpp"
#include "io/byte_tokenizer.hpp"
#include "core/option_errors.hpp"

namespace wiola::data {

bool parse(const std::string& command, const po::options_description& opts,
           const po::positional_options_description& pos, const Args& args,
           po::variables_map& vm) {
  try {
    po::store(po::command_line_parser(args).options(opts).positional(pos).run(), vm);
    if (vm.count("help")) {
      std::cout << "usage: wiola-data " << command << " [options]\n" << opts;
      return false;
    }
    po::notify(vm);
  } catch (const po::error& e) {
    fail(command, ": ", wiola::error_text(e));
  }
  return true;
}

void TextArgs::add_to(po::options_description& opts) {
  opts.add_options()
      ("input", po::value(&inputs)->multitoken(), "input files (positional)")
      ("format", po::value(&format)->default_value("auto"), "text | jsonl | auto (by extension: .jsonl/.json/.ndjson are JSON lines)")
      ("field", po::value(&field)->default_value("text"), "JSON lines: the string field holding the text")
      ("split", po::value(&split)->default_value("file"), "text: how documents are cut: file (a whole file) | line (each line) | paragraph (separated by blank lines) | separator (by lines equal to --separator)")
      ("separator", po::value(&separator), "with --split separator: the line that separates documents (e.g. %)")
      ("threads", po::value(&threads)->default_value(0), "worker threads (0: all hardware threads)")
      ("skip-invalid", po::bool_switch(&skip_invalid), "skip and count bad documents (invalid UTF-8 or JSON, missing field) instead of stopping")
      ("quiet", po::bool_switch(&quiet), "no progress line");
}

TextInputOptions TextArgs::resolve() const {
  require(!inputs.empty(), "no input files given");
  TextInputOptions o;
  if (format == "auto") {
    o.format = guess_text_format(inputs.front());
    for (const auto& f : inputs)
      require(guess_text_format(f) == o.format, f, ": its extension suggests another format than ",
              inputs.front(), "'s; give --format text or --format jsonl");
  } else {
    o.format = parse_text_format(format);
  }
  o.field = field;
  o.split = parse_text_split(split);
  o.separator = separator;
  require(o.split != TextSplit::Separator || !separator.empty(),
          "--split separator needs --separator STRING");
  require(separator.empty() || o.split == TextSplit::Separator,
          "--separator is only used with --split separator");
  require(o.format == TextFormat::Text || o.split == TextSplit::File,
          "--split applies to text input; JSON lines hold one document per line");
  require(threads >= 0, "--threads must be >= 0");
  return o;
}

std::unique_ptr<Tokenizer> tokenizer_arg(const std::string& spec) {
  require(!spec.empty(), "--tokenizer: give 'byte' or a tokenizer file (wiola-data train-tokenizer)");
  if (spec == "byte") return std::make_unique<ByteTokenizer>();
  return load_tokenizer_file(spec);
}

}  // namespace wiola::data
