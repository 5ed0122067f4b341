#include "io/text_encoder.hpp"

#include <cstdio>
#include <filesystem>
#include <memory>
#include <thread>

#include "core/error.hpp"
#include "io/document_pipeline.hpp"
#include "io/progress.hpp"
#include "io/token_file.hpp"

namespace wiola {

namespace fs = std::filesystem;

int default_thread_count() {
  const unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : static_cast<int>(n);
}

std::int64_t EncodeReport::total_skipped() const {
  std::int64_t n = 0;
  for (auto s : skipped) n += s;
  return n;
}

std::string shard_path(const std::string& out, int index) {
  const fs::path p(out);
  char num[16];
  std::snprintf(num, sizeof num, "-%05d", index);
  std::string name = p.stem().string();
  name += num;
  name += p.extension().string();
  return (p.parent_path() / name).string();
}

namespace {

struct EncodedDoc {
  DocStatus status = DocStatus::Ok;
  std::string problem;
  std::vector<std::int32_t> ids;
  std::int64_t source_bytes = 0;
  std::int64_t input_read = 0;
  bool continues = false;  // a part of a long document: more follows
};

// The shards written so far, renamed from ".part" only when all succeeded.
class ShardSet {
 public:
  ShardSet(std::string out, const Tokenizer& tok, std::int64_t shard_tokens)
      : out_(std::move(out)), tok_(tok), shard_tokens_(shard_tokens) {}
  ~ShardSet() {
    writer_.reset();
    if (committed_) return;
    std::error_code ec;
    for (const auto& p : parts_) fs::remove(p, ec);
  }

  // A part of a document; the document ends with end_document().
  void append(const std::vector<std::int32_t>& ids) {
    if (!writer_) open();
    writer_->append_tokens(ids);
  }
  void end_document() {
    if (!writer_) open();
    writer_->end_document();
    if (shard_tokens_ > 0 && writer_->n_tokens() >= shard_tokens_) close();
  }
  bool in_document() const { return writer_ && writer_->in_document(); }

  std::vector<std::string> commit() {
    if (writer_) close();
    std::vector<std::string> outs;
    if (shard_tokens_ == 0) {
      outs.push_back(out_);
    } else {
      for (std::size_t i = 0; i < parts_.size(); ++i) {
        const std::string final_name = shard_path(out_, static_cast<int>(i));
        std::error_code ec;
        fs::rename(parts_[i], final_name, ec);
        require(!ec, final_name, ": cannot rename ", parts_[i], " onto it: ", ec.message());
        outs.push_back(final_name);
      }
    }
    committed_ = true;
    return outs;
  }

 private:
  void open() {
    const std::string path =
        shard_tokens_ == 0 ? out_ : shard_path(out_, static_cast<int>(parts_.size())) + ".part";
    writer_ = std::make_unique<TokenFileWriter>(path, tok_);
  }
  void close() {
    writer_->finish();
    if (shard_tokens_ > 0)
      parts_.push_back(shard_path(out_, static_cast<int>(parts_.size())) + ".part");
    writer_.reset();
  }

  std::string out_;
  const Tokenizer& tok_;
  std::int64_t shard_tokens_;
  std::unique_ptr<TokenFileWriter> writer_;
  std::vector<std::string> parts_;
  bool committed_ = false;
};

}  // namespace

EncodeReport encode_text(DocumentReader& reader, const Tokenizer& tokenizer,
                         const std::string& out, const EncodeOptions& options) {
  require(options.shard_tokens >= 0, "--shard-tokens must be >= 0");
  const int threads = options.threads > 0 ? options.threads : default_thread_count();
  EncodeReport report;
  ShardSet shards(out, tokenizer, options.shard_tokens);
  Progress progress = Progress::on_stderr("encode", reader.total_bytes(), options.progress);

  const std::function<std::vector<EncodedDoc>(int, std::vector<RawDocument>&&)> work =
      [&](int, std::vector<RawDocument>&& batch) {
        std::vector<EncodedDoc> res(batch.size());
        for (std::size_t i = 0; i < batch.size(); ++i) {
          res[i].source_bytes = batch[i].source_bytes;
          res[i].input_read = batch[i].input_read;
          res[i].continues = batch[i].continues;
          Document d = parse_document(std::move(batch[i]), reader);
          res[i].status = d.status;
          res[i].problem = std::move(d.problem);
          if (d.status == DocStatus::Ok) res[i].ids = tokenizer.encode(d.text);
        }
        return res;
      };
  std::int64_t input_read = 0;
  // The parts of a long document are appended one by one; its last part (the
  // only part of most documents) ends it.
  const auto end_document = [&] {
    shards.end_document();
    ++report.documents;
    ++report.tokens;
  };
  const std::function<void(std::vector<EncodedDoc>&&)> consume =
      [&](std::vector<EncodedDoc>&& docs) {
        for (auto& d : docs) {
          report.bytes += d.source_bytes;
          input_read = d.input_read;
          if (d.status != DocStatus::Ok) {
            const auto k = static_cast<std::size_t>(d.status);
            if (d.status != DocStatus::Empty && !options.skip_invalid)
              fail(d.problem, " (--skip-invalid skips such documents and counts them)");
            if (report.skipped[k]++ == 0) report.first_problem[k] = d.problem;
            // A bad part of a long document: what came before it is kept as
            // one document, what follows it starts another.
            if (shards.in_document()) end_document();
            continue;
          }
          shards.append(d.ids);
          report.tokens += static_cast<std::int64_t>(d.ids.size());
          if (!d.continues) end_document();
        }
        progress.update(input_read, std::to_string(report.documents) + " docs, " +
                                        std::to_string(report.tokens) + " tokens");
      };
  run_document_pipeline<std::vector<EncodedDoc>>(reader, threads, options.batch_bytes, work,
                                                  consume);
  if (report.documents == 0) {
    std::string why = "no document to encode: the input is empty";
    if (report.total_skipped() > 0) {
      why = "no document to encode: all ";
      why += std::to_string(report.total_skipped());
      why += " were skipped (empty or invalid)";
    }
    if (reader.num_files() == 1) fail(reader.file(0), ": ", why);
    fail("the ", reader.num_files(), " input files (", reader.file(0), ", ...): ", why);
  }
  report.outputs = shards.commit();
  report.seconds = progress.seconds();
  progress.finish(reader.total_bytes(), std::to_string(report.documents) + " docs, " +
                                    std::to_string(report.tokens) + " tokens");
  return report;
}

}  // namespace wiola
