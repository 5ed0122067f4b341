#pragma once
// Training a byte-level BPE (bpe_tokenizer.hpp). Text is NFC-normalised and
// cut into pieces (pretokenizer.hpp); pieces are counted, and each step merges
// the most frequent adjacent pair of tokens over all pieces (ties: the pair
// with the smaller (left, right) ids). Pair counts are kept up to date
// incrementally, with an index from each pair to the pieces that hold it and
// a max-heap with lazy deletion, so a merge costs time in proportion to the
// pieces it touches, not to the corpus.
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "io/bpe_tokenizer.hpp"

namespace wiola {

class PieceCounts {
 public:
  // Counts the pieces of one document; `text` must be valid UTF-8 (it is
  // NFC-normalised here).
  void add_document(std::string_view text);
  void add_piece(std::string_view piece, std::int64_t count = 1);
  void merge_from(PieceCounts&& other);

  struct Hash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  using Map = std::unordered_map<std::string, std::int64_t, Hash, std::equal_to<>>;
  const Map& counts() const { return counts_; }
  std::int64_t total() const { return total_; }

 private:
  Map counts_;
  std::int64_t total_ = 0;
};

struct BpeTrainOptions {
  int vocab_size = 32000;         // 260 + number of merges
  std::int64_t min_frequency = 2;  // stop when the best pair is rarer
  // Called now and then with (merges done, merges wanted).
  std::function<void(std::int64_t, std::int64_t)> progress;
};

// Stops early (fewer merges, a smaller vocabulary) when no pair reaches
// min_frequency.
BpeTokenizer train_bpe(const PieceCounts& pieces, const BpeTrainOptions& options);

}  // namespace wiola
