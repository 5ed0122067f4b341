// The shared text helpers: comma lists, clock-style durations, whole files.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>

#include "core/error.hpp"
#include "core/text.hpp"

namespace wiola {
namespace {

using Items = std::vector<std::string>;

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(SplitList, TrimsAndKeepsEmptyItems) {
  EXPECT_EQ(split_list("7,7,7,7"), (Items{"7", "7", "7", "7"}));
  EXPECT_EQ(split_list(" 8, 7 ,\t7,6 "), (Items{"8", "7", "7", "6"}));
  EXPECT_EQ(split_list("a.h5"), (Items{"a.h5"}));
  EXPECT_EQ(split_list("7,,7"), (Items{"7", "", "7"}));
  EXPECT_EQ(split_list("0.7,"), (Items{"0.7", ""}));
  EXPECT_EQ(split_list(""), (Items{""}));
  EXPECT_EQ(split_list(" "), (Items{""}));
}

TEST(DurationText, MinutesThenHours) {
  EXPECT_EQ(duration_text(0), "0:00");
  EXPECT_EQ(duration_text(4.4), "0:04");
  EXPECT_EQ(duration_text(59.5), "1:00");
  EXPECT_EQ(duration_text(245), "4:05");
  EXPECT_EQ(duration_text(3599.4), "59:59");
  EXPECT_EQ(duration_text(3600), "1:00:00");
  EXPECT_EQ(duration_text(3723), "1:02:03");
  EXPECT_EQ(duration_text(100 * 3600.0 + 61), "100:01:01");
}

TEST(ReadTextFile, WholeFileOrAnErrorNamingThePath) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path();
  const std::string path = (dir / "wiola_text_test.txt").string();
  const std::string text("line one\nline two\0 and a NUL\n", 30);
  {
    std::ofstream out(path, std::ios::binary);
    out << text;
  }
  EXPECT_EQ(read_text_file(path), text);
  EXPECT_EQ(try_read_text_file(path), text);
  std::filesystem::remove(path);

  const std::string missing = (dir / "wiola_no_such_file.txt").string();
  EXPECT_EQ(error_of([&] { read_text_file(missing, "the tokenizer file"); }),
            missing + ": cannot read the tokenizer file (No such file or directory)");
  EXPECT_FALSE(try_read_text_file(missing).has_value());
  EXPECT_NE(error_of([&] { read_text_file(dir.string()); }).find("it is a directory"),
            std::string::npos);
}

TEST(Text, PrintableEscapesWhatIsNotText) {
  EXPECT_EQ(printable("preset = wiola-mini"), "preset = wiola-mini");
  EXPECT_EQ(printable("caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80"), "caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80");
  EXPECT_EQ(printable(std::string("\x7F" "ELF\x02\0\x1B[2J", 10)), "\\x7fELF\\x02\\x00\\x1b[2J");
  EXPECT_EQ(printable("a\tb\nc"), "a\\x09b\\x0ac");
  // Bytes that are not UTF-8: a lone continuation, an overlong form, a
  // surrogate, a truncated sequence, C1 controls.
  EXPECT_EQ(printable("\x80"), "\\x80");
  EXPECT_EQ(printable("\xC0\xAF"), "\\xc0\\xaf");
  EXPECT_EQ(printable("\xED\xA0\x80"), "\\xed\\xa0\\x80");
  EXPECT_EQ(printable("\xE2\x82"), "\\xe2\\x82");
  EXPECT_EQ(printable("\xC2\x85"), "\\xc2\\x85");
  EXPECT_EQ(printable_lines("one\x1B\ntwo\n"), "one\\x1b\ntwo\n");
}

}  // namespace
}  // namespace wiola
