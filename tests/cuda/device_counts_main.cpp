// wiola_cuda_counts: what one micro-batch asks of the device, counted through
// the CUDA backend's own code on the emulated execution model
// (backend/cuda/device_counters.hpp): kernel launches, matrix products,
// memsets, copies, host synchronisations, allocations, the bytes the
// non-GEMM work moves against their floor, and the FLOPs of the products and
// the attention tiles, per layer (an ATM layer and a plain one) and for the
// last layer with the head, forward and backward; and the attention
// kernels' shared-memory traffic per tensor-core FLOP (the emulation's
// count). The launches depend on the model's widths and the layer kind, not
// on the sequence length, so a short micro-batch gives a full one's; bytes
// and FLOPs grow with the tokens, which --json's three shapes let
// wiola-profile --project fit. tools/gpu-counts.sh runs it;
// docs/performance.md keeps the table.
//
//   wiola_cuda_counts [--preset wiola-1.5b] [--batch 1] [--seq 32] [--dtype bf16] [--json FILE]
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "backend/cuda/cuda_backend.hpp"
#include "backend/cuda/device_counters.hpp"
#include "core/error.hpp"
#include "core/model_fields.hpp"
#include "model/layer_boundaries.hpp"
#include "model/stage_model.hpp"
#include "cuda_emu.hpp"
#include "synthetic_input.hpp"

using namespace wiola;
using Json = nlohmann::json;

namespace {

std::string line(const char* what, const DeviceCounts& c) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "  %-22s ", what);
  return buf + describe_counts(c);
}

// The counters at each layer boundary of one forward and one backward.
class CountsAtBoundaries final : public LayerBoundaries {
 public:
  std::map<int, DeviceCounts> forward, backward;
  void before_layer_forward(int layer) override { forward[layer] = cuda::device_counts(); }
  void layer_grads_final(int layer) override { backward[layer] = cuda::device_counts(); }
};


// One micro-batch's counts, by part, forward and backward.
struct Parts {
  DeviceCounts atm_f, atm_b, plain_f, plain_b, last_f, last_b, embed_f, embed_b, all;
  // The forward's and the backward's (only attention has them).
  emu::TensorCoreTraffic tensor_cores_f, tensor_cores_b;
};

emu::TensorCoreTraffic operator-(const emu::TensorCoreTraffic& a, const emu::TensorCoreTraffic& b) {
  return {a.mma_flops - b.mma_flops, a.fragment_bytes - b.fragment_bytes,
          a.staged_bytes - b.staged_bytes};
}
emu::TensorCoreTraffic operator+(const emu::TensorCoreTraffic& a, const emu::TensorCoreTraffic& b) {
  return {a.mma_flops + b.mma_flops, a.fragment_bytes + b.fragment_bytes,
          a.staged_bytes + b.staged_bytes};
}
// Shared-memory operand bytes per tensor-core FLOP.
double shared_per_flop(const emu::TensorCoreTraffic& t) {
  return double(t.fragment_bytes + t.staged_bytes) / double(t.mma_flops);
}

// Counts the second of two training micro-batches of `batch` x `seq` tokens:
// the first warms what is allocated once (plans, the cuBLASLt workspace).
Parts measure(Backend& be, StageModel& model, const ModelConfig& cfg, int batch, int seq) {
  StageInput in = test::synthetic_input(be, cfg, batch, seq);
  // As the trainer runs a step: the backward's loss scale known to the forward.
  in.loss_scale = 1.0 / (batch * seq);
  CountsAtBoundaries at;
  DeviceCounts fwd_begin, fwd_end, bwd_begin, bwd_end;
  emu::TensorCoreTraffic tc_begin, tc_mid, tc_end;
  for (int pass = 0; pass < 2; ++pass) {
    model.params().zero_grads();
    StageSaved saved;
    tc_begin = emu::tensor_core_traffic();
    fwd_begin = cuda::device_counts();
    (void)model.forward(in, /*training=*/true, saved, &at);
    fwd_end = bwd_begin = cuda::device_counts();
    tc_mid = emu::tensor_core_traffic();
    model.backward(Tensor{}, {}, in.loss_scale, saved, &at);
    bwd_end = cuda::device_counts();
    tc_end = emu::tensor_core_traffic();
  }
  std::map<int, DeviceCounts>& f = at.forward;
  std::map<int, DeviceCounts>& b = at.backward;
  // A segment runs from one hook to the next; the summary of a layer's
  // output is taken before the next layer's hook, so it counts with the
  // layer. The head has no hook of its own: it shares a segment with the
  // last layer (a plain one).
  Parts p;
  p.atm_f = f[2] - f[1];
  p.plain_f = f[3] - f[2];
  p.atm_b = b[1] - b[2];
  p.plain_b = b[2] - b[3];
  p.last_f = fwd_end - f[3];
  p.last_b = b[3] - bwd_begin;
  p.embed_f = f[0] - fwd_begin;
  p.embed_b = bwd_end - b[0];
  p.all = (fwd_end - fwd_begin) + (bwd_end - bwd_begin);
  p.tensor_cores_f = tc_mid - tc_begin;
  p.tensor_cores_b = tc_end - tc_mid;
  return p;
}

Json to_json(const DeviceCounts& c) {
  return {{"kernels", c.launches},         {"gemms", c.gemms},
          {"memsets", c.memsets},          {"copies", c.copies},
          {"host_syncs", c.host_syncs},    {"allocations", c.allocations},
          {"non_gemm_bytes", c.non_gemm_bytes()}, {"floor_bytes", c.floor_bytes},
          {"gemm_flops", c.gemm_flops},    {"attention_flops", c.attention_flops},
          {"device_operations", c.device_operations()}};
}

Json to_json(const Parts& p, int batch, int seq) {
  const auto both = [](const DeviceCounts& fwd, const DeviceCounts& bwd) {
    return Json{{"forward", to_json(fwd)}, {"backward", to_json(bwd)}};
  };
  return {{"batch", batch},
          {"seq", seq},
          {"atm_layer", both(p.atm_f, p.atm_b)},
          {"plain_layer", both(p.plain_f, p.plain_b)},
          {"last_layer_and_head", both(p.last_f, p.last_b)},
          {"embedding", both(p.embed_f, p.embed_b)}};
}

void print(const Parts& p, const std::string& preset_name, const ModelConfig& cfg,
           const std::string& dtype_name_arg, int B, int T) {
  std::printf("%s widths (d %d, H %d, Hkv %d, V %d), %s, one micro-batch of %d x %d tokens, "
              "training, the second of two (emulated CUDA backend):\n",
              preset_name.c_str(), cfg.d, cfg.H, cfg.Hkv, cfg.V, dtype_name_arg.c_str(), B, T);
  std::printf("%s\n%s\n%s\n", line("ATM layer forward", p.atm_f).c_str(),
              line("ATM layer backward", p.atm_b).c_str(),
              line("ATM layer, both", p.atm_f + p.atm_b).c_str());
  std::printf("%s\n%s\n%s\n", line("plain layer forward", p.plain_f).c_str(),
              line("plain layer backward", p.plain_b).c_str(),
              line("plain layer, both", p.plain_f + p.plain_b).c_str());
  std::printf("%s\n%s\n", line("last layer + head fwd", p.last_f).c_str(),
              line("last layer + head bwd", p.last_b).c_str());
  std::printf("%s\n", line("embedding, both", p.embed_f + p.embed_b).c_str());
  std::printf("%s\n", line("micro-batch, all", p.all).c_str());
  // The attention kernels' operands and products go through shared memory:
  // what the tensor cores' work costs there (the emulation's count).
  const emu::TensorCoreTraffic tc = p.tensor_cores_f + p.tensor_cores_b;
  if (tc.mma_flops > 0 && p.tensor_cores_f.mma_flops > 0 && p.tensor_cores_b.mma_flops > 0) {
    std::printf("attention, shared memory per MMA FLOP: %.4f bytes (fragments %.2f MB, "
                "staged tiles %.2f MB, over %.4g GFLOP of tensor-core products); "
                "forward %.4f, backward %.4f\n",
                shared_per_flop(tc), double(tc.fragment_bytes) / 1e6,
                double(tc.staged_bytes) / 1e6, double(tc.mma_flops) / 1e9,
                shared_per_flop(p.tensor_cores_f), shared_per_flop(p.tensor_cores_b));
  }
  const DeviceCounts l = p.atm_f + p.atm_b;
  std::printf("per layer: launches %lld, host syncs %lld, memsets %lld, allocations %lld, "
              "non-GEMM bytes %.2f x the floor\n",
              static_cast<long long>(l.launches + l.gemms), static_cast<long long>(l.host_syncs),
              static_cast<long long>(l.memsets), static_cast<long long>(l.allocations),
              l.floor_ratio());
}

// The counts file (--json) for wiola-profile --project: the model's fields,
// and the parts' counts at three shapes, (B, T), (2B, T) and (B, 2T), from
// which the projection separates what is fixed, what grows with the
// sequences and what grows with their length squared (docs/profiling.md,
// "Projection from counts").
void write_counts_file(const std::string& path, Backend& be, StageModel& model,
                       const ModelConfig& cfg, const std::string& dtype_name_arg, int B, int T,
                       const Parts& first) {
  Json model_fields_json = Json::object();
  for (const ModelField& f : model_fields()) model_fields_json[f.key] = f.text(cfg);
  Json shapes = Json::array({to_json(first, B, T)});
  shapes.push_back(to_json(measure(be, model, cfg, 2 * B, T), 2 * B, T));
  shapes.push_back(to_json(measure(be, model, cfg, B, 2 * T), B, 2 * T));
  const Json j = {{"format", "wiola-device-counts"},
                  {"version", 1},
                  {"what", "one training micro-batch per shape, the second of two, counted on "
                           "the emulated CUDA backend (tools/gpu-counts.sh --json)"},
                  {"preset", cfg.preset},
                  {"dtype", dtype_name_arg},
                  {"model", model_fields_json},
                  {"shapes", shapes}};
  std::ofstream out(path);
  out << j.dump(1) << "\n";
  require(out.good(), "cannot write the counts file ", path);
}

int run(int argc, char** argv) {
  std::string preset_name = "wiola-1.5b", dtype_name_arg = "bf16", json_path;
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
    else if (a == "--json") json_path = value();
    else fail("unknown argument '", a, "' (--preset, --batch, --seq, --dtype, --json)");
  }
  require(B >= 1 && T >= 2, "--batch must be >= 1 and --seq >= 2");
  ModelConfig cfg = preset(preset_name);
  require(cfg.main_family(), preset_name, ": the counts cover the main family's layers");
  // Four layers of the preset's widths: with L = 4, ATM runs in layer 1 only
  // (layers [L/3, 2L/3)), so layer 1 is an ATM layer and layer 2 a plain one.
  cfg.L = 4;
  require(cfg.atm_layer(1) && !cfg.atm_layer(2), "the layer kinds are not as expected");
  require(T <= cfg.T, "--seq ", T, " exceeds the context ", cfg.T);
  require(json_path.empty() || 2 * T <= cfg.T, "--json also counts 2 x --seq = ", 2 * T,
          " tokens a sequence, more than the context ", cfg.T);
  const DType dtype = parse_dtype(dtype_name_arg);

  cuda::CudaBackend be(0);
  StageModel model(be, cfg, StageSpec::whole(cfg), dtype);
  model.params().init(7);
  const Parts first = measure(be, model, cfg, B, T);
  print(first, preset_name, cfg, dtype_name_arg, B, T);
  if (!json_path.empty()) {
    write_counts_file(json_path, be, model, cfg, dtype_name_arg, B, T, first);
    std::printf("counts at %d x %d, %d x %d and %d x %d tokens written to %s\n", B, T, 2 * B, T,
                B, 2 * T, json_path.c_str());
  }
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
