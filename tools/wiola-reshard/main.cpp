// wiola-reshard: offline work on checkpoints. It never modifies its input.
// `wiola-reshard --help` lists the commands, `wiola-reshard COMMAND --help`
// their arguments and options (the table kCommands below).
// CKPT is a checkpoint: a step folder (SAVE_DIR/step-N) or a save folder (its
// latest complete step), resolved as every tool does (resolve_checkpoint);
// an output SAVE_DIR gets step-N and `latest`.
#include <boost/program_options.hpp>
#include <cmath>
#include <cstdlib>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>
#include <unistd.h>

#include "core/error.hpp"
#include "core/text.hpp"
#include "core/version.hpp"
#include "io/bpe_tokenizer.hpp"
#include "io/checkpoint_io.hpp"
#include "io/checkpoint_store.hpp"
#include "io/h5.hpp"
#include "io/hf_tokenizer.hpp"
#include "io/safetensors.hpp"
#include "io/token_file.hpp"
#include "io/weights_file.hpp"
#include "core/param_layout.hpp"
#include "core/param_names.hpp"
#include "partition/partition.hpp"
#include "train/checkpoint.hpp"
#include "train/options.hpp"
#include "core/option_errors.hpp"

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
Source open_checkpoint(const std::string& named) {
  const std::string dir = resolve_checkpoint_dir(named);
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

int cmd_verify(const std::string& named) {
  const Source s = open_checkpoint(named);
  const std::string& dir = s.dir;
  CheckpointReader r(dir, s.manifest);
  std::size_t tensors = 0;
  for (const ParamSpec& p : all_tensors(s.options.model.config)) {
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

int cmd_convert(const std::string& named, const std::string& out, int pp, int dp, int zero,
                const std::string& stage_layers) {
  const Source s = open_checkpoint(named);
  const std::string& dir = s.dir;
  const ModelConfig& cfg = s.options.model.config;
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
  const DType dtype =
      wide_dtype(s.options.device.dtype);  // checkpoints hold the fp32 master of bf16 runs
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
  o.parallel.pp = pp;
  o.parallel.dp = dp;
  o.parallel.zero = zero;
  o.parallel.stage_layers = stage_layers;
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

// The folder holding modeling_wiola.py: beside an installed binary
// (<prefix>/bin -> <prefix>/share/wiola/hf), the configured install folder,
// then the source tree this binary was built from; $WIOLA_HF_DIR first.
fs::path hf_files_dir() {
  std::vector<fs::path> candidates;
  if (const char* env = std::getenv("WIOLA_HF_DIR")) candidates.emplace_back(env);
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) candidates.push_back(exe.parent_path().parent_path() / "share" / "wiola" / "hf");
#ifdef WIOLA_HF_INSTALL_DIR
  candidates.emplace_back(WIOLA_HF_INSTALL_DIR);
#endif
#ifdef WIOLA_HF_SOURCE_DIR
  candidates.emplace_back(WIOLA_HF_SOURCE_DIR);
#endif
  std::string looked;
  for (const fs::path& c : candidates) {
    if (fs::is_regular_file(c / "modeling_wiola.py", ec)) return c;
    looked += (looked.empty() ? "" : ", ") + c.string();
  }
  fail("modeling_wiola.py not found (looked in ", looked, "; set WIOLA_HF_DIR)");
}

// HDF5's signature at the start of the file (where wiola's files have it).
bool looks_like_hdf5(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char magic[8] = {};
  in.read(magic, 8);
  return in.gcount() == 8 && std::string(magic, 8) == std::string("\x89HDF\r\n\x1a\n", 8);
}

// The run's BPE tokenizer: --tokenizer (a .bpe file, or a token file that
// embeds one), else the one embedded in the checkpoint's first training file.
// nullopt (with the reason in `why`) when there is none.
std::optional<BpeTokenizer> export_tokenizer(const std::string& given, const Source& s,
                                             std::string& why) {
  std::string path = given;
  if (path.empty()) {
    if (s.options.data.train_files.empty()) {
      why = "the checkpoint records no training data";
      return std::nullopt;
    }
    path = s.options.data.train_files.front();
  }
  if (!fs::is_regular_file(path)) {
    require(given.empty(), "--tokenizer ", given, ": no such file");
    why = path + " (the run's first training file) is not here";
    return std::nullopt;
  }
  std::string text;
  if (looks_like_hdf5(path)) {
    const h5::File f = h5::File::open_read(path);
    text = read_embedded_tokenizer(f);
    if (text.empty()) {
      require(given.empty(), "--tokenizer ", given, ": the token file embeds no BPE tokenizer");
      why = path + " embeds no BPE tokenizer (byte or imported ids)";
      return std::nullopt;
    }
  } else {
    text = read_text_file(path, "the tokenizer");
  }
  return BpeTokenizer::parse(text, path);
}

int cmd_export(const std::string& named, const std::string& out, const std::string& dtype_text,
               const std::string& tokenizer) {
  require(dtype_text == "fp32" || dtype_text == "bf16", "--dtype must be fp32 or bf16, got '",
          dtype_text, "'");
  const DType dtype = dtype_text == "bf16" ? DType::BF16 : DType::F32;
  const Source s = open_checkpoint(named);
  const std::string& dir = s.dir;
  const ModelConfig& cfg = s.options.model.config;
  const fs::path hf = hf_files_dir();  // before anything is written
  std::string why;
  const std::optional<BpeTokenizer> tok = export_tokenizer(tokenizer, s, why);
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
  write_safetensors((fs::path(out) / "model.safetensors").string(), tensors, dtype,
                    {{"format", "pt"}, {"wiola_step", std::to_string(s.manifest.step)}});
  HfConfigExtras x;
  x.names = names;
  x.dtype = dtype;
  x.wiola_version = code_version();
  if (tok) {
    x.bos_token_id = x.eos_token_id = tok->eod_id();
    write_text_file_atomic((fs::path(out) / "tokenizer.json").string(), hf_tokenizer_json(*tok));
    write_text_file_atomic((fs::path(out) / "tokenizer_config.json").string(),
                           hf_tokenizer_config_json(*tok, cfg.T));
  }
  write_hf_config((fs::path(out) / "config.json").string(), cfg, x);
  fs::copy_file(hf / "modeling_wiola.py", fs::path(out) / "modeling_wiola.py",
                fs::copy_options::overwrite_existing);
  std::printf("%s -> %s: model.safetensors (%zu tensors, %s), config.json, modeling_wiola.py%s\n",
              dir.c_str(), out.c_str(), tensors.size(), dtype_text.c_str(),
              tok ? ", tokenizer.json, tokenizer_config.json" : "");
  if (!tok) std::printf("  no tokenizer files: %s (give --tokenizer FILE)\n", why.c_str());
  return 0;
}

int cmd_import(const std::string& dir, const std::string& out, std::string tokenizer_out) {
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
  // The tokenizer comes back as a .bpe file beside the weights.
  const fs::path tok_json = fs::path(dir) / "tokenizer.json";
  std::optional<BpeTokenizer> tok;
  if (fs::is_regular_file(tok_json)) {
    tok = bpe_from_hf_tokenizer_json(read_text_file(tok_json.string()), tok_json.string());
    if (tokenizer_out.empty()) tokenizer_out = fs::path(out).replace_extension(".bpe").string();
  } else {
    require(tokenizer_out.empty(), "--tokenizer-out: ", dir, " has no tokenizer.json");
  }
  write_weights_file(out, cfg, arrays, DType::F32);
  if (tok) tok->save(tokenizer_out);
  std::printf("%s -> %s: %zu tensors%s\n", dir.c_str(), out.c_str(), arrays.size(),
              tok ? (", tokenizer " + tokenizer_out).c_str() : "");
  return 0;
}

// name/kind -> values, from any checkpoint a user names (resolve_checkpoint).
std::map<std::string, std::vector<double>> load_any(const std::string& path, bool* is_ckpt) {
  std::map<std::string, std::vector<double>> out;
  const NamedCheckpoint named = resolve_checkpoint(path);
  *is_ckpt = named.kind == NamedCheckpoint::Kind::Checkpoint;
  switch (named.kind) {
    case NamedCheckpoint::Kind::Checkpoint: {
      const Source s = open_checkpoint(named.path);
      CheckpointReader r(s.dir, s.manifest);
      for (const ParamSpec& p : all_tensors(s.options.model.config)) {
        out[p.name + " param"] = read_tensor(r, p, StateKind::Param);
        if (s.manifest.has_optimizer_state) {
          out[p.name + " exp_avg"] = read_tensor(r, p, StateKind::ExpAvg);
          out[p.name + " exp_avg_sq"] = read_tensor(r, p, StateKind::ExpAvgSq);
        }
      }
      break;
    }
    case NamedCheckpoint::Kind::Safetensors:
      for (SafeTensor& t : read_safetensors(named.path)) out[t.name + " param"] = std::move(t.data);
      break;
    case NamedCheckpoint::Kind::WeightsFile:
      for (NamedArray& a : read_weights_file(path).arrays) out[a.name + " param"] = std::move(a.data);
      break;
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

struct Command {
  const char* name;
  const char* args;  // positional arguments, as the usage line shows them
  std::size_t n_args;
  const char* what;
  std::vector<const char*> options;  // of the option table in main
  const char* out;                   // what --out names, or nullptr: no output
};

// `text` wrapped at 78 columns, each line indented by `indent` spaces.
std::string wrapped(const std::string& text, std::size_t indent) {
  std::string out, line;
  std::istringstream words(text);
  std::string w;
  while (words >> w) {
    if (!line.empty() && indent + line.size() + 1 + w.size() > 78) {
      out += std::string(indent, ' ') + line + "\n";
      line.clear();
    }
    line += (line.empty() ? "" : " ") + w;
  }
  if (!line.empty()) out += std::string(indent, ' ') + line + "\n";
  return out;
}

const std::vector<Command>& commands() {
  static const std::vector<Command> table = {
      {"verify", "CKPT", 1,
       "checks every file's size and CRC-32 and that every tensor is complete", {}, nullptr},
      {"convert", "CKPT", 1,
       "writes the checkpoint as a run at another layout would have: SAVE_DIR/step-N and "
       "SAVE_DIR/latest, one file per writing rank",
       {"out", "pp", "dp", "zero", "stage-layers"}, "SAVE_DIR"},
      {"consolidate", "CKPT", 1, "the same for one process: a single data file", {"out"},
       "SAVE_DIR"},
      {"export-safetensors", "CKPT", 1,
       "Hugging Face files in DIR: model.safetensors (canonical names), config.json, "
       "modeling_wiola.py (plain PyTorch; transformers' AutoModelForCausalLM with "
       "trust_remote_code) and, from the run's BPE tokenizer, tokenizer.json and "
       "tokenizer_config.json",
       {"out", "dtype", "tokenizer"}, "DIR"},
      {"import-safetensors", "DIR", 1,
       "back to a weights file (wiola-train --init-weights, wiola-dump) and, when DIR has "
       "tokenizer.json, a .bpe tokenizer beside it",
       {"out", "tokenizer-out"}, "W.h5"},
      {"compare", "A B", 2,
       "largest difference between two checkpoints, exports or weights files (parameters only "
       "unless both hold optimizer state); exit 0 when identical", {},
       nullptr},
  };
  return table;
}

void print_usage(std::ostream& os) {
  os << "usage: wiola-reshard COMMAND ARGS [options]\n\nOffline work on checkpoints; the input "
        "is opened read-only, verified first and never modified.\n\ncommands:\n";
  for (const Command& c : commands())
    os << "  " << c.name << " " << c.args << (c.out ? std::string(" --out ") + c.out : "")
       << "\n" << wrapped(c.what, 6);
  os << "\nCKPT is a step folder (SAVE_DIR/step-N) or a save folder (its latest complete step).\n"
        "Run 'wiola-reshard COMMAND --help' for a command's options; --version prints\n"
        "the version. docs/checkpoints.md describes the files.\n";
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const std::string cmd = argc > 1 ? argv[1] : "";
    if (cmd.empty() || cmd == "--help" || cmd == "-h" || cmd == "help") {
      print_usage(cmd.empty() ? std::cerr : std::cout);
      return cmd.empty() ? 2 : 0;
    }
    if (cmd == "--version") {
      print_version(std::cout, "wiola-reshard");
      return 0;
    }
    const Command* command = nullptr;
    for (const Command& c : commands())
      if (cmd == c.name) command = &c;
    if (!command) {
      std::cerr << "wiola-reshard: unknown command '" << cmd << "'\n\n";
      print_usage(std::cerr);
      return 2;
    }

    std::string out, stage_layers, dtype = "fp32", tokenizer, tokenizer_out;
    int pp = 1, dp = 1, zero = 0;
    std::vector<std::string> args;
    po::options_description every;
    every.add_options()
        ("out", po::value(&out), command->name == std::string("import-safetensors")
                                     ? "the weights file to write (HDF5)"
                                     : "the output directory")
        ("pp", po::value(&pp)->default_value(1), "pipeline stages of the target layout")
        ("dp", po::value(&dp)->default_value(1), "data-parallel replicas of the target layout")
        ("zero", po::value(&zero)->default_value(0), "ZeRO stage of the target layout: 0 | 1 | 2")
        ("stage-layers", po::value(&stage_layers), "explicit layers per stage, e.g. 7,7,7,7 (default: the cost model's split)")
        ("dtype", po::value(&dtype)->default_value("fp32"), "weights in model.safetensors: fp32 | bf16")
        ("tokenizer", po::value(&tokenizer), "a .bpe tokenizer, or a token file that embeds one (default: the one embedded in the run's first training file)")
        ("tokenizer-out", po::value(&tokenizer_out), "where the tokenizer from tokenizer.json goes (default: OUT with .bpe for .h5)");
    po::options_description d(std::string("wiola-reshard ") + command->name + " options");
    d.add_options()("help,h", "print this help");
    for (const char* name : command->options)
      for (const auto& opt : every.options())
        if (opt->long_name() == name) d.add(opt);
    po::options_description all = d;
    all.add_options()("args", po::value(&args)->composing(), "positional arguments");
    po::positional_options_description pos;
    pos.add("args", -1);
    po::variables_map vm;
    try {
      po::store(po::command_line_parser(argc - 1, argv + 1).options(all).positional(pos).run(), vm);
      if (vm.count("help")) {
        std::cout << "usage: wiola-reshard " << command->name << " " << command->args
                  << (command->out ? std::string(" --out ") + command->out : "")
                  << (command->options.size() > 1 ? " [options]" : "") << "\n\n"
                  << wrapped(command->what, 0) << "\n" << d << "\n";
        return 0;
      }
      po::notify(vm);
    } catch (const po::error& e) {
      fail(cmd, ": ", wiola::error_text(e));
    }
    const std::string out_usage = command->out ? std::string(" --out ") + command->out : "";
    require(args.size() == command->n_args, "usage: wiola-reshard ", cmd, " ", command->args,
            out_usage, " (wiola-reshard ", cmd, " --help lists the options)");
    require(!command->out || !out.empty(), cmd, ": --out ", command->out, " is required");
    if (cmd == "verify") return cmd_verify(args[0]);
    if (cmd == "convert") return cmd_convert(args[0], out, pp, dp, zero, stage_layers);
    if (cmd == "consolidate") return cmd_convert(args[0], out, 1, 1, 0, "");
    if (cmd == "export-safetensors") return cmd_export(args[0], out, dtype, tokenizer);
    if (cmd == "import-safetensors") return cmd_import(args[0], out, tokenizer_out);
    return cmd_compare(args[0], args[1]);
  } catch (const std::exception& e) {
    std::cerr << "wiola-reshard: " << wiola::printable_lines(wiola::error_text(e)) << "\n";
    return 2;
  }
}
