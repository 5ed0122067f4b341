// Safetensors by the letter of its format: crafted variants of one valid file,
// each breaking one rule, each refused with a message naming the file, the
// tensor where there is one, and the rule.
#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <string>

#include "core/error.hpp"
#include "io/safetensors.hpp"
#include "io_test_util.hpp"

namespace wiola {
namespace {

// Writes an 8-byte length (given, or the header's own), the header and `data`.
std::string write_raw(test::TempDir& dir, const std::string& header, std::size_t data_bytes,
                      std::uint64_t len = UINT64_MAX) {
  const std::string path = dir.file("t.safetensors");
  std::ofstream out(path, std::ios::binary);
  const std::uint64_t n = len == UINT64_MAX ? header.size() : len;
  out.write(reinterpret_cast<const char*>(&n), sizeof n);
  out.write(header.data(), static_cast<std::streamsize>(header.size()));
  const std::string data(data_bytes, '\0');
  out.write(data.data(), static_cast<std::streamsize>(data.size()));
  return path;
}

// The refusal's message, or "" when the file is accepted.
std::string refusal(const std::string& path) {
  try {
    read_safetensors(path);
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

const std::string kA = R"("a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]})";
const std::string kB = R"("b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]})";
const std::string kMeta = R"("__metadata__":{"format":"pt"})";

void expect_refused(const std::string& path, const std::string& tensor, const std::string& rule) {
  const std::string msg = refusal(path);
  ASSERT_FALSE(msg.empty()) << "accepted: " << path;
  EXPECT_NE(msg.find(path), std::string::npos) << msg;
  if (!tensor.empty()) {
    EXPECT_NE(msg.find("tensor '" + tensor + "'"), std::string::npos) << msg;
  }
  EXPECT_NE(msg.find(rule), std::string::npos) << msg;
}

TEST(SafetensorsRules, TheValidBaseIsAccepted) {
  test::TempDir dir;
  const auto t = read_safetensors(write_raw(dir, "{" + kMeta + "," + kA + "," + kB + "}", 12));
  ASSERT_EQ(t.size(), 2u);
  EXPECT_EQ(t[0].data.size() + t[1].data.size(), 3u);
}

TEST(SafetensorsRules, HeaderLengthBeyondTheFile) {
  test::TempDir dir;
  const std::string h = "{" + kA + "," + kB + "}";
  expect_refused(write_raw(dir, h, 12, h.size() + 13), "", "does not fit the file");
}

TEST(SafetensorsRules, HeaderLengthAboveTheFormatLimit) {
  test::TempDir dir;
  // The file is short, so this also runs past it; check_safetensors_header
  // alone shows the limit is its own rule.
  const std::string h = "{" + kA + "}";
  try {
    check_safetensors_header("x.safetensors", kSafetensorsMaxHeader + 100, kSafetensorsMaxHeader + 1, h);
    FAIL() << "accepted";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("format's limit"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("x.safetensors"), std::string::npos) << e.what();
  }
}

TEST(SafetensorsRules, HeaderNotAJsonObject) {
  test::TempDir dir;
  expect_refused(write_raw(dir, "[1,2,3]", 0), "", "not a JSON object");
}

TEST(SafetensorsRules, DuplicateNames) {
  test::TempDir dir;
  expect_refused(write_raw(dir, "{" + kA + "," + kA + "," + kB + "}", 12), "a", "appears twice");
}

TEST(SafetensorsRules, UnknownDtype) {
  test::TempDir dir;
  const std::string b = R"("b":{"dtype":"Q7","shape":[1],"data_offsets":[8,12]})";
  expect_refused(write_raw(dir, "{" + kA + "," + b + "}", 12), "b", "dtype 'Q7'");
}

TEST(SafetensorsRules, ShapeProductOverflows64Bits) {
  test::TempDir dir;
  // 2^32 * 2^32 wraps to 0, which would otherwise match the 0 bytes given.
  const std::string b =
      R"("b":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[8,8]})";
  expect_refused(write_raw(dir, "{" + kA + "," + b + "}", 8), "b", "overflows 64 bits");
}

TEST(SafetensorsRules, OffsetsOverlap) {
  test::TempDir dir;
  const std::string b = R"("b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]})";
  expect_refused(write_raw(dir, "{" + kA + "," + b + "}", 8), "b", "overlap");
}

TEST(SafetensorsRules, OffsetsLeaveAGap) {
  test::TempDir dir;
  const std::string b = R"("b":{"dtype":"F32","shape":[1],"data_offsets":[12,16]})";
  expect_refused(write_raw(dir, "{" + kA + "," + b + "}", 16), "b", "gap");
}

TEST(SafetensorsRules, TrailingDataNoTensorClaims) {
  test::TempDir dir;
  expect_refused(write_raw(dir, "{" + kA + "," + kB + "}", 20), "", "unaccounted");
}

TEST(SafetensorsRules, OffsetsRunPastTheData) {
  test::TempDir dir;
  const std::string b = R"("b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]})";
  expect_refused(write_raw(dir, "{" + kA + "," + b + "}", 10), "b", "runs past");
}

TEST(SafetensorsRules, ByteCountNotDtypeSizeTimesElements) {
  test::TempDir dir;
  const std::string b = R"("b":{"dtype":"F32","shape":[2],"data_offsets":[8,12]})";
  expect_refused(write_raw(dir, "{" + kA + "," + b + "}", 12), "b", "dtype size x elements");
}

TEST(SafetensorsRules, NonStringMetadataValue) {
  test::TempDir dir;
  const std::string m = R"("__metadata__":{"format":"pt","step":3})";
  expect_refused(write_raw(dir, "{" + m + "," + kA + "," + kB + "}", 12), "",
                 "__metadata__ value 'step' is not a string");
}

TEST(HfConfigRules, AModelTypeOfTheWrongJsonTypeIsRefusedByName) {
  test::TempDir dir;
  const std::string path = dir.file("config.json");
  std::ofstream(path) << R"({"model_type": 7, "hidden_size": 64})";
  try {
    read_hf_config(path);
    FAIL() << "accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("model_type"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace wiola
