// wiola-data inspect: a token file's attributes, counts, id histogram summary
// and decoded text, with the tokenizer the file names (built in, embedded, or
// --tokenizer FILE).
#include <algorithm>
#include <cmath>
#include <iomanip>
#include <iostream>
#include <map>

#include "commands.hpp"
#include "core/error.hpp"
#include "io/escape.hpp"
#include "io/h5.hpp"
#include "io/token_file.hpp"

namespace wiola::data {

namespace {

std::string show_id(const Tokenizer* tok, std::int32_t id) {
  if (!tok) return "";
  return escape_text(tok->decode(std::span<const std::int32_t>(&id, 1)), true);
}

void inspect_file(const std::string& path, const std::string& tokenizer_file, int sample) {
  const h5::File f = h5::File::open_read(path);
  const TokenFileHeader h = read_token_header(f);
  std::cout << path << "\n  attributes:\n";
  for (const auto& a : f.list_attrs()) std::cout << "    " << a << " = " << f.attr_as_text(a) << "\n";
  const h5::Dataset tokens = f.dataset("tokens");

  // Document lengths, streamed.
  std::int64_t shortest = h.n_tokens, longest = 0;
  {
    const h5::Dataset offsets = f.dataset("doc_offsets");
    std::vector<std::uint64_t> buf;
    std::int64_t prev = -1;
    const auto see = [&](std::int64_t end) {
      if (prev >= 0) {
        shortest = std::min(shortest, end - prev);
        longest = std::max(longest, end - prev);
      }
    };
    for (std::int64_t first = 0; first < h.n_documents; first += kOffsetChunk * 16) {
      const std::int64_t n = std::min(kOffsetChunk * 16, h.n_documents - first);
      buf.resize(static_cast<std::size_t>(n));
      offsets.read_range(first, n, buf.data());
      for (auto o : buf) {
        see(static_cast<std::int64_t>(o));
        prev = static_cast<std::int64_t>(o);
      }
    }
    see(h.n_tokens);
  }
  std::cout << "  tokens: " << h.n_tokens << " (" << h5::type_name(tokens.file_type())
            << "), documents: " << h.n_documents;
  if (h.n_documents > 0)
    std::cout << ", " << std::fixed << std::setprecision(1)
              << double(h.n_tokens) / double(h.n_documents) << " tokens/document (shortest "
              << shortest << ", longest " << longest << ")" << std::defaultfloat;
  std::cout << "\n";

  std::unique_ptr<Tokenizer> tok;
  std::string tok_note;
  if (!tokenizer_file.empty()) {
    // The tokenizer the user named is used or the command fails: never ignored.
    tok = tokenizer_for(f, h, tokenizer_file);
    tok_note = tokenizer_file;
  } else {
    try {
      tok = tokenizer_for(f, h, tokenizer_file);
      tok_note = h.tokenizer == "byte" ? "built in" : "embedded in the file";
    } catch (const Error& e) {
      tok_note = std::string("cannot decode: ") + e.what();
    }
  }
  std::cout << "  tokenizer: " << h.tokenizer << " (hash " << h.tokenizer_hash << "), " << tok_note
            << "\n";

  // Histogram, streamed chunk by chunk: dense below vocab_size, a map beyond.
  const std::size_t dense_size = h.vocab_size <= (1 << 24) ? static_cast<std::size_t>(h.vocab_size) : 0;
  std::vector<std::int64_t> dense(dense_size, 0);
  std::map<std::int64_t, std::int64_t> counts;
  std::vector<std::uint32_t> buf;
  std::int64_t out_of_range = 0;
  for (std::int64_t start = 0; start < h.n_tokens; start += kTokenChunk * 16) {
    const std::int64_t n = std::min(kTokenChunk * 16, h.n_tokens - start);
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
  double entropy = 0;
  for (const auto& [id, n] : counts) {
    const double p = double(n) / double(h.n_tokens);
    entropy -= p * std::log2(p);
  }
  std::cout << "  ids: " << counts.size() << " distinct of " << h.vocab_size << " (" << std::fixed
            << std::setprecision(1) << 100.0 * double(counts.size()) / double(h.vocab_size)
            << "% of the vocabulary), unigram entropy " << std::setprecision(3) << entropy
            << " bits/token" << std::defaultfloat;
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
              << 100.0 * double(n) / double(h.n_tokens) << "%" << std::defaultfloat;
    if (tok && id < h.vocab_size) std::cout << "  " << show_id(tok.get(), static_cast<std::int32_t>(id));
    std::cout << "\n";
  }

  if (h.n_documents > 0 && tok && sample > 0) {
    std::uint64_t bounds[2] = {0, static_cast<std::uint64_t>(h.n_tokens)};
    f.dataset("doc_offsets").read_range(0, std::min<std::int64_t>(2, h.n_documents), bounds);
    if (h.n_documents == 1) bounds[1] = static_cast<std::uint64_t>(h.n_tokens);
    require(bounds[0] < bounds[1] && bounds[1] <= static_cast<std::uint64_t>(h.n_tokens), path,
            ": doc_offsets [", bounds[0], ", ", bounds[1], ") are inconsistent");
    // Without its end-of-document id, at most `sample` tokens.
    const std::int64_t len =
        std::min<std::int64_t>(sample, static_cast<std::int64_t>(bounds[1] - bounds[0]) - 1);
    std::vector<std::int32_t> ids(static_cast<std::size_t>(std::max<std::int64_t>(len, 0)));
    tokens.read_range(static_cast<std::int64_t>(bounds[0]), static_cast<std::int64_t>(ids.size()),
                      ids.data());
    for (auto id : ids)
      require(id >= 0 && id < h.vocab_size, path, ": token id ", id, " in the first document is >= vocab_size");
    std::cout << "  first document (" << ids.size() << " tokens";
    if (ids.size() > 1) {
      std::cout << ": ";
      for (std::size_t i = 0; i < std::min<std::size_t>(ids.size(), 12); ++i)
        std::cout << (i ? "|" : "") << show_id(tok.get(), ids[i]);
      if (ids.size() > 12) std::cout << "|...";
    }
    std::cout << "):\n" << tok->decode(ids) << "\n";
  }
}

}  // namespace

int inspect(const Args& args) {
  std::vector<std::string> files;
  std::string tokenizer_file;
  int sample = 200;
  po::options_description opts("inspect options");
  opts.add_options()("help,h", "show this help")
      ("file", po::value(&files)->multitoken(), "token files (positional)")
      ("tokenizer", po::value(&tokenizer_file), "tokenizer file to decode with (default: the one the file embeds)")
      ("sample", po::value(&sample)->default_value(200), "tokens of the first document to decode (0: none)");
  po::positional_options_description pos;
  pos.add("file", -1);
  po::variables_map vm;
  if (!parse("inspect", opts, pos, args, vm)) return 0;
  require(!files.empty(), "inspect: no files given (usage: wiola-data inspect FILE...)");
  // A tokenizer file that cannot be read or parsed is refused before any output.
  if (!tokenizer_file.empty()) load_tokenizer_file(tokenizer_file);
  for (std::size_t i = 0; i < files.size(); ++i) {
    if (i) std::cout << "\n";
    inspect_file(files[i], tokenizer_file, sample);
  }
  return 0;
}

}  // namespace wiola::data
