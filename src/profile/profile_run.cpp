#include "profile/profile_run.hpp"

#include <sstream>

#include "core/error.hpp"
#include "io/token_dataset.hpp"
#include "profile/memory.hpp"
#include "train/trainer.hpp"

namespace wiola::profile {

TrainOptions profile_train_options(const TrainOptions& opts, int warmup, int measured) {
  require(warmup >= 1, "--warmup-steps must be at least 1, got ", warmup);
  require(measured >= 1, "--profile-steps must be at least 1, got ", measured);
  TrainOptions o = opts;
  o.optimizer.steps = warmup + measured;
  o.logging.eval_interval = 0;
  o.data.val_files.clear();  // no evaluation inside the measured window
  o.logging.log_interval = 1 << 30;
  o.checkpoint.export_weights.clear();
  // A profile is a fresh, short run: never resume from or write checkpoints.
  o.checkpoint.save_dir.clear();
  o.checkpoint.save_interval = 0;
  o.checkpoint.save_minutes = 0;
  o.checkpoint.resume = ResumeFrom{};
  o.checkpoint.exit_after_step = 0;
  if (!o.model.vocab_explicit) {
    // train() adopts the dataset's vocabulary; fix it here so the FLOP
    // count and the layout use the same V.
    o.model.config.V = TokenDataset(o.data.train_files, o.model.config.T).vocab_size();
    o.model.vocab_explicit = true;
  }
  return o;
}

LinkProbe probe_world_link(comm::Communicator& world, std::size_t bytes) {
  LinkProbe p;
  if (world.size() > 1) p = probe_link(world, 0, 1, bytes);
  world.barrier();
  return p;
}

ProfileResult run_profile(const TrainOptions& opts, int warmup, int measured,
                          comm::Communicator& world, const std::string& host,
                          const PeakFlops& peak, const LinkProbe& link) {
  // Errors here (a missing dataset) are seen by every rank alike.
  TrainOptions o;
  try {
    o = profile_train_options(opts, warmup, measured);
  } catch (const CollectiveError&) {
    throw;
  } catch (const Error& e) {
    throw CollectiveError(e.what());
  }
  ProfileResult res;
  res.warmup_steps = warmup;
  res.measured_steps = measured;
  res.peak = peak;
  res.link = link;
  res.rss_reset = reset_peak_rss();

  StepRecorder recorder(world, warmup);
  std::ostringstream log;
  const TrainSummary summary = train(o, world, host, log, &recorder);
  res.train_log = log.str();
  res.layout = layout_from(o, summary.stages);

  RankRecord& mine = recorder.record();
  mine.stage = world.rank() / o.parallel.dp;
  mine.dp_index = world.rank() % o.parallel.dp;
  mine.peak_flops = peak.per_rank;
  mine.peak_rss_bytes = peak_rss_bytes();
  res.records = gather_records(world, mine);
  if (world.rank() == 0) res.metrics = compute_metrics(res.layout, res.records);
  return res;
}

}  // namespace wiola::profile
