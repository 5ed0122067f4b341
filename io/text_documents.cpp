#include "io/text_documents.hpp"

#include <nlohmann/json.hpp>

#include <filesystem>

#include "core/error.hpp"
#include "io/utf8.hpp"

namespace wiola {

TextFormat parse_text_format(const std::string& s) {
  if (s == "text") return TextFormat::Text;
  if (s == "jsonl") return TextFormat::JsonLines;
  fail("--format: '", s, "' is not text or jsonl");
}

TextSplit parse_text_split(const std::string& s) {
  if (s == "file") return TextSplit::File;
  // The plurals read as naturally ("--split paragraphs"); both are accepted.
  if (s == "line" || s == "lines") return TextSplit::Line;
  if (s == "paragraph" || s == "paragraphs") return TextSplit::Paragraph;
  if (s == "separator") return TextSplit::Separator;
  fail("--split: '", s, "' is not file, line, paragraph or separator");
}

TextFormat guess_text_format(const std::string& path) {
  const std::string ext =
      std::filesystem::path(without_compression_extension(path)).extension().string();
  return ext == ".jsonl" || ext == ".json" || ext == ".ndjson" ? TextFormat::JsonLines
                                                               : TextFormat::Text;
}

const char* doc_status_name(DocStatus s) {
  switch (s) {
    case DocStatus::Ok: return "ok";
    case DocStatus::Empty: return "empty";
    case DocStatus::InvalidUtf8: return "not valid UTF-8";
    case DocStatus::BadJson: return "not valid JSON";
    case DocStatus::MissingField: return "without the field";
    case DocStatus::NotString: return "field not a string";
  }
  return "?";
}

DocumentReader::DocumentReader(std::vector<std::string> files, TextInputOptions options)
    : files_(std::move(files)), options_(std::move(options)) {
  require(!files_.empty(), "no input files given");
  if (options_.split == TextSplit::Separator)
    require(!options_.separator.empty(), "--split separator needs --separator STRING");
  for (const auto& f : files_) {
    std::error_code ec;
    require(std::filesystem::is_regular_file(f, ec), f, ": no such file");
    total_bytes_ += static_cast<std::int64_t>(std::filesystem::file_size(f, ec));
  }
}

bool DocumentReader::open_next_file() {
  if (current_ >= files_.size()) return false;
  in_ = std::make_unique<TextStream>(files_[current_]);
  file_text_bytes_ = 0;
  return true;
}

void DocumentReader::close_file() {
  std::error_code ec;
  closed_bytes_ += static_cast<std::int64_t>(std::filesystem::file_size(files_[current_], ec));
  in_.reset();
  ++current_;
}

std::int64_t DocumentReader::input_read() const {
  return closed_bytes_ + (in_ ? in_->file_bytes_read() : 0);
}

bool DocumentReader::read_line(std::string& line) {
  if (!in_->getline(line)) return false;
  saw_newline_ = in_->last_had_newline();
  return true;
}

bool DocumentReader::next(RawDocument& doc) {
  doc = RawDocument{};
  while (true) {
    if (!in_ && !open_next_file()) return false;
    doc.file = current_;
    const bool per_line =
        options_.format == TextFormat::JsonLines || options_.split == TextSplit::Line;
    const bool sampled_enough =
        options_.bytes_per_file > 0 && file_text_bytes_ >= options_.bytes_per_file;
    if (!sampled_enough && (per_line ? next_line_document(doc) : next_gathered(doc))) {
      doc.input_read = input_read();
      file_text_bytes_ += doc.source_bytes;
      return true;
    }
    pending_ = false;
    started_file_ = false;
    close_file();
  }
}

bool DocumentReader::next_line_document(RawDocument& doc) {
  std::string line;
  while (read_line(line)) {
    const std::int64_t bytes = static_cast<std::int64_t>(line.size()) + (saw_newline_ ? 1 : 0);
    doc.source_bytes += bytes;
    if (options_.format == TextFormat::JsonLines &&
        line.find_first_not_of(" \t\r") == std::string::npos)
      continue;  // blank lines between JSON objects are fine
    doc.text = std::move(line);
    doc.line = in_->line_number();
    return true;
  }
  return false;
}

namespace {

bool starts_with_ascii_alnum(const std::string& line) {
  if (line.empty()) return false;
  const auto c = static_cast<unsigned char>(line[0]);
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

}  // namespace

// Gathers lines up to a boundary (a blank line, the separator, or the end of
// the file for --split file), or up to a cut between parts.
bool DocumentReader::next_gathered(RawDocument& doc) {
  const bool whole_file = options_.split == TextSplit::File;
  bool have = false;
  const auto take = [&](const std::string& line, std::int64_t line_no, bool newline) {
    if (!have) doc.line = line_no;
    have = true;
    doc.text += line;
    if (newline) doc.text += '\n';
  };
  if (pending_) {  // the line that starts this part of a long document
    pending_ = false;
    doc.continuation = true;
    take(pending_line_, pending_line_no_, pending_newline_);
    doc.source_bytes += pending_bytes_;
  }
  std::string line;
  bool any_line = have;
  while (read_line(line)) {
    any_line = true;
    const std::int64_t bytes = static_cast<std::int64_t>(line.size()) + (saw_newline_ ? 1 : 0);
    doc.source_bytes += bytes;
    const bool boundary = whole_file ? false
                          : options_.split == TextSplit::Paragraph
                              ? line.find_first_not_of(" \t\r\f\v") == std::string::npos
                              : line == options_.separator;
    if (boundary) {
      if (have) {
        if (doc.text.back() == '\n') doc.text.pop_back();
        return true;
      }
      continue;  // boundaries before the first line of a document
    }
    if (options_.part_bytes > 0 && doc.text.size() >= options_.part_bytes &&
        starts_with_ascii_alnum(line)) {
      pending_ = true;
      pending_line_ = std::move(line);
      pending_line_no_ = in_->line_number();
      pending_newline_ = saw_newline_;
      doc.continues = true;
      doc.source_bytes -= bytes;  // counted with the part it starts
      pending_bytes_ = bytes;
      return true;
    }
    take(line, in_->line_number(), saw_newline_);
  }
  // The end of the file ends the document. A whole file is one document even
  // when it is empty (it is counted as skipped).
  if (have || (whole_file && !any_line && !started_file_)) {
    if (!doc.text.empty() && doc.text.back() == '\n') doc.text.pop_back();
    if (!have) doc.line = 1;
    started_file_ = true;
    return true;
  }
  return false;  // next() closes the file and resets started_file_
}

namespace {

std::string where(const DocumentReader& r, const RawDocument& d) {
  std::string s = r.file(d.file);
  s += ':';
  s += std::to_string(d.line);
  return s;
}

}  // namespace

Document parse_document(RawDocument&& raw, const DocumentReader& reader) {
  Document doc;
  if (reader.options().format == TextFormat::JsonLines) {
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(raw.text);
    } catch (const nlohmann::json::exception& e) {
      doc.status = find_invalid_utf8(raw.text) != std::string::npos ? DocStatus::InvalidUtf8
                                                                    : DocStatus::BadJson;
      doc.problem = where(reader, raw) + ": " + doc_status_name(doc.status) + " (" + e.what() + ")";
      return doc;
    }
    const std::string& field = reader.options().field;
    if (!j.is_object() || !j.contains(field)) {
      doc.status = DocStatus::MissingField;
      doc.problem = where(reader, raw);
      doc.problem += j.is_object() ? ": the JSON object has no field '" : ": the line is JSON but not an object, so no field '";
      doc.problem += field;
      doc.problem += "'";
      return doc;
    }
    const auto& v = j[field];
    if (!v.is_string()) {
      doc.status = DocStatus::NotString;
      doc.problem = where(reader, raw);
      doc.problem += ": field '";
      doc.problem += field;
      doc.problem += "' is ";
      doc.problem += v.type_name();
      doc.problem += ", not a string";
      return doc;
    }
    doc.text = v.get<std::string>();
  } else {
    doc.text = std::move(raw.text);
    const std::size_t bad = find_invalid_utf8(doc.text);
    if (bad != std::string::npos) {
      doc.status = DocStatus::InvalidUtf8;
      doc.problem = reader.file(raw.file);
      doc.problem += ':';
      doc.problem += std::to_string(raw.line + line_of_offset(doc.text, bad) - 1);
      doc.problem += ": not valid UTF-8 (byte ";
      doc.problem += std::to_string(bad);
      doc.problem += " of the document)";
      doc.text.clear();
      return doc;
    }
  }
  if (doc.text.empty()) doc.status = DocStatus::Empty;
  return doc;
}

}  // namespace wiola
