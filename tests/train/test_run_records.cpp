// What a user sees around a run: the --metrics JSON Lines file (every logged
// step, validation, checkpoints, a resumed run appending), --dry-run, the
// report of a one-step run, the start-up data summary, and numbers printed as
// a person writes them (3e-4, not 0.00029999999999999997).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "comm/mpi_communicator.hpp"
#include "core/error.hpp"
#include "core/text.hpp"
#include "core/version.hpp"
#include "train/data_summary.hpp"
#include "train/options.hpp"
#include "io/output_paths.hpp"
#include "train/trainer.hpp"

extern wiola::comm::MpiRuntime* g_mpi;

namespace wiola {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

struct Scratch {
  fs::path dir;
  explicit Scratch(const std::string& name) : dir(fs::path(::testing::TempDir()) / name) {
    fs::remove_all(dir);
    fs::create_directories(dir);
  }
  ~Scratch() { fs::remove_all(dir); }
  std::string file(const std::string& name) const { return (dir / name).string(); }
};

TrainOptions tiny(int steps) {
  TrainOptions o;
  o.model.config = preset("wiola-tiny");
  o.data.train_files = {WIOLA_EMBEDDED_TRAIN_FILE};
  o.data.val_files = {WIOLA_EMBEDDED_VAL_FILE};
  o.parallel.micro_batch = 4;
  o.parallel.global_batch = 8;
  o.optimizer.steps = steps;
  o.logging.eval_batches = 2;
  o.optimizer.lr = 1e-3;
  return o;
}

// Every line must be one JSON object.
std::vector<json> read_records(const std::string& path) {
  std::ifstream in(path);
  std::vector<json> out;
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    ++n;
    json j;
    EXPECT_NO_THROW(j = json::parse(line)) << path << ":" << n << ": " << line;
    EXPECT_TRUE(j.is_object()) << path << ":" << n;
    EXPECT_TRUE(j.contains("type") && j.contains("time")) << path << ":" << n;
    out.push_back(j);
  }
  return out;
}

std::vector<json> of_type(const std::vector<json>& all, const std::string& type) {
  std::vector<json> out;
  for (const json& j : all)
    if (j["type"] == type) out.push_back(j);
  return out;
}

TEST(Metrics, EveryLoggedStepValidationAndCheckpointInOrder) {
  Scratch s("wiola_metrics_records");
  TrainOptions o = tiny(6);
  o.logging.log_interval = 2;
  o.logging.eval_interval = 3;
  o.checkpoint.save_dir = s.file("ckpt");
  o.checkpoint.save_interval = 3;
  o.logging.metrics_file = s.file("sub/dir/metrics.jsonl");  // missing folders are created
  std::ostringstream log;
  const TrainSummary sum = train(o, g_mpi->world(), g_mpi->host(), log);
  const std::vector<json> r = read_records(o.logging.metrics_file);
  ASSERT_FALSE(r.empty());

  const json& c = r.front();
  EXPECT_EQ(c["type"], "config");
  EXPECT_EQ(c["version"], code_version());
  EXPECT_EQ(c["first_step"], 1);
  EXPECT_TRUE(c["resumed_from"].is_null());
  EXPECT_EQ(c["total_steps"], 6);
  EXPECT_EQ(c["tokens_per_step"], 8 * 16);
  EXPECT_EQ(c["model"]["d"], 16);
  EXPECT_EQ(c["model"]["preset"], "wiola-tiny");
  EXPECT_EQ(c["options"]["lr"], "0.001");
  EXPECT_EQ(c["layout"]["pp"], 1);
  EXPECT_GT(c["params"].get<std::int64_t>(), 0);
  EXPECT_GT(c["data"]["train_tokens"].get<std::int64_t>(), 800000);
  EXPECT_EQ(c["data"]["train_files"][0], WIOLA_EMBEDDED_TRAIN_FILE);

  // Logged: the first step, every log_interval-th and the last.
  const std::vector<json> steps = of_type(r, "step");
  std::vector<int> logged;
  for (const json& j : steps) logged.push_back(j["step"].get<int>());
  EXPECT_EQ(logged, (std::vector<int>{1, 2, 4, 6}));
  for (const json& j : steps) {
    const int step = j["step"].get<int>();
    EXPECT_EQ(j["tokens"].get<std::int64_t>(), std::int64_t(step) * 8 * 16);
    // Full precision: exactly the trainer's double.
    EXPECT_EQ(j["step_loss"].get<double>(), sum.losses[std::size_t(step - 1)]) << step;
    EXPECT_GT(j["tokens_per_s"].get<double>(), 0.0);
    EXPECT_GT(j["flops_per_s"].get<double>(), 0.0);
    EXPECT_GT(j["grad_norm"].get<double>(), 0.0);
    EXPECT_TRUE(j.contains("lr"));
  }
  // The loss is the log line's: the mean over the steps since the previous record.
  EXPECT_EQ(steps[2]["window_steps"], 2);
  EXPECT_DOUBLE_EQ(steps[2]["loss"].get<double>(), (sum.losses[2] + sum.losses[3]) / 2);

  const std::vector<json> val = of_type(r, "validation");
  ASSERT_EQ(val.size(), 2u);
  EXPECT_EQ(val[0]["step"], 3);
  EXPECT_EQ(val[1]["step"], 6);
  EXPECT_EQ(val[1]["val_loss"].get<double>(), sum.last_val_loss);
  EXPECT_NEAR(val[1]["val_perplexity"].get<double>(), std::exp(sum.last_val_loss), 1e-9);

  const std::vector<json> ck = of_type(r, "checkpoint");
  ASSERT_EQ(ck.size(), 2u);
  EXPECT_EQ(ck[0]["step"], 3);
  EXPECT_EQ(ck[1]["path"], sum.last_checkpoint);
  EXPECT_GT(ck[1]["bytes"].get<std::int64_t>(), 10000);
  EXPECT_GE(ck[1]["seconds"].get<double>(), 0.0);
  EXPECT_EQ(ck[1]["tokens"], 6 * 8 * 16);

  // Records come in the order things happened.
  for (std::size_t i = 1; i < r.size(); ++i)
    EXPECT_GE(r[i]["time"].get<double>(), r[i - 1]["time"].get<double>());

  // The log line carries tokens seen and the loss to 6 decimals.
  EXPECT_NE(log.str().find("step      6/6 | tokens 768 | loss "), std::string::npos) << log.str();
  char six[32];
  std::snprintf(six, sizeof six, "loss %.6f |", (sum.losses[4] + sum.losses[5]) / 2);
  EXPECT_NE(log.str().find(six), std::string::npos) << log.str();
}

TEST(Metrics, AResumedRunAppendsToTheSameFile) {
  Scratch s("wiola_metrics_resume");
  TrainOptions o = tiny(6);
  o.logging.log_interval = 1;
  o.logging.eval_interval = 0;
  o.checkpoint.save_dir = s.file("ckpt");
  o.checkpoint.exit_after_step = 3;
  o.logging.metrics_file = s.file("metrics.jsonl");
  std::ostringstream log;
  train(o, g_mpi->world(), g_mpi->host(), log);
  const std::size_t first_lines = read_records(o.logging.metrics_file).size();

  o.checkpoint.exit_after_step = 0;
  o.checkpoint.resume = ResumeFrom::parse("auto");
  train(o, g_mpi->world(), g_mpi->host(), log);
  const std::vector<json> r = read_records(o.logging.metrics_file);
  ASSERT_GT(r.size(), first_lines);
  const std::vector<json> configs = of_type(r, "config");
  ASSERT_EQ(configs.size(), 2u);
  EXPECT_EQ(configs[1]["first_step"], 4);
  EXPECT_EQ(configs[1]["resumed_from"], s.file("ckpt/step-00000003"));
  std::vector<int> logged;
  for (const json& j : of_type(r, "step")) logged.push_back(j["step"].get<int>());
  EXPECT_EQ(logged, (std::vector<int>{1, 2, 3, 4, 5, 6}));
  // Tokens seen count the resumed run's earlier steps.
  EXPECT_EQ(of_type(r, "step").back()["tokens"], 6 * 8 * 16);
}

TEST(Metrics, AnUnwritablePathIsRefusedBeforeTheFirstStep) {
  Scratch s("wiola_metrics_refused");
  TrainOptions o = tiny(2);
  o.logging.metrics_file = s.dir.string();  // a directory
  std::ostringstream log;
  EXPECT_THROW(train(o, g_mpi->world(), g_mpi->host(), log), Error);
  EXPECT_EQ(log.str().find("step "), std::string::npos) << log.str();
  std::ofstream(s.file("plain")) << "x";
  EXPECT_THROW(require_appendable_file(s.file("plain/metrics.jsonl"), "--metrics"), Error);
  EXPECT_NO_THROW(require_appendable_file(s.file("new/folder/metrics.jsonl"), "--metrics"));
  EXPECT_FALSE(fs::exists(s.file("new")));  // checking creates nothing
}

TEST(DryRun, ChecksPrintsThePlanAndTrainsNothing) {
  Scratch s("wiola_dry_run");
  TrainOptions o = tiny(5);
  o.dry_run = true;
  o.checkpoint.save_dir = s.file("ckpt");
  o.logging.metrics_file = s.file("metrics.jsonl");
  std::ostringstream log;
  const TrainSummary sum = train(o, g_mpi->world(), g_mpi->host(), log);
  EXPECT_EQ(sum.steps, 0);
  EXPECT_TRUE(sum.losses.empty());
  EXPECT_NE(log.str().find("memory estimate of stage 0"), std::string::npos) << log.str();
  EXPECT_NE(log.str().find("data: training"), std::string::npos) << log.str();
  EXPECT_NE(log.str().find("dry run:"), std::string::npos) << log.str();
  EXPECT_FALSE(fs::exists(o.logging.metrics_file));
  EXPECT_FALSE(fs::exists(o.checkpoint.save_dir));

  TrainOptions bad = tiny(5);
  bad.dry_run = true;
  bad.data.train_files = {s.file("missing.h5")};
  EXPECT_THROW(train(bad, g_mpi->world(), g_mpi->host(), log), Error);
}

TEST(Report, AOneStepRunReportsThatStep) {
  TrainOptions o = tiny(1);
  std::ostringstream log;
  const TrainSummary sum = train(o, g_mpi->world(), g_mpi->host(), log);
  EXPECT_GT(sum.tokens_per_second, 0.0);
  ASSERT_EQ(sum.stage_times.size(), 1u);
  EXPECT_GT(sum.stage_times[0].step, 0.0);
  EXPECT_NE(log.str().find("per-stage time of step 1, the only one"), std::string::npos)
      << log.str();
  EXPECT_EQ(log.str().find("steps 2..1"), std::string::npos) << log.str();
  EXPECT_EQ(log.str().find("throughput 0 tokens/s"), std::string::npos) << log.str();
}

TEST(Report, StartUpSaysWhatDataWasLoadedAndHowManyEpochsTheBudgetCovers) {
  DataSummary d;
  d.train_files = {"a.h5", "b.h5", "c.h5", "d.h5"};
  d.train_tokens = 1000000;
  d.train_windows = 7812;
  d.budget_tokens = 2500000;
  d.val_files = {"v.h5"};
  d.val_tokens = 5000;
  d.val_windows = 39;
  EXPECT_DOUBLE_EQ(d.epochs(), 2.5);
  const std::string text = d.describe();
  EXPECT_NE(text.find("training 1,000,000 tokens (7,812 windows) in 4 files: a.h5, b.h5, c.h5, … (1 more)"),
            std::string::npos) << text;
  EXPECT_NE(text.find("validation 5,000 tokens (39 windows) in 1 file: v.h5"), std::string::npos) << text;
  EXPECT_NE(text.find("covers 2.5 epochs"), std::string::npos) << text;
  EXPECT_EQ(si_count(1536000), "1.536M");
  EXPECT_EQ(si_count(512), "512");
}

TEST(NumberText, DefaultsAndRecordedValuesAreShortAndExact) {
  for (double v : {3e-4, 0.05, 0.1, 1e-8, 1e-6, 0.95, 10000.0, 300.0, 0.0, 2.5e20, 1.0 / 3})
    EXPECT_EQ(std::stod(shortest_real(v)), v) << shortest_real(v);
  EXPECT_EQ(shortest_real(3e-4), "3e-4");
  EXPECT_EQ(shortest_real(0.05), "0.05");
  EXPECT_EQ(shortest_real(10000.0), "10000");
  EXPECT_EQ(shortest_real(1e-8), "1e-8");
  EXPECT_EQ(shortest_real(2.5e20), "2.5e20");

  std::ostringstream help;
  const char* argv[] = {"wiola-train", "--help"};
  EXPECT_FALSE(parse_train_options(2, argv, help).has_value());
  EXPECT_NE(help.str().find("--lr arg (=3e-4)"), std::string::npos) << help.str();
  EXPECT_NE(help.str().find("(=1e-8)"), std::string::npos);
  EXPECT_EQ(help.str().find("0000000"), std::string::npos) << help.str();

  TrainOptions o = tiny(3);
  o.model.config.a_s = 0.1;
  const std::string ini = to_ini(o);
  EXPECT_NE(ini.find("lr = 0.001\n"), std::string::npos) << ini;
  EXPECT_NE(ini.find("a-s = 0.1\n"), std::string::npos) << ini;
  EXPECT_NE(ini.find("adam-eps = 1e-8\n"), std::string::npos) << ini;
  EXPECT_EQ(ini.find("0000000"), std::string::npos) << ini;
  EXPECT_EQ(options_from_ini(ini).optimizer.lr, o.optimizer.lr);
  EXPECT_EQ(options_from_ini(ini).model.config.a_s, o.model.config.a_s);

  std::ostringstream version;
  const char* vargv[] = {"wiola-train", "--version"};
  EXPECT_FALSE(parse_train_options(2, vargv, version).has_value());
  EXPECT_EQ(version.str(), "wiola-train: " + code_version() + "\n");
}

}  // namespace
}  // namespace wiola
