#pragma once
// Training windows over one or more token files. A window is seq_len + 1
// tokens (inputs are the first seq_len, targets the last seq_len). File f
// contributes (n_tokens_f - 1) / seq_len windows; window k of a file starts at
// token k * seq_len, so consecutive windows share one token. Windows never
// cross files; global window indices follow the files in the given order.
// Reads are hyperslabs of `tokens`: a file is never loaded whole.
#include <cstdint>
#include <string>
#include <vector>

#include "io/h5.hpp"

namespace wiola {

class TokenDataset {
 public:
  // Opens and checks every file (format, attributes, agreement between files,
  // at least one window each); errors name the file.
  TokenDataset(std::vector<std::string> files, int seq_len);

  std::int64_t num_windows() const { return num_windows_; }
  std::int64_t num_tokens() const { return num_tokens_; }
  int seq_len() const { return seq_len_; }
  int vocab_size() const { return vocab_size_; }
  int eod_id() const { return eod_id_; }
  const std::string& tokenizer() const { return tokenizer_; }
  const std::string& tokenizer_hash() const { return tokenizer_hash_; }
  std::size_t num_files() const { return files_.size(); }
  const std::string& file_path(std::size_t i) const { return files_.at(i).path; }

  // Writes the seq_len + 1 tokens of window w to out[0..seq_len]. Throws, naming
  // the file and the position, when a token id is >= vocab_size.
  void read_window(std::int64_t w, std::int32_t* out) const;

 private:
  struct Source {
    std::string path;
    h5::File file;
    h5::Dataset tokens;  // declared after `file`: closed first
    std::int64_t n_tokens = 0;
    std::int64_t first_window = 0;
  };
  std::vector<Source> files_;
  int seq_len_ = 0;
  int vocab_size_ = 0;
  int eod_id_ = 0;
  std::string tokenizer_, tokenizer_hash_;
  std::int64_t num_windows_ = 0;
  std::int64_t num_tokens_ = 0;
};

}  // namespace wiola
