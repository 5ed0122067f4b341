#include "io/fortunes.hpp"

#include <algorithm>
#include <filesystem>

#include "core/error.hpp"
#include "core/rng.hpp"
#include "core/text.hpp"

namespace wiola {

namespace fs = std::filesystem;

namespace {

constexpr const char* kInstallHint = "install the 'fortunes' package (tools/install-deps.sh)";

bool blank(const std::string& s) {
  return s.find_first_not_of(" \t\r\n\f\v") == std::string::npos;
}

}  // namespace

std::vector<std::string> split_fortunes(const std::string& text) {
  std::vector<std::string> docs;
  std::string cur;
  const auto close_doc = [&] {
    if (!cur.empty() && cur.back() == '\n') cur.pop_back();
    if (!blank(cur)) docs.push_back(std::move(cur));
    cur.clear();
  };
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t end = text.find('\n', pos);
    const bool has_newline = end != std::string::npos;
    if (!has_newline) end = text.size();
    const std::string_view line(text.data() + pos, end - pos);
    if (line == "%") {
      close_doc();
    } else {
      cur.append(line);
      if (has_newline) cur.push_back('\n');
    }
    pos = end + 1;
  }
  close_doc();
  return docs;
}

bool is_validation_document(std::string_view text, int val_every) {
  require(val_every >= 2, "--val-every must be at least 2, got ", val_every);
  return splitmix64(hash_name(text)) % static_cast<std::uint64_t>(val_every) == 0;
}

std::vector<std::string> read_fortune_documents(const std::string& dir) {
  std::error_code ec;
  require(fs::is_directory(dir, ec), dir, ": no such directory; ", kInstallHint);
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    if (entry.is_symlink() || !entry.is_regular_file()) continue;
    const std::string ext = entry.path().extension().string();
    if (ext == ".dat" || ext == ".u8") continue;
    files.push_back(entry.path());
  }
  require(!ec, dir, ": cannot list the directory: ", ec.message());
  std::sort(files.begin(), files.end(),
            [](const fs::path& a, const fs::path& b) {
              return a.filename().string() < b.filename().string();
            });
  std::vector<std::string> docs;
  for (const auto& f : files) {
    auto part = split_fortunes(read_text_file(f.string()));
    std::move(part.begin(), part.end(), std::back_inserter(docs));
  }
  require(!docs.empty(), dir, ": no fortune documents found; ", kInstallHint);
  return docs;
}

}  // namespace wiola
