// wiola-bench layers: training-step throughput of a model cut to a few
// full-width layers (embedding, --layers layers, final norm, tied head and
// loss, AdamW) on one device, and where the time goes per op family.
//
//   wiola-bench layers [--preset wiola-1.5b] [--layers 4] [--seq-len 2048]
//                      [--micro-batch 2] [--device auto|cpu|cuda] [--dtype auto]
//                      [--steps 10] [--warmup 3] [--peak-tflops N] [--split-steps 1]
//
// Prints tokens/s, model FLOP/s (the FLOP formula of docs/models.md for the
// cut model), MFU against the device's dense peak (a datasheet figure for
// known GPUs, else a measured GEMM, named in the output), peak memory, and a
// table of the time per op family, forward, backward and optimizer, from a
// second, synchronised pass (time_split.hpp). On a device that counts its
// work (Backend::device_counts: CUDA), each step's counts are printed beside
// its time: launches, products, memsets, host syncs, allocations, bytes and
// FLOPs, and each kind of work over the step time; given ceilings
// (--gemm-tflops, --attention-tflops, --memory-gbps, --launch-us), the
// counted work priced at them as a projection from counts prices it, beside
// the measured step. Where the backend records graphs, a micro-batch's
// forward and backward eager and replayed as a CUDA graph, timed in one run.
#include <boost/program_options.hpp>
#include <chrono>
#include <cstdio>
#include <algorithm>
#include <map>
#include <memory>
#include <sstream>
#include <string>

#include "time_split.hpp"
#include "core/error.hpp"
#include "core/rng.hpp"
#include "model/flops.hpp"
#include "model/stage_model.hpp"
#include "optim/adamw_optimizer.hpp"
#include "profile/peak.hpp"
#include "profile/work_time.hpp"
#include "train/device_choice.hpp"

namespace po = boost::program_options;

namespace wiola::bench {

namespace {

struct Options {
  std::string preset = "wiola-1.5b", device = "auto", dtype = "auto", peak;
  int layers = 4, seq_len = 2048, micro_batch = 2, steps = 10, warmup = 3, split_steps = 1;
  // Ceilings to price the counted work at (0: not given).
  double gemm_tflops = 0, attention_tflops = 0, memory_gbps = 0, launch_us = 0;
};

// The dense peak of a device by its name (datasheet figures, no sparsity).
struct Peak {
  double flops = 0;
  std::string source;
};

// A micro-batch's forward and backward queued op by op, against the same
// work replayed as one CUDA graph (what the trainer does: --cuda-graphs), in
// one run: what the host's launches cost beside the kernels.
void print_graph_replay(Backend& be, StageModel& model, const StageInput& input, int steps) {
  const double scale = 1.0 / double(input.tokens.rows());
  const auto micro_batch = [&] {
    StageSaved saved;
    model.forward(input, /*training=*/true, saved);
    model.backward(Tensor{}, {}, scale, saved);
  };
  const auto time = [&](const auto& run) {
    be.synchronize();
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < steps; ++i) run();
    be.synchronize();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / steps;
  };
  std::unique_ptr<DeviceGraph> graph;
  try {
    graph = be.capture(micro_batch);
  } catch (const Error& e) {  // the other figures stand without it
    std::printf("  forward + backward: the CUDA graph capture failed: %s\n", e.what());
    return;
  }
  const double eager = time(micro_batch), replay = time([&] { graph->replay(); });
  std::printf("  forward + backward: eager %.3f ms, CUDA graph replay %.3f ms (eager / graph "
              "%.3f)\n", eager * 1e3, replay * 1e3, eager / replay);
}

Peak device_peak(Backend& be, DType dtype, const std::string& given) {
  if (!given.empty()) {
    if (const auto known = profile::device_peak_tflops(given))
      return {*known * 1e12, given + " dense bf16 datasheet peak"};
    return {profile::parse_peak_spec(given), "--peak-tflops"};
  }
  const std::string name = be.name();
  for (const char* gpu : {"H100", "H200"})
    if (name.find(gpu) != std::string::npos)
      return {989e12, std::string(gpu) + " SXM dense bf16 peak, NVIDIA datasheet (989 TFLOP/s)"};
  if (name.find("A100") != std::string::npos)
    return {312e12, "A100 dense bf16 peak, NVIDIA datasheet (312 TFLOP/s)"};
  const double measured = profile::measure_linear_flops(be, dtype, 4096, 4096, 4096, 1.0);
  return {measured, "a " + std::string(dtype_name(dtype)) + " 4096^3 GEMM measured on it now"};
}

Tensor tokens_on(Backend& be, const std::vector<std::int32_t>& host) {
  Tensor t = be.alloc(DType::I32, static_cast<std::int64_t>(host.size()), 1);
  be.from_host(host.data(), t);
  return t;
}

}  // namespace

int bench_layers(int argc, const char* const* argv) {
  Options o;
  po::options_description d("wiola-bench layers");
  d.add_options()
      ("help,h", "print this help")
      ("preset", po::value(&o.preset)->default_value(o.preset), "model preset to cut")
      ("layers", po::value(&o.layers)->default_value(o.layers), "layers kept")
      ("seq-len", po::value(&o.seq_len)->default_value(o.seq_len), "context length T")
      ("micro-batch", po::value(&o.micro_batch)->default_value(o.micro_batch), "sequences per step")
      ("device", po::value(&o.device)->default_value(o.device), "auto | cpu | cuda")
      ("dtype", po::value(&o.dtype)->default_value(o.dtype), "auto | bf16 | fp32 | fp64")
      ("steps", po::value(&o.steps)->default_value(o.steps), "measured steps")
      ("warmup", po::value(&o.warmup)->default_value(o.warmup), "steps before measuring")
      ("peak-tflops", po::value(&o.peak), "the peak MFU is measured against: TFLOP/s or h100 | h200 | a100")
      ("split-steps", po::value(&o.split_steps)->default_value(o.split_steps), "steps of the timed pass (0: none)")
      ("gemm-tflops", po::value(&o.gemm_tflops), "with --attention-tflops and --memory-gbps: price the counted work at these ceilings beside the measured step (a device that counts)")
      ("attention-tflops", po::value(&o.attention_tflops), "the attention kernels' ceiling")
      ("memory-gbps", po::value(&o.memory_gbps), "the memory bandwidth ceiling")
      ("launch-us", po::value(&o.launch_us), "the gap per device operation (default 0)");
  po::variables_map vm;
  po::store(po::parse_command_line(argc, argv, d), vm);
  if (vm.count("help")) {
    std::printf("%s\n", (std::ostringstream() << d).str().c_str());
    return 0;
  }
  po::notify(vm);
  require(o.layers >= 1 && o.seq_len >= 1 && o.micro_batch >= 1 && o.steps >= 1 && o.warmup >= 0,
          "wiola-bench layers: --layers, --seq-len, --micro-batch and --steps must be positive");
  const bool priced =
      vm.count("gemm-tflops") + vm.count("attention-tflops") + vm.count("memory-gbps") > 0;
  require(!priced || (o.gemm_tflops > 0 && o.attention_tflops > 0 && o.memory_gbps > 0),
          "wiola-bench layers: --gemm-tflops, --attention-tflops and --memory-gbps go together, "
          "each positive");
  require(o.launch_us >= 0, "wiola-bench layers: --launch-us must not be negative");

  ModelConfig c = preset(o.preset);
  c.L = o.layers;
  c.T = o.seq_len;
  c.validate();
  const DeviceChoice device = o.device == "cuda"  ? DeviceChoice::CUDA
                              : o.device == "cpu" ? DeviceChoice::CPU
                                                  : DeviceChoice::Auto;
  const bool explicit_dtype = o.dtype != "auto";
  ChosenBackend chosen =
      choose_backend(device, explicit_dtype ? parse_dtype(o.dtype) : DType::F32, explicit_dtype);
  Backend& be = *chosen.backend;
  StageModel model(be, c, StageSpec::whole(c), chosen.dtype);
  model.params().init(1);
  const ParamLayout& layout = model.params().layout();
  AdamWOptimizer adam(be, layout, chosen.dtype, 0, layout.total(), {});
  adam.take_master_from(model.params().params());

  // Random tokens: the speed does not depend on the text.
  const std::int64_t n = std::int64_t(o.micro_batch) * c.T;
  std::vector<std::int32_t> in(static_cast<std::size_t>(n)), tg(in.size());
  for (std::size_t i = 0; i < in.size(); ++i) {
    in[i] = static_cast<std::int32_t>(splitmix64(i * 2 + 1) % std::uint64_t(c.V));
    tg[i] = static_cast<std::int32_t>(splitmix64(i * 2 + 2) % std::uint64_t(c.V));
  }
  StageInput input;
  input.batch = o.micro_batch;
  input.seq = c.T;
  input.tokens = tokens_on(be, in);
  input.targets = tokens_on(be, tg);
  long updates = 0;
  auto step = [&] {
    model.params().zero_grads();
    StageSaved saved;
    model.forward(input, /*training=*/true, saved);
    model.backward(Tensor{}, {}, 1.0 / double(n), saved);
    adam.step(model.params().params(), model.params().grads(), 1e-4, 1.0, ++updates);
  };

  for (int i = 0; i < o.warmup; ++i) step();
  be.synchronize();
  const std::optional<DeviceCounts> counts_before = be.device_counts();
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < o.steps; ++i) step();
  be.synchronize();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const std::optional<DeviceCounts> counts_after = be.device_counts();
  const double tokens_per_s = double(n) * o.steps / seconds;
  const double flops = tokens_per_s * training_flops_per_token(c);
  const Peak peak = device_peak(*chosen.backend, chosen.dtype, o.peak);

  std::printf("wiola-bench layers: %s cut to %d layers, T = %d, micro-batch %d (%lld tokens/step)\n",
              o.preset.c_str(), c.L, c.T, o.micro_batch, static_cast<long long>(n));
  std::printf("  device %s\n", chosen.description.c_str());
  std::printf("  parameters %lld, training FLOPs/token %.4g\n",
              static_cast<long long>(param_count(c)), training_flops_per_token(c));
  std::printf("  step %.2f ms, %.0f tokens/s, %.2f TFLOP/s\n", 1e3 * seconds / o.steps,
              tokens_per_s, flops / 1e12);
  std::printf("  MFU %.1f%% of %.1f TFLOP/s (%s)\n", 100.0 * flops / peak.flops,
              peak.flops / 1e12, peak.source.c_str());
  std::printf("  peak memory %.2f GiB\n", double(be.memory().peak) / double(1ull << 30));
  if (counts_before && counts_after) {
    // What each step asked of the device, beside the time it took: each
    // kind of work over the whole step is a lower bound on its own rate.
    const DeviceCounts counted = *counts_after - *counts_before;
    const profile::Work work = profile::work_of(counted, o.steps);
    const double step_s = seconds / o.steps;
    std::printf("  counted per step: %s\n", describe_counts(counted, o.steps).c_str());
    std::printf("  per step time: GEMMs %.4g TFLOP/s, attention tiles %.4g TFLOP/s, "
                "non-GEMM %.4g GB/s, %.3g us per device operation\n",
                work.gemm_flops / step_s / 1e12, work.attention_flops / step_s / 1e12,
                work.bytes / step_s / 1e9, step_s / work.operations * 1e6);
    if (priced) {
      // The projection's time model (profile/work_time.hpp) against this step.
      const profile::Ceilings ceilings{o.gemm_tflops * 1e12, o.attention_tflops * 1e12,
                                       o.memory_gbps * 1e9, o.launch_us * 1e-6, "given"};
      const profile::WorkTime t = profile::time_of(work, ceilings);
      std::printf("  counted work at the given ceilings: GEMMs %.2f + attention %.2f + memory "
                  "%.2f + operations %.2f = %.2f ms per step, measured %.2f ms (x %.2f)\n",
                  t.gemm_s * 1e3, t.attention_s * 1e3, t.memory_s * 1e3, t.operations_s * 1e3,
                  t.total() * 1e3, step_s * 1e3, step_s / t.total());
    }
  } else if (priced) {
    std::printf("  counted work: this device counts none, so the ceilings price nothing\n");
  }

  if (be.records_graphs()) print_graph_replay(be, model, input, o.steps);
  if (o.split_steps > 0) print_time_split(*chosen.backend, chosen.dtype, c, o.micro_batch, o.split_steps);
  return 0;
}

}  // namespace wiola::bench
