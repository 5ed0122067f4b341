// CUDA graphs (Backend::capture), on the emulated runtime and, in the device
// build, on a GPU: a capture records the stream's work without running it,
// refuses what CUDA refuses there, and a replay runs the recorded work again
// on the graph's own tensors -- so a replayed training micro-batch gives the
// bits an eager one gives.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/model_config.hpp"
#include "device_compare.hpp"
#include "model/stage_model.hpp"
#include "synthetic_input.hpp"

namespace wiola::test {
namespace {

// The backend under test, or a skip saying why there is none.
#define WIOLA_GRAPH_BACKEND(be)                                            \
  std::string why_not;                                                     \
  const std::unique_ptr<Backend> be##_owned = make_device_backend(why_not); \
  if (!be##_owned) GTEST_SKIP() << why_not;                                \
  Backend& be = *be##_owned

std::vector<float> host_f32(Backend& be, const Tensor& t) {
  std::vector<float> out(static_cast<std::size_t>(t.numel()));
  be.to_host(t, out.data());
  return out;
}

// A capture runs nothing: the tensor keeps its value until the replay.
TEST(CudaGraphs, ACaptureRunsNothingUntilTheReplay) {
  WIOLA_GRAPH_BACKEND(be);
  const Tensor t = be.alloc(DType::F32, 4, 8);
  const std::unique_ptr<DeviceGraph> graph = be.capture([&] { be.fill(t, 2.5); });
  EXPECT_EQ(host_f32(be, t), std::vector<float>(32, 0.0f));
  const std::optional<DeviceCounts> before = be.device_counts();
  graph->replay();
  const DeviceCounts d = *be.device_counts() - *before;
  EXPECT_EQ(d.graph_launches, 1);
  EXPECT_EQ(d.launches, 0);  // the fill was counted when it was captured
  EXPECT_EQ(host_f32(be, t), std::vector<float>(32, 2.5f));
}

// A host read inside a capture throws, naming it; the capture is dropped and
// the next one works.
TEST(CudaGraphs, AHostReadInsideACaptureIsRefused) {
  WIOLA_GRAPH_BACKEND(be);
  const Tensor t = be.alloc(DType::F32, 2, 2);
  float host[4];
  try {
    (void)be.capture([&] {
      be.fill(t, 1.0);
      be.to_host(t, host);
    });
    FAIL() << "a host read was captured";
  } catch (const Error& e) {
    // "a copy to host memory during a stream capture" (emulated), or CUDA's
    // "operation not permitted when stream is capturing"
    EXPECT_NE(std::string(e.what()).find("captur"), std::string::npos)
        << e.what();
  }
  EXPECT_EQ(host_f32(be, t), std::vector<float>(4, 0.0f));  // the dropped fill never ran
  be.capture([&] { be.fill(t, 3.0); })->replay();
  EXPECT_EQ(host_f32(be, t), std::vector<float>(4, 3.0f));
}

// The blocks a graph's tensors use are its own while it lives: a tensor the
// capture released is not handed to anyone else (a replay writes it again),
// and it goes back to the backend with the graph.
TEST(CudaGraphs, AGraphsMemoryIsItsOwnWhileItLives) {
  WIOLA_GRAPH_BACKEND(be);
  const void* inside = nullptr;
  std::unique_ptr<DeviceGraph> graph = be.capture([&] {
    const Tensor scratch = be.alloc_uninit(DType::F32, 64, 64);
    inside = scratch.data();
    be.fill(scratch, 1.0);
  });
  {
    const Tensor outside = be.alloc_uninit(DType::F32, 64, 64);
    EXPECT_NE(outside.data(), inside);
  }
  const Tensor again = be.alloc_uninit(DType::F32, 64, 64);  // takes `outside`'s block back
  graph.reset();
  const Tensor after = be.alloc_uninit(DType::F32, 64, 64);
  EXPECT_EQ(after.data(), inside);
}

// Token ids and targets of a micro-batch, different for each `salt`.
void write_batch(Backend& be, const StageInput& in, std::int32_t vocab, int salt) {
  std::vector<std::int32_t> ids(static_cast<std::size_t>(in.tokens.rows())), targets(ids.size());
  for (std::size_t i = 0; i < ids.size(); ++i) {
    ids[i] = static_cast<std::int32_t>((i * 7919 + std::size_t(salt) * 31) % std::size_t(vocab));
    targets[i] = static_cast<std::int32_t>((i * 104729 + std::size_t(salt)) % std::size_t(vocab));
  }
  be.from_host(ids.data(), in.tokens);
  be.from_host(targets.data(), in.targets);
}

struct StepBits {
  std::vector<float> grads;
  double loss = 0;
};

// One training micro-batch of wiola-tiny (bf16) with the ATM mode given: the
// gradients and loss of batches 1 and 2 run eagerly, then from one graph
// captured on a third batch and replayed with 1 and 2 written into its
// inputs. The graph is captured after a first eager micro-batch, as the
// trainer does: caches the first one fills are not filled inside a capture.
void replay_matches_eager(Backend& be, AtmMode atm) {
  ModelConfig cfg = preset("wiola-tiny");
  cfg.atm = atm;
  StageModel model(be, cfg, StageSpec::whole(cfg), DType::BF16);
  model.params().init(3);
  const int B = 2, T = cfg.T;
  StageInput in = synthetic_input(be, cfg, B, T);
  in.loss_sum = be.alloc(DType::F64, 1, 1);
  const double scale = 1.0 / (B * T);
  in.loss_scale = scale;
  const auto micro_batch = [&] {
    StageSaved saved;
    (void)model.forward(in, /*training=*/true, saved);
    model.backward(Tensor{}, {}, scale, saved);
  };
  const auto read = [&] {
    StepBits r;
    r.grads = host_f32(be, model.params().grads());
    be.to_host(in.loss_sum, &r.loss);
    return r;
  };
  const auto reset = [&](int salt) {
    write_batch(be, in, cfg.V, salt);
    model.params().zero_grads();
    be.fill(in.loss_sum, 0.0);
  };
  std::vector<StepBits> eager;
  for (int salt : {1, 2}) {
    reset(salt);
    micro_batch();
    eager.push_back(read());
  }
  reset(3);
  const std::optional<DeviceCounts> before = be.device_counts();
  const std::unique_ptr<DeviceGraph> graph = be.capture(micro_batch);
  const DeviceCounts captured = *be.device_counts() - *before;
  EXPECT_EQ(captured.host_syncs, 0);
  EXPECT_GT(captured.launches, 0);
  for (int k = 0; k < 2; ++k) {
    reset(k + 1);
    graph->replay();
    const StepBits r = read();
    EXPECT_EQ(std::memcmp(&r.loss, &eager[std::size_t(k)].loss, sizeof r.loss), 0)
        << "batch " << k + 1 << ": " << r.loss << " vs " << eager[std::size_t(k)].loss;
    ASSERT_EQ(r.grads.size(), eager[std::size_t(k)].grads.size());
    EXPECT_EQ(std::memcmp(r.grads.data(), eager[std::size_t(k)].grads.data(),
                          r.grads.size() * sizeof(float)),
              0)
        << "batch " << k + 1 << ": the replayed gradients differ from the eager ones";
  }
  EXPECT_NE(eager[0].loss, eager[1].loss);  // the two batches differ
}

TEST(CudaGraphs, AReplayedMicroBatchGivesTheEagerBitsWithAtmOff) {
  WIOLA_GRAPH_BACKEND(be);
  replay_matches_eager(be, AtmMode::Off);
}
TEST(CudaGraphs, AReplayedMicroBatchGivesTheEagerBitsWithCausalAtm) {
  WIOLA_GRAPH_BACKEND(be);
  replay_matches_eager(be, AtmMode::Causal);
}
TEST(CudaGraphs, AReplayedMicroBatchGivesTheEagerBitsWithPaperAtm) {
  WIOLA_GRAPH_BACKEND(be);
  replay_matches_eager(be, AtmMode::Paper);
}

}  // namespace
}  // namespace wiola::test
