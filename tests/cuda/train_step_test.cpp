// Whole training steps through the CUDA backend's code path (here on the
// emulated execution model) against the CPU backend: one step of wiola-tiny
// (loss and every parameter gradient, from identical weights), and 20 steps
// of training on the embedded data (the loss curve).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <sstream>

#include "backend/backend_registry.hpp"
#include "backend/cuda/device_counters.hpp"
#include "comm/mpi_communicator.hpp"
#include "model/stage_model.hpp"
#include "support/gradcheck.hpp"
#include "train/trainer.hpp"

extern wiola::comm::MpiRuntime* g_mpi;

namespace wiola::test {
namespace {

struct Sample {
  int B = 2, T = 16;
  std::vector<std::int32_t> inputs, targets;
};

Sample make_sample(int vocab, std::uint64_t seed) {
  Sample s;
  const auto w = random_vector(std::size_t(s.B) * (s.T + 1), seed, 0, vocab - 1e-9);
  for (int b = 0; b < s.B; ++b)
    for (int t = 0; t < s.T; ++t) {
      s.inputs.push_back(static_cast<std::int32_t>(w[std::size_t(b) * (s.T + 1) + t]));
      s.targets.push_back(static_cast<std::int32_t>(w[std::size_t(b) * (s.T + 1) + t + 1]));
    }
  s.targets[5] = -1;  // an ignored target
  return s;
}

double sum_of_squares(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x * x;
  return s;
}

// Loss and gradients of one forward and backward of the whole model; with
// `scale_known`, the forward is told the backward's loss scale, as the
// trainer's are.
double step(Backend& be, StageModel& m, const Sample& s, bool scale_known = true) {
  StageInput in;
  in.batch = s.B;
  in.seq = s.T;
  in.tokens = be.alloc(DType::I32, std::int64_t(s.B) * s.T, 1);
  in.targets = be.alloc(DType::I32, std::int64_t(s.B) * s.T, 1);
  be.from_host(s.inputs.data(), in.tokens);
  be.from_host(s.targets.data(), in.targets);
  double counted = 0;
  for (auto t : s.targets) counted += t >= 0;
  if (scale_known) in.loss_scale = 1.0 / counted;
  m.params().zero_grads();
  StageSaved saved;
  const StageOutput out = m.forward(in, /*training=*/true, saved);
  m.backward(Tensor{}, {}, 1.0 / counted, saved);
  return to_host_f64(be, out.loss_sum)[0] / counted;
}

std::unique_ptr<Backend> cuda_backend() {
  const DeviceBackendProvider* p = device_backend(Device::CUDA);
  return p && p->device_count() > 0 ? p->make(0) : nullptr;
}

class CudaWholeStep : public ::testing::TestWithParam<DType> {};

// One step of model c on the device against the CPU in fp64.
void expect_whole_step_matches_cpu(const ModelConfig& c, DType dtype) {
  auto dev = cuda_backend();
  ASSERT_NE(dev, nullptr);
  auto cpu = make_cpu_backend();
  StageModel on_dev(*dev, c, StageSpec::whole(c), dtype);
  on_dev.params().init(11);
  StageModel ref(*cpu, c, StageSpec::whole(c), DType::F64);
  // The same weights (the device's, bf16-rounded where it stores bf16).
  for (const ParamSpec& p : ref.params().layout().entries())
    ref.params().set(p.name, on_dev.params().get(p.name));

  const Sample s = make_sample(c.V, 12);
  const double loss_dev = step(*dev, on_dev, s), loss_ref = step(*cpu, ref, s);
  const double loss_tol = dtype == DType::BF16 ? 1e-3 : 1e-6;
  std::printf("[whole step %s %s] loss device %.8f reference %.8f (rel %.2e, allowed %.0e)\n",
              std::string(arch_name(c.arch)).c_str(), std::string(dtype_name(dtype)).c_str(),
              loss_dev, loss_ref,
              std::fabs(loss_dev - loss_ref) / loss_ref, loss_tol);
  EXPECT_NEAR(loss_dev, loss_ref, loss_tol * loss_ref);

  // Every parameter's gradient: norm-wise relative error, with a floor of
  // 1e-6 of the global gradient norm for tensors whose gradient is nearly
  // zero (ctx_k_proj at initialisation: ~1e-12, cancellation in the softmax
  // over two context summaries).
  const double grad_tol = dtype == DType::BF16 ? 0.05 : 1e-5;
  const double floor =
      1e-6 * std::sqrt(sum_of_squares(to_host_f64(*cpu, ref.params().grads())));
  double worst = 0;
  std::string worst_name;
  for (const ParamSpec& p : ref.params().layout().entries()) {
    const std::vector<double> g = on_dev.params().get_grad(p.name), r = ref.params().get_grad(p.name);
    double num = 0, den = 0;
    for (std::size_t i = 0; i < g.size(); ++i) {
      num += (g[i] - r[i]) * (g[i] - r[i]);
      den += r[i] * r[i];
    }
    const double rel = std::sqrt(num) / std::max(std::sqrt(den), floor);
    if (std::getenv("WIOLA_SHOW_GRADS"))
      std::printf("  %-40s |ref| %.3e |err| %.3e rel %.2e\n", p.name.c_str(), std::sqrt(den),
                  std::sqrt(num), rel);
    if (rel > worst) {
      worst = rel;
      worst_name = p.name;
    }
    EXPECT_LE(rel, grad_tol) << p.name;
  }
  std::printf("[whole step %s] worst gradient relative error %.2e (%s), allowed %.0e\n",
              std::string(dtype_name(dtype)).c_str(), worst, worst_name.c_str(), grad_tol);
}

TEST_P(CudaWholeStep, LossAndEveryGradientMatchTheCpu) {
  ModelConfig c = preset("wiola-tiny");
  c.atm = AtmMode::Causal;
  c.tau = 0.0;  // merge wherever the similarity is positive: the ATM path runs
  expect_whole_step_matches_cpu(c, GetParam());
}

// The second family (arch wiola13m) through the same device ops.
TEST_P(CudaWholeStep, Wiola13mLossAndEveryGradientMatchTheCpu) {
  expect_whole_step_matches_cpu(preset("wiola13m-tiny"), GetParam());
}

// The device's head makes its gradients in the forward when the loss scale
// is known there, else the backward makes its logits again: the same
// products on the same blocks, so the same bits in every gradient.
TEST_P(CudaWholeStep, HeadGradientsFromTheForwardAreTheBackwardsBits) {
  auto dev = cuda_backend();
  ASSERT_NE(dev, nullptr);
  const ModelConfig c = preset("wiola-tiny");
  StageModel m(*dev, c, StageSpec::whole(c), GetParam());
  m.params().init(11);
  const Sample s = make_sample(c.V, 12);
  const double loss_now = step(*dev, m, s, true);
  const std::vector<double> grads_now = to_host_f64(*dev, m.params().grads());
  const double loss_later = step(*dev, m, s, false);
  EXPECT_EQ(loss_now, loss_later);
  EXPECT_EQ(grads_now, to_host_f64(*dev, m.params().grads()));
}

// A wiola-tiny run on the embedded data in `dtype`, without evaluation or logs.
TrainOptions tiny_run(DType dtype, int micro_batch, int global_batch, int steps) {
  TrainOptions o;
  o.model.config = preset("wiola-tiny");
  o.data.train_files = {WIOLA_EMBEDDED_TRAIN_FILE};
  o.data.val_files.clear();
  o.parallel.micro_batch = micro_batch;
  o.parallel.global_batch = global_batch;
  o.optimizer.steps = steps;
  o.optimizer.lr = 3e-3;
  o.logging.eval_interval = 0;
  o.logging.log_interval = 1000;
  o.device.dtype = dtype;
  o.device.dtype_explicit = true;
  return o;
}

TEST_P(CudaWholeStep, TwentyStepsOfTrainingFollowTheCpu) {
  const DType dtype = GetParam();
  TrainOptions o = tiny_run(dtype, 2, 4, 20);
  TrainOptions ref = o;
  o.device.choice = DeviceChoice::CUDA;
  ref.device.choice = DeviceChoice::CPU;
  ref.device.dtype = DType::F32;
  std::ostringstream log_dev, log_ref;
  const TrainSummary a = train(o, g_mpi->world(), g_mpi->host(), log_dev);
  // The device run's staging (host copies of device buffers, through its
  // backend) must not outlive that backend on the world.
  EXPECT_EQ(g_mpi->world().device_staging(), nullptr);
  const TrainSummary b = train(ref, g_mpi->world(), g_mpi->host(), log_ref);
  EXPECT_NE(log_dev.str().find("device cuda"), std::string::npos) << log_dev.str();
  ASSERT_EQ(a.losses.size(), 20u);
  ASSERT_EQ(b.losses.size(), 20u);
  const double tol = dtype == DType::BF16 ? 2e-3 : 1e-6;
  double worst = 0;
  for (std::size_t i = 0; i < 20; ++i) {
    const double rel = std::fabs(a.losses[i] - b.losses[i]) / b.losses[i];
    worst = std::max(worst, rel);
    EXPECT_LE(rel, tol) << "step " << i + 1 << ": device " << a.losses[i] << ", CPU "
                        << b.losses[i];
  }
  std::printf("[20 steps %s] loss %.4f -> %.4f (CPU %.4f -> %.4f); worst relative difference "
              "%.2e, allowed %.0e\n",
              std::string(dtype_name(dtype)).c_str(), a.losses.front(), a.losses.back(),
              b.losses.front(), b.losses.back(), worst, tol);
  EXPECT_LT(a.losses.back(), a.losses.front());
}

// The trainer's CUDA graphs (--cuda-graphs, pipeline/micro_batch_graphs.hpp)
// replay the eager steps' bits: three steps of eight micro-batches, with the
// slots 1F1B needs (one) and GPipe needs (seven at once), and graphs of
// forwards and backwards both replayed.
TEST_P(CudaWholeStep, CudaGraphsGiveTheEagerStepsBits) {
  for (const auto schedule : {pipeline::ScheduleKind::OneFOneB, pipeline::ScheduleKind::GPipe}) {
    TrainOptions o = tiny_run(GetParam(), 1, 8, 3);
    o.parallel.schedule = schedule;
    o.device.choice = DeviceChoice::CUDA;
    std::vector<double> losses[2];
    std::int64_t graph_launches[2] = {0, 0};
    for (const bool graphs : {false, true}) {
      o.device.cuda_graphs = graphs;
      std::ostringstream log;
      const cuda::DeviceCounts before = cuda::device_counts();
      losses[graphs] = train(o, g_mpi->world(), g_mpi->host(), log).losses;
      graph_launches[graphs] = (cuda::device_counts() - before).graph_launches;
      const std::string text = log.str();
      const std::size_t at = text.find("cuda graphs on rank 0");
      EXPECT_EQ(at != std::string::npos, graphs) << text;
      const std::size_t plan = text.find("memory estimate of stage 0");
      if (at != std::string::npos && plan != std::string::npos)
        std::printf("[%s %s] %s; %s\n", std::string(dtype_name(GetParam())).c_str(),
                    std::string(pipeline::schedule_kind_name(schedule)).c_str(),
                    text.substr(at, text.find('\n', at) - at).c_str(),
                    text.substr(plan, text.find('\n', plan) - plan).c_str());
    }
    const std::string name(pipeline::schedule_kind_name(schedule));
    EXPECT_EQ(graph_launches[0], 0) << name;
    // Per step, 8 forwards and 8 backwards; the first forward and backward
    // (their graphs' eager runs) and the last backward (the boundaries'
    // gradient reductions) run eagerly.
    EXPECT_EQ(graph_launches[1], 3 * (16 - 3)) << name;
    ASSERT_EQ(losses[1].size(), 3u);
    EXPECT_EQ(std::memcmp(losses[0].data(), losses[1].data(), 3 * sizeof(double)), 0)
        << name << ": " << losses[0][2] << " eager, " << losses[1][2] << " with graphs";
  }
}

INSTANTIATE_TEST_SUITE_P(Dtypes, CudaWholeStep, ::testing::Values(DType::F32, DType::BF16),
                         [](const auto& param_info) {
                           return std::string(param_info.param == DType::BF16 ? "bf16" : "fp32");
                         });

}  // namespace
}  // namespace wiola::test
