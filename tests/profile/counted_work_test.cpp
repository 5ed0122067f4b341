// Projection from counted work (tools/wiola-profile/counted_work.hpp): the
// fit through a counts file's three shapes, its checks of the file, and the
// times the projection makes of the work at the ceilings.
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>

#include "core/model_fields.hpp"
#include "wiola-profile/counted_work.hpp"
#include "wiola-profile/files.hpp"
#include "wiola-profile/projection.hpp"

namespace wiola::profile {
namespace {

// A quantity of one pass at b sequences of t tokens.
using Law = std::function<double(int b, int t)>;

// A counts file whose every quantity follows `law`, scaled per part and kind
// so that a mix-up between them shows.
Json counts_document(const ModelConfig& m, const Law& law, std::array<int, 3> batch,
                     std::array<int, 3> seq) {
  Json fields = Json::object();
  for (const ModelField& f : model_fields()) fields[f.key] = f.text(m);
  const auto pass = [&](int b, int t, double scale) {
    const double q = law(b, t) * scale;
    return Json{{"kernels", 3 * scale}, {"gemms", 2 * scale}, {"memsets", scale},
                {"copies", 0},          {"host_syncs", 0},    {"allocations", 0},
                {"non_gemm_bytes", 5 * q}, {"floor_bytes", 4 * q},
                {"gemm_flops", 7 * q},  {"attention_flops", 11 * q},
                {"device_operations", 6 * scale}};
  };
  Json shapes = Json::array();
  for (std::size_t i = 0; i < 3; ++i) {
    const int b = batch[i], t = seq[i];
    const auto part = [&](double scale) {
      return Json{{"forward", pass(b, t, scale)}, {"backward", pass(b, t, 2 * scale)}};
    };
    shapes.push_back({{"batch", b},
                      {"seq", t},
                      {"atm_layer", part(3)},
                      {"plain_layer", part(2)},
                      {"last_layer_and_head", part(2 + 5)},  // a plain layer + a head of 5
                      {"embedding", part(1)}});
  }
  return {{"format", "wiola-device-counts"}, {"version", 1}, {"preset", m.preset},
          {"dtype", "bf16"}, {"model", fields}, {"shapes", shapes}};
}

std::string write_counts(const std::string& name, const Json& j) {
  const auto path = std::filesystem::temp_directory_path() / ("wiola-counts-" + name + ".json");
  write_text_file(path.string(), j.dump(1));
  return path.string();
}

ModelConfig small_model() { return preset("wiola-small"); }

TEST(CountedWork, TheFitIsExactForFixedLinearAndQuadraticParts) {
  const ModelConfig m = small_model();
  // A fixed part, one per sequence, and a causal mask's tiles: 64-row tiles
  // over t tokens, t (t + 64) / (2 64²) pairs of them.
  const Law law = [](int b, int t) {
    return 1000.0 + b * (37.0 * t + 4096.0 * (double(t) * (t + 64)) / (2 * 64 * 64));
  };
  const std::string path =
      write_counts("exact", counts_document(m, law, {1, 2, 1}, {128, 128, 256}));
  const CountedWork w = read_counted_work(path, m, 8, 2048);
  EXPECT_EQ(w.micro_batch, 8);
  EXPECT_EQ(w.seq, 2048);
  const double q = law(8, 2048);
  EXPECT_NEAR(w.atm_layer.forward.gemm_flops, 7 * 3 * q, 1e-9 * q);
  EXPECT_NEAR(w.atm_layer.backward.attention_flops, 11 * 6 * q, 1e-9 * q);
  EXPECT_NEAR(w.plain_layer.forward.bytes, 5 * 2 * q, 1e-9 * q);
  EXPECT_NEAR(w.embedding.backward.gemm_flops, 7 * 2 * q, 1e-9 * q);
  // The head: the last layer with the head, less a plain layer.
  EXPECT_NEAR(w.head.forward.gemm_flops, 7 * 5 * q, 1e-9 * q);
  EXPECT_NEAR(w.head.backward.bytes, 5 * 10 * q, 1e-9 * q);
  // Operations do not grow with the micro-batch: kernels, products, memsets, copies.
  EXPECT_DOUBLE_EQ(w.atm_layer.forward.operations, 6 * 3);
  EXPECT_DOUBLE_EQ(w.head.backward.operations, 6 * 10);
}

TEST(CountedWork, ATimeIsItsWorkOverEachCeilingSummed) {
  const Ceilings c{2e12, 1e12, 4e9, 3e-6, "test"};
  const WorkTime t = time_of(Work{4e12, 3e12, 8e9, 10}, c);
  EXPECT_DOUBLE_EQ(t.gemm_s, 2);
  EXPECT_DOUBLE_EQ(t.attention_s, 3);
  EXPECT_DOUBLE_EQ(t.memory_s, 2);
  EXPECT_DOUBLE_EQ(t.operations_s, 3e-5);
  EXPECT_DOUBLE_EQ(t.total(), 7 + 3e-5);
}

// A step's counts as work: FLOPs, the non-GEMM bytes (kernels, memsets,
// device copies) and every device operation, per step.
TEST(CountedWork, CountersGiveTheWorkOfAStep) {
  DeviceCounts c;
  c.launches = 10;
  c.gemms = 6;
  c.memsets = 2;
  c.copies = 2;
  c.kernel_bytes = 800;
  c.memset_bytes = 100;
  c.device_copy_bytes = 100;
  c.floor_bytes = 700;
  c.gemm_flops = 4000;
  c.attention_flops = 600;
  const Work w = work_of(c, 2);
  EXPECT_DOUBLE_EQ(w.gemm_flops, 2000);
  EXPECT_DOUBLE_EQ(w.attention_flops, 300);
  EXPECT_DOUBLE_EQ(w.bytes, 500);
  EXPECT_DOUBLE_EQ(w.operations, 10);
}

TEST(CountedWork, AtmLayersGetTheAtmPartsTimes) {
  const ModelConfig m = small_model();  // L = 6: ATM in layers [2, 4)
  const Law law = [](int b, int t) { return double(b) * t; };
  const std::string path =
      write_counts("layers", counts_document(m, law, {1, 2, 1}, {128, 128, 256}));
  const CountedWork w = read_counted_work(path, m, 1, 128);
  const LayerTimes t = counted_layer_times(w, m, Ceilings{1, 1, 1, 0, "test"});
  ASSERT_EQ(int(t.layers.size()), m.L);
  for (int l = 0; l < m.L; ++l)
    EXPECT_DOUBLE_EQ(t.layers[std::size_t(l)].forward_s,
                     (7 + 11 + 5) * (m.atm_layer(l) ? 3 : 2) * 128.0)
        << "layer " << l;
  EXPECT_DOUBLE_EQ(t.head.backward_s, (7 + 11 + 5) * 10 * 128.0);
  EXPECT_EQ(t.micro_batch, 1);
}

TEST(CountedWork, RefusesAFileOfOtherWidthsShapesOrTiles) {
  const ModelConfig m = small_model();
  const Law law = [](int b, int t) { return double(b) * t; };
  const auto refuses = [&](const std::string& name, const Json& j, const std::string& says) {
    const std::string path = write_counts(name, j);
    try {
      read_counted_work(path, m, 1, 128);
      ADD_FAILURE() << name << ": accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
    }
  };
  ModelConfig wider = m;
  wider.d = 2 * m.d;
  refuses("widths", counts_document(wider, law, {1, 2, 1}, {128, 128, 256}),
          "counted other widths than the target's (d 256 vs 128");
  refuses("shapes", counts_document(m, law, {1, 2, 2}, {128, 128, 256}),
          "the shapes must be (B, T), (2B, T) and (B, 2T)");
  refuses("tiles", counts_document(m, law, {1, 2, 1}, {64, 64, 128}),
          "not a multiple of 128 (the attention forward's 128-row query tile)");
  Json missing = counts_document(m, law, {1, 2, 1}, {128, 128, 256});
  missing["shapes"][1]["plain_layer"]["backward"].erase("gemm_flops");
  refuses("missing", missing, "shape 2, plain_layer.backward: 'gemm_flops' is missing");
  Json other = counts_document(m, law, {1, 2, 1}, {128, 128, 256});
  other["format"] = "something-else";
  refuses("format", other, "not a counts file");
  // A layer count of its own is fine: the counts are per layer.
  ModelConfig deeper = m;
  deeper.L = 2;
  EXPECT_NO_THROW(read_counted_work(write_counts("depth", counts_document(deeper, law, {1, 2, 1},
                                                                           {128, 128, 256})),
                                    m, 1, 128));
}

TEST(CountedWork, AProjectionNeedsEveryCeiling) {
  const ModelConfig m = small_model();
  const Law law = [](int b, int t) { return double(b) * t; };
  const std::string counts =
      write_counts("spec", counts_document(m, law, {1, 2, 1}, {128, 128, 256}));
  const std::string spec = std::filesystem::temp_directory_path() / "wiola-counts-spec.ini";
  write_text_file(spec, "[model]\npreset = wiola-small\n[run]\nmicro_batch = 2\n"
                        "[times]\ncounts = " + counts + "\n[ceilings]\ngemm_tflops = 500\n"
                        "attention_tflops = 250\nmemory_GBps = 3000\nlaunch_us = 2\n");
  const ProjectionSpec s = load_projection(spec, {});
  EXPECT_EQ(s.source, TimeSource::Layers);
  ASSERT_TRUE(s.counted.has_value());
  EXPECT_EQ(s.counted->micro_batch, 2);
  EXPECT_EQ(s.counted->seq, m.T);
  EXPECT_NE(s.source_text.find("per-layer times from counted work"), std::string::npos);
  EXPECT_NE(s.source_text.find("GEMMs 500 TFLOP/s, attention 250 TFLOP/s, memory 3000 GB/s, "
                               "2 us per device operation"), std::string::npos)
      << s.source_text;
  // The optimizer, memory-bound, is priced at the measured bandwidth.
  EXPECT_DOUBLE_EQ(s.memory_Bps, 3000e9);
  const LayerTimes& t = s.layer_times;
  EXPECT_NEAR(t.layers[0].forward_s,
              2.0 * m.T * 2 * (7 / 500e12 + 11 / 250e12 + 5 / 3000e9) + 12 * 2e-6, 1e-15);
  for (const char* key : {"ceilings.gemm_tflops", "ceilings.attention_tflops",
                          "ceilings.memory_GBps"}) {
    try {
      load_projection(spec, {std::string(key) + "=0"});
      ADD_FAILURE() << key << " = 0 accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(std::string(key) + " must be positive"),
                std::string::npos)
          << e.what();
    }
  }
}

}  // namespace
}  // namespace wiola::profile
