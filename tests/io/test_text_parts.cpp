// Compressed inputs and long documents in parts: .gz and .zst read as the
// plain text reads, damaged streams named; a document encoded in parts gives
// the ids of the whole; batches stay small whatever the documents' sizes.
#include <gtest/gtest.h>
#include <zlib.h>
#include <zstd.h>

#include <fstream>

#include "io/bpe_trainer.hpp"
#include "io/byte_tokenizer.hpp"
#include "io/document_pipeline.hpp"
#include "io/h5.hpp"
#include "io/text_encoder.hpp"
#include "io/text_stream.hpp"
#include "io/token_file.hpp"
#include "io_test_util.hpp"

namespace wiola {
namespace {

void write_gzip(const std::string& path, const std::string& text) {
  gzFile gz = gzopen(path.c_str(), "wb");
  ASSERT_NE(gz, nullptr);
  ASSERT_EQ(gzwrite(gz, text.data(), static_cast<unsigned>(text.size())), static_cast<int>(text.size()));
  gzclose(gz);
}

void write_zstd(const std::string& path, const std::string& text) {
  std::string out(ZSTD_compressBound(text.size()), '\0');
  const std::size_t n = ZSTD_compress(out.data(), out.size(), text.data(), text.size(), 3);
  ASSERT_FALSE(ZSTD_isError(n));
  out.resize(n);
  test::write_text(path, out);
}

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

std::vector<std::string> all_lines(const std::string& path, std::vector<bool>* newline = nullptr) {
  TextStream s(path);
  std::vector<std::string> lines;
  std::string line;
  while (s.getline(line)) {
    lines.push_back(line);
    if (newline) newline->push_back(s.last_had_newline());
  }
  return lines;
}

// Lines of every kind, one longer than the stream's 1 MiB read buffer, and
// no newline at the end.
std::string varied_text() {
  std::string t = "first line\n\n  indented\r\nÜnïcödé\n";
  t += std::string(3 << 20, 'x') + "\n";
  for (int i = 0; i < 5000; ++i) t += "line " + std::to_string(i) + "\n";
  return t + "last, no newline";
}

TEST(TextStream, ReadsPlainGzipAndZstdAlike) {
  test::TempDir dir;
  const std::string text = varied_text();
  test::write_text(dir.file("a.txt"), text);
  write_gzip(dir.file("a.txt.gz"), text);
  write_zstd(dir.file("a.txt.zst"), text);
  std::vector<bool> nl;
  const auto plain = all_lines(dir.file("a.txt"), &nl);
  ASSERT_EQ(plain.size(), 5006u);
  EXPECT_EQ(plain[3], "Ünïcödé");
  EXPECT_EQ(plain[4].size(), std::size_t{3} << 20);
  EXPECT_TRUE(nl[5004]);
  EXPECT_FALSE(nl.back());
  EXPECT_EQ(all_lines(dir.file("a.txt.gz")), plain);
  EXPECT_EQ(all_lines(dir.file("a.txt.zst")), plain);
  // The compressed names still say the format.
  EXPECT_EQ(guess_text_format("c.jsonl.zst"), TextFormat::JsonLines);
  EXPECT_EQ(guess_text_format("c.txt.gz"), TextFormat::Text);
  // An empty compressed file is an empty text.
  write_gzip(dir.file("e.gz"), "");
  test::write_text(dir.file("e.zst"), "");
  EXPECT_TRUE(all_lines(dir.file("e.gz")).empty());
  EXPECT_TRUE(all_lines(dir.file("e.zst")).empty());
}

TEST(TextStream, DamagedOrMissingInputsAreNamed) {
  test::TempDir dir;
  const std::string text = varied_text();
  write_gzip(dir.file("a.gz"), text);
  write_zstd(dir.file("a.zst"), text);
  for (const char* name : {"a.gz", "a.zst"}) {
    const std::string whole = read_bytes(dir.file(name));
    const std::string cut = dir.file(std::string("cut-") + name);
    test::write_text(cut, whole.substr(0, whole.size() / 2));
    EXPECT_ERROR(all_lines(cut), cut.c_str(), "stops early");
  }
  test::write_text(dir.file("junk.zst"), "this is not zstd at all\n");
  EXPECT_ERROR(all_lines(dir.file("junk.zst")), "junk.zst", "not a readable zstd stream");
  EXPECT_ERROR(TextStream(dir.file("missing.txt")), "missing.txt", "no such file");
}

BpeTokenizer trained_bpe(const std::string& text) {
  PieceCounts c;
  c.add_document(text);
  BpeTrainOptions o;
  o.vocab_size = 400;
  o.min_frequency = 1;
  return train_bpe(c, o);
}

// Lines that start with every kind of character: letters, digits, spaces,
// combining marks (which NFC composes with what precedes them), punctuation.
std::string long_document() {
  std::string t;
  const char* starts[] = {"word", "42 apples", " leading space", "\xCC\x81" "combining",
                          "e\xCC\x81t\xC3\xA9", "1234567", "\t tab", "...dots", "Zebra",
                          "", "9lives", "A\xCC\x8A" "ngstr\xC3\xB6m", "\t\tdeep", "\t\tdeeper"};
  for (int i = 0; i < 400; ++i) {
    t += starts[i % 14];
    t += " and some more words " + std::to_string(i * 7919 % 1000) + "\n";
  }
  return t;
}

std::vector<std::int32_t> tokens_of(const std::string& path) {
  return h5::File::open_read(path).read<std::int32_t>("tokens");
}

TEST(DocumentParts, EncodedInPartsTheIdsAreThoseOfTheWhole) {
  test::TempDir dir;
  const std::string text = long_document();
  test::write_text(dir.file("doc.txt"), text + "\n");
  const BpeTokenizer bpe = trained_bpe(text);
  const ByteTokenizer byte;
  for (const Tokenizer* tok : {static_cast<const Tokenizer*>(&bpe), static_cast<const Tokenizer*>(&byte)}) {
    ASSERT_TRUE(tok->encodes_in_parts());
    TextInputOptions in;
    in.part_bytes = 100;
    int parts = 0;
    {
      DocumentReader r({dir.file("doc.txt")}, in);
      RawDocument d;
      std::string joined;
      while (r.next(d)) {
        ++parts;
        joined += d.text;
        EXPECT_EQ(d.continuation, parts > 1);
      }
      EXPECT_TRUE(joined == text) << "the parts do not join to the document";  // one final newline dropped
    }
    EXPECT_GT(parts, 40);
    EncodeOptions o;
    o.threads = 2;
    o.progress = false;
    o.batch_bytes = 300;
    DocumentReader reader({dir.file("doc.txt")}, in);
    const EncodeReport rep = encode_text(reader, *tok, dir.file("parts.h5"), o);
    EXPECT_EQ(rep.documents, 1);
    std::vector<std::int32_t> whole = tok->encode(text);
    whole.push_back(tok->eod_id());
    EXPECT_TRUE(tokens_of(dir.file("parts.h5")) == whole) << tok->name() << ": other ids in parts";
  }
}

TEST(DocumentParts, ABadPartIsNamedOrCutsTheDocumentWhenSkipped) {
  test::TempDir dir;
  std::string text;
  for (int i = 0; i < 30; ++i) text += "line " + std::to_string(i) + (i == 17 ? " \xFF" : "") + "\n";
  test::write_text(dir.file("doc.txt"), text);
  const ByteTokenizer tok;
  TextInputOptions in;
  in.part_bytes = 40;
  EncodeOptions o;
  o.progress = false;
  {
    DocumentReader reader({dir.file("doc.txt")}, in);
    EXPECT_ERROR(encode_text(reader, tok, dir.file("x.h5"), o), "doc.txt:18: not valid UTF-8");
  }
  o.skip_invalid = true;
  DocumentReader reader({dir.file("doc.txt")}, in);
  const EncodeReport r = encode_text(reader, tok, dir.file("x.h5"), o);
  // Before the bad part, and after it: two documents; one part skipped.
  EXPECT_EQ(r.documents, 2);
  EXPECT_EQ(r.total_skipped(), 1);
}

TEST(DocumentPipeline, BatchesOfTinyDocumentsStaySmall) {
  test::TempDir dir;
  test::write_text(dir.file("blank.txt"), std::string(200000, '\n'));
  TextInputOptions in;
  in.split = TextSplit::Line;
  DocumentReader reader({dir.file("blank.txt")}, in);
  const std::size_t batch_bytes = 64 << 10;
  std::size_t largest = 0, docs = 0;
  const std::function<std::size_t(int, std::vector<RawDocument>&&)> work =
      [](int, std::vector<RawDocument>&& b) { return b.size(); };
  const std::function<void(std::size_t&&)> consume = [&](std::size_t&& n) {
    largest = std::max(largest, n);
    docs += n;
  };
  run_document_pipeline<std::size_t>(reader, 1, batch_bytes, work, consume);
  EXPECT_EQ(docs, 200000u);
  // Each document counts its own size, not only its text's.
  EXPECT_LE(largest, batch_bytes / sizeof(RawDocument) + 1);
}

}  // namespace
}  // namespace wiola
