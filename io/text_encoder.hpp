#pragma once
// `wiola-data encode`: text documents -> token files, on several threads,
// with a progress line on stderr. The output is the same for any thread
// count (documents keep their input order). Each output file is written
// under a temporary name; with shards, every shard stays "<name>.part" until
// the whole input is encoded, so a failed run leaves no file that looks
// complete.
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "io/text_documents.hpp"
#include "io/tokenizer.hpp"

namespace wiola {

struct EncodeOptions {
  int threads = 0;                // 0: every hardware thread
  bool skip_invalid = false;      // count and skip bad documents instead of stopping
  std::int64_t shard_tokens = 0;  // > 0: a new output file after this many tokens
  std::size_t batch_bytes = 1 << 20;
  bool progress = true;
};

struct EncodeReport {
  std::int64_t documents = 0, tokens = 0, bytes = 0;
  std::array<std::int64_t, kDocStatusCount> skipped{};   // by DocStatus
  std::array<std::string, kDocStatusCount> first_problem;
  std::vector<std::string> outputs;
  double seconds = 0;
  std::int64_t total_skipped() const;
};

// Output i of a sharded encode: "corpus.h5" -> "corpus-00003.h5".
std::string shard_path(const std::string& out, int index);

// Empty documents are always skipped (and counted). Any other bad document
// stops the run with an error naming file and line, unless skip_invalid.
// No document at all is an error.
EncodeReport encode_text(DocumentReader& reader, const Tokenizer& tokenizer,
                         const std::string& out, const EncodeOptions& options);

int default_thread_count();

}  // namespace wiola
