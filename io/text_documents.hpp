#pragma once
// Documents from text inputs for `wiola-data encode` / `train-tokenizer`.
//   Text files, cut into documents by --split:
//     file       the whole file is one document (default)
//     line       every line is a document
//     paragraph  documents are separated by blank (white-space-only) lines
//     separator  documents are separated by lines equal to --separator
//                (e.g. "%" for fortune files)
//     A document loses one final newline.
//   JSON lines (.jsonl): each non-blank line is a JSON object; the document is
//     its string field --field (default "text").
// Files ending in .gz or .zst are decompressed as they are read (text_stream.hpp).
// Reading is sequential and streamed; checking (UTF-8, JSON, the field) is
// parse_document(), run by the worker threads.
//
// A long document (--split file, paragraph or separator) comes in parts when
// `part_bytes` > 0, so memory does not grow with it: a part ends once it holds
// at least part_bytes and the next line starts with an ASCII letter or digit.
// Cut there (after a newline, before a character that starts a piece and
// composes with nothing before it), NFC normalisation and the pre-tokenizer
// give the same pieces per part as over the whole, so the parts' ids
// concatenate to the whole document's ids (Tokenizer::encodes_in_parts).
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "io/text_stream.hpp"

namespace wiola {

enum class TextFormat : std::uint8_t { Text, JsonLines };
enum class TextSplit : std::uint8_t { File, Line, Paragraph, Separator };

struct TextInputOptions {
  TextFormat format = TextFormat::Text;
  std::string field = "text";
  TextSplit split = TextSplit::File;
  std::string separator;
  std::size_t part_bytes = 0;  // > 0: long documents come in parts (above)
  // > 0: read only about this many text bytes of each file (a sample): a
  // file is left at the first document boundary, or cut between parts, past it.
  std::int64_t bytes_per_file = 0;
};

// The part size encode and train-tokenizer use.
inline constexpr std::size_t kDocumentPartBytes = std::size_t{1} << 20;

TextFormat parse_text_format(const std::string& s);  // "text" | "jsonl"
TextSplit parse_text_split(const std::string& s);    // "file" | "line(s)" | "paragraph(s)" | "separator"
// The format a file name suggests: .jsonl / .json / .ndjson are JSON lines,
// also under .gz or .zst.
TextFormat guess_text_format(const std::string& path);

struct RawDocument {
  std::string text;              // as read (JSON lines: the whole line)
  std::size_t file = 0;          // index of the input file
  std::int64_t line = 0;         // 1-based line where it starts
  std::int64_t source_bytes = 0;  // text bytes it stands for (blank lines included)
  std::int64_t input_read = 0;    // bytes of the input files read when it was cut (progress)
  bool continues = false;         // a part: more of this document follows
  bool continuation = false;      // a part after the first of its document
};

class DocumentReader {
 public:
  DocumentReader(std::vector<std::string> files, TextInputOptions options);
  // The next document (or part of one); false after the last file.
  bool next(RawDocument& doc);
  // The input files' sizes on disk (compressed, for .gz and .zst).
  std::int64_t total_bytes() const { return total_bytes_; }
  const std::string& file(std::size_t i) const { return files_.at(i); }
  std::size_t num_files() const { return files_.size(); }
  const TextInputOptions& options() const { return options_; }

 private:
  bool open_next_file();
  void close_file();
  bool read_line(std::string& line);  // without '\n'; false at the end of the file
  bool next_line_document(RawDocument& doc);  // --split line, JSON lines
  bool next_gathered(RawDocument& doc);       // file, paragraph, separator
  std::int64_t input_read() const;
  std::vector<std::string> files_;
  TextInputOptions options_;
  std::int64_t total_bytes_ = 0;
  std::int64_t closed_bytes_ = 0;  // sizes of the files read to their end
  std::int64_t file_text_bytes_ = 0;  // text bytes returned from the current file
  std::size_t current_ = 0;
  std::unique_ptr<TextStream> in_;
  bool saw_newline_ = false;  // the last line read ended with '\n'
  bool pending_ = false;      // pending_line_ starts the next part of a document
  std::string pending_line_;
  std::int64_t pending_line_no_ = 0;
  bool pending_newline_ = false;
  std::int64_t pending_bytes_ = 0;
  bool started_file_ = false;  // --split file: this file's document was returned
};

enum class DocStatus : std::uint8_t { Ok, Empty, InvalidUtf8, BadJson, MissingField, NotString };
inline constexpr int kDocStatusCount = 6;
const char* doc_status_name(DocStatus s);

struct Document {
  std::string text;       // valid UTF-8 when status is Ok
  DocStatus status = DocStatus::Ok;
  std::string problem;    // "file:line: ..." when status is neither Ok nor Empty
};

// Checks and extracts one document: JSON and its field, UTF-8 validity.
Document parse_document(RawDocument&& raw, const DocumentReader& reader);

}  // namespace wiola
