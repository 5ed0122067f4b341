#pragma once
// Training windows over one or more token files. A window is seq_len + 1
// tokens (inputs are the first seq_len, targets the last seq_len). A file's
// *view* is the token sequence its windows read: the whole file, or with a
// held-out split (heldout_split.hpp) the concatenation of its training or of
// its held-out documents. A view of n tokens holds (n - 1) / seq_len windows;
// window k starts at view token k * seq_len, so consecutive windows share one
// token. Windows never cross files; global window indices follow the files in
// order, component by component (data_sources.hpp). Reads are hyperslabs of
// `tokens`: a file is never loaded whole.
#include <cstdint>
#include <string>
#include <vector>

#include "io/data_sources.hpp"
#include "io/h5.hpp"
#include "io/heldout_split.hpp"

namespace wiola {

enum class DataSplit : std::uint8_t {
  All,      // every document
  Train,    // the documents not held out
  HeldOut,  // the held-out documents (validation)
};

struct DatasetSpec {
  DataSources sources;
  DataSplit split = DataSplit::All;
  HeldOut heldout;  // used unless split == All
  // Checked against every file when set (a file that disagrees is an error
  // naming it): the exact vocabulary size and tokenizer hash.
  int require_vocab_size = 0;
  std::string require_tokenizer_hash;

  // Entries (paths, globs, manifests; data_sources.hpp), every document.
  static DatasetSpec from_files(const std::vector<std::string>& entries);
};

class TokenDataset {
 public:
  // Opens and checks every file (format, attributes, agreement between files
  // and with the spec, at least one window in each file's view, or for the
  // held-out side at least one window in each component); errors name the file.
  TokenDataset(const DatasetSpec& spec, int seq_len);
  TokenDataset(std::vector<std::string> files, int seq_len);

  std::int64_t num_windows() const { return num_windows_; }
  std::int64_t num_tokens() const { return num_tokens_; }  // tokens in the views
  int seq_len() const { return seq_len_; }
  int vocab_size() const { return vocab_size_; }
  int eod_id() const { return eod_id_; }
  const std::string& tokenizer() const { return tokenizer_; }
  const std::string& tokenizer_hash() const { return tokenizer_hash_; }
  DataSplit split() const { return split_; }
  std::size_t num_files() const { return files_.size(); }
  const std::string& file_path(std::size_t i) const { return files_.at(i).path; }

  bool weighted() const { return weighted_; }
  std::size_t num_components() const { return components_.size(); }
  double component_weight(std::size_t c) const { return components_.at(c).weight; }
  std::int64_t component_first_window(std::size_t c) const { return components_.at(c).first_window; }
  std::int64_t component_windows(std::size_t c) const { return components_.at(c).windows; }

  // Writes the seq_len + 1 tokens of window w to out[0..seq_len]. Throws, naming
  // the file and the position, when a token id is >= vocab_size.
  void read_window(std::int64_t w, std::int32_t* out) const;

  // Where window w lies: its file and the runs of file positions it reads.
  struct Location {
    std::size_t file = 0;
    std::vector<TokenRun> runs;
  };
  Location locate(std::int64_t w) const;

 private:
  struct Source {
    std::string path;
    h5::File file;
    h5::Dataset tokens;  // declared after `file`: closed first
    std::int64_t n_tokens = 0;
    std::int64_t view_tokens = 0;
    std::vector<TokenRun> runs;            // empty: the view is the whole file
    std::vector<std::int64_t> run_starts;  // view position of each run
    std::int64_t first_window = 0;
    std::int64_t windows = 0;
  };
  struct Component {
    double weight = 1;
    std::int64_t first_window = 0, windows = 0;
  };
  void open_file(const std::string& path, const DatasetSpec& spec);
  const Source& source_of(std::int64_t w) const;

  std::vector<Source> files_;
  std::vector<Component> components_;
  int seq_len_ = 0;
  int vocab_size_ = 0;
  int eod_id_ = 0;
  std::string tokenizer_, tokenizer_hash_;
  std::string first_path_;
  DataSplit split_ = DataSplit::All;
  bool weighted_ = false;
  std::int64_t num_windows_ = 0;
  std::int64_t num_tokens_ = 0;
};

}  // namespace wiola
