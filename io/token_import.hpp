#pragma once
// `wiola-data import`: a raw token file (raw_tokens.hpp) -> a token file.
// Every id is checked: 0 <= id < vocab_size, else an error naming the file
// and the position. Documents: with an end-of-document id, the stream is cut
// after each occurrence of it (a document is everything up to and including
// an eod; ids after the last eod form a final document whose eod is
// appended); without one, the whole file is one document and the vocabulary
// gains one id, vocab_size, used as its end-of-document id.
#include <cstdint>
#include <string>

#include "io/raw_tokens.hpp"
#include "io/tokenizer.hpp"

namespace wiola {

struct ImportReport {
  std::int64_t tokens_in = 0;    // ids read
  std::int64_t tokens_out = 0;   // ids written, end-of-document ids included
  std::int64_t documents = 0;
  bool appended_eod = false;     // the last document had no eod of its own
};

// `split_on_eod`: cut documents at tokenizer.eod_id(); otherwise one document
// (ids equal to eod_id are then an error, since the format reserves it).
ImportReport import_raw_tokens(const RawTokenFile& in, const Tokenizer& tokenizer,
                               bool split_on_eod, const std::string& out, bool progress);

}  // namespace wiola
