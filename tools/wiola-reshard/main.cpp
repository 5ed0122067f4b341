// wiola-reshard: offline work on checkpoints. It never modifies its input.
//   wiola-reshard verify CKPT
//   wiola-reshard convert CKPT --out SAVE_DIR --pp P --dp D [--zero Z] [--stage-layers 7,7,7,7]
//   wiola-reshard consolidate CKPT --out SAVE_DIR
//   wiola-reshard export-safetensors CKPT --out DIR      (model.safetensors + config.json)
//   wiola-reshard import-safetensors DIR --out WEIGHTS.h5 (for wiola-train --init-weights, wiola-dump)
//   wiola-reshard compare A B                            (checkpoints or weights files)
// CKPT is a checkpoint directory (SAVE_DIR/step-N); SAVE_DIR gets step-N and `latest`.
#include <boost/program_options.hpp>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>

#include "core/error.hpp"
#include "core/text.hpp"
#include "io/checkpoint_io.hpp"
#include "io/checkpoint_store.hpp"
#include "io/safetensors.hpp"
#include "io/weights_file.hpp"
#include "core/param_layout.hpp"
#include "core/param_names.hpp"
#include "partition/partition.hpp"
#include "train/checkpoint.hpp"
#include "train/options.hpp"

namespace fs = std::filesystem;
namespace po = boost::program_options;
using namespace wiola;

namespace {

struct Source {
  std::string dir;
  CheckpointManifest manifest;
  TrainOptions options;  // as recorded
};

// Reads the manifest and verifies every file before anything else happens.
Source open_checkpoint(const std::string& dir) {
  require(fs::is_directory(dir), dir, ": not a directory");
  Source s;
  s.dir = dir;
  s.manifest = read_manifest(dir);
  const std::vector<std::string> problems = verify_files(dir, s.manifest);
  if (!problems.empty()) {
    for (const auto& p : problems) std::cerr << "wiola-reshard: " << p << "\n";
    fail(dir, ": ", problems.size(), " file(s) missing or corrupt; nothing was written");
  }
  s.options = options_from_ini(s.manifest.config);
  return s;
}

// Every canonical tensor of the whole model, in canonical order.
std::vector<ParamSpec> all_tensors(const ModelConfig& c) {
  return ParamLayout(c, StageSpec::whole(c)).entries();
}

std::vector<double> read_tensor(CheckpointReader& r, const ParamSpec& p, StateKind kind) {
  std::vector<double> v(static_cast<std::size_t>(p.numel()));
  r.read(p.name, kind, p.rows, p.cols, 0, p.numel(), v.data());
  return v;
}

int cmd_verify(const std::string& dir) {
  const Source s = open_checkpoint(dir);
  CheckpointReader r(dir, s.manifest);
  std::size_t tensors = 0;
  for (const ParamSpec& p : all_tensors(s.options.model)) {
    read_tensor(r, p, StateKind::Param);  // coverage and shapes
    ++tensors;
  }
  std::printf("%s: step %lld, %zu files verified, %zu tensors complete, optimizer state %s, "
              "written at %s by %s\n",
              dir.c_str(), static_cast<long long>(s.manifest.step), s.manifest.files.size(),
              tensors, s.manifest.has_optimizer_state ? "yes" : "no", s.manifest.layout.c_str(),
              s.manifest.code_version.c_str());
  return 0;
}

int cmd_convert(const std::string& dir, const std::string& out, int pp, int dp, int zero,
                const std::string& stage_layers) {
  const Source s = open_checkpoint(dir);
  const ModelConfig& cfg = s.options.model;
  require(pp >= 1 && dp >= 1, "--pp and --dp must be >= 1");
  require(zero >= 0 && zero <= 2, "--zero must be 0, 1 or 2");
  const std::vector<StageSpec> specs =
      stage_layers.empty() ? partition_layers(cfg, pp) : parse_stage_layers(stage_layers, cfg, pp);
  const std::string name = checkpoint_name(s.manifest.step);
  const fs::path target = fs::path(out) / name, partial = fs::path(out) / partial_name(s.manifest.step);
  require(!fs::exists(target), target.string(), " already exists; choose another --out");
  fs::create_directories(out);
  fs::remove_all(partial);
  fs::create_directory(partial);

  // Who owns what at the target layout, by tensor.
  struct Owner {
    int rank;
    std::int64_t begin, end;  // tensor coordinates
  };
  std::map<std::string, std::vector<Owner>> owners;
  for (int st = 0; st < pp; ++st) {
    const ParamLayout layout(cfg, specs[st]);
    for (int r = 0; r < dp; ++r)
      for (const OwnedSlice& sl : owned_slices(layout, zero, dp, r, st == pp - 1 && pp > 1))
        owners[sl.param->name].push_back(
            {st * dp + r, sl.lo - sl.param->offset, sl.hi - sl.param->offset});
  }
  const DType dtype = wide_dtype(s.options.dtype);  // checkpoints hold the fp32 master of bf16 runs
  std::map<int, std::unique_ptr<CheckpointFileWriter>> writers;
  CheckpointReader reader(dir, s.manifest);
  const bool moments = s.manifest.has_optimizer_state;
  for (const ParamSpec& p : all_tensors(cfg)) {
    const std::vector<double> v = read_tensor(reader, p, StateKind::Param);
    std::vector<double> m, q;
    if (moments) {
      m = read_tensor(reader, p, StateKind::ExpAvg);
      q = read_tensor(reader, p, StateKind::ExpAvgSq);
    }
    for (const Owner& o : owners.at(p.name)) {
      auto& w = writers[o.rank];
      if (!w) {
        char fname[32];
        std::snprintf(fname, sizeof fname, "rank-%05d.h5", o.rank);
        w = std::make_unique<CheckpointFileWriter>(partial.string(), fname, dtype);
      }
      const std::int64_t n = o.end - o.begin;
      w->add(p.name, StateKind::Param, p.rows, p.cols, o.begin, v.data() + o.begin, n);
      if (moments) {
        w->add(p.name, StateKind::ExpAvg, p.rows, p.cols, o.begin, m.data() + o.begin, n);
        w->add(p.name, StateKind::ExpAvgSq, p.rows, p.cols, o.begin, q.data() + o.begin, n);
      }
    }
  }
  CheckpointManifest man = s.manifest;
  man.files.clear();
  man.pieces.clear();
  for (auto& [rank, w] : writers) {
    man.files.push_back(w->finish());
    man.pieces.insert(man.pieces.end(), w->pieces().begin(), w->pieces().end());
  }
  man.layout = "pp " + std::to_string(pp) + " dp " + std::to_string(dp) + " zero " +
               std::to_string(zero) + " (resharded from " + s.manifest.layout + ")";
  // The recorded configuration describes the new layout.
  TrainOptions o = s.options;
  o.pp = pp;
  o.dp = dp;
  o.zero = zero;
  o.stage_layers = stage_layers;
  man.config = to_ini(o);
  write_text_file_atomic((partial / kManifestName).string(), man.to_text());
  sync_directory(partial.string());
  fs::rename(partial, target);
  sync_directory(out);
  write_latest(out, name);
  std::printf("%s -> %s: step %lld for pp %d x dp %d, zero %d: %zu files, %zu pieces\n",
              dir.c_str(), target.string().c_str(), static_cast<long long>(man.step), pp, dp, zero,
              man.files.size(), man.pieces.size());
  return 0;
}

int cmd_export(const std::string& dir, const std::string& out) {
  const Source s = open_checkpoint(dir);
  const ModelConfig& cfg = s.options.model;
  CheckpointReader reader(dir, s.manifest);
  std::vector<SafeTensor> tensors;
  std::vector<std::string> names;
  for (const ParamSpec& p : all_tensors(cfg)) {
    SafeTensor t;
    t.name = p.name;
    t.shape = param_names::is_vector_param(p.name) ? std::vector<std::int64_t>{p.numel()}
                                      : std::vector<std::int64_t>{p.rows, p.cols};
    t.data = read_tensor(reader, p, StateKind::Param);
    names.push_back(p.name);
    tensors.push_back(std::move(t));
  }
  fs::create_directories(out);
  const DType dtype = wide_dtype(s.options.dtype);  // checkpoints hold the fp32 master of bf16 runs
  write_safetensors((fs::path(out) / "model.safetensors").string(), tensors, dtype,
                    {{"format", "pt"}, {"wiola_step", std::to_string(s.manifest.step)}});
  write_hf_config((fs::path(out) / "config.json").string(), cfg, names, dtype);
  std::printf("%s -> %s/model.safetensors + config.json: %zu tensors, model_type wiola\n",
              dir.c_str(), out.c_str(), tensors.size());
  return 0;
}

int cmd_import(const std::string& dir, const std::string& out) {
  const ModelConfig cfg = read_hf_config((fs::path(dir) / "config.json").string());
  const std::string st_path = (fs::path(dir) / "model.safetensors").string();
  std::map<std::string, SafeTensor> by_name;
  for (SafeTensor& t : read_safetensors(st_path)) by_name[t.name] = std::move(t);
  std::vector<NamedArray> arrays;
  for (const ParamSpec& p : all_tensors(cfg)) {
    auto it = by_name.find(p.name);
    require(it != by_name.end(), st_path, ": tensor '", p.name, "' is missing");
    std::int64_t n = 1;
    for (auto d : it->second.shape) n *= d;
    require(n == p.numel(), st_path, ": tensor '", p.name, "' has ", n, " elements, expected ",
            p.rows, "x", p.cols);
    arrays.push_back({p.name, p.rows, p.cols, std::move(it->second.data)});
  }
  write_weights_file(out, cfg, arrays, DType::F32);
  std::printf("%s -> %s: %zu tensors\n", dir.c_str(), out.c_str(), arrays.size());
  return 0;
}

// name/kind -> values, from a checkpoint directory or a weights file.
std::map<std::string, std::vector<double>> load_any(const std::string& path, bool* is_ckpt) {
  std::map<std::string, std::vector<double>> out;
  if (fs::is_directory(path)) {
    *is_ckpt = true;
    const Source s = open_checkpoint(path);
    CheckpointReader r(path, s.manifest);
    for (const ParamSpec& p : all_tensors(s.options.model)) {
      out[p.name + " param"] = read_tensor(r, p, StateKind::Param);
      if (s.manifest.has_optimizer_state) {
        out[p.name + " exp_avg"] = read_tensor(r, p, StateKind::ExpAvg);
        out[p.name + " exp_avg_sq"] = read_tensor(r, p, StateKind::ExpAvgSq);
      }
    }
  } else {
    *is_ckpt = false;
    for (NamedArray& a : read_weights_file(path).arrays) out[a.name + " param"] = std::move(a.data);
  }
  return out;
}

int cmd_compare(const std::string& a, const std::string& b) {
  bool ca = false, cb = false;
  const auto x = load_any(a, &ca), y = load_any(b, &cb);
  const bool params_only = !ca || !cb;
  double worst = 0;
  std::size_t compared = 0;
  for (const auto& [key, v] : x) {
    if (params_only && key.find(" param") == std::string::npos) continue;
    auto it = y.find(key);
    require(it != y.end(), b, ": has no ", key);
    require(it->second.size() == v.size(), key, ": ", v.size(), " vs ", it->second.size(), " values");
    for (std::size_t i = 0; i < v.size(); ++i) worst = std::max(worst, std::abs(v[i] - it->second[i]));
    ++compared;
  }
  std::printf("compared %zu tensors%s: largest absolute difference %.3g\n", compared,
              params_only ? " (parameters only)" : "", worst);
  return worst == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const std::string cmd = argc > 1 ? argv[1] : "";
    std::string out, stage_layers;
    int pp = 1, dp = 1, zero = 0;
    std::vector<std::string> args;
    po::options_description d("wiola-reshard options");
    d.add_options()("help,h", "print this help")("out", po::value(&out), "output directory or file")(
        "pp", po::value(&pp), "target pipeline stages")("dp", po::value(&dp), "target data-parallel replicas")(
        "zero", po::value(&zero), "target ZeRO stage")("stage-layers", po::value(&stage_layers),
                                                       "target explicit split")(
        "args", po::value(&args)->composing(), "positional arguments");
    po::positional_options_description pos;
    pos.add("args", -1);
    po::variables_map vm;
    po::store(po::command_line_parser(argc - 1, argv + 1).options(d).positional(pos).run(), vm);
    po::notify(vm);
    auto need = [&](std::size_t n, const char* usage) {
      require(args.size() == n, "usage: wiola-reshard ", cmd, " ", usage);
    };
    auto need_out = [&] { require(!out.empty(), cmd, ": --out is required"); };
    if (cmd == "verify") {
      need(1, "CKPT");
      return cmd_verify(args[0]);
    }
    if (cmd == "convert") {
      need(1, "CKPT --out SAVE_DIR --pp P --dp D [--zero Z] [--stage-layers L]");
      need_out();
      return cmd_convert(args[0], out, pp, dp, zero, stage_layers);
    }
    if (cmd == "consolidate") {
      need(1, "CKPT --out SAVE_DIR");
      need_out();
      return cmd_convert(args[0], out, 1, 1, 0, "");
    }
    if (cmd == "export-safetensors") {
      need(1, "CKPT --out DIR");
      need_out();
      return cmd_export(args[0], out);
    }
    if (cmd == "import-safetensors") {
      need(1, "DIR --out WEIGHTS.h5");
      need_out();
      return cmd_import(args[0], out);
    }
    if (cmd == "compare") {
      need(2, "A B");
      return cmd_compare(args[0], args[1]);
    }
    std::cerr << "usage: wiola-reshard verify|convert|consolidate|export-safetensors|"
                 "import-safetensors|compare ... (see tools/wiola-reshard/main.cpp)\n";
    return cmd.empty() || cmd == "--help" || cmd == "-h" ? 0 : 2;
  } catch (const std::exception& e) {
    std::cerr << "wiola-reshard: " << wiola::printable_lines(e.what()) << "\n";
    return 2;
  }
}
