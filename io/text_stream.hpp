#pragma once
// Lines from an input file that may be compressed: ".gz" through zlib,
// ".zst" through libzstd, anything else read as it is. Decompression is
// streamed, so memory does not grow with the file (only with its longest
// line). Errors name the file and the line after which reading failed.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace wiola {

enum class Compression : std::uint8_t { None, Gzip, Zstd };

// By extension: ".gz" gzip, ".zst"/".zstd" zstd. The name without that
// extension tells the text format ("corpus.jsonl.zst" is JSON lines).
Compression compression_of(const std::string& path);
std::string without_compression_extension(const std::string& path);

class TextStream {
 public:
  explicit TextStream(const std::string& path);
  ~TextStream();
  TextStream(const TextStream&) = delete;
  TextStream& operator=(const TextStream&) = delete;

  // The next line without its '\n'; false at the end of the file.
  bool getline(std::string& line);
  bool last_had_newline() const { return had_newline_; }
  std::int64_t line_number() const { return line_no_; }
  // Bytes of the file itself consumed so far (compressed bytes for .gz/.zst).
  std::int64_t file_bytes_read() const;

  class Source;  // where the bytes come from (one per compression)

 private:
  bool fill();  // more bytes into buf_; false at the end
  std::string path_;
  std::unique_ptr<Source> src_;
  std::vector<char> buf_;
  std::size_t begin_ = 0, end_ = 0;
  bool eof_ = false;
  bool had_newline_ = false;
  std::int64_t line_no_ = 0;
};

}  // namespace wiola
