// wiola-bench: throughput figures for the README and the issue notes.
//
//   wiola-bench model [--preset wiola-small] [--micro-batch 8] [--steps 12] [--threads N]
//     One process: training tokens/s and achieved GFLOP/s (the project's FLOP
//     formula) beside a plain BLAS sgemm measured in the same run, and their ratio.
//
//   mpirun -np P wiola-bench pipeline [--preset wiola-mini] [--microbatches 1,4,8,16] [--steps 8]
//     A P-stage pipeline (dp = 1): tokens/s per micro-batch count and the
//     measured bubble of every stage (waiting on peers / step time) beside the
//     1F1B theory (P-1)/(m+P-1).
#include <cblas.h>

#include <boost/program_options.hpp>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <sstream>
#include <vector>

#include "backend/cpu_threads.hpp"
#include "comm/mpi_communicator.hpp"
#include "core/error.hpp"
#include "core/text.hpp"
#include "model/flops.hpp"
#include "pipeline/schedule.hpp"
#include "train/trainer.hpp"

namespace po = boost::program_options;
using namespace wiola;

namespace {

// GFLOP/s of C = A·Bᵀ (the shape of a linear layer) over a few repetitions.
double sgemm_gflops(int m, int n, int k) {
  std::vector<float> a(std::size_t(m) * k, 0.5f), b(std::size_t(n) * k, 0.25f), c(std::size_t(m) * n);
  auto run = [&] {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, n, k, 1.0f, a.data(), k, b.data(), k,
                0.0f, c.data(), n);
  };
  run();  // warm-up
  int reps = 0;
  const auto t0 = std::chrono::steady_clock::now();
  double dt = 0;
  do {
    run();
    ++reps;
    dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  } while (dt < 0.5);
  return 2.0 * m * n * k * reps / dt / 1e9;
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
  po::options_description d("wiola-bench model");
  d.add_options()("preset", po::value(&preset_name))("micro-batch", po::value(&micro_batch))(
      "steps", po::value(&steps))("threads", po::value(&threads));
  po::variables_map vm;
  po::store(po::parse_command_line(argc, argv, d), vm);
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
  const double gemm_model = sgemm_gflops(rows, c.dB, c.d);  // the model's largest GEMM shape
  const double gemm_square = sgemm_gflops(1024, 1024, 1024);
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

int bench_pipeline(int argc, const char* const* argv, comm::Communicator& world,
                   const std::string& host) {
  std::string preset_name = "wiola-mini", list = "1,4,8,16";
  int micro_batch = 2, steps = 8;
  po::options_description d("wiola-bench pipeline");
  d.add_options()("preset", po::value(&preset_name))("micro-batch", po::value(&micro_batch))(
      "steps", po::value(&steps))("microbatches", po::value(&list));
  po::variables_map vm;
  po::store(po::parse_command_line(argc, argv, d), vm);
  po::notify(vm);
  const int P = world.size();
  if (world.rank() == 0)
    std::printf("pipeline of %d stage(s), %s, micro-batch %d, %d steps (first excluded)\n", P,
                preset_name.c_str(), micro_batch, steps);
  for (const std::string& item : split_list(list)) {
    const int m = std::stoi(item);
    TrainOptions o = base_options(preset_name, micro_batch, steps);
    o.pp = P;
    o.threads = 1;
    // Equal layer counts when they divide (the FLOP cost model underrates a
    // tiny model's layers on a CPU); else the cost model's split.
    if (o.model.L % P == 0) {
      o.stage_layers.clear();
      for (int s = 0; s < P; ++s) {
        if (s) o.stage_layers += ',';
        o.stage_layers += std::to_string(o.model.L / P);
      }
    }
    o.global_batch = m * micro_batch;
    std::ostringstream log;
    const TrainSummary s = train(o, world, host, log);
    if (world.rank() != 0) continue;
    std::printf("  P=%d m=%-3d %9.0f tokens/s  bubble theory %5.1f%%  measured:", P, m,
                s.tokens_per_second,
                100 * pipeline::theoretical_bubble(pipeline::ScheduleKind::OneFOneB, P, m));
    for (const StageTimes& t : s.stage_times)
      std::printf(" %5.1f%%", 100 * t.wait / std::max(t.total, 1e-9));
    std::printf("\n");
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  comm::MpiRuntime mpi(&argc, &argv);
  try {
    const std::string mode = argc > 1 ? argv[1] : "";
    if (mode == "model") return bench_model(argc - 1, argv + 1, mpi.world(), mpi.host());
    if (mode == "pipeline") return bench_pipeline(argc - 1, argv + 1, mpi.world(), mpi.host());
    std::cerr << "usage: wiola-bench model|pipeline [options] (see the comment in tools/wiola-bench)\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "wiola-bench: " << e.what() << "\n";
    if (mpi.world().size() > 1) mpi.world().abort(e.what(), 3);
    return 2;
  }
}
