#include "io/text_stream.hpp"

#include <zlib.h>
#include <zstd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>

#include "core/error.hpp"

namespace wiola {

namespace {

constexpr std::size_t kReadBytes = 1 << 20;

bool ends_with(const std::string& s, const char* suffix) {
  const std::size_t n = std::strlen(suffix);
  return s.size() >= n && s.compare(s.size() - n, n, suffix) == 0;
}

}  // namespace

Compression compression_of(const std::string& path) {
  if (ends_with(path, ".gz")) return Compression::Gzip;
  if (ends_with(path, ".zst") || ends_with(path, ".zstd")) return Compression::Zstd;
  return Compression::None;
}

std::string without_compression_extension(const std::string& path) {
  for (const char* ext : {".gz", ".zst", ".zstd"})
    if (ends_with(path, ext)) return path.substr(0, path.size() - std::strlen(ext));
  return path;
}

class TextStream::Source {
 public:
  virtual ~Source() = default;
  // Up to n bytes of text; 0 at the end. Throws on a read or format error.
  virtual std::size_t read(char* dst, std::size_t n) = 0;
  virtual std::int64_t file_pos() const = 0;
};

namespace {

class PlainSource final : public TextStream::Source {
 public:
  explicit PlainSource(const std::string& path) : path_(path), f_(std::fopen(path.c_str(), "rb")) {
    require(f_ != nullptr, path, ": cannot read the file (", std::strerror(errno), ")");
  }
  ~PlainSource() override { std::fclose(f_); }
  std::size_t read(char* dst, std::size_t n) override {
    const std::size_t got = std::fread(dst, 1, n, f_);
    require(got == n || !std::ferror(f_), path_, ": reading failed at byte ", pos_ + std::int64_t(got));
    pos_ += static_cast<std::int64_t>(got);
    return got;
  }
  std::int64_t file_pos() const override { return pos_; }

 private:
  std::string path_;
  std::FILE* f_;
  std::int64_t pos_ = 0;
};

class GzipSource final : public TextStream::Source {
 public:
  explicit GzipSource(const std::string& path) : path_(path), gz_(gzopen(path.c_str(), "rb")) {
    require(gz_ != nullptr, path, ": cannot read the file (", std::strerror(errno), ")");
    gzbuffer(gz_, 1 << 18);
  }
  ~GzipSource() override { gzclose(gz_); }
  std::size_t read(char* dst, std::size_t n) override {
    const int got = gzread(gz_, dst, static_cast<unsigned>(n));
    if (got < 0) {
      int code = 0;
      const char* msg = gzerror(gz_, &code);
      fail(path_, ": not a readable gzip stream (", msg, ")");
    }
    if (got == 0) {  // a stream cut short ends with Z_BUF_ERROR
      int code = Z_OK;
      gzerror(gz_, &code);
      require(code == Z_OK, path_, ": the gzip stream stops early");
    }
    return static_cast<std::size_t>(got);
  }
  std::int64_t file_pos() const override { return gzoffset(gz_); }

 private:
  std::string path_;
  gzFile gz_;
};

class ZstdSource final : public TextStream::Source {
 public:
  explicit ZstdSource(const std::string& path)
      : path_(path), f_(std::fopen(path.c_str(), "rb")), in_(ZSTD_DStreamInSize()) {
    require(f_ != nullptr, path, ": cannot read the file (", std::strerror(errno), ")");
    ds_ = ZSTD_createDStream();
    require(ds_ != nullptr, path, ": cannot start a zstd decoder");
  }
  ~ZstdSource() override {
    ZSTD_freeDStream(ds_);
    std::fclose(f_);
  }
  std::size_t read(char* dst, std::size_t n) override {
    ZSTD_outBuffer out{dst, n, 0};
    while (out.pos == 0) {
      if (ib_.pos == ib_.size) {
        const std::size_t got = std::fread(in_.data(), 1, in_.size(), f_);
        require(got > 0 || !std::ferror(f_), path_, ": reading failed at byte ", pos_);
        pos_ += static_cast<std::int64_t>(got);
        ib_ = ZSTD_inBuffer{in_.data(), got, 0};
        if (got == 0) {
          require(frame_done_, path_, ": the zstd stream stops early");
          return 0;
        }
      }
      const std::size_t r = ZSTD_decompressStream(ds_, &out, &ib_);
      require(!ZSTD_isError(r), path_, ": not a readable zstd stream (", ZSTD_getErrorName(r), ")");
      frame_done_ = r == 0;
    }
    return out.pos;
  }
  std::int64_t file_pos() const override { return pos_; }

 private:
  std::string path_;
  std::FILE* f_;
  ZSTD_DStream* ds_ = nullptr;
  std::vector<char> in_;
  ZSTD_inBuffer ib_{nullptr, 0, 0};
  std::int64_t pos_ = 0;
  bool frame_done_ = true;  // an empty file holds no frame, which is fine
};

}  // namespace

TextStream::TextStream(const std::string& path) : path_(path), buf_(kReadBytes) {
  std::error_code ec;
  require(std::filesystem::is_regular_file(path, ec), path, ": no such file");
  switch (compression_of(path)) {
    case Compression::None: src_ = std::make_unique<PlainSource>(path); break;
    case Compression::Gzip: src_ = std::make_unique<GzipSource>(path); break;
    case Compression::Zstd: src_ = std::make_unique<ZstdSource>(path); break;
  }
}

TextStream::~TextStream() = default;

std::int64_t TextStream::file_bytes_read() const { return src_->file_pos(); }

bool TextStream::fill() {
  if (eof_) return false;
  if (begin_ > 0) {  // keep the unread tail at the front
    std::memmove(buf_.data(), buf_.data() + begin_, end_ - begin_);
    end_ -= begin_;
    begin_ = 0;
  }
  if (buf_.size() - end_ < kReadBytes / 2) buf_.resize(buf_.size() * 2);  // a long line
  const std::size_t got = src_->read(buf_.data() + end_, buf_.size() - end_);
  if (got == 0) eof_ = true;
  end_ += got;
  return got > 0;
}

bool TextStream::getline(std::string& line) {
  line.clear();
  std::size_t scanned = 0;  // bytes after begin_ known to hold no '\n'
  while (true) {
    const char* from = buf_.data() + begin_ + scanned;
    const void* nl = std::memchr(from, '\n', end_ - begin_ - scanned);
    if (nl != nullptr) {
      const std::size_t at = static_cast<std::size_t>(static_cast<const char*>(nl) - buf_.data());
      line.assign(buf_.data() + begin_, at - begin_);
      begin_ = at + 1;
      had_newline_ = true;
      ++line_no_;
      return true;
    }
    scanned = end_ - begin_;
    if (!fill()) {
      if (begin_ == end_) return false;
      line.assign(buf_.data() + begin_, end_ - begin_);
      begin_ = end_;
      had_newline_ = false;
      ++line_no_;
      return true;
    }
  }
}

}  // namespace wiola
