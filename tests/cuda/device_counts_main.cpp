// wiola_cuda_counts: what one micro-batch asks of the device, counted through
// the CUDA backend's own code on the emulated execution model
// (backend/cuda/device_counters.hpp): kernel launches, matrix products,
// memsets, copies, host synchronisations, allocations, and the bytes the
// non-GEMM work moves against their floor, per layer (an ATM
// layer and a plain one) and for the last layer with the head, forward and
// backward. The counts
// depend on the model's widths and the layer kind, not on the sequence
// length, so a short micro-batch of the preset's widths gives the figures of
// a full one. tools/gpu-counts.sh runs it; docs/performance.md keeps the table.
//
//   wiola_cuda_counts [--preset wiola-1.5b] [--batch 1] [--seq 32] [--dtype bf16]
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>

#include "backend/cuda/cuda_backend.hpp"
#include "backend/cuda/device_counters.hpp"
#include "core/error.hpp"
#include "model/layer_boundaries.hpp"
#include "model/stage_model.hpp"
#include "synthetic_input.hpp"

using namespace wiola;
using cuda::DeviceCounts;

namespace {

// Non-GEMM bytes over their floor (device_counters.hpp).
double floor_ratio(const DeviceCounts& c) {
  return c.floor_bytes > 0 ? double(c.non_gemm_bytes()) / double(c.floor_bytes) : 0.0;
}

std::string line(const char* what, const DeviceCounts& c) {
  char buf[320];
  std::snprintf(buf, sizeof buf,
                "  %-22s launches %4lld (GEMMs %3lld, kernels %3lld), memsets %3lld (%lld kB), "
                "copies %2lld, host syncs %2lld, allocations %3lld, non-GEMM %7.2f MB "
                "(floor %7.2f MB, x %.2f)",
                what, static_cast<long long>(c.launches + c.gemms), static_cast<long long>(c.gemms),
                static_cast<long long>(c.launches), static_cast<long long>(c.memsets),
                static_cast<long long>(c.memset_bytes / 1024), static_cast<long long>(c.copies),
                static_cast<long long>(c.host_syncs), static_cast<long long>(c.allocations),
                double(c.non_gemm_bytes()) / 1e6, double(c.floor_bytes) / 1e6, floor_ratio(c));
  return buf;
}

// The counters at each layer boundary of one forward and one backward.
class CountsAtBoundaries final : public LayerBoundaries {
 public:
  std::map<int, DeviceCounts> forward, backward;
  void before_layer_forward(int layer) override { forward[layer] = cuda::device_counts(); }
  void layer_grads_final(int layer) override { backward[layer] = cuda::device_counts(); }
};

DeviceCounts operator+(const DeviceCounts& a, const DeviceCounts& b) {
  DeviceCounts z;
  return a - (z - b);
}

int run(int argc, char** argv) {
  std::string preset_name = "wiola-1.5b", dtype_name_arg = "bf16";
  int B = 1, T = 32;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const auto value = [&]() -> std::string {
      require(i + 1 < argc, a, " needs a value");
      return argv[++i];
    };
    if (a == "--preset") preset_name = value();
    else if (a == "--batch") B = std::atoi(value().c_str());
    else if (a == "--seq") T = std::atoi(value().c_str());
    else if (a == "--dtype") dtype_name_arg = value();
    else fail("unknown argument '", a, "' (--preset, --batch, --seq, --dtype)");
  }
  require(B >= 1 && T >= 2, "--batch must be >= 1 and --seq >= 2");
  ModelConfig cfg = preset(preset_name);
  require(cfg.main_family(), preset_name, ": the counts cover the main family's layers");
  // Four layers of the preset's widths: with L = 4, ATM runs in layer 1 only
  // (layers [L/3, 2L/3)), so layer 1 is an ATM layer and layer 2 a plain one.
  cfg.L = 4;
  require(cfg.atm_layer(1) && !cfg.atm_layer(2), "the layer kinds are not as expected");
  require(T <= cfg.T, "--seq ", T, " exceeds the context ", cfg.T);
  const DType dtype = parse_dtype(dtype_name_arg);

  cuda::CudaBackend be(0);
  StageModel model(be, cfg, StageSpec::whole(cfg), dtype);
  model.params().init(7);
  StageInput in = test::synthetic_input(be, cfg, B, T);
  // As the trainer runs a step: the backward's loss scale known to the forward.
  in.loss_scale = 1.0 / (B * T);

  // Two micro-batches: the first warms what is allocated once (plans, the
  // cuBLASLt workspace); the second is reported.
  CountsAtBoundaries at;
  DeviceCounts fwd_begin, fwd_end, bwd_begin, bwd_end;
  for (int pass = 0; pass < 2; ++pass) {
    model.params().zero_grads();
    StageSaved saved;
    fwd_begin = cuda::device_counts();
    const StageOutput out = model.forward(in, /*training=*/true, saved, &at);
    fwd_end = bwd_begin = cuda::device_counts();
    model.backward(Tensor{}, {}, in.loss_scale, saved, &at);
    bwd_end = cuda::device_counts();
    (void)out;
  }
  std::map<int, DeviceCounts>& fwd_at = at.forward;
  std::map<int, DeviceCounts>& bwd_at = at.backward;
  // A segment runs from one hook to the next; the summary of a layer's
  // output is taken before the next layer's hook, so it counts with the layer.
  const DeviceCounts atm_f = fwd_at[2] - fwd_at[1], plain_f = fwd_at[3] - fwd_at[2];
  const DeviceCounts atm_b = bwd_at[1] - bwd_at[2], plain_b = bwd_at[2] - bwd_at[3];
  // The head has no hook of its own: it shares a segment with the last layer
  // (a plain one), reported as measured.
  const DeviceCounts head_f = fwd_end - fwd_at[3], head_b = bwd_at[3] - bwd_begin;
  const DeviceCounts embed_f = fwd_at[0] - fwd_begin, embed_b = bwd_end - bwd_at[0];

  std::printf("%s widths (d %d, H %d, Hkv %d, V %d), %s, one micro-batch of %d x %d tokens, "
              "training, the second of two (emulated CUDA backend):\n",
              preset_name.c_str(), cfg.d, cfg.H, cfg.Hkv, cfg.V, dtype_name_arg.c_str(), B, T);
  std::printf("%s\n%s\n%s\n", line("ATM layer forward", atm_f).c_str(),
              line("ATM layer backward", atm_b).c_str(),
              line("ATM layer, both", atm_f + atm_b).c_str());
  std::printf("%s\n%s\n%s\n", line("plain layer forward", plain_f).c_str(),
              line("plain layer backward", plain_b).c_str(),
              line("plain layer, both", plain_f + plain_b).c_str());
  std::printf("%s\n%s\n", line("last layer + head fwd", head_f).c_str(),
              line("last layer + head bwd", head_b).c_str());
  std::printf("%s\n", line("embedding, both", embed_f + embed_b).c_str());
  std::printf("%s\n", line("micro-batch, all", (fwd_end - fwd_begin) + (bwd_end - bwd_begin)).c_str());
  const DeviceCounts l = atm_f + atm_b;
  std::printf("per layer: launches %lld, host syncs %lld, memsets %lld, allocations %lld, "
              "non-GEMM bytes %.2f x the floor\n",
              static_cast<long long>(l.launches + l.gemms), static_cast<long long>(l.host_syncs),
              static_cast<long long>(l.memsets), static_cast<long long>(l.allocations),
              floor_ratio(l));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "wiola_cuda_counts: %s\n", e.what());
    return 1;
  }
}
