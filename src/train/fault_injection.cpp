#include "train/fault_injection.hpp"

#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <limits>
#include <string>

#include "core/error.hpp"
#include "model/stage_model.hpp"

namespace wiola {

namespace {

constexpr int kFaultExit = 7;

enum class Fault : std::uint8_t { Backward, SigKill, Checkpoint, Prune, NaN };

class FaultInjector final : public TrainObserver {
 public:
  FaultInjector(Fault fault, std::int64_t step) : fault_(fault), step_(step) {}
  void before_step(std::int64_t step, StageModel& model) override {
    if (fault_ == Fault::NaN && step == step_)
      model.backend().fill(model.params().params(), std::numeric_limits<double>::quiet_NaN());
  }
  void before_action(std::int64_t step, const pipeline::Action& a) override {
    if (step != step_ || !pipeline::takes_output_grad(a.kind)) return;
    if (fault_ == Fault::Backward) std::_Exit(kFaultExit);
    if (fault_ == Fault::SigKill) ::kill(::getpid(), SIGKILL);
  }
  void on_checkpoint_write(std::int64_t step) override {
    if (fault_ == Fault::Checkpoint && step == step_) std::_Exit(kFaultExit);
  }
  void on_checkpoints_retired(std::int64_t step) override {
    if (fault_ == Fault::Prune && step == step_) std::_Exit(kFaultExit);
  }

 private:
  Fault fault_;
  std::int64_t step_;
};

}  // namespace

std::unique_ptr<TrainObserver> fault_injector_from_env(int world_rank) {
  const char* v = std::getenv("WIOLA_FAULT_INJECT");
  if (!v || !*v) return nullptr;
  const std::string text(v);
  Fault fault = Fault::Backward;
  std::string rest = text;
  for (const auto& [name, kind] : {std::pair{"sigkill,", Fault::SigKill},
                                   std::pair{"checkpoint,", Fault::Checkpoint},
                                   std::pair{"prune,", Fault::Prune}, std::pair{"nan,", Fault::NaN}})
    if (text.rfind(name, 0) == 0) {
      fault = kind;
      rest = text.substr(std::string(name).size());
    }
  int rank = -1;
  long long step = -1;
  char tail = 0;
  require(std::sscanf(rest.c_str(), "rank=%d,step=%lld%c", &rank, &step, &tail) == 2 &&
              rank >= 0 && step >= 1,
          "WIOLA_FAULT_INJECT='", text,
          "' is malformed (expected [sigkill,|checkpoint,|prune,|nan,]rank=R,step=S)");
  if (rank != world_rank) return nullptr;
  return std::make_unique<FaultInjector>(fault, step);
}

}  // namespace wiola
