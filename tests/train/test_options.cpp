// wiola-train's options: presets with overrides, the config file, the
// command line winning over it, and the derived budget.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include "core/error.hpp"
#include "core/model_fields.hpp"
#include "train/options.hpp"

namespace wiola {
namespace {

TrainOptions parse(std::vector<std::string> args) {
  args.insert(args.begin(), "wiola-train");
  std::vector<const char*> argv;
  for (auto& a : args) argv.push_back(a.c_str());
  std::ostringstream out;
  auto o = parse_train_options(static_cast<int>(argv.size()), argv.data(), out);
  if (!o) throw std::runtime_error("help requested");
  return *o;
}

TEST(Options, PresetWithOverrides) {
  const TrainOptions o = parse({"--preset", "wiola-1.5b", "--layers", "4", "--atm", "off",
                                "--summary", "sequence", "--tau", "0.5"});
  EXPECT_EQ(o.model.config.d, 2048);
  EXPECT_EQ(o.model.config.L, 4);
  EXPECT_EQ(o.model.config.atm, AtmMode::Off);
  EXPECT_EQ(o.model.config.summary, SummaryMode::Sequence);
  EXPECT_DOUBLE_EQ(o.model.config.tau, 0.5);
  EXPECT_FALSE(o.model.vocab_explicit);
}

TEST(Options, ConfigFileAndCommandLineWins) {
  const std::string path = ::testing::TempDir() + "wiola_options_test.ini";
  {
    std::ofstream f(path);
    f << "# a comment\npreset = wiola-small\nmicro-batch = 2\nglobal-batch = 8\nlr = 0.001\n"
         "pp = 2\ndp = 2\nzero = 1\nschedule = gpipe\nsteps = 7\n";
  }
  const TrainOptions o = parse({"--config", path, "--lr", "0.002", "--global-batch", "16"});
  EXPECT_EQ(o.model.config.d, 128);
  EXPECT_EQ(o.parallel.micro_batch, 2);
  EXPECT_EQ(o.parallel.global_batch, 16);   // command line
  EXPECT_DOUBLE_EQ(o.optimizer.lr, 0.002);  // command line
  EXPECT_EQ(o.parallel.pp, 2);
  EXPECT_EQ(o.parallel.zero, 1);
  EXPECT_EQ(o.parallel.schedule, pipeline::ScheduleKind::GPipe);
  EXPECT_EQ(o.total_steps(), 7);
  std::remove(path.c_str());
}

TEST(Options, BadConfigFileLineIsNamed) {
  const std::string path = ::testing::TempDir() + "wiola_options_bad.ini";
  {
    std::ofstream f(path);
    f << "preset = wiola-mini\nwarp = 9\n";
  }
  try {
    parse({"--config", path});
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("warp"), std::string::npos) << e.what();
  }
  std::remove(path.c_str());
}

TEST(Options, RecordedConfigurationReadsBack) {
  // Every model field away from the preset, through to_ini and back.
  const TrainOptions o = parse({"--preset", "wiola-small", "--d", "96", "--layers", "3",
                                "--heads", "6", "--kv-heads", "3", "--dsff-a", "80",
                                "--dsff-b", "200", "--vocab", "300", "--seq-len", "48",
                                "--theta0", "5000", "--k-s", "6.5", "--a-s", "0.3",
                                "--f-s", "0.07", "--tau", "0.81", "--lambda", "3",
                                "--norm-eps", "1e-5", "--summary", "sequence", "--atm", "paper",
                                "--init-std", "0.03", "--steps", "5"});
  const TrainOptions back = options_from_ini(to_ini(o));
  EXPECT_EQ(back.model.config.preset, "wiola-small");
  EXPECT_EQ(model_differences(o.model.config, back.model.config, FieldSet::All), "");
  EXPECT_EQ(
      model_differences(o.model.config, preset("wiola-small"), FieldSet::Shape),
      "d 96 vs 128, L 3 vs 6, H 6 vs 4, Hkv 3 vs 2, dA 80 vs 128, dB 200 vs 512, V 300 vs 257");
  EXPECT_TRUE(back.model.vocab_explicit);
  EXPECT_EQ(to_ini(back), to_ini(o));
}

TEST(Options, ArchitectureSwitchOnAPresetAndThroughTheRecordedConfiguration) {
  const TrainOptions o = parse({"--preset", "wiola-mini", "--arch", "wiola13m", "--dff", "200",
                                "--alpha", "0.5", "--gate", "post"});
  EXPECT_EQ(o.model.config.arch, Arch::Wiola13m);
  EXPECT_EQ(o.model.config.d, 64);
  EXPECT_EQ(o.model.config.dff, 200);
  EXPECT_EQ(o.model.config.gate, GateSource::Post);
  EXPECT_DOUBLE_EQ(o.model.config.alpha, 0.5);
  const TrainOptions back = options_from_ini(to_ini(o));
  EXPECT_EQ(back.model.config.arch, Arch::Wiola13m);
  EXPECT_EQ(model_differences(o.model.config, back.model.config, FieldSet::All), "");
  EXPECT_EQ(to_ini(back), to_ini(o));
  // The family's preset, and the main family by default.
  EXPECT_EQ(parse({"--preset", "wiola-13m"}).model.config.arch, Arch::Wiola13m);
  EXPECT_EQ(parse({}).model.config.arch, Arch::Wiola);
  EXPECT_THROW(parse({"--arch", "wiola7"}), Error);
  EXPECT_THROW(parse({"--gate", "middle"}), Error);
}

TEST(Options, ConfigFileDialect) {
  const std::string path = ::testing::TempDir() + "wiola_options_dialect.ini";
  auto write = [&](const std::string& text) {
    std::ofstream f(path);
    f << text;
  };
  write("; a comment\n# another\npreset = wiola-small\n");
  EXPECT_EQ(parse({"--config", path}).model.config.d, 128);
  auto error = [&](const std::string& text) -> std::string {
    write(text);
    try {
      parse({"--config", path});
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  };
  // Before, this read the preset 'wiola-small ; the small one'.
  const std::string inline_comment = error("preset = wiola-small ; the small one\n");
  EXPECT_NE(inline_comment.find("--config " + path + ":1: option 'preset'"), std::string::npos)
      << inline_comment;
  const std::string section = error("[model]\npreset = wiola-small\n");
  EXPECT_NE(section.find(path + ":1: section headers"), std::string::npos) << section;
  const std::string unknown = error("preset = wiola-small\n\nwarp = 9\n");
  EXPECT_NE(unknown.find(path + ":3: unrecognised option 'warp'"), std::string::npos) << unknown;
  std::remove(path.c_str());
}

TEST(Options, ChinchillaBudgetUsesTheExactCount) {
  TrainOptions o = parse({"--preset", "wiola-1.5b", "--train-tokens", "chinchilla",
                          "--global-batch", "512", "--micro-batch", "1"});
  EXPECT_EQ(o.resolved_train_tokens(), 20 * param_count(o.model.config));
  EXPECT_EQ(o.total_steps(), (20 * param_count(o.model.config) + 512 * 2048 - 1) / (512 * 2048));
}

TEST(Options, CrossFieldErrorsNameTheFlags) {
  auto error = [](std::vector<std::string> args) -> std::string {
    try {
      parse(args).validate();
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_NE(error({"--steps", "1", "--global-batch", "6", "--micro-batch", "4"}).find("--global-batch 6"),
            std::string::npos);
  EXPECT_NE(error({"--steps", "1", "--zero", "3"}).find("--zero"), std::string::npos);
  EXPECT_NE(error({"--steps", "1", "--schedule", "zigzag"}).find("--schedule"), std::string::npos);
  EXPECT_NE(error({"--steps", "1", "--dtype", "fp16"}).find("fp16"), std::string::npos);
  EXPECT_NE(error({"--steps", "1", "--min-lr", "1"}).find("--min-lr"), std::string::npos);
  // The schedule's shape: chunks only when interleaved, interleaved needs two
  // chunks, two stages, micro-batches a multiple of the stages, enough layers.
  EXPECT_NE(error({"--steps", "1", "--virtual-stages", "2"}).find("needs --schedule interleaved"),
            std::string::npos);
  EXPECT_NE(error({"--steps", "1", "--pp", "2", "--schedule", "interleaved"})
                .find("--virtual-stages of at least 2"),
            std::string::npos);
  EXPECT_NE(error({"--steps", "1", "--pp", "2", "--schedule", "interleaved", "--virtual-stages",
                   "2", "--global-batch", "12", "--micro-batch", "4"})
                .find("multiple of the pipeline stages"),
            std::string::npos);
  EXPECT_NE(error({"--steps", "1", "--pp", "2", "--schedule", "interleaved", "--virtual-stages",
                   "3", "--layers", "4"})
                .find("--pp 2 × --virtual-stages 3 = 6 chunks"),
            std::string::npos);
  EXPECT_EQ(error({"--steps", "1", "--pp", "2", "--schedule", "interleaved", "--virtual-stages",
                   "2", "--layers", "4"}),
            "");
  EXPECT_EQ(parse({"--schedule", "zb-h2"}).parallel.schedule, pipeline::ScheduleKind::ZbH2);
}

// Every numeric option has a range; NaN and infinity are refused by name, and
// the message leads with the option the user got wrong (not one derived from it).
TEST(Options, EveryNumericOptionIsRangeChecked) {
  auto error = [](std::vector<std::string> args) -> std::string {
    if (args[0] != "--steps") args.insert(args.end(), {"--steps", "1"});
    try {
      parse(args).validate();
    } catch (const Error& e) {
      return e.what();
    }
    return "(accepted)";
  };
  const char* reals[] = {"theta0", "k-s", "a-s", "f-s", "tau", "norm-eps", "init-std",
                         "val-fraction", "lr", "min-lr", "warmup-frac", "weight-decay",
                         "beta1", "beta2", "adam-eps", "clip", "save-minutes", "comm-timeout"};
  for (const char* flag : reals)
    for (const char* bad : {"nan", "inf", "-inf"}) {
      const std::string msg = error({std::string("--") + flag, bad});
      EXPECT_EQ(msg.rfind(std::string("--") + flag + " " + bad + " is not a finite number", 0), 0u)
          << flag << " " << bad << ": " << msg;
    }
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--lr", "1e30"}, "--lr 1e+30 must be in [0, 1]"},
      {{"--lr", "-1"}, "--lr -1 must be in [0, 1]"},
      {{"--lr", "0.001", "--min-lr", "0.01"}, "--min-lr 0.01 must be in [0, 0.001]"},
      {{"--tau", "1.5"}, "--tau 1.5 must be in [-1, 1]"},
      {{"--a-s", "1"}, "--a-s 1 must be in (-1, 1)"},
      {{"--theta0", "1"}, "--theta0 1 must be in (1, "},
      {{"--threads", "-1"}, "--threads -1 must be in [0, 4096]"},
      {{"--comm-timeout", "-5"}, "--comm-timeout -5 must be in [0, 604800]"},
      {{"--micro-batch", "0"}, "--micro-batch 0 must be >= 1"},
      {{"--global-batch", "-4"}, "--global-batch -4 must be >= 1"},
      {{"--steps", "-5"}, "--steps -5 must be >= 0"},
      {{"--prefetch", "-1"}, "--prefetch -1 must be in [0, 1024]"},
      {{"--beta2", "1"}, "--beta2 1 must be in [0, 1)"},
      {{"--adam-eps", "0"}, "--adam-eps 0 must be in (0, 1]"},
      {{"--weight-decay", "-0.1"}, "--weight-decay -0.1 must be in [0, 1]"},
      {{"--keep", "-1"}, "--keep -1 must be >= 0"},
      {{"--save-interval", "-1"}, "--save-interval -1 must be >= 0"},
      {{"--log-interval", "0"}, "--log-interval 0 must be >= 1"},
      {{"--eval-batches", "0"}, "--eval-batches 0 must be >= 1"},
      {{"--max-nonfinite-steps", "0"}, "--max-nonfinite-steps 0 must be in [1, "},
      {{"--zero", "3"}, "--zero 3 must be in [0, 2]"},
      {{"--pp", "0"}, "--pp 0 must be >= 1"},
      {{"--layers", "0"}, "--layers 0 must be >= 1"},
      {{"--lambda", "9"}, "--lambda 9 must be in [1, 8]"},
      {{"--val-fraction", "1"}, "--val-fraction 1 must be in [0, 1)"},
  };
  for (const auto& [args, want] : cases) {
    const std::string msg = error(args);
    EXPECT_EQ(msg.rfind(want, 0), 0u) << args[0] << " " << args[1] << ": " << msg;
  }
}

TEST(Options, HelpListsTheGroups) {
  const char* argv[] = {"wiola-train", "--help"};
  std::ostringstream out;
  EXPECT_FALSE(parse_train_options(2, argv, out).has_value());
  for (const char* group : {"General", "Model", "Data", "Training", "Parallelism"})
    EXPECT_NE(out.str().find(group), std::string::npos) << group;
}

}  // namespace
}  // namespace wiola
