// Text inputs of `wiola-data encode` / `train-tokenizer`: JSON lines and text
// split into documents (DocumentReader, parse_document). The first input byte
// picks the format and split; the rest is the file.
#include "fuzz/fuzz_target.hpp"
#include "io/text_documents.hpp"
#include "io/utf8.hpp"

WIOLA_FUZZ_TARGET(text_documents) {
  if (bytes.empty()) return;
  wiola::TextInputOptions opt;
  switch (static_cast<unsigned char>(bytes[0]) % 5) {
    case 0: opt.format = wiola::TextFormat::JsonLines; break;
    case 1: opt.split = wiola::TextSplit::File; break;
    case 2: opt.split = wiola::TextSplit::Line; break;
    case 3: opt.split = wiola::TextSplit::Paragraph; break;
    default: opt.split = wiola::TextSplit::Separator; opt.separator.push_back('%'); break;
  }
  const std::string path = wiola::fuzz::scratch_file(
      opt.format == wiola::TextFormat::JsonLines ? "docs.jsonl" : "docs.txt", bytes.substr(1));
  wiola::fuzz::read_or_refuse(path, [&] {
    wiola::DocumentReader reader({path}, opt);
    wiola::RawDocument raw;
    std::int64_t bytes_seen = 0;
    while (reader.next(raw)) {
      bytes_seen += raw.source_bytes;
      const wiola::Document doc = wiola::parse_document(std::move(raw), reader);
      if (doc.status == wiola::DocStatus::Ok && wiola::find_invalid_utf8(doc.text) != std::string::npos)
        wiola::fuzz::bug("a document passed as valid holds invalid UTF-8");
      if (doc.status != wiola::DocStatus::Ok && doc.status != wiola::DocStatus::Empty)
        wiola::fuzz::check_refusal(path, doc.problem.c_str());
    }
    if (bytes_seen > reader.total_bytes()) wiola::fuzz::bug("documents stand for more bytes than the file has");
  });
}
