// Multi-rank profile test (under mpirun): profiles a few steps of wiola-tiny
// through the library (the path wiola-profile takes), writes the outputs, and
// rank 0 reads trace.json and profile.json back and checks them.
//
//   wiola_test_profile_mpi --pp 2 --dp 2 [--schedule gpipe] [--zero 1] --out DIR
//   wiola_test_profile_mpi --check DIR --pp 2 --dp 1 --steps 3 --microbatches 4
//     (checks what a wiola-profile run wrote into DIR; one process)
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <string>

#include "comm/mpi_communicator.hpp"
#include "core/error.hpp"
#include "profile/profile_run.hpp"
#include "trace_check.hpp"
#include "wiola-profile/files.hpp"
#include "wiola-profile/outputs.hpp"

using namespace wiola;
using namespace wiola::profile;

namespace {

struct Args {
  int pp = 1, dp = 1, steps = 3, microbatches = 4, micro_batch = 2, zero = 0, chunks = 1;
  std::string schedule = "1f1b", out, check;
};

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--pp") a.pp = std::stoi(v);
    else if (k == "--dp") a.dp = std::stoi(v);
    else if (k == "--steps") a.steps = std::stoi(v);
    else if (k == "--microbatches") a.microbatches = std::stoi(v);
    else if (k == "--micro-batch") a.micro_batch = std::stoi(v);
    else if (k == "--zero") a.zero = std::stoi(v);
    else if (k == "--schedule") a.schedule = v;
    else if (k == "--virtual-stages") a.chunks = std::stoi(v);
    else if (k == "--out") a.out = v;
    else if (k == "--check") a.check = v;
    else fail("unknown argument ", k);
  }
  return a;
}

int check_dir(const std::string& dir, const Args& a) {
  testing::ExpectedRun run;
  run.pp = a.pp;
  run.dp = a.dp;
  run.steps = a.steps;
  run.microbatches = a.microbatches;
  run.schedule = pipeline::parse_schedule_kind(a.schedule);
  run.chunks = a.chunks;
  const auto path = [&](const char* f) { return (std::filesystem::path(dir) / f).string(); };
  std::vector<std::string> problems = testing::check_trace(read_json_file(path("trace.json")), run);
  for (const std::string& p : testing::check_profile_json(read_json_file(path("profile.json")), run))
    problems.push_back(p);
  const std::string csv = read_text_file(path("profile.csv"));
  if (csv.rfind("scope,rank,stage", 0) != 0) problems.push_back("profile.csv: unexpected header");
  for (const std::string& p : problems) std::cerr << "FAIL: " << p << "\n";
  std::cout << (problems.empty() ? "trace and profile check out" : "problems found") << " ("
            << dir << ")\n";
  return problems.empty() ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  comm::MpiRuntime mpi(&argc, &argv);
  auto& world = mpi.world();
  try {
    const Args a = parse(argc, argv);
    if (!a.check.empty()) return world.rank() == 0 ? check_dir(a.check, a) : 0;
    require(!a.out.empty(), "--out DIR is required");
    TrainOptions o;
    o.model.config = preset("wiola-tiny");
    o.data.train_files = {WIOLA_EMBEDDED_TRAIN_FILE};
    o.parallel.pp = a.pp;
    o.parallel.dp = a.dp;
    o.parallel.micro_batch = a.micro_batch;
    o.parallel.global_batch = a.microbatches * a.micro_batch * a.dp;
    o.parallel.zero = a.zero;
    o.parallel.schedule = pipeline::parse_schedule_kind(a.schedule);
    o.parallel.virtual_stages = a.chunks;
    o.device.threads = 1;
    o.parallel.comm_timeout = 120;
    world.set_timeout(o.parallel.comm_timeout);
    // A small, quick peak measurement: the test checks structure, not speed.
    auto be = make_cpu_backend();
    const PeakFlops peak = resolve_peak("measured", *be, 128, 0.02, 1);
    const LinkProbe link = probe_world_link(world, 4096);
    const ProfileResult res = run_profile(o, 1, a.steps, world, mpi.host(), peak, link);
    int status = 0;
    if (world.rank() == 0) {
      std::filesystem::remove_all(a.out);
      write_profile_outputs(a.out, res, true);
      status = check_dir(a.out, a);
    }
    return status;
  } catch (const std::exception& e) {
    world.abort(std::string("wiola_test_profile_mpi: ") + e.what(), 3);
  }
}
