#include "train/stage_runtime.hpp"

#include <cmath>

#include "comm/device_groups.hpp"
#include "core/param_names.hpp"
#include "model/param_store.hpp"
#include "train/backend_staging.hpp"

namespace wiola {

StageRuntime::StageRuntime(std::unique_ptr<Backend> backend, comm::Communicator& world,
                           const comm::ProcessGrid& grid, std::vector<StageSpec> specs,
                           const ModelOptions& model, DType dtype,
                           const ParallelOptions& parallel, const AdamWConfig& adam,
                           std::size_t reserve_bytes, std::ostream& log)
    : world_(world),
      grid_(grid),
      specs_(std::move(specs)),
      zero_(parallel.zero),
      backend_(std::move(backend)) {
  backend_->reserve_memory(reserve_bytes);
  if (backend_->device() != Device::CPU) {
    previous_staging_ = world_.device_staging();
    world_.set_device_staging(std::make_shared<BackendStaging>(*backend_));
  }
  // On GPUs: each group over NCCL where its ranks have a GPU each (rank 0 says
  // which), when this process has NCCL (the CUDA plugin installs the maker).
  if (backend_->device() == Device::CUDA && backend_->native_stream()) {
    if (comm::DeviceGroupsMaker make = comm::device_groups_maker()) {
      comm::DeviceGroups dg = make(world_, grid_, backend_->native_stream(), &log);
      groups_ = std::move(dg.groups);
      device_world_ = std::move(dg.world);
    }
  }
  if (!groups_.pipeline) groups_ = comm::make_groups(world_, grid_);
  model_ = std::make_unique<StageModel>(*backend_, model.config, chunks_of(grid_.stage()), dtype);
  model_->params().init(model.seed);
  model_->set_recompute(parallel.recompute);
  // The last stage's tied embedding is a copy of the first's: counted once.
  optimizer_ = std::make_unique<ZeroOptimizer>(
      *model_, ZeroGroups{groups_.data.get(), groups_.embedding.get()}, parallel.zero, adam,
      !(grid_.last_stage() && grid_.pp > 1));
  executor_ = std::make_unique<StageExecutor>(*model_, groups_.pipeline.get(), grid_.stage(),
                                              grid_.pp);
  schedule_ = pipeline::make_schedule(parallel.schedule, grid_.pp, grid_.stage(),
                                      parallel.micro_batches_per_rank(), parallel.virtual_stages);
  totals_ = backend_->alloc(DType::F64, 1, 3);
}

// The world outlives this stage (a caller may train again on it): it must not
// keep a staging that refers to this stage's backend.
StageRuntime::~StageRuntime() {
  if (backend_->device() != Device::CPU) world_.set_device_staging(std::move(previous_staging_));
}

std::vector<StageSpec> StageRuntime::chunks_of(int stage) const {
  return stage_chunks(specs_, grid_.pp, stage);
}

StageExecutor::Result StageRuntime::run_schedule(const StageExecutor::RunSpec& spec,
                                                  const StageExecutor::MicrobatchSource& batches,
                                                  StageExecutor::ActionObserver* observer,
                                                  bool record_events) {
  StageExecutor::Hooks hooks;
  hooks.batches = &batches;
  hooks.boundaries = optimizer_.get();  // ZeRO's gathers and reduce-scatters
  hooks.observer = observer;
  hooks.record_events = record_events;
  return executor_->run(schedule_, spec, hooks);
}

StepTotals StageRuntime::reduce_totals(const StageExecutor::Result& run) {
  Backend& be = *backend_;
  be.fill(totals_, 0.0);
  optimizer_->add_owned_sum_squares(totals_.cols_slice(0, 1));
  double tokens = 0;
  if (run.loss_sums.defined()) {
    be.sum(run.loss_sums, totals_.cols_slice(1, 2));
    for (std::int64_t n : run.loss_tokens) tokens += double(n);
  }
  be.fill(totals_.cols_slice(2, 3), tokens);
  (device_world_ ? *device_world_ : world_).allreduce(totals_, comm::ReduceOp::Sum);
  double host[3];
  be.to_host(totals_, host);
  return {std::sqrt(host[0]), host[1], host[2]};
}

bool StageRuntime::params_finite() {
  Backend& be = *backend_;
  be.fill(totals_, 0.0);
  be.sum_squares(optimizer_->master(), totals_.cols_slice(0, 1));
  world_.allreduce(totals_, comm::ReduceOp::Sum);
  double host[3];
  be.to_host(totals_, host);
  return std::isfinite(host[0]);
}

std::vector<NamedArray> StageRuntime::gather_weights() {
  optimizer_->finish_gathers();
  std::vector<NamedArray> out;
  const int tag = 7;
  StageModel& model = *model_;
  if (grid_.world_rank != 0) {
    if (grid_.dp_index() == 0) {
      const std::vector<double> flat = to_host_f64(model.backend(), model.params().params());
      world_.send(flat.data(), flat.size() * sizeof(double), 0, tag);
    }
  } else {
    for (int s = 0; s < grid_.pp; ++s) {
      const ParamLayout layout(model.config(), chunks_of(s));
      std::vector<double> flat;
      if (s == 0) {
        flat = to_host_f64(model.backend(), model.params().params());
      } else {
        flat.resize(static_cast<std::size_t>(layout.total()));
        world_.recv(flat.data(), flat.size() * sizeof(double), grid_.rank_of(s, 0), tag);
      }
      for (const ParamSpec& p : layout.entries()) {
        if (s > 0 && p.name == param_names::kEmbed) continue;  // the tied copy
        out.push_back({p.name, p.rows, p.cols,
                       std::vector<double>(flat.begin() + p.offset,
                                           flat.begin() + p.offset + p.numel())});
      }
    }
  }
  return out;
}

CheckpointContext StageRuntime::checkpoint_context(TrainObserver* observer) {
  return {*model_, *optimizer_, grid_, world_, zero_, observer};
}

}  // namespace wiola
