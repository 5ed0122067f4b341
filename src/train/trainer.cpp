// The training loop, in the order a reader meets it: setting up one rank of
// the grid (Trainer::Trainer), one optimizer step (train_step), evaluation,
// checkpoints and stopping, and the report at the end.
#include "train/trainer.hpp"

#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstdio>
#include <iomanip>
#include <optional>
#include <ostream>
#include <sstream>

#include "backend/backend_registry.hpp"
#include "backend/cpu_threads.hpp"
#include "comm/agreement.hpp"
#include "comm/process_grid.hpp"
#include "comm/node_placement.hpp"
#include "core/error.hpp"
#include "core/model_fields.hpp"
#include "core/process_identity.hpp"
#include "core/text.hpp"
#include "io/checkpoint_store.hpp"
#include "io/output_paths.hpp"
#include "io/weights_file.hpp"
#include "model/flops.hpp"
#include "model/param_report.hpp"
#include "model/stage_model.hpp"
#include "optim/clip.hpp"
#include "optim/lr_schedule.hpp"
#include "partition/cost_model.hpp"
#include "partition/partition.hpp"
#include "pipeline/schedule.hpp"
#include "train/batch_feed.hpp"
#include "train/checkpoint.hpp"
#include "train/checkpoint_schedule.hpp"
#include "train/data_summary.hpp"
#include "train/device_choice.hpp"
#include "train/device_plan.hpp"
#include "train/evaluation.hpp"
#include "train/log_window.hpp"
#include "train/memory_plan.hpp"
#include "train/nonfinite_steps.hpp"
#include "train/run_position.hpp"
#include "train/run_times.hpp"
#include "train/sample_text.hpp"
#include "train/stage_runtime.hpp"
#include "train/metrics_log.hpp"
#include "train/stop_signal.hpp"
#include "train/training_data.hpp"
#include "train/zero_optimizer.hpp"

namespace wiola {

namespace {

using Clock = std::chrono::steady_clock;

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& s : items) out += (out.empty() ? "" : ", ") + s;
  return out;
}

double seconds_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}
double clock_seconds(Clock::time_point t) {
  return std::chrono::duration<double>(t.time_since_epoch()).count();
}

// This replica's micro-batches of one step: consecutive runs of the global
// sample order from `first`.
class StepBatches final : public StageExecutor::MicrobatchSource {
 public:
  StepBatches(const BatchFeed& feed, std::int64_t first, int size)
      : feed_(feed), first_(first), size_(size) {}
  HostBatch microbatch(int mb) const override {
    return feed_.samples(first_ + std::int64_t(mb) * size_, size_);
  }

 private:
  const BatchFeed& feed_;
  std::int64_t first_;
  int size_;
};

// Passes each action of one step on to a TrainObserver.
class StepObserver final : public StageExecutor::ActionObserver {
 public:
  StepObserver(TrainObserver* observer, std::int64_t step) : observer_(observer), step_(step) {}
  void before_action(const Action& a) override { observer_->before_action(step_, a); }

 private:
  TrainObserver* observer_;
  std::int64_t step_;
};

// One rank's run. It resolves the configuration (every rank agreeing), then
// composes the parts, each built from its option section: the data
// (TrainingData), the stage (StageRuntime: backend, groups, model, optimizer,
// schedule), the position in the sample order, the LR schedule and the loop's
// checkpoint, non-finite and logging rules. Then it steps them.
class Trainer {
 public:
  Trainer(const TrainOptions& options, comm::Communicator& world, const std::string& host,
          std::ostream& log, TrainObserver* observer);
  TrainSummary run();

 private:
  // ---- setup ----
  void resolve_configuration();
  void check_outputs();
  void restore();
  void print_plan() const;
  MemoryPlanInput memory_input(int stage) const;
  // Stage s's chunks: virtual stages s, pp + s, 2 pp + s, ...
  std::vector<StageSpec> chunks_of(int stage) const {
    return stage_chunks(specs_, opts_.parallel.pp, stage);
  }
  void report_memory();
  // ---- one step ----
  StepRecord train_step(std::int64_t step);
  // ---- around the steps ----
  EvalTotals evaluate();
  void log_step(std::int64_t step, const StepRecord& r);
  bool checkpoint_and_stop(std::int64_t step);
  void report_times();
  [[noreturn]] void stop_nonfinite(const std::string& what) const;
  void export_weights();
  void print_sample(std::int64_t step);
  void open_metrics();
  void say(const std::string& s) const {
    if (rank0_) log_ << s << std::flush;
  }

  TrainOptions opts_;
  comm::Communicator& world_;
  const std::string& host_;
  std::ostream& log_;
  TrainObserver* observer_;
  const bool rank0_;

  // The configuration, resolved and agreed by every rank.
  comm::ProcessGrid grid_;
  std::vector<StageSpec> specs_;  // every virtual stage of the partition
  Device device_ = Device::CPU;
  std::string device_description_;
  std::unique_ptr<Backend> chosen_backend_;  // until the stage takes it
  MemoryEstimate memory_;
  // The parts, each from its options.
  std::optional<TrainingData> data_;  // DataOptions
  std::unique_ptr<StageRuntime> stage_;  // ModelOptions, DeviceOptions, ParallelOptions
  RunPosition position_;
  LrSchedule lr_;               // OptimizerOptions
  NonfiniteSteps nonfinite_;    // OptimizerOptions
  CheckpointSchedule checkpoints_;  // CheckpointOptions
  LogWindow log_window_;        // LoggingOptions
  MetricsLog metrics_;          // --metrics, rank 0
  std::unique_ptr<TrainingSampler> sampler_;  // --sample-every, rank 0
  // What the run reports.
  StageExecutor::Result last_run_;  // the latest step's, for observers
  RunTimes times_;
  TrainSummary summary_;
};

// Everything that can be refused is checked before any work, and all ranks
// agree on the outcome before any collective, so bad input ends the job
// cleanly on every rank instead of leaving some waiting.
void Trainer::resolve_configuration() {
  // Which device each rank takes, from every rank's host name (collectives
  // first: they cannot fail, so every rank reaches them).
  const DeviceBackendProvider* cuda = device_backend(Device::CUDA);
  const int cuda_count = opts_.device.choice != DeviceChoice::CPU && cuda ? cuda->device_count() : 0;
  const comm::NodePlace place =
      comm::place_on_node(comm::gather_strings(world_, host_), world_.rank());
  const DeviceSlot slot =
      device_slot(world_.rank(), host_, place,
                  visible_devices(std::getenv("CUDA_VISIBLE_DEVICES"), cuda_count),
                  cuda_count > 0 && cuda->device_id ? cuda->device_id : nullptr);
  std::vector<DeviceSlot> slots;
  for (const std::string& s : comm::gather_strings(world_, slot.encode()))
    slots.push_back(DeviceSlot::decode(s));
  comm::agree(world_, [&] {
    check_slurm_local_id(slot, world_.size(), std::getenv("SLURM_PROCID"),
                         std::getenv("SLURM_NTASKS"), std::getenv("SLURM_LOCALID"));
    if (opts_.device.choice == DeviceChoice::CUDA || cuda_count > 0)
      check_device_sharing(slots, opts_.device.allow_shared);
  }, "another rank refused its device (see its message)");
  comm::agree(world_, [&] {
    grid_ = comm::ProcessGrid::make(world_.size(), opts_.parallel.pp, opts_.parallel.dp, world_.rank());
    set_cpu_threads(opts_.device.threads);
    opts_.validate();  // before the data: its errors name flags, not files
    // --resume PATH: a step folder, or a save folder's newest complete step.
    if (opts_.checkpoint.resume.kind == ResumeFrom::Kind::Directory)
      opts_.checkpoint.resume.directory = resolve_checkpoint_dir(opts_.checkpoint.resume.directory);
    data_.emplace(opts_.data, opts_.model.config.T);
    if (!opts_.model.vocab_explicit) {
      opts_.model.config.V = int(data_->vocab_size());
    } else {
      require(opts_.model.config.V >= data_->vocab_size(), "--vocab ", opts_.model.config.V,
              " is smaller than the vocabulary of ", opts_.data.train_files.front(), " (",
              data_->vocab_size(), ")");
    }
    if (rank0_ && !opts_.logging.metrics_file.empty()) require_appendable_file(opts_.logging.metrics_file, "--metrics");
    opts_.validate();
    if (opts_.logging.sample_every > 0 && rank0_)
      sampler_ = std::make_unique<TrainingSampler>(
          opts_.model.config, opts_.data.train_files.front(),
          opts_.logging.sample_prompt.empty() ? kDefaultSamplePrompt : opts_.logging.sample_prompt);
    ChosenBackend chosen =
        choose_backend(opts_.device.choice, opts_.device.dtype, opts_.device.dtype_explicit, slot.index);
    chosen_backend_ = std::move(chosen.backend);
    device_ = chosen_backend_->device();
    opts_.device.dtype = chosen.dtype;
    device_description_ = chosen.description;
    // One range per virtual stage (c · pp + s); stage s holds chunks c = 0 .. v-1.
    const int virtual_stages = opts_.parallel.pp * opts_.parallel.virtual_stages;
    specs_ = opts_.parallel.stage_layers.empty()
                 ? partition_layers(opts_.model.config, virtual_stages)
                 : parse_stage_layers(opts_.parallel.stage_layers, opts_.model.config, opts_.parallel.pp,
                                      opts_.parallel.virtual_stages);
    // A layout that cannot fit is refused before anything is allocated.
    memory_ = estimate_memory(memory_input(grid_.stage()));
    const double capacity = double(chosen_backend_->memory_capacity());
    char have[32];
    std::snprintf(have, sizeof have, "%.2f GiB", capacity / double(1ull << 30));
    require(memory_.total() <= 0.95 * capacity, "stage ", grid_.stage(), " on ",
            process_identity().describe(), " needs an estimated ", memory_.describe(),
            ", more than 95% of the ", have,
            " it has; use more pipeline stages, a smaller --micro-batch, --recompute full",
            memory_.graphs > 0 ? ", a higher --zero or --cuda-graphs off" : " or a higher --zero");
  }, "another rank refused the configuration (see its message)");
  if (rank0_) {
    const bool on_cpu = device_ == Device::CPU;
    for (const DeviceSlot& s : slots)
      log_ << s.describe() << (on_cpu && s.index >= 0 ? " -- not used: this run is on the CPU" : "")
           << "\n";
  }
  check_outputs();
}

// Every output location is checked before the first step, on every rank that
// will write there: the save folder (created, as a save would) and the
// export file's folder. A refusal names the path and the reason.
void Trainer::check_outputs() {
  const bool writes_checkpoint_file = rank0_ || opts_.parallel.zero > 0 || grid_.dp_index() == 0;
  // Rank 0 first: it creates the save folder the others then probe.
  comm::agree(world_, [&] {
    if (!rank0_) return;
    if (!opts_.checkpoint.save_dir.empty()) {
      if (opts_.dry_run)
        require_creatable_folder(opts_.checkpoint.save_dir, "--save");
      else
        require_writable_folder(opts_.checkpoint.save_dir, "--save", true);
    }
    if (!opts_.checkpoint.export_weights.empty())
      require_writable_file(opts_.checkpoint.export_weights, "--export-weights");
  });
  comm::agree(world_, [&] {
    if (!rank0_ && writes_checkpoint_file && !opts_.checkpoint.save_dir.empty() && !opts_.dry_run)
      require_writable_folder(opts_.checkpoint.save_dir, "--save", false);
  });
  if (rank0_ && !opts_.checkpoint.save_dir.empty() && !opts_.dry_run) {
    const std::vector<std::string> gone = remove_leftovers(opts_.checkpoint.save_dir);
    if (!gone.empty())
      say("checkpoints: removed what an interrupted save or prune left in " +
          opts_.checkpoint.save_dir + ": " + join(gone) + "\n");
  }
}

MemoryPlanInput Trainer::memory_input(int stage) const {
  MemoryPlanInput in;
  in.model = opts_.model.config;
  in.chunks = chunks_of(stage);
  in.stage_index = stage;
  in.pp = opts_.parallel.pp;
  in.dp = opts_.parallel.dp;
  in.zero = opts_.parallel.zero;
  in.dtype = opts_.device.dtype;
  in.micro_batch = opts_.parallel.micro_batch;
  in.microbatches = opts_.parallel.micro_batches_per_rank();
  in.schedule = opts_.parallel.schedule;
  in.recompute = opts_.parallel.recompute;
  in.device = device_ != Device::CPU;
  in.cuda_graphs = opts_.device.cuda_graphs;
  return in;
}

// After the first step: every rank's measured peak beside its estimate.
void Trainer::report_memory() {
  double mine[2] = {memory_.total(), double(stage_->backend().memory().peak)};
  std::vector<double> all(std::size_t(world_.size()) * 2);
  std::vector<std::size_t> counts(std::size_t(world_.size()), 2);
  world_.allgather(mine, all.data(), counts, DType::F64);
  if (!rank0_) return;
  std::ostringstream os;
  os << "memory after the first step (GiB; estimate / measured peak of tensors):";
  for (int r = 0; r < world_.size(); ++r) {
    char buf[80];
    std::snprintf(buf, sizeof buf, "%s rank %d (stage %d) %.3f / %.3f", r ? "," : "", r,
                  r / grid_.dp, all[std::size_t(r) * 2] / double(1ull << 30),
                  all[std::size_t(r) * 2 + 1] / double(1ull << 30));
    os << buf;
  }
  os << "\n";
  log_ << os.str() << std::flush;
}

Trainer::Trainer(const TrainOptions& options, comm::Communicator& world, const std::string& host,
                 std::ostream& log, TrainObserver* observer)
    : opts_(options),
      world_(world),
      host_(host),
      log_(log),
      observer_(observer),
      rank0_(world.rank() == 0),
      nonfinite_(opts_.optimizer.max_nonfinite_steps),
      checkpoints_(opts_.checkpoint),
      log_window_(opts_.logging.log_interval) {
  resolve_configuration();
  position_.total_steps = opts_.total_steps();
  position_.global_batch = opts_.parallel.global_batch;
  position_.seq = opts_.model.config.T;
  data_->set_budget_tokens(position_.budget_tokens());
  if (opts_.dry_run) {  // everything is checked; nothing is allocated
    print_plan();
    return;
  }
  stage_ = std::make_unique<StageRuntime>(
      std::move(chosen_backend_), world_, grid_, specs_, opts_.model, opts_.device.dtype,
      opts_.parallel, opts_.optimizer.adam, static_cast<std::size_t>(memory_.total()), log_);
  stage_->executor().use_graphs(opts_.device.cuda_graphs);
  data_->open_feeds(grid_, opts_.parallel, opts_.model.seed);
  restore();
  print_plan();
  lr_ = LrSchedule{opts_.optimizer.lr, opts_.optimizer.min_lr,
                   static_cast<std::int64_t>(std::llround(opts_.optimizer.warmup_frac *
                                                          double(position_.total_steps))),
                   position_.total_steps};
  open_metrics();
}

// --metrics: rank 0 appends to the file; the first record is the configuration.
void Trainer::open_metrics() {
  if (!rank0_ || opts_.logging.metrics_file.empty()) return;
  metrics_ = MetricsLog(opts_.logging.metrics_file);
  MetricsRunInfo info;
  info.version = code_version();
  info.options_ini = to_ini(opts_);
  info.device = device_description_;
  info.model = opts_.model.config;
  info.params = param_count(opts_.model.config);
  info.training_flops_per_token = training_flops_per_token(opts_.model.config);
  info.pp = grid_.pp;
  info.dp = grid_.dp;
  info.zero = opts_.parallel.zero;
  info.schedule = std::string(pipeline::schedule_kind_name(opts_.parallel.schedule));
  info.dtype = std::string(dtype_name(opts_.device.dtype));
  info.micro_batch = opts_.parallel.micro_batch;
  info.global_batch = opts_.parallel.global_batch;
  info.microbatches = opts_.parallel.micro_batches_per_rank();
  info.stages = specs_;
  info.data = data_->summary();
  info.total_steps = position_.total_steps;
  info.tokens_per_step = position_.tokens_per_step();
  info.first_step = position_.start_step;
  if (position_.start_step > 1) info.resumed_from = summary_.last_checkpoint;
  metrics_.config(info);
}

// --init-weights: parameters from a weights file (wiola-dump's format, e.g.
// imported from safetensors by wiola-reshard); the optimizer starts fresh.
// --resume: parameters, optimizer state and the data position of a checkpoint.
void Trainer::restore() {
  StageModel& model = stage_->model();
  if (!opts_.checkpoint.init_weights.empty()) {
    comm::agree(world_, [&] {
      const WeightsFile w = read_weights_file(opts_.checkpoint.init_weights);
      const std::string diff = model_differences(w.config, model.config(), FieldSet::Shape);
      require(diff.empty(), "--init-weights ", opts_.checkpoint.init_weights, ": the file holds ",
              w.config.describe(), ", this run is ", model.config().describe(), " (", diff, ")");
      for (const NamedArray& arr : w.arrays)
        if (model.params().has(arr.name)) model.params().set(arr.name, arr.data);
      stage_->optimizer().take_master_from_params();
    });
  }
  std::optional<std::string> dir;
  switch (opts_.checkpoint.resume.kind) {
    case ResumeFrom::Kind::None:
      if (!opts_.checkpoint.save_dir.empty() && rank0_) {
        const std::vector<std::string> old = list_checkpoint_dirs(opts_.checkpoint.save_dir);
        if (!old.empty())
          say("WARNING: --save " + opts_.checkpoint.save_dir + " already holds " +
              std::to_string(old.size()) + " checkpoint(s), the newest " + old.front() +
              "; this run starts from step 0 (--resume none) and replaces them as it reaches "
              "their steps (--resume auto would continue the newest)\n");
      }
      break;
    case ResumeFrom::Kind::Auto:
      dir = find_resume_checkpoint(world_, opts_.checkpoint.save_dir, log_);
      if (!dir)
        say("resume: no checkpoint in '" + opts_.checkpoint.save_dir + "', starting fresh\n");
      break;
    case ResumeFrom::Kind::Directory:
      dir = opts_.checkpoint.resume.directory;
      break;
  }
  if (!dir) return;
  const CheckpointInfo info = load_checkpoint(stage_->checkpoint_context(observer_), *dir);
  position_.start_step = info.step + 1;
  position_.sample_base = info.consumed_samples;
  log_window_.restore(info.loss_window);
  summary_.last_checkpoint = *dir;
  say("resume: " + *dir + " at step " + std::to_string(info.step) + " (" +
      std::to_string(info.consumed_samples) + " samples consumed, written by " +
      info.code_version + ")\n");
}

void Trainer::print_plan() const {
  if (!rank0_) return;
  const ModelConfig& cfg = opts_.model.config;
  const int microbatches = opts_.parallel.micro_batches_per_rank();
  std::ostringstream os;
  os << "wiola-train: device " << device_description_ << "\n"
     << "  model " << cfg.describe() << "\n"
     << "  parameters " << param_count(cfg) << " (exact), training FLOPs/token "
     << std::setprecision(4) << training_flops_per_token(cfg) << "\n"
     << "  grid pp " << grid_.pp << " x dp " << grid_.dp << " on " << world_.size()
     << " ranks (rank 0 on " << host_ << "), schedule "
     << pipeline::schedule_kind_name(opts_.parallel.schedule) << ", zero " << opts_.parallel.zero
     << ", " << microbatches << " micro-batches of " << opts_.parallel.micro_batch
     << " per replica per step\n"
     << "  global batch " << opts_.parallel.global_batch
     << " sequences = " << std::int64_t(opts_.parallel.global_batch) * cfg.T << " tokens; "
     << position_.total_steps << " steps = " << position_.budget_tokens() << " tokens\n"
     << data_->summary().describe();
  if (stage_ && stage_->executor().graphs())
    os << "  cuda graphs: each chunk's micro-batches after its first replay graphs "
          "(--cuda-graphs off: all eager)\n";
  for (const auto& w : leak_warnings(cfg)) os << "WARNING: " << w << "\n";
  if (auto w = pipeline::bubble_warning(grid_.pp, microbatches, opts_.parallel.schedule,
                                        opts_.parallel.virtual_stages))
    os << "WARNING: " << *w << "\n";
  CostModel cost;
  cost.microbatch_tokens = std::int64_t(opts_.parallel.micro_batch) * cfg.T;
  cost.microbatches = microbatches;
  cost.hold_all_microbatches = opts_.parallel.schedule == pipeline::ScheduleKind::GPipe;
  cost.bytes_per_activation = double(dtype_size(opts_.device.dtype));
  os << describe_partition(cfg, specs_, cost, opts_.parallel.virtual_stages);
  for (int s = 0; s < grid_.pp; ++s)
    os << "  memory estimate of stage " << s << " per rank: "
       << estimate_memory(memory_input(s)).describe() << "\n";
  log_ << os.str() << std::flush;
}

// One optimizer step: the schedule's forwards and backwards, then the
// gradient reduction, the global norm and loss, clipping and the update.
StepRecord Trainer::train_step(std::int64_t step) {
  StageModel& model = stage_->model();
  ZeroOptimizer& optimizer = stage_->optimizer();
  if (observer_) observer_->before_step(step, model);
  model.params().zero_grads();

  const StepBatches batches(
      data_->train_feed(),
      position_.replica_first_sample(step, grid_.dp_index(), opts_.parallel.dp),
      opts_.parallel.micro_batch);
  StepObserver watcher(observer_, step);
  const StageExecutor::RunSpec spec{
      static_cast<int>(step),
      opts_.parallel.micro_batches_per_rank(),
      opts_.parallel.micro_batch,
      opts_.model.config.T,
      /*training=*/true,
      1.0 / (double(opts_.parallel.global_batch) * opts_.model.config.T)};
  last_run_ = stage_->run_schedule(spec, batches, observer_ ? &watcher : nullptr,
                                  observer_ && observer_->wants_events());
  const StageExecutor::Result& run = last_run_;

  StepRecord r;
  r.step = step;
  r.run = &run;
  const auto t_reduce = Clock::now();
  optimizer.reduce_grads();  // tied-embedding sum, data-parallel reduction
  const auto t_optimizer = Clock::now();
  // The world all-reduce of norm and loss: a rank that got here first waits
  // for the last one (its drain as far as it can tell, pipeline/time_split.hpp).
  const StepTotals totals = stage_->reduce_totals(run);
  const auto t_reduced = Clock::now();
  r.loss = totals.mean_loss();
  r.grad_norm = totals.grad_norm;
  // Every rank sees the same sums, so every rank skips the same steps.
  r.skipped = !std::isfinite(totals.grad_norm) || !std::isfinite(r.loss);
  if (r.skipped)
    optimizer.skip_step();
  else
    optimizer.step(lr_.at(step), clip_factor(totals.grad_norm, opts_.optimizer.clip));
  const auto t_end = Clock::now();

  r.reduce = {StepPhase::ReduceGrads, clock_seconds(t_reduce), clock_seconds(t_optimizer)};
  r.optimizer = {StepPhase::Optimizer, clock_seconds(t_optimizer), clock_seconds(t_end)};
  TimeSplit& t = r.times;
  t = run.times;
  t.reduce = seconds_between(t_reduce, t_optimizer);
  t.drain = seconds_between(t_optimizer, t_reduced);
  t.optimizer = seconds_between(t_reduced, t_end);
  t.step = run.times.step + seconds_between(t_reduce, t_end);
  t.other = t.step - (t.compute + t.wait + t.drain + t.comm + t.reduce + t.optimizer);
  return r;
}

// Validation: the first eval_batches micro-batches (rounded up to a multiple
// of dp) of the validation order, through the shared forward-only evaluation.
EvalTotals Trainer::evaluate() {
  stage_->optimizer().finish_gathers();
  const int per_replica = (opts_.logging.eval_batches + opts_.parallel.dp - 1) / opts_.parallel.dp;
  EvalSpec spec;
  spec.microbatches = std::int64_t(per_replica) * opts_.parallel.dp;
  spec.micro_batch = opts_.parallel.micro_batch;
  spec.seq = opts_.model.config.T;
  spec.batch = [&](std::int64_t g) { return data_->validation_batch(g); };
  return wiola::evaluate(stage_->executor(), stage_->backend(), grid_, world_, spec);
}

void Trainer::log_step(std::int64_t step, const StepRecord& r) {
  const bool stop = nonfinite_.record(r.skipped);
  if (r.skipped) {
    const int in_a_row = nonfinite_.in_a_row();
    char buf[200];
    std::snprintf(buf, sizeof buf,
                  "step %lld: loss %g, gradient norm %g: not finite; update skipped (%d of at "
                  "most %d in a row)\n",
                  static_cast<long long>(step), r.loss, r.grad_norm, in_a_row, nonfinite_.limit());
    say(buf);
    if (stop)
      stop_nonfinite("steps " + std::to_string(step - in_a_row + 1) + ".." +
                     std::to_string(step) + ": the loss or gradient norm was not finite " +
                     std::to_string(in_a_row) + " steps in a row (--max-nonfinite-steps " +
                     std::to_string(nonfinite_.limit()) + ")");
  }
  summary_.losses.push_back(r.loss);
  if (step == position_.start_step) summary_.first_loss = r.loss;
  summary_.last_loss = r.loss;
  summary_.steps = step;
  log_window_.add(r.loss, double(opts_.parallel.global_batch) * opts_.model.config.T);
  const bool boundary = log_window_.boundary(step);
  if (!boundary && step != position_.total_steps && step != position_.start_step) return;
  const auto now = Clock::now();
  const double elapsed = times_.elapsed(now);
  const double tps = log_window_.tokens_per_second(now);
  const double eta = elapsed / double(step - position_.start_step + 1) *
                     double(position_.total_steps - step);
  const double flops = tps * training_flops_per_token(opts_.model.config);
  char buf[320];
  std::snprintf(buf, sizeof buf,
                "step %6lld/%lld | tokens %s | loss %.6f | lr %.3e | grad-norm %.3f | tok/s %8.0f | "
                "GFLOP/s %6.2f | elapsed %s | eta %s\n",
                static_cast<long long>(step), static_cast<long long>(position_.total_steps),
                si_count(double(position_.tokens_seen(step))).c_str(), log_window_.losses().mean(),
                lr_.at(step), r.grad_norm, tps, flops / 1e9, duration_text(elapsed).c_str(),
                duration_text(eta).c_str());
  say(buf);
  metrics_.step({step, position_.tokens_seen(step), log_window_.losses().mean(), r.loss, lr_.at(step),
                 r.grad_norm, tps, flops, elapsed, int(log_window_.losses().steps), r.skipped});
  log_window_.printed(boundary);
}

// Checkpoint and stop decisions, agreed by all ranks in one all-reduce: a
// stop signal on any rank, or the time-based interval on any clock. Returns
// true when the run stops after this step.
bool Trainer::checkpoint_and_stop(std::int64_t step) {
  int flags[2] = {stop_signal(), checkpoints_.time_due() ? 1 : 0};
  world_.allreduce(flags, 2, DType::I32, comm::ReduceOp::Max);
  const bool stop = flags[0] != 0;
  const bool exit_now = checkpoints_.exit_after(step);
  const bool save_now = checkpoints_.save_after(step, stop, flags[1] != 0, position_.total_steps);
  if (save_now && nonfinite_.in_a_row() > 0) {
    say("checkpoint of step " + std::to_string(step) +
        " not written: its loss or gradient norm is not finite (the last good checkpoint "
        "stays" + (summary_.last_checkpoint.empty() ? "" : ": " + summary_.last_checkpoint) +
        ")\n");
  } else if (save_now) {
    if (!stage_->params_finite())
      stop_nonfinite("step " + std::to_string(step) + ": the parameters are not finite");
    const auto t_save = Clock::now();
    CheckpointInfo saved;
    saved.step = step;
    saved.consumed_samples = position_.consumed_after(step);
    saved.loss_window = log_window_.losses();
    saved.config = to_ini(opts_);
    // No collective may still write what the checkpoint reads.
    stage_->optimizer().finish_gathers();
    summary_.last_checkpoint = save_checkpoint(stage_->checkpoint_context(observer_),
                                               opts_.checkpoint.save_dir, saved,
                                               opts_.checkpoint.keep);
    checkpoints_.restart_clock();
    const auto t_saved = Clock::now();
    say("checkpoint: " + summary_.last_checkpoint + "\n");
    if (metrics_.enabled())
      metrics_.checkpoint(step, position_.tokens_seen(step), summary_.last_checkpoint,
                          seconds_between(t_save, t_saved),
                          directory_bytes(summary_.last_checkpoint));
  }
  if (stop) {
    summary_.stop_signal = flags[0];
    say("stopping after step " + std::to_string(step) + " on signal " + std::to_string(flags[0]) +
        (opts_.checkpoint.save_dir.empty() ? " (no --save directory: nothing was saved)" : "") +
        "\n");
    return true;
  }
  if (exit_now) {
    say("stopping after step " + std::to_string(step) + " (--exit-after-step)\n");
    return true;
  }
  return false;
}

TrainSummary Trainer::run() {
  summary_.first_step = position_.start_step;
  summary_.stages = specs_;
  if (opts_.dry_run) {
    say("dry run: the configuration, data, layout, memory estimate and output paths are fine; "
        "nothing was trained or written\n");
    return summary_;
  }
  const bool can_eval = data_->has_validation();
  times_.start();
  log_window_.start_clock();
  checkpoints_.restart_clock();
  const std::int64_t first = position_.start_step, last = position_.total_steps;
  for (std::int64_t step = first; step <= last; ++step) {
    const StepRecord r = train_step(step);
    times_.add(step == first, r.times);
    if (observer_) observer_->on_step(r);
    log_step(step, r);
    if (step == first) report_memory();
    const bool eval_now =
        can_eval && ((opts_.logging.eval_interval > 0 && step % opts_.logging.eval_interval == 0) ||
                     step == last);
    if (eval_now) {
      const EvalTotals val = evaluate();
      summary_.last_val_loss = val.mean_loss();
      char buf[128];
      std::snprintf(buf, sizeof buf, "step %6lld | validation loss %.4f | perplexity %.2f\n",
                    static_cast<long long>(step), val.mean_loss(), val.perplexity());
      say(buf);
      metrics_.validation(step, position_.tokens_seen(step), summary_.last_val_loss);
    }
    if (opts_.logging.sample_every > 0 && step % opts_.logging.sample_every == 0)
      print_sample(step);
    if (checkpoint_and_stop(step)) break;
  }
  summary_.completed = summary_.steps == last;
  // Ending (at the last step or --exit-after-step) on bad steps is a failure;
  // a stop signal keeps its exit status (the last good checkpoint resumes).
  if (nonfinite_.in_a_row() > 0 && summary_.stop_signal == 0)
    stop_nonfinite("the run ended with " + std::to_string(nonfinite_.in_a_row()) +
                   " steps in a row whose loss or gradient norm was not finite");
  if (summary_.steps >= first)
    summary_.tokens_per_second = times_.tokens_per_second(double(position_.tokens_per_step()));
  report_times();
  if (!opts_.checkpoint.export_weights.empty() && summary_.completed) {
    if (!stage_->params_finite()) stop_nonfinite("the final parameters are not finite");
    export_weights();
  }
  return summary_;
}

// Ends the run on every rank (they all see the same reduced values) without
// writing anything: no checkpoint or export of non-finite weights.
void Trainer::stop_nonfinite(const std::string& what) const {
  std::string where;
  if (!summary_.last_checkpoint.empty())
    where = "the last good checkpoint is " + summary_.last_checkpoint;
  else if (!opts_.checkpoint.save_dir.empty())
    where = "no checkpoint was written before it";
  else
    where = "nothing was saved (no --save)";
  throw CollectiveError(what + "; stopping without saving: " + where +
                        " (lower --lr, or check the data)");
}

// Per-stage time split, averaged over each stage's replicas, with the drain
// aligned over every rank's sums (align_drains); bubble as wiola-profile's.
void Trainer::report_times() {
  if (summary_.steps < position_.start_step) return;  // no step ran (every rank knows)
  const int microbatches = opts_.parallel.micro_batches_per_rank();
  const TimeSplit& t = times_.split();
  const std::vector<double> mine{t.compute, t.wait,      t.drain, t.comm,
                                 t.reduce,  t.optimizer, t.other, t.step};
  const std::size_t n = mine.size();
  std::vector<double> all(n * world_.size(), 0.0);
  std::vector<std::size_t> counts(world_.size(), n);
  world_.allgather(mine.data(), all.data(), counts, DType::F64);
  std::vector<TimeSplit> ranks;
  for (int r = 0; r < world_.size(); ++r) {
    const double* v = &all[std::size_t(r) * n];
    ranks.push_back({v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7]});
  }
  align_drains(ranks);
  for (int s = 0; s < grid_.pp; ++s) {
    TimeSplit st;
    for (int r = 0; r < grid_.dp; ++r) st += ranks[std::size_t(grid_.rank_of(s, r))];
    summary_.stage_times.push_back(st.scaled(1.0 / grid_.dp));
  }
  if (!rank0_) return;
  std::ostringstream os;
  if (times_.steady_steps() > 0)
    os << "per-stage time over steps " << position_.start_step + 1 << ".." << summary_.steps;
  else
    os << "per-stage time of step " << summary_.steps << ", the only one (warm-up included)";
  os << " (seconds; bubble = (wait + drain) / step, docs/profiling.md):\n";
  for (int s = 0; s < grid_.pp; ++s) {
    const TimeSplit& st = summary_.stage_times[s];
    char buf[240];
    std::snprintf(buf, sizeof buf,
                  "  stage %d layers %s: compute %.2f  wait %.2f  drain %.2f  comm %.2f  "
                  "reduce %.2f  optimizer %.2f  other %.2f  step %.2f  bubble %.1f%%\n",
                  s, chunk_layers_text(chunks_of(s)).c_str(), st.compute, st.wait, st.drain,
                  st.comm, st.reduce, st.optimizer, st.other, st.step, 100.0 * st.bubble());
    os << buf;
  }
  char buf[160];
  std::snprintf(buf, sizeof buf,
                "  theory for %s with P=%d, v=%d, m=%d: bubble %.1f%%; throughput %.0f tokens/s\n",
                std::string(pipeline::schedule_kind_name(opts_.parallel.schedule)).c_str(),
                grid_.pp, opts_.parallel.virtual_stages, microbatches,
                100.0 * pipeline::theoretical_bubble(opts_.parallel.schedule, grid_.pp,
                                                     microbatches, opts_.parallel.virtual_stages),
                summary_.tokens_per_second);
  os << buf;
  if (const MicroBatchGraphs* g = stage_->executor().graphs())
    os << "  cuda graphs on rank 0: " << g->captures() << " captured, " << g->replays()
       << " replays, " << std::setprecision(3)
       << double(stage_->backend().memory().graphs) / double(1 << 20)
       << " MiB held for their tensors\n";
  log_ << os.str() << std::flush;
}

// --export-weights: the gathered parameters as a weights file.
void Trainer::export_weights() {
  const std::vector<NamedArray> out = stage_->gather_weights();
  if (rank0_) {
    write_weights_file(opts_.checkpoint.export_weights, opts_.model.config, out,
                       wide_dtype(opts_.device.dtype));
    log_ << "exported weights to " << opts_.checkpoint.export_weights << "\n";
  }
  world_.barrier();
}

// --sample-every: rank 0 continues the sample prompt greedily. One CPU stage
// holds the whole model already; otherwise the parameters are gathered.
void Trainer::print_sample(std::int64_t step) {
  stage_->optimizer().finish_gathers();  // the parameters the sample reads are complete
  std::string text;
  if (grid_.pp == 1 && device_ == Device::CPU) {
    if (rank0_) text = sampler_->sample(stage_->model());
  } else {
    const std::vector<NamedArray> params = stage_->gather_weights();
    if (rank0_) text = sampler_->sample(params);
  }
  say("step " + std::to_string(step) + " | sample: " + text + "\n");
}

}  // namespace

TrainSummary train(const TrainOptions& opts, comm::Communicator& world, const std::string& host,
                   std::ostream& log, TrainObserver* observer) {
  return Trainer(opts, world, host, log, observer).run();
}

}  // namespace wiola
