#include "io/token_dataset.hpp"

#include <algorithm>

#include "core/error.hpp"
#include "io/token_file.hpp"

namespace wiola {

TokenDataset::TokenDataset(std::vector<std::string> files, int seq_len) : seq_len_(seq_len) {
  require(!files.empty(), "token dataset: no files given");
  require(seq_len > 0, "token dataset: seq_len must be positive, got ", seq_len);
  const std::int64_t window = std::int64_t{seq_len} + 1;
  for (auto& path : files) {
    h5::File f = h5::File::open_read(path);
    const TokenFileHeader h = read_token_header(f);
    if (files_.empty()) {
      vocab_size_ = h.vocab_size;
      eod_id_ = h.eod_id;
      tokenizer_ = h.tokenizer;
      tokenizer_hash_ = h.tokenizer_hash;
    } else {
      const std::string& first = files_.front().path;
      require(h.vocab_size == vocab_size_, path, ": vocab_size ", h.vocab_size, " differs from ",
              first, "'s ", vocab_size_);
      require(h.eod_id == eod_id_, path, ": eod_id ", h.eod_id, " differs from ", first, "'s ",
              eod_id_);
      require(h.tokenizer == tokenizer_ && h.tokenizer_hash == tokenizer_hash_, path,
              ": tokenizer '", h.tokenizer, "' (hash ", h.tokenizer_hash, ") differs from ",
              first, "'s '", tokenizer_, "' (hash ", tokenizer_hash_, ")");
    }
    require(h.n_tokens >= window, path, ": has ", h.n_tokens,
            " tokens, fewer than one window of T+1 = ", window);
    Source s;
    s.path = path;
    s.tokens = f.dataset("tokens", h5::Access::Random);
    s.file = std::move(f);
    s.n_tokens = h.n_tokens;
    s.first_window = num_windows_;
    num_windows_ += (h.n_tokens - 1) / seq_len;
    num_tokens_ += h.n_tokens;
    files_.push_back(std::move(s));
  }
}

void TokenDataset::read_window(std::int64_t w, std::int32_t* out) const {
  require(w >= 0 && w < num_windows_, "token dataset: window ", w, " is outside [0, ",
          num_windows_, ")");
  // The last file whose first window is <= w.
  const auto it = std::upper_bound(files_.begin(), files_.end(), w,
                                   [](std::int64_t v, const Source& s) {
                                     return v < s.first_window;
                                   });
  const Source& s = *(it - 1);
  const std::int64_t start = (w - s.first_window) * seq_len_;
  const std::size_t n = static_cast<std::size_t>(seq_len_) + 1;
  // Read as uint32 so an out-of-range id is reported as stored, not clipped.
  std::vector<std::uint32_t> buf(n);
  s.tokens.read_range(start, static_cast<std::int64_t>(n), buf.data());
  for (std::size_t i = 0; i < n; ++i) {
    require(buf[i] < static_cast<std::uint32_t>(vocab_size_), s.path, ": token id ", buf[i],
            " at position ", start + static_cast<std::int64_t>(i), " is >= vocab_size ",
            vocab_size_);
    out[i] = static_cast<std::int32_t>(buf[i]);
  }
}

}  // namespace wiola
