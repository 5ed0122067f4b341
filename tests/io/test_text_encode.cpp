// Text and JSON lines -> token files: round trips, document cutting, bad
// input (errors naming file and line, or counted skips), thread-count
// independence and shards.
#include <gtest/gtest.h>

#include <filesystem>

#include "io/bpe_trainer.hpp"
#include "io/byte_tokenizer.hpp"
#include "io/h5.hpp"
#include "io/text_encoder.hpp"
#include "io/token_file.hpp"
#include "io_test_util.hpp"

namespace wiola {
namespace {

namespace fs = std::filesystem;

// The documents of a token file, decoded (without their end-of-document id).
std::vector<std::string> read_back(const std::string& path, const Tokenizer& tok) {
  const h5::File f = h5::File::open_read(path);
  const TokenFileHeader h = read_token_header(f);
  const auto ids = f.read<std::int32_t>("tokens");
  auto offsets = f.read<std::uint64_t>("doc_offsets");
  offsets.push_back(static_cast<std::uint64_t>(h.n_tokens));
  std::vector<std::string> docs;
  for (std::size_t d = 0; d + 1 < offsets.size(); ++d) {
    EXPECT_EQ(ids[offsets[d + 1] - 1], h.eod_id);
    docs.push_back(tok.decode(std::span<const std::int32_t>(ids.data() + offsets[d], offsets[d + 1] - offsets[d] - 1)));
  }
  return docs;
}

EncodeOptions quiet(int threads = 1) {
  EncodeOptions o;
  o.threads = threads;
  o.progress = false;
  o.batch_bytes = 64;  // many small batches: exercises the ordering
  return o;
}

BpeTokenizer small_bpe() {
  PieceCounts c;
  c.add_document("the quick brown fox jumps over the lazy dog; the dog sleeps. Ünïcödé text too.");
  BpeTrainOptions o;
  o.vocab_size = 300;
  o.min_frequency = 1;
  return train_bpe(c, o);
}

using Docs = std::vector<std::string>;

TEST(TextEncode, RoundTripsTextThroughTokensWithBpe) {
  test::TempDir dir;
  const BpeTokenizer tok = small_bpe();
  const Docs docs = {"the quick brown fox", "jumps over\nthe lazy dog;", "Ünïcödé\ttext, too!",
                     "a\n\nparagraph? no: separator only"};
  std::string text;
  for (const auto& d : docs) text += d + "\n%\n";
  test::write_text(dir.file("in.txt"), text);
  TextInputOptions in;
  in.split = TextSplit::Separator;
  in.separator = "%";
  DocumentReader reader({dir.file("in.txt")}, in);
  const EncodeReport r = encode_text(reader, tok, dir.file("out.h5"), quiet());
  EXPECT_EQ(r.documents, 4);
  EXPECT_EQ(r.bytes, static_cast<std::int64_t>(text.size()));
  EXPECT_EQ(read_back(dir.file("out.h5"), tok), docs);
  // The file embeds its tokenizer and decodes alone.
  const h5::File f = h5::File::open_read(dir.file("out.h5"));
  const auto embedded = tokenizer_for(f, read_token_header(f));
  EXPECT_EQ(embedded->hash(), tok.hash());
  EXPECT_EQ(read_back(dir.file("out.h5"), *embedded), docs);
}

TEST(TextEncode, SplitModes) {
  test::TempDir dir;
  const ByteTokenizer tok;
  test::write_text(dir.file("t.txt"), "one\ntwo\n\n\nthree\n  \nfour\n");
  const auto run = [&](TextSplit split) {
    TextInputOptions in;
    in.split = split;
    DocumentReader reader({dir.file("t.txt")}, in);
    encode_text(reader, tok, dir.file("o.h5"), quiet());
    return read_back(dir.file("o.h5"), tok);
  };
  EXPECT_EQ(run(TextSplit::File), Docs{"one\ntwo\n\n\nthree\n  \nfour"});
  EXPECT_EQ(run(TextSplit::Paragraph), (Docs{"one\ntwo", "three", "four"}));
  EXPECT_EQ(run(TextSplit::Line), (Docs{"one", "two", "three", "  ", "four"}));  // empty lines skipped
}

TEST(TextEncode, JsonLines) {
  test::TempDir dir;
  const ByteTokenizer tok;
  test::write_text(dir.file("d.jsonl"),
                   "{\"text\": \"caf\\u00e9 \\\"quoted\\\"\", \"id\": 1}\n"
                   "\n"
                   "{\"id\": 2, \"text\": \"line\\nbreak\"}\n");
  TextInputOptions in;
  in.format = TextFormat::JsonLines;
  DocumentReader reader({dir.file("d.jsonl")}, in);
  encode_text(reader, tok, dir.file("o.h5"), quiet());
  EXPECT_EQ(read_back(dir.file("o.h5"), tok), (Docs{"caf\xC3\xA9 \"quoted\"", "line\nbreak"}));
  EXPECT_EQ(guess_text_format("x/data.jsonl"), TextFormat::JsonLines);
  EXPECT_EQ(guess_text_format("x/data.txt"), TextFormat::Text);
}

TEST(TextEncode, BadDocumentsAreErrorsNamingFileAndLine) {
  test::TempDir dir;
  const ByteTokenizer tok;
  const std::string jl = dir.file("d.jsonl");
  test::write_text(jl, "{\"text\": \"fine\"}\n{\"body\": \"no text\"}\n{\"text\": 5}\nnot json\n");
  TextInputOptions in;
  in.format = TextFormat::JsonLines;
  {
    DocumentReader reader({jl}, in);
    EXPECT_ERROR(encode_text(reader, tok, dir.file("o.h5"), quiet(2)),
                 "d.jsonl:2: the JSON object has no field 'text'", "--skip-invalid");
  }
  EXPECT_FALSE(fs::exists(dir.file("o.h5")));
  EXPECT_FALSE(fs::exists(dir.file("o.h5.tmp")));
  {
    in.field = "body";
    DocumentReader reader({jl}, in);
    EXPECT_ERROR(encode_text(reader, tok, dir.file("o.h5"), quiet()), "d.jsonl:1: the JSON object has no field 'body'");
  }
  in.field = "text";
  // Skipping counts each kind and keeps the first place it happened.
  DocumentReader reader({jl}, in);
  EncodeOptions o = quiet(3);
  o.skip_invalid = true;
  const EncodeReport r = encode_text(reader, tok, dir.file("o.h5"), o);
  EXPECT_EQ(r.documents, 1);
  EXPECT_EQ(r.skipped[static_cast<std::size_t>(DocStatus::MissingField)], 1);
  EXPECT_EQ(r.skipped[static_cast<std::size_t>(DocStatus::NotString)], 1);
  EXPECT_EQ(r.skipped[static_cast<std::size_t>(DocStatus::BadJson)], 1);
  EXPECT_NE(r.first_problem[static_cast<std::size_t>(DocStatus::BadJson)].find("d.jsonl:4"), std::string::npos);
  EXPECT_NE(r.first_problem[static_cast<std::size_t>(DocStatus::NotString)].find("is number, not a string"), std::string::npos);
  EXPECT_EQ(read_back(dir.file("o.h5"), tok), Docs{"fine"});

  // Text that is not UTF-8: the line of the bad byte.
  test::write_text(dir.file("latin1.txt"), "ok\n%\nfirst\ncaf\xE9\n");
  TextInputOptions t;
  t.split = TextSplit::Separator;
  t.separator = "%";
  DocumentReader bad({dir.file("latin1.txt")}, t);
  EXPECT_ERROR(encode_text(bad, tok, dir.file("o2.h5"), quiet()), "latin1.txt:4: not valid UTF-8");
  test::write_text(dir.file("badjson.jsonl"), "{\"text\": \"caf\xE9\"}\n");
  DocumentReader badj({dir.file("badjson.jsonl")}, in);
  EXPECT_ERROR(encode_text(badj, tok, dir.file("o3.h5"), quiet()), "badjson.jsonl:1: not valid UTF-8");
}

TEST(TextEncode, EmptyInputIsAnError) {
  test::TempDir dir;
  const ByteTokenizer tok;
  test::write_text(dir.file("empty.txt"), "");
  DocumentReader reader({dir.file("empty.txt")}, {});
  EXPECT_ERROR(encode_text(reader, tok, dir.file("o.h5"), quiet()), "empty.txt", "no document to encode");
  test::write_text(dir.file("blank.jsonl"), "\n{\"text\": \"\"}\n");
  TextInputOptions in;
  in.format = TextFormat::JsonLines;
  DocumentReader r2({dir.file("blank.jsonl")}, in);
  EXPECT_ERROR(encode_text(r2, tok, dir.file("o.h5"), quiet()), "all 1 were skipped");
  EXPECT_ERROR(DocumentReader({dir.file("missing.txt")}, {}), "missing.txt: no such file");
  EXPECT_FALSE(fs::exists(dir.file("o.h5")));
}

TEST(TextEncode, SameOutputForAnyThreadCountAndShards) {
  test::TempDir dir;
  const BpeTokenizer tok = small_bpe();
  std::string text;
  for (int i = 0; i < 300; ++i) text += "document " + std::to_string(i) + ": the lazy dog " + std::string(i % 7, '!') + "\n";
  test::write_text(dir.file("lines.txt"), text);
  TextInputOptions in;
  in.split = TextSplit::Line;
  std::vector<std::vector<std::int32_t>> outputs;
  for (int threads : {1, 2, 5}) {
    DocumentReader reader({dir.file("lines.txt")}, in);
    encode_text(reader, tok, dir.file("o.h5"), quiet(threads));
    outputs.push_back(h5::File::open_read(dir.file("o.h5")).read<std::int32_t>("tokens"));
  }
  EXPECT_EQ(outputs[0], outputs[1]);
  EXPECT_EQ(outputs[0], outputs[2]);

  DocumentReader reader({dir.file("lines.txt")}, in);
  EncodeOptions o = quiet(2);
  o.shard_tokens = 1000;
  const EncodeReport r = encode_text(reader, tok, dir.file("sh.h5"), o);
  ASSERT_GT(r.outputs.size(), 2u);
  EXPECT_EQ(r.outputs[0], dir.file("sh-00000.h5"));
  std::vector<std::int32_t> joined;
  for (const auto& s : r.outputs) {
    const auto t = h5::File::open_read(s).read<std::int32_t>("tokens");
    joined.insert(joined.end(), t.begin(), t.end());
    EXPECT_FALSE(fs::exists(s + ".part"));
  }
  EXPECT_EQ(joined, outputs[0]);
  EXPECT_EQ(shard_path("/a/b.c.h5", 12), "/a/b.c-00012.h5");
}

}  // namespace
}  // namespace wiola
