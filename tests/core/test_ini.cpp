// The INI dialect of every wiola config file (core/ini.hpp): comment lines
// with '#' or ';', no comments after values, no sections, errors naming the
// origin, the line and the key.
#include <gtest/gtest.h>

#include <boost/program_options.hpp>
#include <chrono>
#include <cstdlib>
#include <functional>
#include <future>

#include "core/error.hpp"
#include "core/ini.hpp"

namespace po = boost::program_options;

namespace wiola {
namespace {

struct Parsed {
  std::string preset, path;
  int steps = 0;
};

po::options_description options(Parsed& p) {
  po::options_description d("test");
  d.add_options()("preset", po::value(&p.preset))("steps", po::value(&p.steps))(
      "save", po::value(&p.path));
  return d;
}

Parsed parse(const std::string& text) {
  Parsed p;
  const po::options_description d = options(p);
  po::variables_map vm;
  store_ini(text, "run.ini", d, vm);
  po::notify(vm);
  return p;
}

std::string error_of(const std::string& text) {
  try {
    parse(text);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(Ini, CommentLinesAndBlanks) {
  const Parsed p = parse(
      "# a comment\n"
      "; another comment\n"
      "   # an indented one\n"
      "\n"
      "preset = wiola-mini\r\n"
      "  steps=7  \n"
      "save = runs/a;b\n");
  EXPECT_EQ(p.preset, "wiola-mini");
  EXPECT_EQ(p.steps, 7);
  EXPECT_EQ(p.path, "runs/a;b");  // a ';' inside a word is part of the value
}

TEST(Ini, ACommentAfterAValueIsRefused) {
  EXPECT_EQ(error_of("steps = 3\npreset = x ; comment\n"),
            "run.ini:2: option 'preset': '; comment' after the value looks like a comment; "
            "comments go on lines of their own");
  EXPECT_EQ(error_of("preset = x # comment\n"),
            "run.ini:1: option 'preset': '# comment' after the value looks like a comment; "
            "comments go on lines of their own");
  EXPECT_NE(error_of("save = a#b\n").find("run.ini:1: option 'save': '#b'"), std::string::npos);
  EXPECT_NE(error_of("steps =\t;3\n").find("run.ini:1: option 'steps'"), std::string::npos);
}

TEST(Ini, SectionsAreRefused) {
  EXPECT_EQ(error_of("[model]\npreset = x\n"),
            "run.ini:1: section headers ('[model]') are not supported: a config file is flat "
            "'option = value' lines");
}

TEST(Ini, ErrorsNameTheLine) {
  EXPECT_EQ(error_of("preset = x\nwarp = 9\n"), "run.ini:2: unrecognised option 'warp'");
  EXPECT_EQ(error_of("preset\n"), "run.ini:1: expected 'option = value', found 'preset'");
  EXPECT_EQ(error_of(" = 3\n"), "run.ini:1: no option name before '='");
  EXPECT_NE(error_of("preset = x\n\nsteps = lots\n").find("run.ini:3: "), std::string::npos);
  EXPECT_NE(error_of("preset = x\n\nsteps = lots\n").find("'lots'"), std::string::npos);
}

// Boost fills "%value%" in its messages until none is left; a value holding
// that placeholder made the report loop forever. A hang is the failure here:
// after 20 s the test fails and the process exits.
TEST(Ini, APlaceholderInAValueIsReported) {
  for (const std::string value : {"%value%", "%canonical_option%", "1%"}) {
    auto report = std::async(std::launch::async, [&] { return error_of("steps = " + value + "\n"); });
    if (report.wait_for(std::chrono::seconds(20)) != std::future_status::ready) {
      ADD_FAILURE() << "the error for 'steps = " << value << "' never came back";
      std::_Exit(1);
    }
    EXPECT_EQ(report.get(),
              "run.ini:1: the argument ('" + value + "') for option 'steps' is invalid");
  }
}

TEST(Ini, ValuesAlreadyStoredWin) {
  Parsed p;
  const po::options_description d = options(p);
  po::variables_map vm;
  const char* argv[] = {"tool", "--steps", "5"};
  po::store(po::parse_command_line(3, argv, d), vm);
  store_ini("steps = 7\npreset = y\n", "run.ini", d, vm);
  po::notify(vm);
  EXPECT_EQ(p.steps, 5);
  EXPECT_EQ(p.preset, "y");
}

}  // namespace
}  // namespace wiola
