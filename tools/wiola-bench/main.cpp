// wiola-bench: throughput figures for the README and the issue notes.
//
//   wiola-bench layers [--preset wiola-1.5b] [--layers 4] [--device cuda] ...
//     A model cut to a few full-width layers on one device: tokens/s, MFU,
//     peak memory and the time per op family (bench_layers.cpp).
//
//   wiola-bench model [--preset wiola-small] [--micro-batch 8] [--steps 12] [--threads N]
//     One process: training tokens/s and achieved GFLOP/s (the project's FLOP
//     formula) beside a plain BLAS sgemm measured in the same run, and their ratio.
//
// Pipeline throughput and bubbles per layout: wiola-profile --sweep.
#include <boost/program_options.hpp>
#include <cstdio>
#include <iostream>
#include <sstream>

#include "backend/select/device_backends.hpp"
#include "backend/cpu_threads.hpp"
#include "comm/mpi_communicator.hpp"
#include "core/error.hpp"
#include "core/text.hpp"
#include "core/version.hpp"
#include "model/flops.hpp"
#include "profile/peak.hpp"
#include "train/trainer.hpp"

namespace po = boost::program_options;
using namespace wiola;

namespace {

// GFLOP/s of the backend's linear layer (fp32 GEMM y = x·Wᵀ on the CPU).
double gemm_gflops(int rows, int out, int in) {
  const std::unique_ptr<Backend> be = make_cpu_backend();
  return profile::measure_linear_flops(*be, DType::F32, rows, out, in, 0.5) / 1e9;
}

TrainOptions base_options(const std::string& preset_name, int micro_batch, int steps) {
  TrainOptions o;
  o.model = preset(preset_name);
  o.train_files = {default_train_file()};
  o.micro_batch = micro_batch;
  o.steps = steps;
  o.eval_interval = 0;
  o.log_interval = 1000000;
  o.lr = 1e-3;
  return o;
}

int bench_model(int argc, const char* const* argv, comm::Communicator& world,
                const std::string& host) {
  std::string preset_name = "wiola-small";
  int micro_batch = 8, steps = 12, threads = 0;
  po::options_description d("wiola-bench model options");
  d.add_options()
      ("help,h", "print this help")
      ("preset", po::value(&preset_name)->default_value(preset_name), "model preset, trained on the embedded data in one process")
      ("micro-batch", po::value(&micro_batch)->default_value(micro_batch), "sequences per step (one micro-batch per step)")
      ("steps", po::value(&steps)->default_value(steps), "training steps; the first is not timed")
      ("threads", po::value(&threads)->default_value(threads), "OpenMP/BLAS threads (0: library default)");
  po::variables_map vm;
  po::store(po::parse_command_line(argc, argv, d), vm);
  if (vm.count("help")) {
    std::cout << "usage: wiola-bench model [options]\n\nTraining tokens/s and GFLOP/s of one process "
                 "beside a plain sgemm measured in the same run.\n\n"
              << d << "\n";
    return 0;
  }
  po::notify(vm);
  set_cpu_threads(threads);

  TrainOptions o = base_options(preset_name, micro_batch, steps);
  o.global_batch = micro_batch;
  o.threads = threads;
  std::ostringstream log;
  const TrainSummary s = train(o, world, host, log);
  const ModelConfig& c = o.model;
  const double model_gflops = s.tokens_per_second * training_flops_per_token(c) / 1e9;
  const int rows = micro_batch * c.T;
  const double gemm_model = gemm_gflops(rows, c.dB, c.d);  // the model's largest GEMM shape
  const double gemm_square = gemm_gflops(1024, 1024, 1024);
  std::printf("preset %s, micro-batch %d x %d tokens, %d steps, %d threads\n", preset_name.c_str(),
              micro_batch, c.T, steps, cpu_threads());
  std::printf("  training          %10.0f tokens/s  %8.2f GFLOP/s (%.3g FLOP/token)\n",
              s.tokens_per_second, model_gflops, training_flops_per_token(c));
  std::printf("  sgemm %5dx%5dx%5d        %8.2f GFLOP/s  (the model's largest GEMM shape)\n",
              rows, c.dB, c.d, gemm_model);
  std::printf("  sgemm  1024x 1024x 1024        %8.2f GFLOP/s\n", gemm_square);
  std::printf("  ratio training / sgemm(model shape) = %.3f, / sgemm(1024^3) = %.3f\n",
              model_gflops / gemm_model, model_gflops / gemm_square);
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
    if (mode == "--version") {
      if (mpi.world().rank() == 0) print_version(std::cout, "wiola-bench");
      return 0;
    }
    const bool asked = mode == "--help" || mode == "-h" || mode == "help";
    if (mpi.world().rank() == 0) (asked ? std::cout : std::cerr) << kUsage;
    if (!asked && !mode.empty()) std::cerr << "wiola-bench: unknown mode '" << mode << "'\n";
    return asked ? 0 : 2;
  } catch (const std::exception& e) {
    std::cerr << "wiola-bench: " << e.what() << "\n";
    if (mpi.world().size() > 1) mpi.world().abort(e.what(), 3);
    return 2;
  }
}
