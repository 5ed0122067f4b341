#include "train/checkpoint.hpp"

#include <cstdio>
#include <filesystem>
#include <functional>
#include <iostream>
#include <ostream>
#include <sstream>
#include <tuple>

#include "comm/agreement.hpp"
#include "core/error.hpp"
#include "io/checkpoint_io.hpp"
#include "io/checkpoint_store.hpp"
#include "core/param_names.hpp"

namespace fs = std::filesystem;

namespace wiola {

namespace {

// Sends every rank's text to rank 0 (in rank order); others get "".
std::string gather_text(comm::Communicator& world, const std::string& mine) {
  const int tag = 11;
  if (world.rank() != 0) {
    std::int64_t n = static_cast<std::int64_t>(mine.size());
    world.send(&n, sizeof n, 0, tag);
    if (n) world.send(mine.data(), mine.size(), 0, tag);
    return "";
  }
  std::string all = mine;
  for (int r = 1; r < world.size(); ++r) {
    std::int64_t n = 0;
    world.recv(&n, sizeof n, r, tag);
    std::string part(static_cast<std::size_t>(n), '\0');
    if (n) world.recv(part.data(), part.size(), r, tag);
    all += part;
  }
  return all;
}

}  // namespace

std::vector<OwnedSlice> owned_slices(const ParamLayout& layout, int zero, int dp, int dp_index,
                                     bool skip_embedding) {
  std::int64_t begin = 0, end = layout.total();
  if (zero > 0)
    std::tie(begin, end) = zero_shard(layout.total(), dp, dp_index);
  else if (dp_index != 0)
    return {};
  std::vector<OwnedSlice> out;
  for (const ParamSpec& p : layout.entries()) {
    if (skip_embedding && p.name == param_names::kEmbed) continue;
    const std::int64_t lo = std::max(begin, p.offset), hi = std::min(end, p.offset + p.numel());
    if (lo < hi) out.push_back({&p, lo, hi});
  }
  return out;
}

std::string save_checkpoint(const CheckpointContext& ctx, const std::string& save_dir,
                            const CheckpointInfo& info, int keep) {
  comm::Communicator& world = ctx.world;
  const std::string partial = (fs::path(save_dir) / partial_name(info.step)).string();
  const std::string final_dir = (fs::path(save_dir) / checkpoint_name(info.step)).string();
  if (world.rank() == 0) {
    fs::create_directories(save_dir);
    fs::remove_all(partial);
    fs::create_directory(partial);
  }
  world.barrier();

  const ParamLayout& layout = ctx.model.params().layout();
  const std::vector<OwnedSlice> mine =
      owned_slices(layout, ctx.zero, ctx.grid.dp, ctx.grid.dp_index(),
                   ctx.grid.last_stage() && ctx.grid.pp > 1);
  std::string lines;
  if (!mine.empty()) {
    char fname[32];
    std::snprintf(fname, sizeof fname, "rank-%05d.h5", world.rank());
    Backend& be = ctx.model.backend();
    // Parameters (the fp32 master copy where the weights are bf16) and both
    // moments cover the optimizer's range; index them in flat coordinates.
    AdamWOptimizer& adam = ctx.optimizer.adam();
    const std::vector<double> params = to_host_f64(be, ctx.optimizer.master());
    const std::vector<double> m = to_host_f64(be, adam.exp_avg());
    const std::vector<double> v = to_host_f64(be, adam.exp_avg_sq());
    const std::int64_t mb = adam.begin();
    CheckpointFileWriter w(partial, fname, wide_dtype(ctx.model.dtype()));
    for (const OwnedSlice& s : mine) {
      const ParamSpec& p = *s.param;
      const std::int64_t n = s.hi - s.lo, first = s.lo - p.offset;
      w.add(p.name, StateKind::Param, p.rows, p.cols, first, params.data() + (s.lo - mb), n);
      w.add(p.name, StateKind::ExpAvg, p.rows, p.cols, first, m.data() + (s.lo - mb), n);
      w.add(p.name, StateKind::ExpAvgSq, p.rows, p.cols, first, v.data() + (s.lo - mb), n);
      if (ctx.observer) ctx.observer->on_checkpoint_write(info.step);
    }
    CheckpointManifest part;
    part.files.push_back(w.finish());
    part.pieces = w.pieces();
    lines = part.to_text();
  }

  const std::string all = gather_text(world, lines);
  if (world.rank() == 0) {
    CheckpointManifest man;
    man.step = info.step;
    man.consumed_samples = info.consumed_samples;
    man.loss_window = info.loss_window;
    man.updates = ctx.optimizer.updates();
    man.code_version = code_version();
    man.layout = "pp " + std::to_string(ctx.grid.pp) + " dp " + std::to_string(ctx.grid.dp) +
                 " zero " + std::to_string(ctx.zero);
    man.model = ctx.model.config().describe();
    man.config = info.config;
    // Every rank sent a manifest of its own file: merge them.
    std::istringstream texts(all);
    std::string line, one;
    while (std::getline(texts, line)) {
      one += line + "\n";
      if (line != "end") continue;
      const CheckpointManifest part = CheckpointManifest::parse(one, "checkpoint piece list");
      man.files.insert(man.files.end(), part.files.begin(), part.files.end());
      man.pieces.insert(man.pieces.end(), part.pieces.begin(), part.pieces.end());
      one.clear();
    }
    write_text_file_atomic((fs::path(partial) / kManifestName).string(), man.to_text());
    sync_directory(partial);
    // An older save of the same step (a rerun) is hidden, never deleted in place.
    if (fs::exists(final_dir)) retire_checkpoint(save_dir, checkpoint_name(info.step));
    fs::rename(partial, final_dir);
    sync_directory(save_dir);
    write_latest(save_dir, checkpoint_name(info.step));
    retire_old_checkpoints(save_dir, keep, info.step);
    if (ctx.observer) ctx.observer->on_checkpoints_retired(info.step);
    remove_retired(save_dir);
  }
  world.barrier();
  return final_dir;
}

std::vector<double> read_stage_params(CheckpointReader& reader, const ParamLayout& layout) {
  std::vector<double> params(static_cast<std::size_t>(layout.total()));
  for (const ParamSpec& p : layout.entries())
    reader.read(p.name, StateKind::Param, p.rows, p.cols, 0, p.numel(), params.data() + p.offset);
  return params;
}

CheckpointInfo load_checkpoint(const CheckpointContext& ctx, const std::string& dir) {
  comm::Communicator& world = ctx.world;
  CheckpointManifest m;
  comm::agree(world, [&] {
    require_loadable_name(dir);
    m = read_manifest(dir);
    for (const std::string& p : verify_files(dir, m, world.rank(), world.size()))
      fail(dir, ": ", p);
  });
  comm::agree(world, [&] {
    StageModel& model = ctx.model;
    const ParamLayout& layout = model.params().layout();
    CheckpointReader reader(dir, m);
    const std::vector<double> params = read_stage_params(reader, layout);
    from_host_f64(model.backend(), params, model.params().params());

    AdamWOptimizer& adam = ctx.optimizer.adam();
    const std::int64_t b = adam.begin(), e = adam.end();
    std::vector<double> ma(static_cast<std::size_t>(e - b), 0.0), va(ma.size(), 0.0);
    if (m.has_optimizer_state) {
      for (const ParamSpec& p : layout.entries()) {
        const std::int64_t lo = std::max(b, p.offset), hi = std::min(e, p.offset + p.numel());
        if (lo >= hi) continue;
        reader.read(p.name, StateKind::ExpAvg, p.rows, p.cols, lo - p.offset, hi - p.offset,
                    ma.data() + (lo - b));
        reader.read(p.name, StateKind::ExpAvgSq, p.rows, p.cols, lo - p.offset, hi - p.offset,
                    va.data() + (lo - b));
      }
    }
    from_host_f64(model.backend(), ma, adam.exp_avg());
    from_host_f64(model.backend(), va, adam.exp_avg_sq());
    // The stored parameters are the master weights: exact in the fp32 copy.
    adam.load_master(std::vector<double>(params.begin() + b, params.begin() + e));
    ctx.optimizer.set_updates(m.has_optimizer_state ? m.updates : 0);
  });
  CheckpointInfo info;
  info.step = m.step;
  info.consumed_samples = m.consumed_samples;
  info.loss_window = m.loss_window;
  info.code_version = m.code_version;
  info.config = m.config;
  return info;
}

std::optional<std::string> find_resume_checkpoint(comm::Communicator& world,
                                                  const std::string& save_dir, std::ostream& log) {
  const std::vector<std::string> names = list_checkpoint_dirs(save_dir);
  std::string refused;  // rank 0: every checkpoint and why it does not load
  for (const std::string& name : names) {
    const std::string dir = (fs::path(save_dir) / name).string();
    std::string problem;
    try {
      const CheckpointManifest m = read_manifest(dir);
      const auto found = verify_files(dir, m, world.rank(), world.size());
      if (!found.empty()) problem = found.front();
    } catch (const Error& e) {
      problem = e.what();
    }
    // Each rank checked a share of the files: rank 0 learns every rank's finding.
    const std::string all = gather_text(world, problem.empty() ? "" : problem + "\n");
    const int bad = world.allreduce_value(problem.empty() ? 0 : 1, comm::ReduceOp::Max);
    if (!bad) return dir;
    if (world.rank() != 0) continue;
    const std::string first = all.substr(0, all.find('\n'));
    log << "resume: skipping " << dir << " (" << first << ")\n";
    refused += "\n  " + name + ": " + first;
  }
  if (names.empty()) return std::nullopt;
  // Checkpoints exist but none loads: starting over from step 0 in their
  // folder would look like a resume and is never done silently.
  throw CollectiveError("--resume auto: none of the " + std::to_string(names.size()) +
                        " checkpoints in " + save_dir + " loads:" + refused +
                        "\nTo train from step 0 anyway, pass --resume none (or move them "
                        "away); to load one, repair it or name it with --resume DIR.");
}

}  // namespace wiola
