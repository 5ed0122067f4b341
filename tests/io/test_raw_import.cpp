// Importing token ids from GPT-2-style .bin shards, .npy arrays and raw files.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "io/h5.hpp"
#include "io/token_file.hpp"
#include "io/token_import.hpp"
#include "io_test_util.hpp"

namespace wiola {
namespace {

template <class T>
void put(std::string& s, T v) {
  char b[sizeof(T)];
  std::memcpy(b, &v, sizeof(T));  // little-endian host
  s.append(b, sizeof(T));
}

template <class T>
std::string raw_ids(const std::vector<std::int64_t>& ids) {
  std::string s;
  for (auto v : ids) put(s, static_cast<T>(v));
  return s;
}

std::string bin_file(int version, const std::vector<std::int64_t>& ids, std::int32_t count = -1) {
  std::string s;
  std::vector<std::int32_t> header(256, 0);
  header[0] = kBinMagic;
  header[1] = version;
  header[2] = count >= 0 ? count : static_cast<std::int32_t>(ids.size());
  for (auto h : header) put(s, h);
  return s + (version == 1 ? raw_ids<std::uint16_t>(ids) : raw_ids<std::uint32_t>(ids));
}

std::string npy_file(const std::string& descr, const std::string& shape, const std::string& data,
                     int major = 1) {
  std::string header = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
  const std::size_t pre = major == 1 ? 10 : 12;
  while ((pre + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::string s = "\x93NUMPY";
  s += static_cast<char>(major);
  s += '\0';
  if (major == 1) put(s, static_cast<std::uint16_t>(header.size()));
  else put(s, static_cast<std::uint32_t>(header.size()));
  return s + header + data;
}

std::vector<std::int32_t> tokens_of(const std::string& path) {
  return h5::File::open_read(path).read<std::int32_t>("tokens");
}

std::vector<std::uint64_t> offsets_of(const std::string& path) {
  return h5::File::open_read(path).read<std::uint64_t>("doc_offsets");
}

using Ids = std::vector<std::int32_t>;

TEST(RawImport, BinShardsSplitOnTheEodId) {
  test::TempDir dir;
  const ExternalTokenizer tok("gpt2", 50257, 50256);
  // GPT-2 shards start each document with <|endoftext|>.
  test::write_text(dir.file("s.bin"), bin_file(1, {50256, 10, 11, 50256, 12, 50256, 13, 14}));
  const RawTokenFile f = open_raw_tokens(dir.file("s.bin"), RawKind::Auto, "");
  EXPECT_EQ(f.kind, RawKind::Bin);
  EXPECT_EQ(f.count, 8);
  const ImportReport r = import_raw_tokens(f, tok, true, dir.file("s.h5"), false);
  EXPECT_EQ(tokens_of(dir.file("s.h5")), (Ids{50256, 10, 11, 50256, 12, 50256, 13, 14, 50256}));
  EXPECT_EQ(offsets_of(dir.file("s.h5")), (std::vector<std::uint64_t>{0, 1, 4, 6}));
  EXPECT_EQ(r.documents, 4);
  EXPECT_TRUE(r.appended_eod);
  const h5::File h = h5::File::open_read(dir.file("s.h5"));
  EXPECT_EQ(read_token_header(h).tokenizer, "gpt2");
  EXPECT_EQ(read_token_header(h).tokenizer_hash, tok.hash());

  test::write_text(dir.file("v2.bin"), bin_file(2, {70000, 1, 2}));
  const ExternalTokenizer big("llama3", 128256, 2);
  EXPECT_EQ(open_raw_tokens(dir.file("v2.bin"), RawKind::Bin, "").elem_size, 4);
  const ImportReport r2 = import_raw_tokens(open_raw_tokens(dir.file("v2.bin"), RawKind::Auto, ""),
                                            big, true, dir.file("v2.h5"), false);
  EXPECT_EQ(tokens_of(dir.file("v2.h5")), (Ids{70000, 1, 2}));
  EXPECT_FALSE(r2.appended_eod);
  EXPECT_EQ(h5::File::open_read(dir.file("v2.h5")).file_type("tokens"), h5::Type::U32);
}

TEST(RawImport, BadBinHeaders) {
  test::TempDir dir;
  test::write_text(dir.file("short.bin"), bin_file(1, {1, 2, 3}, 5));
  EXPECT_ERROR(open_raw_tokens(dir.file("short.bin"), RawKind::Auto, ""), "short.bin: truncated",
               "says 5 tokens (1034 bytes)", "has 1030 bytes");
  test::write_text(dir.file("long.bin"), bin_file(1, {1, 2, 3}, 2));
  EXPECT_ERROR(open_raw_tokens(dir.file("long.bin"), RawKind::Auto, ""), "long.bin: 2 bytes after the 2 tokens");
  test::write_text(dir.file("ver.bin"), bin_file(7, {}));
  EXPECT_ERROR(open_raw_tokens(dir.file("ver.bin"), RawKind::Auto, ""), "ver.bin: .bin header version 7");
  test::write_text(dir.file("magic.bin"), std::string(2000, '\1'));
  EXPECT_ERROR(open_raw_tokens(dir.file("magic.bin"), RawKind::Bin, ""), "magic.bin: .bin header magic");
  EXPECT_ERROR(open_raw_tokens(dir.file("magic.bin"), RawKind::Auto, ""), "cannot tell the format",
               "--format raw --dtype u16|u32");
  test::write_text(dir.file("tiny.bin"), "abc");
  EXPECT_ERROR(open_raw_tokens(dir.file("tiny.bin"), RawKind::Bin, ""), "tiny.bin: truncated: 3 bytes");
  EXPECT_ERROR(open_raw_tokens(dir.file("none.bin"), RawKind::Auto, ""), "none.bin: no such file");
}

TEST(RawImport, NpyArraysOfEveryIntegerType) {
  test::TempDir dir;
  const ExternalTokenizer tok("ext", 1000, 999);
  const std::vector<std::int64_t> ids = {5, 999, 7, 8, 999};
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"<u2", raw_ids<std::uint16_t>(ids)}, {"<u4", raw_ids<std::uint32_t>(ids)},
      {"<i4", raw_ids<std::int32_t>(ids)},  {"<i8", raw_ids<std::int64_t>(ids)},
      {"<u8", raw_ids<std::uint64_t>(ids)}, {"<i2", raw_ids<std::int16_t>(ids)}};
  for (const auto& [descr, data] : cases) {
    for (int major : {1, 2}) {
      const std::string path = dir.file("a.npy");
      test::write_text(path, npy_file(descr, "(5,)", data, major));
      const RawTokenFile f = open_raw_tokens(path, RawKind::Auto, "");
      EXPECT_EQ(f.kind, RawKind::Npy);
      import_raw_tokens(f, tok, true, dir.file("a.h5"), false);
      EXPECT_EQ(tokens_of(dir.file("a.h5")), (Ids{5, 999, 7, 8, 999})) << descr;
      EXPECT_EQ(offsets_of(dir.file("a.h5")), (std::vector<std::uint64_t>{0, 2})) << descr;
    }
  }
  // Big-endian and single-byte arrays.
  std::string be;
  for (auto v : ids) {
    be += '\0';
    be += '\0';
    be += static_cast<char>(v >> 8);
    be += static_cast<char>(v & 0xFF);
  }
  test::write_text(dir.file("be.npy"), npy_file(">u4", "(5,)", be));
  import_raw_tokens(open_raw_tokens(dir.file("be.npy"), RawKind::Npy, ""), tok, true, dir.file("be.h5"), false);
  EXPECT_EQ(tokens_of(dir.file("be.h5")), (Ids{5, 999, 7, 8, 999}));
  test::write_text(dir.file("u1.npy"), npy_file("|u1", "(3,)", "\x01\x02\x03"));
  import_raw_tokens(open_raw_tokens(dir.file("u1.npy"), RawKind::Auto, ""), tok, true, dir.file("u1.h5"), false);
  EXPECT_EQ(tokens_of(dir.file("u1.h5")), (Ids{1, 2, 3, 999}));
}

TEST(RawImport, BadNpyFiles) {
  test::TempDir dir;
  const auto check = [&](const std::string& content, const char* part) {
    test::write_text(dir.file("x.npy"), content);
    EXPECT_ERROR(open_raw_tokens(dir.file("x.npy"), RawKind::Npy, ""), "x.npy", part);
  };
  check(npy_file("<f4", "(2,)", std::string(8, '\0')), "not an integer type");
  check(npy_file("<u2", "(2, 3)", std::string(12, '\0')), "2 dimensions; token arrays must be 1-D");
  check(npy_file("<u2", "()", std::string(2, '\0')), "0 dimensions");
  check(npy_file("<u2", "(4,)", std::string(6, '\0')), "truncated");
  check(npy_file("<u2", "(2,)", std::string(6, '\0')), "2 bytes after");
  check(npy_file("<u3", "(2,)", std::string(6, '\0')), "unsupported width");
  std::string cut = "\x93NUMPY";
  cut += '\x01';
  cut += '\0';
  cut += '\x20';
  cut += '\0';
  cut += "{'descr': '<u2', 'shape': (1,)";
  check(cut, "truncated");
  check(npy_file("<u2", "(2,", std::string(4, '\0')), ".npy header");
  check("not numpy at all", "not a .npy file");
  std::string no_shape = npy_file("<u2", "(1,)", "\1\0");
  no_shape.replace(no_shape.find("'shape'"), 7, "'shapz'");
  check(no_shape, "lacks 'shape'");
}

TEST(RawImport, RawFilesAndIdChecks) {
  test::TempDir dir;
  test::write_text(dir.file("r.u16"), raw_ids<std::uint16_t>({1, 2, 3, 4}));
  EXPECT_ERROR(open_raw_tokens(dir.file("r.u16"), RawKind::Raw, ""), "--dtype u16 or u32");
  const RawTokenFile f = open_raw_tokens(dir.file("r.u16"), RawKind::Raw, "u16");
  EXPECT_EQ(f.count, 4);
  // No eod: one document, and the vocabulary gains an id for its end.
  const ExternalTokenizer grown("ext", 11, 10);
  const ImportReport r = import_raw_tokens(f, grown, false, dir.file("r.h5"), false);
  EXPECT_EQ(r.documents, 1);
  EXPECT_EQ(tokens_of(dir.file("r.h5")), (Ids{1, 2, 3, 4, 10}));
  const RawTokenFile g = open_raw_tokens(dir.file("r.u16"), RawKind::Raw, "u32");
  EXPECT_EQ(g.count, 2);
  test::write_text(dir.file("odd.u16"), "abc");
  EXPECT_ERROR(open_raw_tokens(dir.file("odd.u16"), RawKind::Raw, "u16"), "odd.u16: 3 bytes is not a multiple of 2");

  // Ids at or above the vocabulary, or negative: file and position.
  const ExternalTokenizer small("ext", 4, 3);
  EXPECT_ERROR(import_raw_tokens(f, small, true, dir.file("bad.h5"), false), "r.u16: token id 4 at position 3",
               "outside [0, vocab_size 4)");
  EXPECT_FALSE(std::filesystem::exists(dir.file("bad.h5")));
  test::write_text(dir.file("neg.npy"), npy_file("<i4", "(3,)", raw_ids<std::int32_t>({1, -5, 2})));
  EXPECT_ERROR(import_raw_tokens(open_raw_tokens(dir.file("neg.npy"), RawKind::Auto, ""), small, true,
                                 dir.file("bad.h5"), false),
               "neg.npy: token id -5 at position 1");
  const ExternalTokenizer one_doc("ext", 5, 4);
  test::write_text(dir.file("has-eod.u16"), raw_ids<std::uint16_t>({1, 4, 2}));
  EXPECT_ERROR(import_raw_tokens(open_raw_tokens(dir.file("has-eod.u16"), RawKind::Raw, "u16"), one_doc,
                                 false, dir.file("bad.h5"), false),
               "token id 4 at position 1 equals the end-of-document id");
  test::write_text(dir.file("empty.u16"), "");
  EXPECT_ERROR(import_raw_tokens(open_raw_tokens(dir.file("empty.u16"), RawKind::Raw, "u16"), small, true,
                                 dir.file("bad.h5"), false),
               "empty.u16: holds no tokens");
  EXPECT_ERROR(ExternalTokenizer("bpe", 10, 1), "reserved");
  EXPECT_ERROR(ExternalTokenizer("x", 10, 10), "end-of-document id 10");
}

}  // namespace
}  // namespace wiola
