#include "train/trainer.hpp"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iomanip>
#include <ostream>
#include <sstream>

#include "backend/cpu_threads.hpp"
#include "comm/agreement.hpp"
#include "comm/process_grid.hpp"
#include "core/error.hpp"
#include "core/model_fields.hpp"
#include "core/text.hpp"
#include "io/data_config.hpp"
#include "io/weights_file.hpp"
#include "model/flops.hpp"
#include "model/param_report.hpp"
#include "model/stage_model.hpp"
#include "optim/lr_schedule.hpp"
#include "partition/partition.hpp"
#include "pipeline/schedule.hpp"
#include "pipeline/stage_executor.hpp"
#include "train/batch_feed.hpp"
#include "train/checkpoint.hpp"
#include "train/stop_signal.hpp"
#include "train/zero_optimizer.hpp"

namespace wiola {

namespace {

using Clock = std::chrono::steady_clock;

// Test hook: WIOLA_FAULT_INJECT="rank=R,step=S" makes world rank R exit
// abruptly (status 7, no MPI shutdown) at the first backward of step S, so
// tests can check that the other ranks do not hang.
struct FaultInjection {
  int rank = -1;
  long step = -1;
  static FaultInjection from_env() {
    FaultInjection f;
    if (const char* v = std::getenv("WIOLA_FAULT_INJECT"))
      if (std::sscanf(v, "rank=%d,step=%ld", &f.rank, &f.step) != 2) f = FaultInjection{};
    return f;
  }
};

// --init-weights: parameters from a weights file (wiola-dump's format, e.g.
// imported from safetensors by wiola-reshard); the optimizer starts fresh.
void load_initial_weights(StageModel& model, const std::string& path, comm::Communicator& world) {
  comm::agree(world, [&] {
    const WeightsFile w = read_weights_file(path);
    const std::string diff = model_differences(w.config, model.config(), FieldSet::Shape);
    require(diff.empty(), "--init-weights ", path, ": the file holds ", w.config.describe(),
            ", this run is ", model.config().describe(), " (", diff, ")");
    for (const NamedArray& arr : w.arrays)
      if (model.params().has(arr.name)) model.params().set(arr.name, arr.data);
  });
}

// Forward-only list for evaluation: receive, forward, send, per micro-batch.
std::vector<Action> forward_only(int stages, int stage, int microbatches) {
  std::vector<Action> a;
  for (int mb = 0; mb < microbatches; ++mb) {
    if (stage > 0) a.push_back({ActionKind::RecvActivation, mb, 0});
    a.push_back({ActionKind::Forward, mb, 0});
    if (stage < stages - 1) a.push_back({ActionKind::SendActivation, mb, 0});
  }
  return a;
}

// The full parameters, collected on world rank 0 from each stage's first
// data-parallel replica (for --export-weights).
std::vector<NamedArray> gather_weights(StageModel& model, const comm::ProcessGrid& grid,
                                       const std::vector<StageSpec>& specs,
                                       comm::Communicator& world) {
  std::vector<NamedArray> out;
  const int tag = 7;
  if (grid.world_rank != 0) {
    if (grid.dp_index() == 0) {
      const std::vector<double> flat = to_host_f64(model.backend(), model.params().params());
      world.send(flat.data(), flat.size() * sizeof(double), 0, tag);
    }
    return out;
  }
  for (int s = 0; s < grid.pp; ++s) {
    const ParamLayout layout(model.config(), specs[s]);
    std::vector<double> flat;
    if (s == 0) {
      flat = to_host_f64(model.backend(), model.params().params());
    } else {
      flat.resize(static_cast<std::size_t>(layout.total()));
      world.recv(flat.data(), flat.size() * sizeof(double), grid.rank_of(s, 0), tag);
    }
    for (const ParamSpec& p : layout.entries()) {
      if (s > 0 && p.name == "embed.weight") continue;  // the tied copy
      NamedArray a{p.name, p.rows, p.cols,
                   std::vector<double>(flat.begin() + p.offset,
                                       flat.begin() + p.offset + p.numel())};
      out.push_back(std::move(a));
    }
  }
  return out;
}

}  // namespace

TrainSummary train(const TrainOptions& options, comm::Communicator& world,
                   const std::string& host, std::ostream& log, TrainObserver* observer) {
  TrainOptions opts = options;
  const bool rank0 = world.rank() == 0;
  auto say = [&](const std::string& s) {
    if (rank0) log << s << std::flush;
  };

  // Everything that can be refused is checked before any work, and all ranks
  // agree on the outcome before any collective, so bad input ends the job
  // cleanly on every rank instead of leaving some waiting.
  comm::ProcessGrid grid;
  std::vector<StageSpec> specs;
  std::optional<DatasetSpec> train_spec_opt, val_spec_opt;
  comm::agree(world, [&] {
    grid = comm::ProcessGrid::make(world.size(), opts.pp, opts.dp, world.rank());
    set_cpu_threads(opts.threads);
    opts.validate();  // before the data: its errors name flags, not files
    const DataConfig data{opts.train_files, opts.data_weights, opts.val_files, opts.val_fraction,
                          opts.split_seed};
    train_spec_opt = train_spec(data);
    val_spec_opt = val_spec(data);
    const TokenDataset probe(*train_spec_opt, opts.model.T);
    if (!opts.vocab_explicit) {
      opts.model.V = probe.vocab_size();
    } else {
      require(opts.model.V >= probe.vocab_size(), "--vocab ", opts.model.V,
              " is smaller than the vocabulary of ", opts.train_files.front(), " (",
              probe.vocab_size(), ")");
    }
    if (val_spec_opt) {
      const TokenDataset val(*val_spec_opt, opts.model.T);
      require_same_tokenizer(probe, val);
    }
    opts.validate();
    specs = opts.stage_layers.empty() ? partition_layers(opts.model, opts.pp)
                                      : parse_stage_layers(opts.stage_layers, opts.model, opts.pp);
  }, "another rank refused the configuration (see its message)");

  const pipeline::ScheduleKind kind = pipeline::parse_schedule_kind(opts.schedule);
  const int m = opts.micro_batches_per_rank();
  const std::int64_t total_steps = opts.total_steps();
  const ModelConfig& cfg = opts.model;

  comm::GridGroups groups = comm::make_groups(world, grid);
  auto backend = make_cpu_backend();
  StageModel model(*backend, cfg, specs[grid.stage()], opts.dtype);
  model.params().init(opts.seed);
  ZeroOptimizer opt(model, {&world, groups.data.get(), groups.embedding.get()}, opts.zero,
                    opts.adam, !(grid.last_stage() && grid.pp > 1));
  StageExecutor exec(model, groups.pipeline.get(), grid.stage(), grid.pp);

  const bool has_data = grid.first_stage() || grid.last_stage();
  std::unique_ptr<BatchFeed> train_feed, val_feed;
  const std::int64_t share = opts.global_batch / opts.dp;
  if (has_data) {
    FeedOptions fo;
    fo.prefetch = opts.prefetch;
    train_feed = std::make_unique<BatchFeed>(*train_spec_opt, cfg.T, opts.seed, fo);
    // This rank reads `share` samples of every global batch, from its offset.
    train_feed->set_access_pattern(opts.global_batch, grid.dp_index() * share, share);
    if (val_spec_opt) {
      val_feed = std::make_unique<BatchFeed>(*val_spec_opt, cfg.T, /*seed=*/0, fo);
      val_feed->set_access_pattern(std::int64_t(opts.dp) * opts.micro_batch,
                                   std::int64_t(grid.dp_index()) * opts.micro_batch,
                                   opts.micro_batch);
    }
  }
  const bool can_eval = val_spec_opt.has_value();

  // Where the run starts: fresh, from imported weights, or from a checkpoint.
  const CheckpointContext ckpt{model, opt, grid, world, opts.zero};
  TrainSummary summary;
  std::int64_t start_step = 1, sample_base = 0;
  if (!opts.init_weights.empty()) load_initial_weights(model, opts.init_weights, world);
  std::optional<std::string> resume_dir;
  if (opts.resume == "auto") {
    resume_dir = find_resume_checkpoint(world, opts.save_dir, log);
    if (!resume_dir && rank0) log << "resume: no checkpoint in '" << opts.save_dir << "', starting fresh\n";
  } else if (opts.resume != "none") {
    resume_dir = opts.resume;
  }
  if (resume_dir) {
    const CheckpointInfo info = load_checkpoint(ckpt, *resume_dir);
    start_step = info.step + 1;
    sample_base = info.consumed_samples;
    summary.last_checkpoint = *resume_dir;
    if (rank0)
      log << "resume: " << *resume_dir << " at step " << info.step << " (" << info.consumed_samples
          << " samples consumed, written by " << info.code_version << ")\n";
  }
  summary.first_step = start_step;

  if (rank0) {
    std::ostringstream os;
    os << "wiola-train: " << cfg.describe() << "\n"
       << "  parameters " << param_count(cfg) << " (exact), training FLOPs/token "
       << std::setprecision(4) << training_flops_per_token(cfg) << "\n"
       << "  grid pp " << grid.pp << " x dp " << grid.dp << " on " << world.size()
       << " ranks (rank 0 on " << host << "), schedule " << opts.schedule << ", zero "
       << opts.zero << ", " << m << " micro-batches of " << opts.micro_batch
       << " per replica per step\n"
       << "  global batch " << opts.global_batch << " sequences = "
       << std::int64_t(opts.global_batch) * cfg.T << " tokens; " << total_steps
       << " steps = " << total_steps * opts.global_batch * cfg.T << " tokens\n";
    for (const auto& w : leak_warnings(cfg)) os << "WARNING: " << w << "\n";
    if (auto w = pipeline::bubble_warning(grid.pp, m)) os << "WARNING: " << *w << "\n";
    os << describe_partition(cfg, specs);
    log << os.str() << std::flush;
  }

  LrSchedule lr{opts.lr, opts.min_lr,
                static_cast<std::int64_t>(std::llround(opts.warmup_frac * double(total_steps))),
                total_steps};
  const double loss_scale = 1.0 / (double(opts.global_batch) * cfg.T);

  auto evaluate = [&]() {
    const int per_replica = (opts.eval_batches + opts.dp - 1) / opts.dp;
    StageExecutor::Hooks hooks;
    hooks.batch = [&](int mb) {
      const std::int64_t first =
          (std::int64_t(mb) * opts.dp + grid.dp_index()) * opts.micro_batch;
      return val_feed->samples(first, opts.micro_batch);
    };
    const auto res = exec.run(forward_only(grid.pp, grid.stage(), per_replica), 0,
                              opts.micro_batch, cfg.T, false, 0.0, hooks);
    double sums[2] = {res.loss_sum, double(res.loss_tokens)};
    world.allreduce(sums, 2, DType::F64, comm::ReduceOp::Sum);
    return sums[0] / std::max(1.0, sums[1]);
  };

  summary.stages = specs;
  StageTimes times;
  const FaultInjection fault = FaultInjection::from_env();
  const auto t_start = Clock::now();
  auto t_steady = t_start;
  auto t_window = t_start;
  double window_loss = 0, window_tokens = 0;
  int window_steps = 0;
  int skipped = 0;
  auto t_saved = Clock::now();
  std::int64_t steady_steps = 0;
  for (std::int64_t step = start_step; step <= total_steps; ++step) {
    const std::int64_t step_first_sample = sample_base + (step - start_step) * opts.global_batch;
    model.params().zero_grads();
    const std::vector<Action> actions = pipeline::make_schedule(kind, grid.pp, grid.stage(), m);
    StageExecutor::Hooks hooks;
    hooks.batch = [&](int mb) {
      const std::int64_t first =
          step_first_sample + grid.dp_index() * share + std::int64_t(mb) * opts.micro_batch;
      return train_feed->samples(first, opts.micro_batch);
    };
    hooks.final_layer_grads = [&](int layer) { opt.on_layer_grads_final(layer); };
    hooks.record_events = observer && observer->wants_events();
    if (fault.rank == world.rank() && fault.step == step)
      hooks.before_action = [](const Action& a) {
        if (a.kind == ActionKind::Backward) std::_Exit(7);
      };
    hooks.reduce_grads = [&]() { opt.reduce_grads(); };
    ZeroOptimizer::StepInfo info;
    hooks.optimizer_step = [&](const StageExecutor::Result& r) {
      info = opt.step(lr.at(step), opts.clip, r.loss_sum, double(r.loss_tokens));
    };
    const StageExecutor::Result res = exec.run(actions, static_cast<int>(step), opts.micro_batch,
                                               cfg.T, true, loss_scale, hooks);
    if (step == start_step) {
      t_steady = Clock::now();
    } else {
      times += res.times;
      ++steady_steps;
    }
    if (observer) observer->on_step(step, res);
    const double loss = info.loss_sum / std::max(1.0, info.loss_tokens);
    if (info.skipped) {
      ++skipped;
      say("step " + std::to_string(step) + ": gradient norm is not finite; update skipped\n");
      require(skipped < 5, "5 steps in a row had NaN/Inf gradients; stopping");
    } else {
      skipped = 0;
    }
    summary.losses.push_back(loss);
    if (step == start_step) summary.first_loss = loss;
    summary.last_loss = loss;
    summary.steps = step;
    window_loss += loss;
    window_tokens += double(opts.global_batch) * cfg.T;
    ++window_steps;

    const bool eval_now =
        can_eval && ((opts.eval_interval > 0 && step % opts.eval_interval == 0) || step == total_steps);
    if (step % opts.log_interval == 0 || step == total_steps || step == start_step) {
      const double dt = std::chrono::duration<double>(Clock::now() - t_window).count();
      const double elapsed = std::chrono::duration<double>(Clock::now() - t_start).count();
      const double tps = window_tokens / std::max(dt, 1e-9);
      const double eta = elapsed / double(step - start_step + 1) * double(total_steps - step);
      char buf[320];
      std::snprintf(buf, sizeof buf,
                    "step %6lld/%lld | loss %.4f | lr %.3e | grad-norm %.3f | tok/s %8.0f | "
                    "GFLOP/s %6.2f | elapsed %s | eta %s\n",
                    static_cast<long long>(step), static_cast<long long>(total_steps),
                    window_loss / window_steps, lr.at(step), info.grad_norm, tps,
                    tps * training_flops_per_token(cfg) / 1e9, duration_text(elapsed).c_str(),
                    duration_text(eta).c_str());
      say(buf);
      t_window = Clock::now();
      window_loss = window_tokens = 0;
      window_steps = 0;
    }
    if (eval_now) {
      summary.last_val_loss = evaluate();
      char buf[96];
      std::snprintf(buf, sizeof buf, "step %6lld | validation loss %.4f\n",
                    static_cast<long long>(step), summary.last_val_loss);
      say(buf);
    }

    // Checkpoint and stop decisions, agreed by all ranks in one all-reduce:
    // a stop signal on any rank, or the time-based interval on any clock.
    const bool time_due =
        opts.save_minutes > 0 &&
        std::chrono::duration<double>(Clock::now() - t_saved).count() >= 60.0 * opts.save_minutes;
    int flags[2] = {stop_signal(), time_due ? 1 : 0};
    world.allreduce(flags, 2, DType::I32, comm::ReduceOp::Max);
    const bool stop = flags[0] != 0;
    const bool exit_now = opts.exit_after_step > 0 && step == opts.exit_after_step;
    const bool save_now = !opts.save_dir.empty() &&
                          (stop || exit_now || flags[1] || step == total_steps ||
                           (opts.save_interval > 0 && step % opts.save_interval == 0));
    if (save_now) {
      CheckpointInfo saved;
      saved.step = step;
      saved.consumed_samples = step_first_sample + opts.global_batch;
      saved.config = to_ini(opts);
      summary.last_checkpoint = save_checkpoint(ckpt, opts.save_dir, saved, opts.keep);
      t_saved = Clock::now();
      say("checkpoint: " + summary.last_checkpoint + "\n");
    }
    if (stop) {
      summary.stop_signal = flags[0];
      say("stopping after step " + std::to_string(step) + " on signal " + std::to_string(flags[0]) +
          (save_now ? "" : " (no --save directory: nothing was saved)") + "\n");
      break;
    }
    if (exit_now) {
      say("stopping after step " + std::to_string(step) + " (--exit-after-step)\n");
      break;
    }
  }
  summary.completed = summary.steps == total_steps;

  if (steady_steps > 0)
    summary.tokens_per_second =
        double(steady_steps) * opts.global_batch * cfg.T /
        std::chrono::duration<double>(Clock::now() - t_steady).count();

  // Per-stage time split, averaged over each stage's replicas.
  std::vector<double> mine{times.compute, times.wait, times.comm, times.optimizer, times.total};
  std::vector<double> all(mine.size() * world.size(), 0.0);
  std::vector<std::size_t> counts(world.size(), mine.size());
  world.allgather(mine.data(), all.data(), counts, DType::F64);
  for (int s = 0; s < grid.pp; ++s) {
    StageTimes st;
    for (int r = 0; r < grid.dp; ++r) {
      const double* v = &all[std::size_t(grid.rank_of(s, r)) * 5];
      st += StageTimes{v[0] / grid.dp, v[1] / grid.dp, v[2] / grid.dp, v[3] / grid.dp,
                       v[4] / grid.dp};
    }
    summary.stage_times.push_back(st);
  }
  if (rank0) {
    std::ostringstream os;
    os << "per-stage time over steps 2.." << summary.steps
       << " (seconds; bubble = waiting on peers / total):\n";
    for (int s = 0; s < grid.pp; ++s) {
      const StageTimes& st = summary.stage_times[s];
      char buf[200];
      std::snprintf(buf, sizeof buf,
                    "  stage %d layers [%d,%d): compute %.2f  wait %.2f  comm %.2f  optimizer "
                    "%.2f  total %.2f  bubble %.1f%%\n",
                    s, specs[s].first_layer, specs[s].end_layer, st.compute, st.wait, st.comm,
                    st.optimizer, st.total, 100.0 * st.wait / std::max(st.total, 1e-9));
      os << buf;
    }
    char buf[160];
    std::snprintf(buf, sizeof buf,
                  "  theory for %s with P=%d, m=%d: bubble %.1f%%; throughput %.0f tokens/s\n",
                  opts.schedule.c_str(), grid.pp, m,
                  100.0 * pipeline::theoretical_bubble(kind, grid.pp, m),
                  summary.tokens_per_second);
    os << buf;
    log << os.str() << std::flush;
  }

  if (!opts.export_weights.empty() && summary.completed) {
    const std::vector<NamedArray> w = gather_weights(model, grid, specs, world);
    if (rank0) {
      write_weights_file(opts.export_weights, cfg, w, opts.dtype);
      log << "exported weights to " << opts.export_weights << "\n";
    }
    world.barrier();
  }
  return summary;
}

}  // namespace wiola
