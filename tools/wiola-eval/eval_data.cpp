#include "eval_data.hpp"

#include <algorithm>

#include "core/error.hpp"
#include "io/bpe_tokenizer.hpp"
#include "io/text_documents.hpp"
#include "io/token_dataset.hpp"

namespace wiola {

HostBatch EvalWindows::microbatch(std::int64_t g, int micro_batch, std::int64_t windows) const {
  HostBatch b;
  b.batch = micro_batch;
  b.seq = seq_;
  const std::size_t T = std::size_t(seq_);
  b.inputs.resize(std::size_t(micro_batch) * T);
  b.targets.resize(b.inputs.size());
  std::vector<std::int32_t> window(T + 1);
  for (int i = 0; i < micro_batch; ++i) {
    const std::int64_t w = g * micro_batch + i;
    read(std::min(w, windows - 1), window.data());
    const auto in = b.inputs.begin() + std::ptrdiff_t(i) * std::ptrdiff_t(T);
    const auto tg = b.targets.begin() + std::ptrdiff_t(i) * std::ptrdiff_t(T);
    std::copy(window.begin(), window.end() - 1, in);
    if (w < windows)
      std::copy(window.begin() + 1, window.end(), tg);
    else
      std::fill(tg, tg + std::ptrdiff_t(T), -1);
  }
  return b;
}

namespace {

class TokenFileWindows final : public EvalWindows {
 public:
  TokenFileWindows(const std::vector<std::string>& files, int seq)
      : EvalWindows(seq), data_(DatasetSpec::from_files(files), seq) {}
  std::int64_t count() const override { return data_.num_windows(); }
  int vocab_size() const override { return data_.vocab_size(); }
  void read(std::int64_t w, std::int32_t* out) const override { data_.read_window(w, out); }
  const TokenDataset& data() const { return data_; }

 private:
  TokenDataset data_;
};

class TextWindows final : public EvalWindows {
 public:
  TextWindows(std::vector<std::int32_t> tokens, int seq, int vocab)
      : EvalWindows(seq), tokens_(std::move(tokens)), vocab_(vocab) {}
  std::int64_t count() const override {
    return (std::int64_t(tokens_.size()) - 1) / seq_;
  }
  int vocab_size() const override { return vocab_; }
  void read(std::int64_t w, std::int32_t* out) const override {
    const auto first = tokens_.begin() + std::ptrdiff_t(w) * seq_;
    std::copy(first, first + seq_ + 1, out);
  }

 private:
  std::vector<std::int32_t> tokens_;
  int vocab_;
};

}  // namespace

std::unique_ptr<EvalWindows> token_file_windows(const std::vector<std::string>& files, int seq,
                                                std::string* tokenizer_hash) {
  auto w = std::make_unique<TokenFileWindows>(files, seq);
  if (tokenizer_hash) *tokenizer_hash = w->data().tokenizer_hash();
  return w;
}

std::unique_ptr<EvalWindows> text_windows(const std::vector<std::string>& files, int seq,
                                          const Tokenizer& tokenizer) {
  require(!files.empty(), "--text: no files");
  TextInputOptions options;
  options.format = guess_text_format(files.front());
  for (const std::string& f : files)
    require(guess_text_format(f) == options.format, "--text: ", f,
            " is not of the same kind (text or JSON lines) as ", files.front());
  DocumentReader reader(files, options);
  std::vector<std::int32_t> tokens;
  RawDocument raw;
  while (reader.next(raw)) {
    Document doc = parse_document(std::move(raw), reader);
    if (doc.status == DocStatus::Empty) continue;
    require(doc.status == DocStatus::Ok, doc.problem);
    const std::vector<std::int32_t> ids = tokenizer.encode(doc.text);
    tokens.insert(tokens.end(), ids.begin(), ids.end());
    tokens.push_back(tokenizer.eod_id());
  }
  require(std::int64_t(tokens.size()) > seq, "--text: the files encode to ", tokens.size(),
          " tokens, fewer than one window of ", seq + 1, " (the model context T = ", seq,
          ", plus one)");
  return std::make_unique<TextWindows>(std::move(tokens), seq, tokenizer.vocab_size());
}

std::vector<std::int64_t> text_bytes_per_id(const Tokenizer& tokenizer) {
  std::vector<std::int64_t> bytes(std::size_t(tokenizer.vocab_size()), 0);
  const bool bpe = tokenizer.name() == BpeTokenizer::kName;
  try {
    for (std::int32_t id = 0; id < tokenizer.vocab_size(); ++id) {
      const bool special =
          id == tokenizer.eod_id() ||
          (bpe && id >= BpeTokenizer::kEod && id < BpeTokenizer::kFirstMerge);
      const std::int32_t one[1] = {id};
      if (!special) bytes[std::size_t(id)] = std::int64_t(tokenizer.decode(one).size());
    }
  } catch (const Error&) {
    return {};  // an imported vocabulary: wiola cannot decode it
  }
  return bytes;
}

}  // namespace wiola
