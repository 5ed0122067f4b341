// The optimizer step against expectations computed here, independently of
// the code under test: the clip factor exactly, and one whole training step
// from zero moments, where AdamW's bias correction makes every parameter with
// a gradient move by lr·sign(g) (plus its decay) whatever the gradient's size,
// and the clipped gradient's norm is the clip.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <sstream>

#include "comm/mpi_communicator.hpp"
#include "io/checkpoint_io.hpp"
#include "io/checkpoint_store.hpp"
#include "optim/clip.hpp"
#include "train/trainer.hpp"

extern wiola::comm::MpiRuntime* g_mpi;

namespace wiola {
namespace {

TEST(Clip, FactorIsExact) {
  // Within the clip, or clipping off: no scaling.
  EXPECT_EQ(clip_factor(0.5, 1.0), 1.0);
  EXPECT_EQ(clip_factor(1.0, 1.0), 1.0);
  EXPECT_EQ(clip_factor(7.0, 0.0), 1.0);
  EXPECT_EQ(clip_factor(0.0, 1.0), 1.0);
  // Above it: clip / (norm + 1e-6), which leaves the norm just under the clip.
  EXPECT_EQ(clip_factor(2.0, 1.0), 1.0 / (2.0 + 1e-6));
  EXPECT_EQ(clip_factor(0.75, 0.25), 0.25 / (0.75 + 1e-6));
  EXPECT_EQ(clip_factor(1e6, 3.0), 3.0 / (1e6 + 1e-6));
  EXPECT_LT(2.0 * clip_factor(2.0, 1.0), 1.0);
  EXPECT_GT(2.0 * clip_factor(2.0, 1.0), 1.0 - 1e-6);
}

struct NormRecorder final : TrainObserver {
  std::vector<double> norms;
  void on_step(const StepRecord& r) override { norms.push_back(r.grad_norm); }
};

struct Saved {
  std::vector<std::vector<double>> param, exp_avg;  // per layout entry
  double grad_norm = 0;
};

// One step of wiola-tiny at peak lr `lr` (warm-up reaches the peak at step 1),
// checkpointed after it.
Saved one_step(double lr, double clip, const std::string& dir) {
  std::filesystem::remove_all(dir);
  TrainOptions o;
  o.model.config = preset("wiola-tiny");
  o.data.train_files = {WIOLA_EMBEDDED_TRAIN_FILE};
  o.parallel.micro_batch = 2;
  o.parallel.global_batch = 8;
  o.optimizer.steps = 2;
  o.optimizer.warmup_frac = 0.5;  // lr(1) = peak
  o.checkpoint.exit_after_step = 1;
  o.optimizer.lr = lr;
  o.optimizer.clip = clip;
  o.logging.eval_interval = 0;
  o.checkpoint.save_dir = dir;
  NormRecorder norms;
  std::ostringstream log;
  train(o, g_mpi->world(), g_mpi->host(), log, &norms);
  const std::string ck = dir + "/" + checkpoint_name(1);
  const CheckpointManifest m = read_manifest(ck);
  CheckpointReader reader(ck, m);
  const ModelConfig cfg = [&] {
    ModelConfig c = o.model.config;
    c.V = 2048;  // the embedded data's vocabulary
    return c;
  }();
  Saved s;
  const ParamLayout layout(cfg, StageSpec::whole(cfg));
  for (const ParamSpec& p : layout.entries()) {
    std::vector<double> a(static_cast<std::size_t>(p.numel())), b(a.size());
    reader.read(p.name, StateKind::Param, p.rows, p.cols, 0, p.numel(), a.data());
    reader.read(p.name, StateKind::ExpAvg, p.rows, p.cols, 0, p.numel(), b.data());
    s.param.push_back(std::move(a));
    s.exp_avg.push_back(std::move(b));
  }
  EXPECT_EQ(norms.norms.size(), 1u);
  s.grad_norm = norms.norms.empty() ? 0 : norms.norms[0];
  std::filesystem::remove_all(dir);
  return s;
}

TEST(OptimizerStep, FirstStepMovesEachParameterByLrTimesSignPlusDecay) {
  const std::string dir = ::testing::TempDir() + "wiola_first_step";
  const double lr = 1e-3, clip = 0.3, beta1 = 0.9, wd = 0.1;  // clip < the norm (~0.5)
  // lr 0: the checkpoint holds the initial parameters (and the same moments).
  const Saved before = one_step(0.0, clip, dir);
  const Saved after = one_step(lr, clip, dir);
  ModelConfig cfg = preset("wiola-tiny");
  cfg.V = 2048;
  const ParamLayout layout(cfg, StageSpec::whole(cfg));

  // Clipping fired, and the update saw the clipped gradient: m = (1 - β1)·f·g
  // after one step, so ‖m‖ / (1 - β1) = f·‖g‖ = clip·‖g‖ / (‖g‖ + 1e-6).
  ASSERT_GT(after.grad_norm, clip) << "the test needs a clip below the gradient norm";
  EXPECT_NEAR(after.grad_norm, before.grad_norm, 1e-12 * after.grad_norm);
  double m2 = 0;
  for (const auto& m : after.exp_avg)
    for (double v : m) m2 += v * v;
  const double clipped_norm = std::sqrt(m2) / (1 - beta1);
  const double want = clip * after.grad_norm / (after.grad_norm + 1e-6);
  EXPECT_NEAR(clipped_norm, want, 1e-5 * want) << "gradient norm " << after.grad_norm;

  // Every element, from the first-step AdamW algebra (m̂ = g, v̂ = g², so the
  // step is g / (|g| + eps), the sign of g where |g| >> eps):
  // p1 = p0 - lr·(g / (|g| + eps) + wd·p0); g = 0 (embedding rows of tokens
  // not in the batch) leaves the decay alone. Tolerance: fp32 rounding of p1.
  const double eps = 1e-8;
  std::size_t moved = 0, still = 0, bad = 0;
  double worst = 0;
  std::string worst_name;
  for (std::size_t t = 0; t < layout.entries().size(); ++t) {
    const ParamSpec& p = layout.entries()[t];
    const double decay = p.decay ? wd : 0.0;
    for (std::size_t i = 0; i < after.param[t].size(); ++i) {
      const double p0 = before.param[t][i], p1 = after.param[t][i];
      const double g = after.exp_avg[t][i] / (1 - beta1);  // the clipped gradient
      const double expected = p0 - lr * (g / (std::abs(g) + eps) + decay * p0);
      const double err = std::abs(p1 - expected) / lr;
      if (err > worst) {
        worst = err;
        worst_name = p.name;
      }
      if (std::abs(p1 - expected) > 1e-5 * lr + 1.2e-7 * std::abs(p0)) ++bad;
      if (g == 0) ++still;
      else if (std::abs(g) > 100 * eps) ++moved;  // a step of lr·sign(g) within 1%
    }
  }
  std::printf("[first step] %zu elements moved by about lr·sign(g), %zu without gradient; worst "
              "deviation %.2e lr (%s); clipped norm %.8f, expected %.8f\n",
              moved, still, worst, worst_name.c_str(), clipped_norm, want);
  EXPECT_GT(moved, 30000u);
  EXPECT_EQ(bad, 0u) << "worst: " << worst_name << ", " << worst << " lr";
}

}  // namespace
}  // namespace wiola
