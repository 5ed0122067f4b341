#include "io/token_import.hpp"

#include <vector>

#include "core/error.hpp"
#include "io/progress.hpp"
#include "io/token_file.hpp"

namespace wiola {

ImportReport import_raw_tokens(const RawTokenFile& in, const Tokenizer& tokenizer,
                               bool split_on_eod, const std::string& out, bool progress) {
  require(in.count > 0, in.path, ": holds no tokens");
  const std::int64_t vocab = tokenizer.vocab_size();
  const std::int32_t eod = tokenizer.eod_id();
  ImportReport report;
  TokenFileWriter writer(out, tokenizer);
  RawTokenReader reader(in);
  Progress bar = Progress::on_stderr("import", in.count * in.elem_size, progress);
  constexpr std::int64_t kChunk = 1 << 20;
  std::vector<std::int64_t> raw(static_cast<std::size_t>(kChunk));
  std::vector<std::int32_t> part;
  part.reserve(static_cast<std::size_t>(kChunk));
  bool last_was_eod = false;
  while (true) {
    const std::int64_t first = reader.position();
    const std::int64_t n = reader.read(kChunk, raw.data());
    if (n == 0) break;
    part.clear();
    for (std::int64_t i = 0; i < n; ++i) {
      const std::int64_t id = raw[static_cast<std::size_t>(i)];
      require(id >= 0 && id < vocab, in.path, ": token id ", id, " at position ", first + i,
              " is outside [0, vocab_size ", vocab, ")");
      if (id == eod) {
        require(split_on_eod, in.path, ": token id ", id, " at position ", first + i,
                " equals the end-of-document id the import adds");
        writer.append_tokens(part);
        writer.end_document();
        part.clear();
        last_was_eod = true;
        continue;
      }
      part.push_back(static_cast<std::int32_t>(id));
      last_was_eod = false;
    }
    writer.append_tokens(part);
    report.tokens_in += n;
    bar.update(report.tokens_in * in.elem_size);
  }
  if (!last_was_eod) {
    writer.end_document();
    report.appended_eod = true;
  }
  report.tokens_out = writer.n_tokens();
  report.documents = writer.n_documents();
  writer.finish();
  bar.finish(report.tokens_in * in.elem_size,
             std::to_string(report.documents) + " documents, " + std::to_string(report.tokens_out) + " tokens");
  return report;
}

}  // namespace wiola
