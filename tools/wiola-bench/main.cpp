// wiola-bench: throughput figures for the README, docs/performance.md and the
// issue notes.
//
//   wiola-bench layers [--preset wiola-1.5b] [--layers 4] [--device cuda] ...
//     A model cut to a few full-width layers on one device: tokens/s, MFU,
//     peak memory and the time per op family (bench_layers.cpp).
//
//   wiola-bench model [--preset wiola-small] [--micro-batch 8] [--steps 12] [--threads N]
//                     [--split-steps 2] [--d 256 --layers 4 --atm off ...]
//     One process on the CPU: training tokens/s and achieved GFLOP/s (the
//     project's FLOP formula) beside the backend's fp32 linear layer and a
//     plain OpenBLAS sgemm call measured in the same run, and their ratios; then the time per op family of a training step,
//     forward, backward and optimizer (time_split.hpp). Every model field of
//     wiola-train (--d, --layers, --heads, --atm, --vocab, ...) overrides the preset.
//
//   wiola-bench losses <wiola-train options>   (under mpirun for several ranks)
//     Trains as wiola-train would and prints every step's loss with 9
//     significant digits, to compare two builds (docs/performance.md).
//
// Pipeline throughput and bubbles per layout: wiola-profile --sweep.
#include <algorithm>
#include <boost/program_options.hpp>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <sstream>
#include <vector>

#include "backend/select/device_backends.hpp"
#include "backend/cpu_threads.hpp"
#include "comm/mpi_communicator.hpp"
#include "core/error.hpp"
#include "core/model_options.hpp"
#include "core/text.hpp"
#include "core/version.hpp"
#include "io/data_config.hpp"
#include "io/token_dataset.hpp"
#include "model/flops.hpp"
#include "ops/gemm.hpp"
#include "profile/peak.hpp"
#include "time_split.hpp"
#include "train/options.hpp"
#include "train/trainer.hpp"
#include "core/option_errors.hpp"

namespace po = boost::program_options;
using namespace wiola;

namespace {

// GFLOP/s of the backend's linear layer (fp32 GEMM y = x·Wᵀ on the CPU).
double gemm_gflops(int rows, int out, int in) {
  const std::unique_ptr<Backend> be = make_cpu_backend();
  return profile::measure_linear_flops(*be, DType::F32, rows, out, in, 0.5) / 1e9;
}

// GFLOP/s of the same product as one plain OpenBLAS sgemm call with
// OpenBLAS's own threading: the rate the targets are measured against.
double blas_sgemm_gflops(int rows, int out, int in) {
  const std::vector<float> x(std::size_t(rows) * in, 0.5f), w(std::size_t(out) * in, 0.25f);
  std::vector<float> y(std::size_t(rows) * out);
  auto product = [&] {
    ops::gemm_blas(false, true, rows, out, in, 1.0f, x.data(), in, w.data(), in, 0.0f, y.data(),
                   out);
  };
  using Clock = std::chrono::steady_clock;
  product();  // warm-up: thread pool start, page faults
  double best = 1e300, elapsed = 0;
  for (int reps = 0; elapsed < 0.5 || reps < 3; ++reps) {
    const auto t0 = Clock::now();
    product();
    const double dt = std::chrono::duration<double>(Clock::now() - t0).count();
    best = std::min(best, dt);
    elapsed += dt;
  }
  return 2.0 * double(rows) * double(out) * double(in) / best / 1e9;
}

TrainOptions base_options(const ModelConfig& model, int micro_batch, int steps) {
  TrainOptions o;
  o.model.config = model;
  o.data.train_files = {default_train_file()};
  o.parallel.micro_batch = micro_batch;
  o.optimizer.steps = steps;
  o.logging.eval_interval = 0;
  o.logging.log_interval = 1000000;
  o.optimizer.lr = 1e-3;
  return o;
}

int bench_model(int argc, const char* const* argv, comm::Communicator& world,
                const std::string& host) {
  std::string preset_name = "wiola-small";
  int micro_batch = 8, steps = 12, threads = 0, split_steps = 2;
  po::options_description d("wiola-bench model options");
  d.add_options()
      ("help,h", "print this help")
      ("preset", po::value(&preset_name)->default_value(preset_name), "model preset, trained on the embedded data in one process")
      ("micro-batch", po::value(&micro_batch)->default_value(micro_batch), "sequences per step (one micro-batch per step)")
      ("steps", po::value(&steps)->default_value(steps), "training steps; the first is not timed")
      ("threads", po::value(&threads)->default_value(threads), "OpenMP/BLAS threads (0: library default)")
      ("split-steps", po::value(&split_steps)->default_value(split_steps),
       "steps of the timed pass per op family (0: none)");
  po::options_description model_fields("model (override the preset)");
  add_model_options(model_fields);
  d.add(model_fields);
  po::variables_map vm;
  po::store(po::parse_command_line(argc, argv, d), vm);
  if (vm.count("help")) {
    std::cout << "usage: wiola-bench model [options]\n\nTraining tokens/s and GFLOP/s of one process "
                 "beside a plain sgemm measured in the same run, then the time per op family of "
                 "a training step.\n\n"
              << d << "\n";
    return 0;
  }
  po::notify(vm);
  require(micro_batch >= 1 && steps >= 2 && split_steps >= 0,
          "wiola-bench model: --micro-batch must be >= 1, --steps >= 2, --split-steps >= 0");
  set_cpu_threads(threads);

  ModelConfig model = preset(preset_name);
  apply_model_options(vm, model);
  TrainOptions o = base_options(model, micro_batch, steps);
  o.model.vocab_explicit = vm.count("vocab") != 0;
  o.parallel.global_batch = micro_batch;
  o.device.threads = threads;
  if (!o.model.vocab_explicit) {  // the trainer adopts the dataset's vocabulary: so does the split
    const DataConfig data{o.data.train_files, {}, {}, 0.0, 0};
    o.model.config.V = TokenDataset(train_spec(data), o.model.config.T).vocab_size();
  }
  std::ostringstream log;
  const TrainSummary s = train(o, world, host, log);
  const ModelConfig& c = o.model.config;
  const double model_gflops = s.tokens_per_second * training_flops_per_token(c) / 1e9;
  const int rows = micro_batch * c.T;
  const double gemm_model = gemm_gflops(rows, c.dB, c.d);  // the model's largest GEMM shape
  const double gemm_square = gemm_gflops(1024, 1024, 1024);
  const double blas_model = blas_sgemm_gflops(rows, c.dB, c.d);
  const double blas_square = blas_sgemm_gflops(1024, 1024, 1024);
  std::printf("preset %s, micro-batch %d x %d tokens, %d steps, %d threads\n", preset_name.c_str(),
              micro_batch, c.T, steps, cpu_threads());
  std::printf("  model %s\n", c.describe().c_str());
  std::printf("  training          %10.0f tokens/s  %8.2f GFLOP/s (%.3g FLOP/token)\n",
              s.tokens_per_second, model_gflops, training_flops_per_token(c));
  std::printf("  sgemm %5dx%5dx%5d        %8.2f GFLOP/s  (the model's largest GEMM shape)\n",
              rows, c.dB, c.d, gemm_model);
  std::printf("  sgemm  1024x 1024x 1024        %8.2f GFLOP/s\n", gemm_square);
  std::printf("  OpenBLAS sgemm %5dx%5dx%5d %8.2f GFLOP/s  (one plain cblas_sgemm call)\n", rows,
              c.dB, c.d, blas_model);
  std::printf("  OpenBLAS sgemm  1024x 1024x 1024 %8.2f GFLOP/s\n", blas_square);
  std::printf("  ratio training / sgemm(model shape) = %.3f, / sgemm(1024^3) = %.3f\n",
              model_gflops / gemm_model, model_gflops / gemm_square);
  std::printf("  ratio training / OpenBLAS sgemm(model shape) = %.3f, / OpenBLAS sgemm(1024^3) = "
              "%.3f\n",
              model_gflops / blas_model, model_gflops / blas_square);
  if (split_steps > 0 && world.rank() == 0) {
    const std::unique_ptr<Backend> be = make_cpu_backend();
    bench::print_time_split(*be, DType::F32, c, micro_batch, split_steps);
  }
  return 0;
}

// Every step's training loss at full precision (rank 0 prints).
int bench_losses(int argc, const char* const* argv, comm::MpiCommunicator& world,
                 const std::string& host) {
  std::ostringstream quiet;
  const std::optional<TrainOptions> o = parse_train_options(argc, argv, quiet);
  if (!o) return 0;
  world.set_timeout(o->parallel.comm_timeout);
  const TrainSummary s = train(*o, world, host, quiet);
  if (world.rank() == 0)
    for (std::size_t i = 0; i < s.losses.size(); ++i)
      std::printf("step %lld loss %.9g\n", static_cast<long long>(s.first_step + i), s.losses[i]);
  return 0;
}

}  // namespace

namespace wiola::bench {
int bench_layers(int argc, const char* const* argv);
}

namespace {

const char* const kUsage =
    "usage: wiola-bench <mode> [options]\n"
    "modes:\n"
    "  model    one process trains a preset on the embedded data: tokens/s and GFLOP/s\n"
    "           beside a plain sgemm measured in the same run\n"
    "  layers   a model cut to a few full-width layers on one device: tokens/s, MFU,\n"
    "           peak memory and the time per op family\n"
    "  losses   trains as wiola-train would (its options; mpirun for several ranks) and\n"
    "           prints every step's loss with 9 significant digits\n"
    "Run 'wiola-bench <mode> --help' for the options of a mode; --version prints the version.\n"
    "Pipeline throughput and bubbles per layout: wiola-profile --sweep.\n";

}  // namespace

int main(int argc, char** argv) {
  comm::MpiRuntime mpi(&argc, &argv);
  register_device_backends();
  try {
    const std::string mode = argc > 1 ? argv[1] : "";
    if (mode == "model") return bench_model(argc - 1, argv + 1, mpi.world(), mpi.host());
    if (mode == "layers") return bench::bench_layers(argc - 1, argv + 1);
    if (mode == "losses") return bench_losses(argc - 1, argv + 1, mpi.world(), mpi.host());
    if (mode == "--version") {
      if (mpi.world().rank() == 0) print_version(std::cout, "wiola-bench");
      return 0;
    }
    const bool asked = mode == "--help" || mode == "-h" || mode == "help";
    if (mpi.world().rank() == 0) (asked ? std::cout : std::cerr) << kUsage;
    if (!asked && !mode.empty()) std::cerr << "wiola-bench: unknown mode '" << mode << "'\n";
    return asked ? 0 : 2;
  } catch (const std::exception& e) {
    std::cerr << "wiola-bench: " << wiola::error_text(e) << "\n";
    if (mpi.world().size() > 1) mpi.world().abort(wiola::error_text(e), 3);
    return 2;
  }
}
