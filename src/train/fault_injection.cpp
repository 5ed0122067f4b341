#include "train/fault_injection.hpp"

#include <cstdio>
#include <cstdlib>
#include <string>

#include "core/error.hpp"

namespace wiola {

namespace {

constexpr int kFaultExit = 7;

class FaultInjector final : public TrainObserver {
 public:
  FaultInjector(bool in_checkpoint, std::int64_t step) : in_checkpoint_(in_checkpoint), step_(step) {}
  void before_action(std::int64_t step, const pipeline::Action& a) override {
    if (!in_checkpoint_ && step == step_ && a.kind == pipeline::ActionKind::Backward)
      std::_Exit(kFaultExit);
  }
  void on_checkpoint_write(std::int64_t step) override {
    if (in_checkpoint_ && step == step_) std::_Exit(kFaultExit);
  }

 private:
  bool in_checkpoint_;
  std::int64_t step_;
};

}  // namespace

std::unique_ptr<TrainObserver> fault_injector_from_env(int world_rank) {
  const char* v = std::getenv("WIOLA_FAULT_INJECT");
  if (!v || !*v) return nullptr;
  const std::string text(v);
  const bool in_checkpoint = text.rfind("checkpoint,", 0) == 0;
  const std::string rest = in_checkpoint ? text.substr(11) : text;
  int rank = -1;
  long long step = -1;
  char tail = 0;
  require(std::sscanf(rest.c_str(), "rank=%d,step=%lld%c", &rank, &step, &tail) == 2 &&
              rank >= 0 && step >= 1,
          "WIOLA_FAULT_INJECT='", text,
          "' is malformed (expected rank=R,step=S or checkpoint,rank=R,step=S)");
  if (rank != world_rank) return nullptr;
  return std::make_unique<FaultInjector>(in_checkpoint, step);
}

}  // namespace wiola
