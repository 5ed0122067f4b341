// wiola-data import: GPT-2-style .bin shards, .npy arrays and raw id files ->
// token files.
#include <filesystem>
#include <iostream>

#include "commands.hpp"
#include "core/error.hpp"
#include "io/token_import.hpp"

namespace wiola::data {

namespace fs = std::filesystem;

int import_tokens(const Args& args) {
  std::vector<std::string> inputs;
  std::string out, format = "auto", dtype, tokenizer_file, name = "external";
  int vocab = 0;
  std::int64_t eod = -1;
  bool quiet = false;
  po::options_description opts("import options");
  opts.add_options()("help,h", "show this help")
      ("input", po::value(&inputs)->multitoken(), "token files (positional)")
      ("out", po::value(&out)->required(), "one input: the output file (or a folder); several: the output folder, one NAME.h5 per input")
      ("format", po::value(&format)->default_value("auto"), "auto | bin (256 x int32 header, magic 20240520) | npy | raw")
      ("dtype", po::value(&dtype), "raw files: u16 | u32 (little-endian)")
      ("vocab", po::value(&vocab)->default_value(0), "vocabulary size: every id must be below it (or take it from --tokenizer)")
      ("eod", po::value(&eod)->default_value(-1), "end-of-document id: documents end at each one; without it a file is one document and id VOCAB is added as its end")
      ("tokenizer", po::value(&tokenizer_file), "a wiola BPE tokenizer file the ids come from (gives --vocab and --eod, and is embedded)")
      ("tokenizer-name", po::value(&name)->default_value("external"), "the tokenizer name recorded in the file (files to be read together must agree)")
      ("quiet", po::bool_switch(&quiet), "no progress line");
  po::positional_options_description pos;
  pos.add("input", -1);
  po::variables_map vm;
  if (!parse("import", opts, pos, args, vm)) return 0;
  require(!inputs.empty(), "import: no input files given");
  const RawKind kind = parse_raw_kind(format);
  require(dtype.empty() || kind == RawKind::Raw || kind == RawKind::Auto,
          "--dtype applies to raw files only");

  std::unique_ptr<Tokenizer> tok;
  bool split = true;
  if (!tokenizer_file.empty()) {
    tok = load_tokenizer_file(tokenizer_file);
    require(vocab == 0 || vocab == tok->vocab_size(), "--vocab ", vocab, " disagrees with ",
            tokenizer_file, "'s vocab_size ", tok->vocab_size());
    require(eod < 0 || eod == tok->eod_id(), "--eod ", eod, " disagrees with ", tokenizer_file,
            "'s end-of-document id ", tok->eod_id());
  } else {
    require(vocab > 0, "import: give --vocab (the vocabulary size of the ids) or --tokenizer FILE");
    require(eod < vocab, "--eod ", eod, " is not below --vocab ", vocab);
    if (eod >= 0) {
      tok = std::make_unique<ExternalTokenizer>(name, vocab, static_cast<std::int32_t>(eod));
    } else {
      require(vocab < (1 << 30), "--vocab ", vocab, " is too large");
      tok = std::make_unique<ExternalTokenizer>(name, vocab + 1, vocab);
      split = false;
      std::cerr << "import: no --eod: each input is one document ending in the added id "
                << vocab << " (vocab_size " << vocab + 1 << ")\n";
    }
  }

  // Output paths: a file for one input (unless `out` is a folder), else a folder.
  std::error_code ec;
  const bool to_folder = inputs.size() > 1 || fs::is_directory(out, ec);
  if (to_folder) fs::create_directories(out, ec);
  require(!to_folder || fs::is_directory(out, ec), out, ": cannot create the output folder");
  std::vector<std::string> outputs;
  for (const auto& in : inputs) {
    std::string o = out;
    if (to_folder) o = (fs::path(out) / fs::path(in).stem()).string() + ".h5";
    require(std::find(outputs.begin(), outputs.end(), o) == outputs.end(), o,
            ": two inputs would be written here (same file name); import them separately");
    outputs.push_back(o);
  }
  // Every header is checked before anything is written.
  std::vector<RawTokenFile> files;
  for (const auto& in : inputs) files.push_back(open_raw_tokens(in, kind, dtype));
  for (std::size_t i = 0; i < files.size(); ++i) {
    const ImportReport r = import_raw_tokens(files[i], *tok, split, outputs[i], !quiet);
    std::cout << files[i].path << " (" << files[i].description << "): " << r.tokens_in
              << " ids -> " << outputs[i] << ": " << r.documents << " documents, " << r.tokens_out
              << " tokens" << (r.appended_eod ? " (end-of-document id appended at the end)" : "")
              << "\n";
  }
  return 0;
}

}  // namespace wiola::data
