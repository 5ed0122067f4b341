// The profiler's building blocks without a training run: JSON files (round
// trips and errors), the INI spec reader, the timeline of a simulated step
// through the trace checker, projection specs, sweep points and the tool's flags.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <sstream>
#include <tuple>

#include "model/flops.hpp"
#include "profile/peak.hpp"
#include "profile/trace.hpp"
#include "trace_check.hpp"
#include "wiola-profile/files.hpp"
#include "wiola-profile/projection.hpp"
#include "wiola-profile/report.hpp"
#include "wiola-profile/spec_file.hpp"
#include "wiola-profile/sweep.hpp"
#include "wiola-profile/tool_options.hpp"

namespace wiola::profile {
namespace {

std::string write_temp(const std::string& name, const std::string& text) {
  const auto path = std::filesystem::temp_directory_path() / name;
  write_text_file(path.string(), text);
  return path.string();
}

TEST(JsonFiles, RoundTripValuesAndKeepKeyOrder) {
  const Json j = {{"b", 1.5},
                  {"a", "x\"y\n\x01"},
                  {"list", {1, true, nullptr}},
                  {"big", 2179698716LL},
                  {"tiny", 5.6095e-07}};
  const std::string path = write_temp("wiola-profile-test.json", j.dump(2));
  const Json back = read_json_file(path);
  EXPECT_EQ(back.begin().key(), "b");
  EXPECT_EQ(back.at("a").get<std::string>(), "x\"y\n\x01");
  EXPECT_EQ(back.at("big").get<long long>(), 2179698716LL);
  EXPECT_EQ(back.at("tiny").get<double>(), 5.6095e-07);
  EXPECT_TRUE(back.at("list")[1].get<bool>());
  EXPECT_TRUE(back.at("list")[2].is_null());
  EXPECT_EQ(Json::parse(j.dump()).dump(), j.dump());
  EXPECT_EQ(Json::parse(R"("\u00e9\ud83d\ude00")").get<std::string>(), "\xc3\xa9\xf0\x9f\x98\x80");
  std::filesystem::remove(path);
}

TEST(JsonFiles, RejectMalformedTextNamingFileAndLine) {
  for (const char* bad : {"", "{", "[1,]", "{\"a\" 1}", "01", "1.", "\"\\x\"", "tru", "[1] 2",
                          "{\"a\":1,}", "\"\\ud800\"", "nan", "-"}) {
    const std::string path = write_temp("wiola-profile-bad.json", bad);
    EXPECT_THROW(read_json_file(path), Error) << bad;
  }
  const std::string path = write_temp("wiola-profile-bad.json", "[1,\n  2,,]");
  try {
    read_json_file(path);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("line 2"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
  }
  std::filesystem::remove(path);
  EXPECT_THROW(read_json_file("/nonexistent/profile.json"), Error);
}

TEST(SpecFile, SectionsOverridesAndErrors) {
  namespace po = boost::program_options;
  const po::variables_map vm = spec_from_ini(
      "# comment\n[cluster]\nnodes = 1 # trailing\n[run]\npp = 4 ; trailing\n"
      "[times]\nstage_forward = 1, 2.5,3\n",
      "spec.ini", {"run.pp=8"});
  const SpecValues kv(vm);
  EXPECT_EQ(kv.integer("cluster.nodes", 0), 1);
  EXPECT_EQ(kv.integer("run.pp", 0), 8);
  EXPECT_EQ(kv.numbers("times.stage_forward"), (std::vector<double>{1, 2.5, 3}));
  EXPECT_EQ(kv.number("cluster.compute_efficiency", 7.5), 7.5);
  EXPECT_TRUE(kv.unused().empty());
  try {
    spec_from_ini("[run]\nzero = two\n", "b.ini", {});
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("b.ini:2"), std::string::npos) << e.what();
  }
  EXPECT_THROW(spec_from_ini("[run\n", "c.ini", {}), Error);
  EXPECT_THROW(spec_from_ini("novalue\n", "c.ini", {}), Error);
  EXPECT_THROW(spec_from_ini("", "c.ini", {"nothing"}), Error);
  // Keys that are not the spec's are errors naming them (and the line).
  for (const auto& [text, set, want] :
       {std::tuple{"[run]\n\ntypo = 1\n", "", "c.ini:3: unknown key 'run.typo'"},
        std::tuple{"", "run.typo=1", "--project-set: unknown key 'run.typo'"}}) {
    try {
      spec_from_ini(text, "c.ini", {set});
      ADD_FAILURE() << text << set;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(want), std::string::npos) << e.what();
    }
  }
  // --project-set: the later of two for one key wins.
  const po::variables_map twice = spec_from_ini("", "c.ini", {"run.pp=2", "run.pp = 3"});
  EXPECT_EQ(SpecValues(twice).integer("run.pp", 0), 3);
}

TEST(SpecFile, CommentsStartAtHashOrSemicolon) {
  EXPECT_EQ(strip_ini_comment("pp = 4 ; four stages"), "pp = 4 ");
  EXPECT_EQ(strip_ini_comment("device = h100   # 989 TFLOP/s"), "device = h100   ");
  EXPECT_EQ(strip_ini_comment("; a whole line"), "");
  EXPECT_EQ(strip_ini_comment("[run]"), "[run]");
}

TEST(Trace, SimulatedStepPassesTheTraceChecker) {
  for (auto kind : {pipeline::ScheduleKind::OneFOneB, pipeline::ScheduleKind::GPipe}) {
    RunLayout l;
    l.model = preset("wiola-tiny");
    l.pp = 3;
    l.dp = 2;
    l.microbatches = 5;
    l.schedule = kind;
    l.stages = {{0, 2, true, false}, {2, 4, false, false}, {4, 5, false, true}};
    SimInput in;
    in.schedule = kind;
    in.pp = 3;
    in.dp = 2;
    in.microbatches = 5;
    in.cluster.ranks_per_node = 6;
    in.cluster.intra = {1e-5, 1e9};
    in.stages.assign(3, SimStage{1e-3, 2e-3, 4096});
    const SimResult r = simulate(in);
    std::vector<std::vector<TimedAction>> actions;
    for (const RankRecord& rec : r.records) actions.push_back(rec.actions);
    const Json doc = build_trace(l, actions).to_json(Json::object());
    testing::ExpectedRun run{3, 2, 1, 5, kind};
    const auto problems = testing::check_trace(Json::parse(doc.dump()), run);
    for (const auto& p : problems) ADD_FAILURE() << p;
    // And the checker notices a missing micro-batch.
    actions[4].erase(actions[4].begin() + 1);
    EXPECT_FALSE(testing::check_trace(build_trace(l, actions).to_json(Json::object()), run).empty());
  }
}

TEST(Projection, FromFlopsOnAClusterWithAChinchillaBudget) {
  const std::string spec = write_temp("wiola-profile-test.ini",
                                      "[model]\npreset = wiola-1.5b\n"
                                      "[cluster]\ngpus_per_node = 8\nnodes = 4\ndevice = h100\n"
                                      "compute_efficiency = 0.5\nintra_bandwidth_GBps = 150\n"
                                      "intra_latency_us = 3\ninter_bandwidth_GBps = 25\n"
                                      "inter_latency_us = 10\nmemory_bandwidth_GBps = 3350\n"
                                      "[run]\npp = 4\nmicro_batch = 1\nglobal_batch = 256\n"
                                      "zero = 1\nactivation_bytes = 2\ngrad_bytes = 4\n"
                                      "param_bytes = 2\ntrain_tokens = chinchilla\n");
  const Projection p = project(load_projection(spec, {}));
  const RunLayout& l = p.spec.layout;
  EXPECT_EQ(l.dp, 8);
  EXPECT_EQ(l.microbatches, 32);
  EXPECT_EQ(p.spec.source, TimeSource::Flops);
  EXPECT_TRUE(p.spec.ignored_keys.empty());
  EXPECT_DOUBLE_EQ(p.budget_tokens, 20.0 * double(param_count(l.model)));
  const OverallMetrics& o = p.metrics.overall;
  // Compute alone at 50% of peak bounds the throughput from above.
  const double ideal = 32 * 989e12 * 0.5 / training_flops_per_token(l.model);
  EXPECT_LT(o.tokens_per_s, ideal);
  EXPECT_GT(o.tokens_per_s, 0.5 * ideal);
  EXPECT_NEAR(o.mfu, o.tokens_per_s * training_flops_per_token(l.model) / (32 * 989e12), 1e-12);
  EXPECT_GE(o.bubble, o.bubble_theory * 0.9);
  EXPECT_NEAR(p.time_to_train_s, p.budget_tokens / o.tokens_per_s, 1e-6 * p.time_to_train_s);
  // The stage boundary message: micro-batch x T x d x 2 bytes, plus a carried summary.
  EXPECT_NEAR(p.input.stages[0].message_bytes, 2.0 * 2048 * 2048 * 2, 1024);
  // Backward is twice forward, but on the head's stage two head products
  // (2·d·V FLOPs a token each, at 50% of peak) move to the forward: a GPU's
  // loss makes the head's gradients there.
  const double head_s = 2.0 * 2048 * 32000 * 2048 / (989e12 * 0.5);
  for (int k = 0; k < 4; ++k) {
    const auto& st = p.input.stages[std::size_t(k)];
    const double f = st.forward_s - (k == 3 ? 2 * head_s : 0.0);
    EXPECT_NEAR(st.backward_s, 2 * f - (k == 3 ? 2 * head_s : 0.0), 1e-9 * st.backward_s)
        << "stage " << k;
  }
  const std::string text = format_projection(p);
  EXPECT_NE(text.find("time to train"), std::string::npos);
  std::filesystem::remove(spec);
}

TEST(Projection, ExplicitPerLayerTimesAndErrors) {
  const std::string spec = write_temp("wiola-profile-test2.ini",
                                      "[model]\npreset = wiola-mini\n[cluster]\ngpus_per_node = 2\n"
                                      "[run]\npp = 2\nmicrobatches = 4\nmicro_batch = 2\n"
                                      "[times]\nmicro_batch = 1\nlayer_forward = 0.001\n"
                                      "head_forward = 0.002\nhead_backward = 0.004\n");
  const Projection p = project(load_projection(spec, {"run.stage_layers=2,2"}));
  EXPECT_EQ(p.spec.source, TimeSource::Layers);
  // Per micro-batch of 2 sequences, times given for 1: doubled; backward = 2 x forward.
  EXPECT_NEAR(p.input.stages[0].forward_s, 2 * 2 * 0.001, 1e-12);
  EXPECT_NEAR(p.input.stages[0].backward_s, 2 * 2 * 0.002, 1e-12);
  EXPECT_NEAR(p.input.stages[1].forward_s, 2 * (2 * 0.001 + 0.002), 1e-12);
  EXPECT_THROW(load_projection(spec, {"run.pp=3", "run.stage_layers=2,2"}), Error);
  EXPECT_THROW(load_projection(spec, {"run.dp=2"}), Error);  // 4 ranks on a 2-rank cluster
  EXPECT_THROW(load_projection(spec, {"run.zero=3"}), Error);
  EXPECT_THROW(load_projection(spec, {"model.preset=wiola-9b"}), Error);
  EXPECT_THROW(load_projection(spec, {"run.typo=1"}), Error);  // not a spec key
  // A spec key that the chosen time source does not read is listed.
  const Projection q = project(load_projection(spec, {"times.stage_backward=1,2"}));
  ASSERT_EQ(q.spec.ignored_keys.size(), 1u);
  EXPECT_EQ(q.spec.ignored_keys[0], "times.stage_backward");
  EXPECT_THROW(load_projection("/nonexistent/spec.ini", {}), Error);
  std::filesystem::remove(spec);
}

TEST(Sweep, PointsCoverDivisorsAndSkipWhatCannotRun) {
  TrainOptions o;
  o.model.config = preset("wiola-mini");
  o.parallel.global_batch = 16;
  o.parallel.micro_batch = 4;
  SweepSpec s;
  s.pp = {1, 2, 3, 4};
  s.micro_batch = {2, 8};
  s.zero = {0, 2};
  std::vector<std::string> skipped;
  const auto points = sweep_points(o, s, 4, skipped);
  // pp 3 does not divide 4; mb 8 with dp 4 (pp 1) does not divide 16.
  EXPECT_EQ(points.size(), (3 * 2 - 1) * 2u);
  EXPECT_EQ(skipped.size(), 2u);
  for (const SweepPoint& p : points) {
    EXPECT_EQ(p.pp * p.dp, 4);
    EXPECT_EQ(p.microbatches * p.micro_batch * p.dp, 16);
  }
  s = {};
  const auto all = sweep_points(o, s, 4, skipped);
  EXPECT_EQ(all.size(), 3u);  // pp 1, 2, 4
}

TEST(ToolOptions, OwnFlagsAreTakenOutTheRestPassesThrough) {
  const char* argv[] = {"wiola-profile", "--preset", "wiola-tiny", "--profile-steps=7",
                        "--warmup-steps", "3", "--peak-tflops", "h100", "--sweep",
                        "--sweep-pp", "1,2", "--pp", "2", "--out", "dir"};
  const ToolOptions t = parse_tool_options(int(std::size(argv)), argv);
  EXPECT_EQ(t.profile_steps, 7);
  EXPECT_EQ(t.warmup_steps, 3);
  EXPECT_EQ(t.peak, "h100");
  EXPECT_TRUE(t.sweep);
  EXPECT_EQ(t.sweep_spec.pp, (std::vector<int>{1, 2}));
  EXPECT_EQ(t.out_dir, "dir");
  EXPECT_EQ(t.train_args, (std::vector<std::string>{"wiola-profile", "--preset", "wiola-tiny",
                                                    "--pp", "2"}));
  // Unknown flags pass through in order with their values, whatever they look
  // like; an abbreviation of a profiler flag is not one (--warmup is wiola-train's).
  const char* mixed[] = {"wiola-profile", "--warmup", "5", "--config=x.ini", "--lr", "-1e-3",
                         "--no-trace", "-x", "--project-set", "run.pp=2", "--project", "s.ini",
                         "--project-set=run.zero=1"};
  const ToolOptions m = parse_tool_options(int(std::size(mixed)), mixed);
  EXPECT_EQ(m.train_args, (std::vector<std::string>{"wiola-profile", "--warmup", "5",
                                                    "--config=x.ini", "--lr", "-1e-3", "-x"}));
  EXPECT_FALSE(m.trace);
  EXPECT_EQ(m.warmup_steps, 2);
  EXPECT_EQ(m.project, "s.ini");
  EXPECT_EQ(m.project_set, (std::vector<std::string>{"run.pp=2", "run.zero=1"}));
  std::ostringstream help;
  print_tool_help(help);
  for (const char* want : {"Measurement:", "Sweep:", "--profile-steps N (=10)",
                           "--peak-tflops X (=measured)", "--gemm-seconds S (=0.5)"})
    EXPECT_NE(help.str().find(want), std::string::npos) << want << "\n" << help.str();
  const char* bad1[] = {"p", "--warmup-steps", "0"};
  EXPECT_THROW(parse_tool_options(3, bad1), Error);
  const char* bad2[] = {"p", "--sweep-pp", "2"};
  EXPECT_THROW(parse_tool_options(3, bad2), Error);
  const char* bad3[] = {"p", "--profile-steps"};
  EXPECT_THROW(parse_tool_options(2, bad3), Error);
  auto be = make_cpu_backend();
  EXPECT_THROW(resolve_peak("fast", *be, 64, 0.01, 1), Error);
  EXPECT_EQ(resolve_peak("a100", *be, 64, 0.01, 1).per_rank, 312e12);
  EXPECT_EQ(resolve_peak("2.5", *be, 64, 0.01, 1).per_rank, 2.5e12);
}

}  // namespace
}  // namespace wiola::profile
