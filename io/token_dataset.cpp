#include "io/token_dataset.hpp"

#include <algorithm>

#include "core/error.hpp"
#include "io/token_file.hpp"

namespace wiola {

namespace {

const char* side_name(DataSplit s) {
  switch (s) {
    case DataSplit::All: return "";
    case DataSplit::Train: return " in its training documents";
    case DataSplit::HeldOut: return " in its held-out documents";
  }
  return "";
}

}  // namespace

DatasetSpec DatasetSpec::from_files(const std::vector<std::string>& files) {
  DatasetSpec s;
  s.sources = resolve_data_sources(files);
  return s;
}

TokenDataset::TokenDataset(std::vector<std::string> files, int seq_len)
    : TokenDataset(DatasetSpec::from_files(files), seq_len) {}

TokenDataset::TokenDataset(const DatasetSpec& spec, int seq_len)
    : seq_len_(seq_len), split_(spec.split), weighted_(spec.sources.weighted) {
  require(!spec.sources.components.empty(), "token dataset: no files given");
  require(seq_len > 0, "token dataset: seq_len must be positive, got ", seq_len);
  if (split_ != DataSplit::All)
    require(spec.heldout.fraction > 0 && spec.heldout.fraction < 1,
            "token dataset: the held-out fraction ", spec.heldout.fraction, " must be in (0, 1)");
  for (const auto& c : spec.sources.components) {
    Component comp{c.weight, num_windows_, 0};
    for (const auto& path : c.files) open_file(path, spec);
    comp.windows = num_windows_ - comp.first_window;
    require(comp.windows > 0, "dataset '", c.name, "': its held-out documents (fraction ",
            spec.heldout.fraction, ") hold no window of T+1 = ", seq_len + 1,
            " tokens; raise the fraction or give separate validation files");
    components_.push_back(std::move(comp));
  }
}

void TokenDataset::open_file(const std::string& path, const DatasetSpec& spec) {
  const std::int64_t window = std::int64_t{seq_len_} + 1;
  h5::File f = h5::File::open_read(path);
  const TokenFileHeader h = read_token_header(f);
  if (tokenizer_.empty()) {
    vocab_size_ = h.vocab_size;
    eod_id_ = h.eod_id;
    tokenizer_ = h.tokenizer;
    tokenizer_hash_ = h.tokenizer_hash;
    first_path_ = path;
  } else {
    require(h.vocab_size == vocab_size_, path, ": vocab_size ", h.vocab_size, " differs from ",
            first_path_, "'s ", vocab_size_);
    require(h.eod_id == eod_id_, path, ": eod_id ", h.eod_id, " differs from ", first_path_,
            "'s ", eod_id_);
    require(h.tokenizer == tokenizer_ && h.tokenizer_hash == tokenizer_hash_, path,
            ": tokenizer '", h.tokenizer, "' (hash ", h.tokenizer_hash, ") differs from ",
            first_path_, "'s '", tokenizer_, "' (hash ", tokenizer_hash_, ")");
  }
  require(spec.require_vocab_size == 0 || h.vocab_size == spec.require_vocab_size, path,
          ": vocab_size ", h.vocab_size, " disagrees with the configured vocabulary ",
          spec.require_vocab_size);
  require(spec.require_tokenizer_hash.empty() || h.tokenizer_hash == spec.require_tokenizer_hash,
          path, ": tokenizer '", h.tokenizer, "' (hash ", h.tokenizer_hash,
          ") disagrees with the configured tokenizer hash ", spec.require_tokenizer_hash);

  Source s;
  s.path = path;
  s.n_tokens = h.n_tokens;
  s.view_tokens = h.n_tokens;
  if (split_ != DataSplit::All) {
    s.runs = split_runs(f, h.n_documents, h.n_tokens, spec.heldout, split_ == DataSplit::HeldOut);
    s.view_tokens = 0;
    s.run_starts.reserve(s.runs.size());
    for (const auto& r : s.runs) {
      s.run_starts.push_back(s.view_tokens);
      s.view_tokens += r.length;
    }
    if (s.runs.size() == 1 && s.runs[0].start == 0 && s.runs[0].length == h.n_tokens) {
      s.runs.clear();  // the whole file
      s.run_starts.clear();
    }
  }
  if (s.view_tokens < window) {
    // A file may hold too few held-out documents for a window; it then just
    // contributes none. Anything else too short is an error.
    require(split_ == DataSplit::HeldOut, path, ": has ", s.view_tokens, " tokens",
            side_name(split_), ", fewer than one window of T+1 = ", window);
    return;
  }
  s.tokens = f.dataset("tokens", h5::Access::Random);
  s.file = std::move(f);
  s.first_window = num_windows_;
  s.windows = (s.view_tokens - 1) / seq_len_;
  num_windows_ += s.windows;
  num_tokens_ += s.view_tokens;
  files_.push_back(std::move(s));
}

const TokenDataset::Source& TokenDataset::source_of(std::int64_t w) const {
  require(w >= 0 && w < num_windows_, "token dataset: window ", w, " is outside [0, ",
          num_windows_, ")");
  // The last file whose first window is <= w.
  const auto it = std::upper_bound(files_.begin(), files_.end(), w,
                                   [](std::int64_t v, const Source& s) {
                                     return v < s.first_window;
                                   });
  return *(it - 1);
}

TokenDataset::Location TokenDataset::locate(std::int64_t w) const {
  const Source& s = source_of(w);
  Location loc;
  loc.file = static_cast<std::size_t>(&s - files_.data());
  const std::int64_t first = (w - s.first_window) * seq_len_;
  std::int64_t need = std::int64_t{seq_len_} + 1;
  if (s.runs.empty()) {
    loc.runs.push_back({first, need});
    return loc;
  }
  std::size_t r = static_cast<std::size_t>(
      std::upper_bound(s.run_starts.begin(), s.run_starts.end(), first) - s.run_starts.begin() - 1);
  std::int64_t offset = first - s.run_starts[r];
  while (need > 0) {
    const TokenRun& run = s.runs.at(r);
    const std::int64_t take = std::min(run.length - offset, need);
    loc.runs.push_back({run.start + offset, take});
    need -= take;
    offset = 0;
    ++r;
  }
  return loc;
}

void TokenDataset::read_window(std::int64_t w, std::int32_t* out) const {
  const Location loc = locate(w);
  const Source& s = files_[loc.file];
  // Read as uint32 so an out-of-range id is reported as stored, not clipped.
  thread_local std::vector<std::uint32_t> buf;
  std::size_t filled = 0;
  for (const TokenRun& run : loc.runs) {
    buf.resize(static_cast<std::size_t>(run.length));
    s.tokens.read_range(run.start, run.length, buf.data());
    for (std::size_t i = 0; i < buf.size(); ++i) {
      require(buf[i] < static_cast<std::uint32_t>(vocab_size_), s.path, ": token id ", buf[i],
              " at position ", run.start + static_cast<std::int64_t>(i), " is >= vocab_size ",
              vocab_size_);
      out[filled++] = static_cast<std::int32_t>(buf[i]);
    }
  }
}

}  // namespace wiola
