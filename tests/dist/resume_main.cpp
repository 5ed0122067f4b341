// Exact resume.
//   mpirun -np N wiola_test_resume --pp P --dp D --zero Z [--to-pp P2 --to-dp D2 --to-zero Z2] --out DIR
// Trains 6 steps straight on (P, D, Z); then 3 steps on (P, D, Z), a
// checkpoint, a stop, and a resume to step 6 on (P2, D2, Z2). Same layout:
// the losses of steps 4-6 and the final parameters must be bit-identical.
// Another layout: equal to 1e-6 relative. Exit status 0 when they are.
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <sstream>

#include "comm/mpi_communicator.hpp"
#include "io/weights_file.hpp"
#include "driver_options.hpp"
#include "train/trainer.hpp"

using namespace wiola;

int main(int argc, char** argv) {
  comm::MpiRuntime mpi(&argc, &argv);
  auto& world = mpi.world();
  TrainOptions o = test::tiny_distributed_run(6, 0.2);
  int to_pp = -1, to_dp = -1, to_zero = -1;
  std::string out = ".";
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--pp")
      o.parallel.pp = std::stoi(v);
    else if (k == "--dp")
      o.parallel.dp = std::stoi(v);
    else if (k == "--zero")
      o.parallel.zero = std::stoi(v);
    else if (k == "--to-pp") to_pp = std::stoi(v);
    else if (k == "--to-dp") to_dp = std::stoi(v);
    else if (k == "--to-zero") to_zero = std::stoi(v);
    else if (k == "--arch")
      o.model.config.arch = parse_arch(v);
    else if (k == "--out") out = v;
    else {
      std::cerr << "unknown argument " << k << "\n";
      return 2;
    }
  }
  world.set_timeout(o.parallel.comm_timeout);
  std::ostringstream name;
  name << "resume_pp" << o.parallel.pp << "dp" << o.parallel.dp << "z" << o.parallel.zero
       << "_to_pp" << to_pp << "dp" << to_dp << "z" << to_zero;
  if (!o.model.config.main_family()) name << "_" << arch_name(o.model.config.arch);
  const std::string tag = name.str();
  const std::string base = out + "/" + tag;
  if (world.rank() == 0) {
    std::filesystem::remove_all(base);
    std::filesystem::create_directories(base);
  }
  world.barrier();

  std::ostringstream quiet;
  TrainOptions straight = o;
  straight.checkpoint.export_weights = base + "/straight.h5";
  const TrainSummary a = train(straight, world, mpi.host(), quiet);

  TrainOptions first = o;
  first.checkpoint.save_dir = base + "/ckpt";
  first.checkpoint.exit_after_step = 3;
  train(first, world, mpi.host(), quiet);

  TrainOptions second = o;
  second.checkpoint.save_dir = base + "/ckpt";
  second.checkpoint.resume = ResumeFrom::parse("auto");
  if (to_pp > 0) second.parallel.pp = to_pp;
  if (to_dp > 0) second.parallel.dp = to_dp;
  if (to_zero >= 0) second.parallel.zero = to_zero;
  second.checkpoint.export_weights = base + "/resumed.h5";
  const TrainSummary b = train(second, world, mpi.host(), quiet);

  int status = 0;
  if (world.rank() == 0) {
    const bool same = second.parallel.pp == o.parallel.pp && second.parallel.dp == o.parallel.dp &&
                      second.parallel.zero == o.parallel.zero;
    const double tol = same ? 0.0 : 1e-6;
    double worst = 0;
    if (b.first_step != 4 || b.losses.size() != 3 || a.losses.size() != 6) {
      std::printf("resumed at step %lld with %zu losses\n", static_cast<long long>(b.first_step),
                  b.losses.size());
      status = 1;
    } else {
      for (int s = 0; s < 3; ++s) {
        const double x = a.losses[3 + s], y = b.losses[s];
        const double d = std::abs(x - y) / std::abs(x);
        std::printf("step %d: straight %.9g resumed %.9g rel %.2e\n", 4 + s, x, y, d);
        worst = std::max(worst, d);
      }
      const WeightsFile wa = read_weights_file(straight.checkpoint.export_weights);
      const WeightsFile wb = read_weights_file(second.checkpoint.export_weights);
      for (std::size_t i = 0; i < wa.arrays.size(); ++i) {
        double num = 0, den = 1e-300;
        for (std::size_t k = 0; k < wa.arrays[i].data.size(); ++k) {
          const double d = wa.arrays[i].data[k] - wb.arrays[i].data[k];
          num += d * d;
          den += wa.arrays[i].data[k] * wa.arrays[i].data[k];
        }
        worst = std::max(worst, std::sqrt(num / den));
      }
      std::printf("%s: worst relative difference %.3e (allowed %.0e)\n", tag.c_str(), worst, tol);
      status = worst <= tol ? 0 : 1;
    }
  }
  world.broadcast(&status, sizeof status, 0);
  if (world.rank() == 0 && status == 0) std::filesystem::remove_all(base);
  return status;
}
