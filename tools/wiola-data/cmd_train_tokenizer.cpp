// wiola-data train-tokenizer: byte-level BPE trained on text or JSON lines.
#include <array>
#include <cmath>
#include <iomanip>
#include <iostream>

#include "commands.hpp"
#include "core/error.hpp"
#include "io/bpe_trainer.hpp"
#include "io/document_pipeline.hpp"
#include "io/progress.hpp"
#include "io/text_encoder.hpp"

namespace wiola::data {

namespace {

struct BatchResult {
  std::int64_t bytes = 0, documents = 0, input_read = 0;
  std::vector<std::pair<DocStatus, std::string>> problems;
};

// Bytes per token of the trained tokenizer on the counted pieces.
double bytes_per_token(const BpeTokenizer& tok, const PieceCounts& counts) {
  double bytes = 0, tokens = 0;
  std::vector<std::int32_t> ids;
  for (const auto& [piece, n] : counts.counts()) {
    ids.clear();
    tok.encode_piece(piece, ids);
    bytes += static_cast<double>(piece.size()) * static_cast<double>(n);
    tokens += static_cast<double>(ids.size()) * static_cast<double>(n);
  }
  return tokens > 0 ? bytes / tokens : 0;
}

}  // namespace

int train_tokenizer(const Args& args) {
  TextArgs text;
  std::string out;
  int vocab = 32000;
  std::int64_t min_frequency = 2;
  double sample_mb = 0;
  po::options_description opts("train-tokenizer options");
  opts.add_options()("help,h", "show this help")
      ("out", po::value(&out)->required(), "the tokenizer file to write")
      ("vocab", po::value(&vocab)->default_value(32000), "vocabulary size: 256 bytes + 4 special tokens + merges")
      ("min-frequency", po::value(&min_frequency)->default_value(2), "stop merging when the best pair is rarer")
      ("sample-mb", po::value(&sample_mb)->default_value(0), "train on about this many MB of text, an equal share from the start of every input file (0: all of it)");
  text.add_to(opts);
  po::positional_options_description pos;
  pos.add("input", -1);
  po::variables_map vm;
  if (!parse("train-tokenizer", opts, pos, args, vm)) return 0;
  require(sample_mb >= 0, "--sample-mb must be >= 0");
  TextInputOptions in = text.resolve();
  in.part_bytes = kDocumentPartBytes;  // the BPE pre-tokenizer counts the same pieces in parts
  in.bytes_per_file = static_cast<std::int64_t>(std::ceil(
      sample_mb * 1024 * 1024 / static_cast<double>(text.inputs.size())));
  DocumentReader reader(text.inputs, in);
  require(vocab >= BpeTokenizer::kFirstMerge, "--vocab ", vocab, " is below ",
          BpeTokenizer::kFirstMerge, " (256 bytes and 4 special tokens)");
  require(min_frequency >= 1, "--min-frequency must be at least 1");
  const int threads = text.threads > 0 ? text.threads : default_thread_count();

  std::vector<PieceCounts> counts(static_cast<std::size_t>(threads));
  std::int64_t bytes = 0, documents = 0;
  std::array<std::int64_t, kDocStatusCount> skipped{};
  Progress progress = Progress::on_stderr("count", reader.total_bytes(), !text.quiet);
  const std::function<BatchResult(int, std::vector<RawDocument>&&)> work =
      [&](int w, std::vector<RawDocument>&& batch) {
        BatchResult r;
        for (auto& raw : batch) {
          r.bytes += raw.source_bytes;
          r.input_read = raw.input_read;
          const bool first_part = !raw.continuation;
          Document d = parse_document(std::move(raw), reader);
          if (d.status == DocStatus::Ok) {
            counts[static_cast<std::size_t>(w)].add_document(d.text);
            if (first_part) ++r.documents;
          } else {
            r.problems.emplace_back(d.status, std::move(d.problem));
          }
        }
        return r;
      };
  const std::function<void(BatchResult&&)> consume = [&](BatchResult&& r) {
    for (auto& [status, problem] : r.problems) {
      if (status != DocStatus::Empty && !text.skip_invalid)
        fail(problem, " (--skip-invalid skips such documents and counts them)");
      ++skipped[static_cast<std::size_t>(status)];
    }
    bytes += r.bytes;
    documents += r.documents;
    progress.update(r.input_read, std::to_string(documents) + " docs");
  };
  run_document_pipeline<BatchResult>(reader, threads, std::size_t{1} << 20, work, consume);
  progress.finish(reader.total_bytes(), std::to_string(documents) + " docs");
  const double count_seconds = progress.seconds();
  require(documents > 0, "train-tokenizer: no text to train on (the input holds no non-empty document)");
  for (std::size_t w = 1; w < counts.size(); ++w) counts[0].merge_from(std::move(counts[w]));

  BpeTrainOptions o;
  o.vocab_size = vocab;
  o.min_frequency = min_frequency;
  Progress merging =
      Progress::on_stderr("merge", vocab - BpeTokenizer::kFirstMerge, !text.quiet, "merges");
  o.progress = [&](std::int64_t done, std::int64_t) { merging.update(done); };
  const BpeTokenizer tok = train_bpe(counts[0], o);
  const double merge_seconds = merging.seconds();
  merging.finish(static_cast<std::int64_t>(tok.merges().size()));
  tok.save(out);

  std::cout << "tokenizer: " << out << "\n"
            << "  vocab_size " << tok.vocab_size() << " (" << tok.merges().size() << " merges"
            << (tok.vocab_size() < vocab ? ", fewer than asked: no pair reached --min-frequency" : "")
            << "), hash " << tok.hash() << "\n"
            << "  trained on " << documents << " documents, " << Progress::bytes_text(double(bytes))
            << ", " << counts[0].counts().size() << " distinct pieces, "
            << std::fixed << std::setprecision(1) << count_seconds << " s counting, " << merge_seconds
            << " s merging\n"
            << "  " << std::setprecision(2) << bytes_per_token(tok, counts[0])
            << " bytes per token on the training text\n";
  for (int s = 0; s < kDocStatusCount; ++s)
    if (skipped[static_cast<std::size_t>(s)] > 0)
      std::cout << "  skipped " << skipped[static_cast<std::size_t>(s)] << " documents: "
                << doc_status_name(static_cast<DocStatus>(s)) << "\n";
  return 0;
}

}  // namespace wiola::data
