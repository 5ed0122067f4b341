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
// Reading is sequential and streamed (except --split file); checking (UTF-8,
// JSON, the field) is parse_document(), run by the worker threads.
#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

namespace wiola {

enum class TextFormat : std::uint8_t { Text, JsonLines };
enum class TextSplit : std::uint8_t { File, Line, Paragraph, Separator };

struct TextInputOptions {
  TextFormat format = TextFormat::Text;
  std::string field = "text";
  TextSplit split = TextSplit::File;
  std::string separator;
};

TextFormat parse_text_format(const std::string& s);  // "text" | "jsonl"
TextSplit parse_text_split(const std::string& s);    // "file" | "line(s)" | "paragraph(s)" | "separator"
// The format a file name suggests: .jsonl / .json / .ndjson are JSON lines.
TextFormat guess_text_format(const std::string& path);

struct RawDocument {
  std::string text;              // as read (JSON lines: the whole line)
  std::size_t file = 0;          // index of the input file
  std::int64_t line = 0;         // 1-based line where it starts
  std::int64_t source_bytes = 0;  // input bytes it stands for (progress)
};

class DocumentReader {
 public:
  DocumentReader(std::vector<std::string> files, TextInputOptions options);
  // The next document; false after the last file.
  bool next(RawDocument& doc);
  std::int64_t total_bytes() const { return total_bytes_; }
  const std::string& file(std::size_t i) const { return files_.at(i); }
  std::size_t num_files() const { return files_.size(); }
  const TextInputOptions& options() const { return options_; }

 private:
  bool open_next_file();
  bool read_line(std::string& line);  // without '\n'; false at the end of the file
  std::vector<std::string> files_;
  TextInputOptions options_;
  std::int64_t total_bytes_ = 0;
  std::size_t current_ = 0;
  bool open_ = false;
  std::ifstream in_;
  std::int64_t line_no_ = 0;
  bool saw_newline_ = false;  // the last line read ended with '\n'
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
