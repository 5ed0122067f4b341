#pragma once
// One rank's stage of the grid, ready to train: its backend (memory reserved,
// host staging for MPI), the communicator groups (NCCL where every rank has a
// GPU), the stage's model and ZeRO optimizer, the pipeline schedule and the
// executor that runs it. The trainer steps it; it knows nothing of data
// files, logs or where checkpoints go.
#include <cstddef>
#include <iosfwd>
#include <memory>
#include <vector>

#include "backend/backend.hpp"
#include "comm/communicator.hpp"
#include "comm/process_grid.hpp"
#include "io/weights_file.hpp"
#include "model/stage_model.hpp"
#include "partition/partition.hpp"
#include "pipeline/schedule.hpp"
#include "pipeline/stage_executor.hpp"
#include "train/checkpoint.hpp"
#include "train/options.hpp"
#include "train/zero_optimizer.hpp"

namespace wiola {

// What one world all-reduce gives after a step.
struct StepTotals {
  double grad_norm = 0;  // sqrt of Σ g² over every rank's owned part
  double loss_sum = 0;   // Σ token losses over all ranks
  double loss_tokens = 0;
  double mean_loss() const { return loss_sum / std::max(1.0, loss_tokens); }
};

class StageRuntime {
 public:
  // `specs`: every virtual stage of the partition (this rank runs the chunks
  // of grid.stage()); `dtype`: the resolved compute dtype; `reserve_bytes`:
  // the memory estimate the backend reserves up front.
  StageRuntime(std::unique_ptr<Backend> backend, comm::Communicator& world,
               const comm::ProcessGrid& grid, std::vector<StageSpec> specs,
               const ModelOptions& model, DType dtype, const ParallelOptions& parallel,
               const AdamWConfig& adam, std::size_t reserve_bytes, std::ostream& log);
  ~StageRuntime();

  Backend& backend() { return *backend_; }
  StageModel& model() { return *model_; }
  ZeroOptimizer& optimizer() { return *optimizer_; }
  StageExecutor& executor() { return *executor_; }
  // Stage s's chunks: virtual stages s, pp + s, 2 pp + s, ...
  std::vector<StageSpec> chunks_of(int stage) const;

  // The step's schedule (forwards, backwards, transfers), with ZeRO's
  // gathers and reduce-scatters at the layer boundaries.
  StageExecutor::Result run_schedule(const StageExecutor::RunSpec& spec,
                                     const StageExecutor::MicrobatchSource& batches,
                                     StageExecutor::ActionObserver* observer, bool record_events);
  // One world all-reduce of this rank's [Σ g², Σ loss, tokens], read back once.
  StepTotals reduce_totals(const StageExecutor::Result& run);
  // True on every rank when every rank's parameters (its optimizer's range)
  // are finite: one all-reduce of the sums of squares.
  bool params_finite();
  // The full parameters, collected on world rank 0 from each stage's first
  // data-parallel replica (empty on the other ranks); collective.
  std::vector<NamedArray> gather_weights();
  CheckpointContext checkpoint_context(TrainObserver* observer);

 private:
  comm::Communicator& world_;
  const comm::ProcessGrid& grid_;
  std::vector<StageSpec> specs_;
  int zero_;
  comm::GridGroups groups_;
  std::unique_ptr<comm::Communicator> device_world_;  // NCCL over all ranks, when chosen
  std::unique_ptr<Backend> backend_;
  std::unique_ptr<StageModel> model_;
  std::unique_ptr<ZeroOptimizer> optimizer_;
  std::unique_ptr<StageExecutor> executor_;
  std::vector<Action> schedule_;
  Tensor totals_;  // F64 [1, 3]: Σ g², Σ loss, tokens (backend memory)
  // The world's staging before this stage installed its backend's (device
  // backends only); put back on destruction, before the backend goes.
  std::shared_ptr<comm::DeviceStaging> previous_staging_;
};

}  // namespace wiola
