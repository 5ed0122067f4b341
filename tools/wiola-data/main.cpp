// wiola-data: builds the embedded fortunes dataset and inspects token files.
//   wiola-data build-embedded [--source DIR] --out DIR [--val-every N]
//   wiola-data inspect FILE...
#include <algorithm>
#include <boost/program_options.hpp>
#include <cstdint>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "io/byte_tokenizer.hpp"
#include "io/fortunes.hpp"
#include "io/h5.hpp"
#include "io/token_file.hpp"

namespace po = boost::program_options;

namespace {

const char* const kUsage =
    "usage: wiola-data <command> [options]\n"
    "commands:\n"
    "  build-embedded   tokenise Debian's fortunes into fortunes-train.h5 / fortunes-val.h5\n"
    "  inspect FILE...  print a token file's attributes, counts, id histogram and first text\n"
    "Run 'wiola-data <command> --help' for the options of a command.\n";

// Parses the arguments after the command name; returns false after printing --help.
bool parse(const std::string& command, const po::options_description& opts,
           const po::positional_options_description& pos, const std::vector<std::string>& args,
           po::variables_map& vm) {
  po::store(po::command_line_parser(args).options(opts).positional(pos).run(), vm);
  if (vm.count("help")) {
    std::cout << "usage: wiola-data " << command << " [options]\n" << opts;
    return false;
  }
  po::notify(vm);
  return true;
}

int build_embedded(const std::vector<std::string>& args) {
  std::string source, out;
  int val_every = 20;
  po::options_description opts("build-embedded options");
  opts.add_options()("help,h", "show this help")(
      "source", po::value(&source)->default_value(wiola::kFortunesDir),
      "directory of fortune text files")("out", po::value(&out)->required(),
                                         "output directory")(
      "val-every", po::value(&val_every)->default_value(20),
      "hold out about one document in N for validation (by a hash of its text)");
  po::variables_map vm;
  if (!parse("build-embedded", opts, {}, args, vm)) return 0;
  wiola::require(val_every >= 2, "--val-every must be at least 2, got ", val_every);

  const std::vector<std::string> docs = wiola::read_fortune_documents(source);
  std::filesystem::create_directories(out);
  const wiola::ByteTokenizer tok;
  const std::string train_path = (std::filesystem::path(out) / "fortunes-train.h5").string();
  const std::string val_path = (std::filesystem::path(out) / "fortunes-val.h5").string();
  wiola::TokenFileWriter train(train_path, tok), val(val_path, tok);
  for (const auto& doc : docs) {
    auto& w = wiola::is_validation_document(doc, val_every) ? val : train;
    w.add_document(tok.encode(doc));
  }
  wiola::require(train.n_documents() > 0 && val.n_documents() > 0, source,
                 ": the split left one side empty (", train.n_documents(), " train, ",
                 val.n_documents(), " validation documents); try another --val-every");
  train.finish();
  val.finish();
  std::cout << "fortunes: " << docs.size() << " documents from " << source << "\n"
            << "  train: " << train_path << ": " << train.n_documents() << " documents, "
            << train.n_tokens() << " tokens\n"
            << "  val:   " << val_path << ": " << val.n_documents() << " documents, "
            << val.n_tokens() << " tokens\n";
  return 0;
}

// How an id is shown in the histogram: the byte tokenizer's text, escaped.
std::string show_id(const wiola::Tokenizer* tok, std::int32_t id) {
  if (!tok) return "";
  const std::string text = tok->decode(std::span<const std::int32_t>(&id, 1));
  std::string s;
  for (unsigned char c : text) {
    if (c == '\n') s += "\\n";
    else if (c == '\t') s += "\\t";
    else if (c == ' ') s += "' '";
    else if (c < 0x20 || c >= 0x7F) {
      static const char hex[] = "0123456789abcdef";
      s += "\\x";
      s += hex[c >> 4];
      s += hex[c & 0xF];
    } else {
      s += static_cast<char>(c);
    }
  }
  return s;
}

void inspect_file(const std::string& path) {
  const wiola::h5::File f = wiola::h5::File::open_read(path);
  const wiola::TokenFileHeader h = wiola::read_token_header(f);
  std::cout << path << "\n  attributes:\n";
  for (const auto& a : f.list_attrs()) std::cout << "    " << a << " = " << f.attr_as_text(a) << "\n";
  const wiola::h5::Dataset tokens = f.dataset("tokens");
  std::cout << "  tokens: " << h.n_tokens << " (" << wiola::h5::type_name(tokens.file_type())
            << "), documents: " << h.n_documents;
  if (h.n_documents > 0)
    std::cout << ", mean " << std::fixed << std::setprecision(1)
              << static_cast<double>(h.n_tokens) / static_cast<double>(h.n_documents)
              << " tokens/document" << std::defaultfloat;
  std::cout << "\n";

  // Histogram, streamed chunk by chunk: a dense table for ids below vocab_size
  // (when that is of sane size), a map for anything else.
  const std::size_t dense_size = h.vocab_size <= (1 << 24) ? static_cast<std::size_t>(h.vocab_size) : 0;
  std::vector<std::int64_t> dense(dense_size, 0);
  std::map<std::int64_t, std::int64_t> counts;
  std::vector<std::uint32_t> buf;
  std::int64_t out_of_range = 0;
  for (std::int64_t start = 0; start < h.n_tokens; start += wiola::kTokenChunk) {
    const std::int64_t n = std::min(wiola::kTokenChunk, h.n_tokens - start);
    buf.resize(static_cast<std::size_t>(n));
    tokens.read_range(start, n, buf.data());
    for (auto id : buf) {
      if (id < dense_size) ++dense[id];
      else ++counts[id];
      if (id >= static_cast<std::uint32_t>(h.vocab_size)) ++out_of_range;
    }
  }
  for (std::size_t id = 0; id < dense.size(); ++id)
    if (dense[id] > 0) counts[static_cast<std::int64_t>(id)] = dense[id];
  std::unique_ptr<wiola::Tokenizer> tok;
  try {
    tok = wiola::make_tokenizer(h.tokenizer);
    if (tok->hash() != h.tokenizer_hash) tok.reset();
  } catch (const wiola::Error&) {
  }
  std::cout << "  distinct ids: " << counts.size() << " of " << h.vocab_size;
  if (out_of_range) std::cout << ", " << out_of_range << " tokens >= vocab_size (corrupt file)";
  std::cout << "\n  most frequent:\n";
  std::vector<std::pair<std::int64_t, std::int64_t>> top(counts.begin(), counts.end());
  const std::size_t k = std::min<std::size_t>(10, top.size());
  std::partial_sort(top.begin(), top.begin() + static_cast<std::ptrdiff_t>(k), top.end(),
                    [](const auto& a, const auto& b) {
                      return a.second != b.second ? a.second > b.second : a.first < b.first;
                    });
  for (std::size_t i = 0; i < k; ++i) {
    const auto [id, n] = top[i];
    std::cout << "    " << std::setw(8) << id << " " << std::setw(10) << n << "  " << std::fixed
              << std::setprecision(2) << std::setw(6)
              << 100.0 * static_cast<double>(n) / static_cast<double>(h.n_tokens) << "%"
              << std::defaultfloat;
    if (tok && id < h.vocab_size) std::cout << "  " << show_id(tok.get(), static_cast<std::int32_t>(id));
    std::cout << "\n";
  }

  if (h.n_documents > 0 && tok) {
    std::uint64_t bounds[2] = {0, static_cast<std::uint64_t>(h.n_tokens)};
    const wiola::h5::Dataset offsets = f.dataset("doc_offsets");
    offsets.read_range(0, std::min<std::int64_t>(2, h.n_documents), bounds);
    if (h.n_documents == 1) bounds[1] = static_cast<std::uint64_t>(h.n_tokens);
    wiola::require(bounds[0] < bounds[1] && bounds[1] <= static_cast<std::uint64_t>(h.n_tokens),
                   path, ": doc_offsets [", bounds[0], ", ", bounds[1], ") are inconsistent");
    // Without its end-of-document id, at most 200 tokens.
    const std::int64_t len = std::min<std::int64_t>(
        200, static_cast<std::int64_t>(bounds[1] - bounds[0]) - 1);
    std::vector<std::int32_t> ids(static_cast<std::size_t>(std::max<std::int64_t>(len, 0)));
    tokens.read_range(static_cast<std::int64_t>(bounds[0]), static_cast<std::int64_t>(ids.size()),
                      ids.data());
    std::string text = tok->decode(ids);
    if (text.size() > 200) text.resize(200);
    std::cout << "  first document:\n" << text << "\n";
  }
}

int inspect(const std::vector<std::string>& args) {
  std::vector<std::string> files;
  po::options_description opts("inspect options");
  opts.add_options()("help,h", "show this help")(
      "file", po::value(&files)->multitoken(), "token files (positional)");
  po::positional_options_description pos;
  pos.add("file", -1);
  po::variables_map vm;
  if (!parse("inspect", opts, pos, args, vm)) return 0;
  wiola::require(!files.empty(), "inspect: no files given (usage: wiola-data inspect FILE...)");
  for (std::size_t i = 0; i < files.size(); ++i) {
    if (i) std::cout << "\n";
    inspect_file(files[i]);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const std::vector<std::string> all(argv + 1, argv + argc);
    if (all.empty()) {
      std::cerr << kUsage;
      return 2;
    }
    const std::string& command = all[0];
    const std::vector<std::string> rest(all.begin() + 1, all.end());
    if (command == "--help" || command == "-h" || command == "help") {
      std::cout << kUsage;
      return 0;
    }
    if (command == "build-embedded") return build_embedded(rest);
    if (command == "inspect") return inspect(rest);
    wiola::fail("unknown command '", command, "' (expected build-embedded or inspect; see --help)");
  } catch (const std::exception& e) {
    std::cerr << "wiola-data: " << e.what() << "\n";
    return 1;
  }
}
