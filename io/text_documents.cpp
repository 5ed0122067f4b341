#include "io/text_documents.hpp"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <sstream>

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
  const std::string ext = std::filesystem::path(path).extension().string();
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
  in_ = std::ifstream(files_[current_], std::ios::binary);
  require(in_.good(), files_[current_], ": cannot read the file");
  line_no_ = 0;
  open_ = true;
  return true;
}

bool DocumentReader::read_line(std::string& line) {
  line.clear();
  if (!std::getline(in_, line)) {
    require(in_.eof(), files_[current_], ": reading failed after line ", line_no_);
    return false;
  }
  saw_newline_ = !in_.eof();
  ++line_no_;
  return true;
}

bool DocumentReader::next(RawDocument& doc) {
  doc = RawDocument{};
  while (true) {
    if (!open_ && !open_next_file()) return false;
    doc.file = current_;
    const bool whole_file = options_.format == TextFormat::Text && options_.split == TextSplit::File;
    if (whole_file) {
      std::ostringstream os;
      os << in_.rdbuf();
      require(!in_.bad(), files_[current_], ": reading failed");
      doc.text = os.str();
      doc.line = 1;
      doc.source_bytes = static_cast<std::int64_t>(doc.text.size());
      if (!doc.text.empty() && doc.text.back() == '\n') doc.text.pop_back();
      open_ = false;
      ++current_;
      return true;
    }
    std::string line;
    bool have = false;
    while (read_line(line)) {
      const std::int64_t bytes = static_cast<std::int64_t>(line.size()) + (saw_newline_ ? 1 : 0);
      if (options_.format == TextFormat::JsonLines || options_.split == TextSplit::Line) {
        const bool blank = line.find_first_not_of(" \t\r") == std::string::npos;
        if (options_.format == TextFormat::JsonLines && blank) {
          doc.source_bytes += bytes;  // blank lines between JSON objects are fine
          continue;
        }
        doc.text = std::move(line);
        doc.line = line_no_;
        doc.source_bytes += bytes;
        return true;
      }
      // Paragraph or separator: gather lines up to the boundary.
      const bool boundary = options_.split == TextSplit::Paragraph
                                ? line.find_first_not_of(" \t\r\f\v") == std::string::npos
                                : line == options_.separator;
      doc.source_bytes += bytes;
      if (boundary) {
        if (have) break;
        continue;  // boundaries before the first line of a document
      }
      if (!have) doc.line = line_no_;
      have = true;
      doc.text += line;
      if (saw_newline_) doc.text += '\n';
    }
    if (have) {
      if (!doc.text.empty() && doc.text.back() == '\n') doc.text.pop_back();
      return true;
    }
    open_ = false;
    ++current_;
  }
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
