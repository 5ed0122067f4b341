#include "io/bpe_tokenizer.hpp"

#include <atomic>
#include <charconv>
#include <climits>
#include <filesystem>
#include <fstream>
#include <optional>

#include "core/error.hpp"
#include "io/escape.hpp"
#include "io/nfc.hpp"
#include "io/pretokenizer.hpp"
#include "io/utf8.hpp"

namespace wiola {

namespace {

constexpr const char* kMagic = "wiola-bpe";
constexpr int kFileVersion = 1;
constexpr std::size_t kCacheLimit = 1 << 18;  // pieces cached per thread

std::uint64_t pair_key(std::int32_t a, std::int32_t b) {
  return (static_cast<std::uint64_t>(static_cast<std::uint32_t>(a)) << 32) |
         static_cast<std::uint32_t>(b);
}

// FNV-1a over the tokenizer's definition (not over the file text, so comments
// and spacing do not change it).
class Fnv {
 public:
  void add(std::string_view s) {
    for (char c : s) {
      h_ ^= static_cast<unsigned char>(c);
      h_ *= 0x100000001B3ull;
    }
  }
  void add(std::int64_t v) {
    add(std::to_string(v));
    add(";");
  }
  std::uint64_t value() const { return h_; }

 private:
  std::uint64_t h_ = 0xCBF29CE484222325ull;
};

std::string definition_hash(const std::vector<BpeMerge>& merges) {
  Fnv f;
  f.add(kMagic);
  f.add(kFileVersion);
  f.add("nfc;");
  f.add(kPretokenizerName);
  for (auto s : BpeTokenizer::kSpecials) {
    f.add(s);
    f.add(";");
  }
  f.add(static_cast<std::int64_t>(merges.size()));
  for (const auto& m : merges) {
    f.add(m.left);
    f.add(m.right);
  }
  return hex64(f.value());
}

// Transparent hashing so a piece is looked up without building a std::string.
struct PieceHash {
  using is_transparent = void;
  std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

struct PieceCache {
  std::uint64_t owner = 0;
  std::unordered_map<std::string, std::vector<std::int32_t>, PieceHash, std::equal_to<>> map;
};

std::uint64_t next_instance() {
  static std::atomic<std::uint64_t> counter{0};
  return ++counter;
}

}  // namespace

BpeTokenizer::BpeTokenizer(std::vector<BpeMerge> merges)
    : merges_(std::move(merges)), instance_(next_instance()) {
  tokens_.reserve(static_cast<std::size_t>(kFirstMerge) + merges_.size());
  for (int b = 0; b < 256; ++b) tokens_.emplace_back(1, static_cast<char>(b));
  for (auto s : kSpecials) tokens_.emplace_back(s);
  rank_.reserve(merges_.size() * 2);
  for (std::size_t i = 0; i < merges_.size(); ++i) {
    const BpeMerge m = merges_[i];
    const std::int32_t next = kFirstMerge + static_cast<std::int32_t>(i);
    const auto usable = [next](std::int32_t id) {
      return id >= 0 && id < next && (id < kEod || id >= kFirstMerge);
    };
    require(usable(m.left) && usable(m.right), "BPE merge ", i, " (", m.left, ", ", m.right,
            ") must join two earlier, non-special tokens (ids below ", next,
            ", not 256..259)");
    require(rank_.emplace(pair_key(m.left, m.right), static_cast<std::int32_t>(i)).second,
            "BPE merge ", i, " (", m.left, ", ", m.right, ") repeats an earlier merge");
    tokens_.push_back(tokens_[static_cast<std::size_t>(m.left)] +
                      tokens_[static_cast<std::size_t>(m.right)]);
  }
  hash_ = definition_hash(merges_);
}

std::int32_t BpeTokenizer::special_id(std::string_view text) {
  for (std::size_t i = 0; i < kSpecials.size(); ++i)
    if (kSpecials[i] == text) return kEod + static_cast<std::int32_t>(i);
  return -1;
}

std::int32_t BpeTokenizer::rank(std::int32_t a, std::int32_t b) const {
  const auto it = rank_.find(pair_key(a, b));
  return it == rank_.end() ? INT32_MAX : it->second;
}

void BpeTokenizer::encode_piece(std::string_view piece, std::vector<std::int32_t>& out) const {
  std::vector<std::int32_t> syms(piece.size());
  for (std::size_t i = 0; i < piece.size(); ++i) syms[i] = static_cast<unsigned char>(piece[i]);
  // Lowest-index merge first, every occurrence left to right: the order in
  // which training applied them, so encoding reproduces the training pieces.
  while (syms.size() > 1) {
    std::int32_t best = INT32_MAX;
    for (std::size_t i = 0; i + 1 < syms.size(); ++i) best = std::min(best, rank(syms[i], syms[i + 1]));
    if (best == INT32_MAX) break;
    const BpeMerge m = merges_[static_cast<std::size_t>(best)];
    const std::int32_t id = kFirstMerge + best;
    std::size_t w = 0;
    for (std::size_t r = 0; r < syms.size(); ++r) {
      if (r + 1 < syms.size() && syms[r] == m.left && syms[r + 1] == m.right) {
        syms[w++] = id;
        ++r;
      } else {
        syms[w++] = syms[r];
      }
    }
    syms.resize(w);
  }
  out.insert(out.end(), syms.begin(), syms.end());
}

std::vector<std::int32_t> BpeTokenizer::encode(std::string_view text) const {
  const std::size_t bad = find_invalid_utf8(text);
  require(bad == std::string_view::npos, "BPE tokenizer: the text is not valid UTF-8 (byte ", bad,
          ", line ", line_of_offset(text, bad), ")");
  const std::string normal = to_nfc(text);
  thread_local std::vector<std::string_view> pieces;
  thread_local PieceCache cache;
  if (cache.owner != instance_ || cache.map.size() > kCacheLimit) {
    cache.map.clear();
    cache.owner = instance_;
  }
  pieces.clear();
  pretokenize(normal, pieces);
  std::vector<std::int32_t> ids;
  ids.reserve(normal.size() / 3 + 4);
  for (const std::string_view p : pieces) {
    const auto it = cache.map.find(p);
    if (it != cache.map.end()) {
      ids.insert(ids.end(), it->second.begin(), it->second.end());
      continue;
    }
    const std::size_t before = ids.size();
    encode_piece(p, ids);
    cache.map.emplace(std::string(p), std::vector<std::int32_t>(ids.begin() + static_cast<std::ptrdiff_t>(before), ids.end()));
  }
  return ids;
}

std::string BpeTokenizer::decode(std::span<const std::int32_t> ids) const {
  std::string text;
  text.reserve(ids.size() * 4);
  for (std::size_t i = 0; i < ids.size(); ++i) {
    const std::int32_t id = ids[i];
    require(id >= 0 && id < vocab_size(), "BPE tokenizer: id ", id, " at position ", i,
            " is outside [0, ", vocab_size(), ")");
    text += tokens_[static_cast<std::size_t>(id)];
  }
  return text;
}

std::string BpeTokenizer::serialize() const {
  std::string s;
  // GCC 12 warns falsely (-Wrestrict) on `literal + std::to_string(...)`; build with +=.
  const auto line = [&s](std::string_view key, std::string_view value) {
    s += key;
    s += ' ';
    s += value;
    s += '\n';
  };
  s += "# wiola byte-level BPE tokenizer (docs/data-format.md). Merge i makes id 260 + i.\n";
  line(kMagic, std::to_string(kFileVersion));
  line("normalization", "nfc");
  line("pretokenizer", kPretokenizerName);
  line("vocab_size", std::to_string(vocab_size()));
  for (std::size_t i = 0; i < kSpecials.size(); ++i) {
    std::string v = std::to_string(kEod + static_cast<std::int32_t>(i));
    v += ' ';
    v += kSpecials[i];
    line("special", v);
  }
  line("merges", std::to_string(merges_.size()));
  for (std::size_t i = 0; i < merges_.size(); ++i) {
    s += std::to_string(merges_[i].left);
    s += ' ';
    s += std::to_string(merges_[i].right);
    s += "  # ";
    s += escape_text(tokens_[static_cast<std::size_t>(kFirstMerge) + i], true);
    s += '\n';
  }
  line("hash", hash_);
  return s;
}

void BpeTokenizer::save(const std::string& path) const {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    require(out.good(), tmp, ": cannot create the tokenizer file");
    out << serialize();
    out.flush();
    require(out.good(), tmp, ": writing the tokenizer file failed (disk full?)");
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  require(!ec, path, ": cannot rename ", tmp, " onto it: ", ec.message());
}

namespace {

// Line-by-line reader of the tokenizer file: comments ('#' at the start or
// after blank space) and blank lines are skipped.
class LineReader {
 public:
  LineReader(std::string_view text, std::string where) : text_(text), where_(std::move(where)) {}

  // The next non-blank line without its comment; false at the end.
  bool next(std::string_view& line) {
    while (pos_ < text_.size()) {
      std::size_t end = text_.find('\n', pos_);
      if (end == std::string_view::npos) end = text_.size();
      std::string_view l = text_.substr(pos_, end - pos_);
      pos_ = end + 1;
      ++line_no_;
      for (std::size_t i = 0; i < l.size(); ++i)
        if (l[i] == '#' && (i == 0 || l[i - 1] == ' ' || l[i - 1] == '\t')) {
          l = l.substr(0, i);
          break;
        }
      while (!l.empty() && (l.back() == ' ' || l.back() == '\t' || l.back() == '\r')) l.remove_suffix(1);
      while (!l.empty() && (l.front() == ' ' || l.front() == '\t')) l.remove_prefix(1);
      if (!l.empty()) {
        line = l;
        return true;
      }
    }
    return false;
  }

  // Reads "key value" and returns value; errors name the line.
  std::string_view expect(std::string_view key) {
    std::string_view line;
    require(next(line), where_, ": ends before '", key, "'");
    require(line.substr(0, key.size()) == key && line.size() > key.size() &&
                (line[key.size()] == ' ' || line[key.size()] == '\t'),
            where_, ":", line_no_, ": expected '", key, " ...', found '", escape_text(line), "'");
    std::string_view v = line.substr(key.size());
    while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
    return v;
  }

  std::int64_t number(std::string_view s, const char* what) const {
    std::int64_t v = 0;
    const auto r = std::from_chars(s.data(), s.data() + s.size(), v);
    require(r.ec == std::errc() && r.ptr == s.data() + s.size(), where_, ":", line_no_, ": ", what,
            " '", escape_text(s), "' is not an integer");
    return v;
  }

  // Quoted file text in `msg` is shown escaped (a binary file is not echoed raw).
  [[noreturn]] void error(const std::string& msg) const {
    fail(where_, ":", line_no_, ": ", escape_text(msg));
  }
  std::int64_t line_no() const { return line_no_; }

 private:
  std::string_view text_;
  std::string where_;
  std::size_t pos_ = 0;
  std::int64_t line_no_ = 0;
};

}  // namespace

BpeTokenizer BpeTokenizer::parse(std::string_view text, const std::string& where) {
  LineReader r(text, where);
  std::string_view line;
  require(r.next(line), where, ": empty file, not a wiola BPE tokenizer");
  std::string magic = kMagic;
  magic += ' ';
  magic += std::to_string(kFileVersion);
  require(line == magic, where,
          ": not a wiola BPE tokenizer file of version ", kFileVersion, " (first line '",
          escape_text(line.substr(0, 32)), line.size() > 32 ? "..." : "",
          "', expected '", kMagic, " ", kFileVersion, "')");
  const std::string_view norm = r.expect("normalization");
  if (norm != "nfc") r.error("normalization '" + std::string(norm) + "' is not supported (nfc)");
  const std::string_view pre = r.expect("pretokenizer");
  if (pre != kPretokenizerName)
    r.error("pretokenizer '" + std::string(pre) + "' is not supported (" + kPretokenizerName + ")");
  const std::int64_t vocab = r.number(r.expect("vocab_size"), "vocab_size");
  for (std::size_t i = 0; i < kSpecials.size(); ++i) {
    const std::string_view v = r.expect("special");
    std::string want = std::to_string(kEod + static_cast<std::int32_t>(i));
    want += ' ';
    want += kSpecials[i];
    if (v != want) r.error("special token '" + std::string(v) + "', expected '" + want + "'");
  }
  const std::int64_t n = r.number(r.expect("merges"), "merges");
  if (n < 0 || n > 16'000'000) r.error("merge count " + std::to_string(n) + " is out of range");
  if (vocab != kFirstMerge + n)
    r.error("vocab_size " + std::to_string(vocab) + " is not 260 + merges = " +
            std::to_string(kFirstMerge + n));
  std::vector<BpeMerge> merges;
  merges.reserve(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) {
    if (!r.next(line)) fail(where, ": ends after ", i, " of ", n, " merges (truncated?)");
    const std::size_t sp = line.find_first_of(" \t");
    if (sp == std::string_view::npos) r.error("merge '" + std::string(line) + "' is not 'LEFT RIGHT'");
    std::string_view b = line.substr(sp);
    while (!b.empty() && (b.front() == ' ' || b.front() == '\t')) b.remove_prefix(1);
    const std::int64_t left = r.number(line.substr(0, sp), "merge id");
    const std::int64_t right = r.number(b, "merge id");
    if (left < 0 || right < 0 || left > INT32_MAX || right > INT32_MAX)
      r.error("merge ids out of range");
    merges.push_back({static_cast<std::int32_t>(left), static_cast<std::int32_t>(right)});
  }
  const std::int64_t hash_line = r.line_no() + 1;
  const std::string stored(r.expect("hash"));
  std::optional<BpeTokenizer> tok;
  try {
    tok.emplace(std::move(merges));
  } catch (const Error& e) {
    fail(where, ": ", e.what());
  }
  require(tok->hash() == stored, where, ": the hash ", stored, " (near line ", hash_line,
          ") does not match the merges' hash ", tok->hash(), " (file edited or damaged)");
  if (r.next(line)) r.error("unexpected text after the hash: '" + std::string(line) + "'");
  return std::move(*tok);
}

}  // namespace wiola
