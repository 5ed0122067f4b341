#include "io/bpe_trainer.hpp"

#include <algorithm>
#include <queue>
#include <vector>

#include "core/error.hpp"
#include "io/nfc.hpp"
#include "io/pretokenizer.hpp"

namespace wiola {

void PieceCounts::add_piece(std::string_view piece, std::int64_t count) {
  const auto it = counts_.find(piece);
  if (it != counts_.end()) it->second += count;
  else counts_.emplace(std::string(piece), count);
  total_ += count;
}

void PieceCounts::add_document(std::string_view text) {
  const std::string normal = to_nfc(text);
  thread_local std::vector<std::string_view> pieces;
  pieces.clear();
  pretokenize(normal, pieces);
  for (auto p : pieces) add_piece(p);
}

void PieceCounts::merge_from(PieceCounts&& other) {
  if (counts_.empty()) {
    counts_ = std::move(other.counts_);
    total_ = other.total_;
  } else {
    for (auto& [piece, n] : other.counts_) add_piece(piece, n);
  }
  other.counts_.clear();
  other.total_ = 0;
}

namespace {

using PairKey = std::uint64_t;

PairKey key_of(std::int32_t a, std::int32_t b) {
  return (static_cast<std::uint64_t>(static_cast<std::uint32_t>(a)) << 32) |
         static_cast<std::uint32_t>(b);
}

struct Candidate {
  std::int64_t count;
  PairKey key;
};

// Max-heap order: higher count first, then the smaller pair.
struct Lower {
  bool operator()(const Candidate& a, const Candidate& b) const {
    return a.count != b.count ? a.count < b.count : a.key > b.key;
  }
};

struct Word {
  std::vector<std::int32_t> syms;
  std::int64_t count;
};

}  // namespace

BpeTokenizer train_bpe(const PieceCounts& pieces, const BpeTrainOptions& options) {
  require(options.vocab_size >= BpeTokenizer::kFirstMerge, "BPE training: the vocabulary size ",
          options.vocab_size, " is below ", BpeTokenizer::kFirstMerge,
          " (256 bytes and 4 special tokens)");
  require(options.min_frequency >= 1, "BPE training: min_frequency must be at least 1");
  const std::int64_t wanted = options.vocab_size - BpeTokenizer::kFirstMerge;

  std::vector<Word> words;
  words.reserve(pieces.counts().size());
  std::unordered_map<PairKey, std::int64_t> counts;
  std::unordered_map<PairKey, std::vector<std::int32_t>> where;  // may hold stale entries
  for (const auto& [piece, n] : pieces.counts()) {
    if (piece.size() < 2) continue;  // nothing to merge
    Word w{std::vector<std::int32_t>(piece.size()), n};
    for (std::size_t i = 0; i < piece.size(); ++i) w.syms[i] = static_cast<unsigned char>(piece[i]);
    const auto index = static_cast<std::int32_t>(words.size());
    for (std::size_t i = 0; i + 1 < w.syms.size(); ++i) {
      const PairKey k = key_of(w.syms[i], w.syms[i + 1]);
      counts[k] += n;
      auto& list = where[k];
      if (list.empty() || list.back() != index) list.push_back(index);
    }
    words.push_back(std::move(w));
  }
  std::priority_queue<Candidate, std::vector<Candidate>, Lower> heap;
  for (const auto& [k, n] : counts) heap.push({n, k});

  std::vector<BpeMerge> merges;
  merges.reserve(static_cast<std::size_t>(wanted));
  std::vector<std::int64_t> stamp(words.size(), -1);  // last merge that visited a word
  std::unordered_map<PairKey, std::int64_t> delta;
  std::vector<std::int32_t> merged;
  while (static_cast<std::int64_t>(merges.size()) < wanted) {
    // Pop until the top is current: a stale entry whose pair has fallen is
    // pushed again with its present count; one that rose is already there.
    Candidate best{0, 0};
    bool found = false;
    while (!heap.empty()) {
      const Candidate top = heap.top();
      heap.pop();
      const auto it = counts.find(top.key);
      const std::int64_t current = it == counts.end() ? 0 : it->second;
      if (current == top.count) {
        best = top;
        found = true;
        break;
      }
      if (current > 0 && current < top.count) heap.push({current, top.key});
    }
    if (!found || best.count < options.min_frequency) break;

    const auto left = static_cast<std::int32_t>(best.key >> 32);
    const auto right = static_cast<std::int32_t>(best.key & 0xFFFFFFFFu);
    const std::int64_t merge_no = static_cast<std::int64_t>(merges.size());
    const std::int32_t id = BpeTokenizer::kFirstMerge + static_cast<std::int32_t>(merge_no);
    merges.push_back({left, right});
    std::vector<std::int32_t> holders = std::move(where[best.key]);
    where.erase(best.key);
    counts.erase(best.key);

    delta.clear();
    for (const std::int32_t wi : holders) {
      if (stamp[static_cast<std::size_t>(wi)] == merge_no) continue;
      stamp[static_cast<std::size_t>(wi)] = merge_no;
      Word& w = words[static_cast<std::size_t>(wi)];
      auto& s = w.syms;
      merged.clear();
      bool changed = false;
      for (std::size_t i = 0; i < s.size(); ++i) {
        if (i + 1 < s.size() && s[i] == left && s[i + 1] == right) {
          merged.push_back(id);
          ++i;
          changed = true;
        } else {
          merged.push_back(s[i]);
        }
      }
      if (!changed) continue;  // a stale index entry
      for (std::size_t i = 0; i + 1 < s.size(); ++i) delta[key_of(s[i], s[i + 1])] -= w.count;
      for (std::size_t i = 0; i + 1 < merged.size(); ++i) {
        const PairKey k = key_of(merged[i], merged[i + 1]);
        delta[k] += w.count;
        if (merged[i] == id || merged[i + 1] == id) {
          auto& list = where[k];
          if (list.empty() || list.back() != wi) list.push_back(wi);
        }
      }
      s.swap(merged);
    }
    for (const auto& [k, d] : delta) {
      if (k == best.key || d == 0) continue;
      std::int64_t& c = counts[k];
      c += d;
      if (d > 0) heap.push({c, k});
      if (c <= 0) counts.erase(k);
    }
    if (options.progress && (merges.size() % 256 == 0)) options.progress(static_cast<std::int64_t>(merges.size()), wanted);
  }
  if (options.progress) options.progress(static_cast<std::int64_t>(merges.size()), wanted);
  return BpeTokenizer(std::move(merges));
}

}  // namespace wiola
