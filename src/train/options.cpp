#include "train/options.hpp"

#include <boost/program_options.hpp>
#include <cmath>
#include <iostream>
#include <sstream>

#include "core/error.hpp"
#include "core/ini.hpp"
#include "core/model_fields.hpp"
#include "core/model_options.hpp"
#include "core/option_help.hpp"
#include "core/text.hpp"
#include "core/version.hpp"
#include "io/data_sources.hpp"
#include "core/option_errors.hpp"

#ifndef WIOLA_EMBEDDED_TRAIN
#define WIOLA_EMBEDDED_TRAIN "data/fortunes-train.h5"
#endif
#ifndef WIOLA_EMBEDDED_VAL
#define WIOLA_EMBEDDED_VAL "data/fortunes-val.h5"
#endif

namespace po = boost::program_options;

namespace wiola {

std::string default_train_file() { return WIOLA_EMBEDDED_TRAIN; }
std::string default_val_file() { return WIOLA_EMBEDDED_VAL; }

std::string_view device_choice_name(DeviceChoice d) {
  switch (d) {
    case DeviceChoice::Auto: return "auto";
    case DeviceChoice::CPU: return "cpu";
    case DeviceChoice::CUDA: return "cuda";
  }
  return "auto";
}

DeviceChoice parse_device_choice(const std::string& text) {
  if (text == "auto") return DeviceChoice::Auto;
  if (text == "cpu") return DeviceChoice::CPU;
  if (text == "cuda") return DeviceChoice::CUDA;
  fail("--device must be auto, cpu or cuda, got '", text, "'");
}

TokenBudget TokenBudget::parse(const std::string& text) {
  TokenBudget b;
  if (text.empty()) return b;
  if (text == "chinchilla") {
    b.kind = Kind::Chinchilla;
    return b;
  }
  std::size_t used = 0;
  long long n = 0;
  try {
    n = std::stoll(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  require(used == text.size() && n > 0, "--train-tokens: '", text,
          "' is neither a positive number nor 'chinchilla'");
  b.kind = Kind::Tokens;
  b.tokens = n;
  return b;
}

std::string TokenBudget::text() const {
  switch (kind) {
    case Kind::Unset: return "";
    case Kind::Tokens: return std::to_string(tokens);
    case Kind::Chinchilla: return "chinchilla";
  }
  return "";
}

ResumeFrom ResumeFrom::parse(const std::string& text) {
  ResumeFrom r;
  if (text == "none") return r;
  require(!text.empty(), "--resume: expected none, auto or a checkpoint directory");
  if (text == "auto") {
    r.kind = Kind::Auto;
  } else {
    r.kind = Kind::Directory;
    r.directory = text;
  }
  return r;
}

std::string ResumeFrom::text() const {
  switch (kind) {
    case Kind::None: return "none";
    case Kind::Auto: return "auto";
    case Kind::Directory: return directory;
  }
  return "none";
}

std::int64_t TrainOptions::resolved_train_tokens() const {
  const std::int64_t per_step = std::int64_t(parallel.global_batch) * model.config.T;
  if (optimizer.steps > 0) return optimizer.steps * per_step;
  switch (optimizer.train_tokens.kind) {
    case TokenBudget::Kind::Unset:
      fail("set --train-tokens (a number or 'chinchilla') or --steps");
    case TokenBudget::Kind::Chinchilla:
      return 20 * param_count(model.config);
    case TokenBudget::Kind::Tokens: break;
  }
  return optimizer.train_tokens.tokens;
}

std::int64_t TrainOptions::total_steps() const {
  if (optimizer.steps > 0) return optimizer.steps;
  const std::int64_t per_step = std::int64_t(parallel.global_batch) * model.config.T;
  return (resolved_train_tokens() + per_step - 1) / per_step;
}

namespace {

// Range checks that lead with the option the user wrote: "--lr nan is not a
// finite number", "--threads -1 must be in [0, 4096] (0: the library default)".
template <class T>
std::string shown(T v) {
  std::ostringstream os;
  os.precision(10);
  os << v;
  return os.str();
}

void in_range(const char* flag, double v, double lo, double hi, const char* note = "") {
  require(std::isfinite(v), "--", flag, " ", shown(v), " is not a finite number");
  require(v >= lo && v <= hi, "--", flag, " ", shown(v), " must be in [", shown(lo), ", ",
          shown(hi), "]", note);
}

// [lo, hi): an upper bound the value may not reach.
void below(const char* flag, double v, double lo, double hi, const char* note = "") {
  require(std::isfinite(v), "--", flag, " ", shown(v), " is not a finite number");
  require(v >= lo && v < hi, "--", flag, " ", shown(v), " must be in [", shown(lo), ", ",
          shown(hi), ")", note);
}

// (lo, hi]: a lower bound the value may not reach.
void above(const char* flag, double v, double lo, double hi, const char* note = "") {
  require(std::isfinite(v), "--", flag, " ", shown(v), " is not a finite number");
  require(v > lo && v <= hi, "--", flag, " ", shown(v), " must be in (", shown(lo), ", ",
          shown(hi), "]", note);
}

template <class Int>
void int_range(const char* flag, Int v, Int lo, Int hi, const char* note = "") {
  require(v >= lo && v <= hi, "--", flag, " ", v, " must be in [", lo, ", ", hi, "]", note);
}

template <class Int>
void at_least(const char* flag, Int v, Int lo, const char* note = "") {
  require(v >= lo, "--", flag, " ", v, " must be >= ", lo, note);
}

constexpr double kForever = 1e300;

}  // namespace

void ModelOptions::check_values() const {
  // The sizes, then the real-valued hyper-parameters by their options.
  const ModelConfig& m = config;
  at_least("d", m.d, 1);
  at_least("layers", m.L, 1);
  at_least("heads", m.H, 1);
  at_least("kv-heads", m.Hkv, 1);
  at_least("dsff-a", m.dA, 1);
  at_least("dsff-b", m.dB, 1);
  int_range("vocab", m.V, 1, 1 << 30);
  at_least("seq-len", m.T, 1);
  int_range("lambda", m.Lambda, 1, 8);
  above("theta0", m.theta0, 1.0, kForever);
  above("k-s", m.k_s, 0.0, kForever);
  require(std::isfinite(m.a_s), "--a-s ", shown(m.a_s), " is not a finite number");
  require(std::abs(m.a_s) < 1, "--a-s ", shown(m.a_s),
          " must be in (-1, 1) (the radius 1 + a_s·sin(·) must stay positive)");
  in_range("f-s", m.f_s, -kForever, kForever);
  in_range("tau", m.tau, -1.0, 1.0, " (a cosine-similarity threshold)");
  above("norm-eps", m.eps, 0.0, 1.0);
  above("init-std", m.init_std, 0.0, 1.0);
}

void DeviceOptions::check_values() const {
  int_range("threads", threads, 0, 4096, " (0: the library default)");
}

void DataOptions::check_values() const {
  below("val-fraction", val_fraction, 0.0, 1.0);
  int_range("prefetch", prefetch, 0, 1024);
}

void ParallelOptions::check_values() const {
  at_least("micro-batch", micro_batch, 1);
  at_least("global-batch", global_batch, 1);
  at_least("pp", pp, 1);
  at_least("dp", dp, 1);
  int_range("zero", zero, 0, 2);
  in_range("comm-timeout", comm_timeout, 0.0, 7 * 24 * 3600.0, " seconds (0: wait forever)");
}

void OptimizerOptions::check_values() const {
  at_least<std::int64_t>("steps", steps, 0, " (0: the budget comes from --train-tokens)");
  in_range("lr", lr, 0.0, 1.0);
  in_range("min-lr", min_lr, 0.0, lr, " (at most --lr)");
  in_range("warmup-frac", warmup_frac, 0.0, 1.0);
  in_range("weight-decay", adam.weight_decay, 0.0, 1.0);
  below("beta1", adam.beta1, 0.0, 1.0);
  below("beta2", adam.beta2, 0.0, 1.0);
  above("adam-eps", adam.eps, 0.0, 1.0);
  in_range("clip", clip, 0.0, kForever, " (0 disables clipping)");
  int_range("max-nonfinite-steps", max_nonfinite_steps, 1, 1000000);
}

void CheckpointOptions::check_values() const {
  at_least<std::int64_t>("save-interval", save_interval, 0, " (0: only at the end and on signals)");
  in_range("save-minutes", save_minutes, 0.0, kForever, " (0: off)");
  at_least("keep", keep, 0, " (0: keep all)");
  at_least<std::int64_t>("exit-after-step", exit_after_step, 0, " (0: off)");
}

void LoggingOptions::check_values() const {
  at_least("log-interval", log_interval, 1);
  at_least("eval-interval", eval_interval, 0, " (0: only at the end)");
  at_least("eval-batches", eval_batches, 1);
  at_least("sample-every", sample_every, 0, " (0: never)");
}

void TrainOptions::check_values() const {
  model.check_values();
  data.check_values();
  parallel.check_values();
  optimizer.check_values();
  device.check_values();
  logging.check_values();
  checkpoint.check_values();
}

void ParallelOptions::validate(int layers) const {
  require(global_batch % (dp * micro_batch) == 0, "--global-batch ", global_batch,
          " must be a multiple of --dp × --micro-batch = ", dp, " × ", micro_batch, " = ",
          dp * micro_batch);
  pipeline::check_schedule_shape(schedule, pp, micro_batches_per_rank(), virtual_stages);
  // (One chunk per stage: the partition says "--pp P is larger than the L layers".)
  require(virtual_stages == 1 || pp * virtual_stages <= layers, "--pp ", pp, " × --virtual-stages ",
          virtual_stages, " = ", pp * virtual_stages,
          " chunks need at least that many layers; the model has ", layers);
}

void DeviceOptions::validate() const {
  if (dtype_explicit && choice == DeviceChoice::CPU)
    require(dtype == DType::F32 || dtype == DType::F64, "--dtype ", dtype_name(dtype),
            ": the CPU computes in fp32 or fp64");
  if (dtype_explicit && choice == DeviceChoice::CUDA)
    require(dtype == DType::BF16 || dtype == DType::F32, "--dtype ", dtype_name(dtype),
            ": CUDA computes in bf16 or fp32");
  require(dtype != DType::I32, "--dtype must be a floating type");
}

void DataOptions::validate() const {
  require(!train_files.empty(), "--train-data: no training files");
  require(val_fraction == 0 || val_files.empty(),
          "--val-fraction and --val-data are alternatives: give one of them");
}

void CheckpointOptions::validate() const {
  require(resume.kind != ResumeFrom::Kind::Auto || !save_dir.empty(),
          "--resume auto needs --save DIR to look in");
}

void TrainOptions::validate() const {
  check_values();
  model.config.validate();
  parallel.validate(model.config.L);
  device.validate();
  data.validate();
  checkpoint.validate();
  total_steps();  // a budget is set
}

std::vector<std::string> file_list(const std::vector<std::string>& items) {
  std::vector<std::string> out;
  for (const auto& item : items)
    for (std::string& part : split_list(item))
      if (!part.empty()) out.push_back(std::move(part));
  return out;
}

std::string to_ini(const TrainOptions& o) {
  std::ostringstream os;
  os.imbue(shortest_real_locale());  // 3e-4, not 0.00029999999999999997; reads back exactly
  os << "preset = " << o.model.config.preset << "\n";
  write_model_ini(os, o.model.config);
  os << "device = " << device_choice_name(o.device.choice) << "\ndtype = "
     << (o.device.dtype_explicit ? std::string(dtype_name(o.device.dtype)) : std::string("auto"))
     << "\nseed = " << o.model.seed << "\n";
  for (const auto& f : o.data.train_files) os << "train-data = " << f << "\n";
  for (const auto& f : o.data.val_files) os << "val-data = " << f << "\n";
  if (!o.data.data_weights.empty()) {
    os << "data-weights = ";
    for (std::size_t i = 0; i < o.data.data_weights.size(); ++i)
      os << (i ? "," : "") << o.data.data_weights[i];
    os << "\n";
  }
  os << "val-fraction = " << o.data.val_fraction << "\nsplit-seed = " << o.data.split_seed
     << "\nprefetch = " << o.data.prefetch << "\n";
  os << "micro-batch = " << o.parallel.micro_batch << "\nglobal-batch = " << o.parallel.global_batch
     << "\n";
  if (o.optimizer.train_tokens.kind != TokenBudget::Kind::Unset)
    os << "train-tokens = " << o.optimizer.train_tokens.text() << "\n";
  os << "steps = " << o.optimizer.steps << "\nlr = " << o.optimizer.lr
     << "\nmin-lr = " << o.optimizer.min_lr << "\nwarmup-frac = " << o.optimizer.warmup_frac
     << "\nweight-decay = " << o.optimizer.adam.weight_decay
     << "\nbeta1 = " << o.optimizer.adam.beta1 << "\nbeta2 = " << o.optimizer.adam.beta2
     << "\nadam-eps = " << o.optimizer.adam.eps << "\nclip = " << o.optimizer.clip
     << "\nthreads = " << o.device.threads << "\nlog-interval = " << o.logging.log_interval
     << "\neval-interval = " << o.logging.eval_interval
     << "\neval-batches = " << o.logging.eval_batches
     << "\nmax-nonfinite-steps = " << o.optimizer.max_nonfinite_steps << "\n";
  if (o.logging.sample_every > 0) os << "sample-every = " << o.logging.sample_every << "\n";
  if (!o.logging.sample_prompt.empty()) os << "sample-prompt = " << o.logging.sample_prompt << "\n";
  if (!o.checkpoint.save_dir.empty()) os << "save = " << o.checkpoint.save_dir << "\n";
  os << "save-interval = " << o.checkpoint.save_interval
     << "\nsave-minutes = " << o.checkpoint.save_minutes << "\nkeep = " << o.checkpoint.keep
     << "\npp = " << o.parallel.pp << "\ndp = " << o.parallel.dp
     << "\nschedule = " << pipeline::schedule_kind_name(o.parallel.schedule)
     << "\nvirtual-stages = " << o.parallel.virtual_stages
     << "\nrecompute = " << (o.parallel.recompute ? "full" : "none")
     << "\nzero = " << o.parallel.zero << "\n";
  if (!o.parallel.stage_layers.empty()) os << "stage-layers = " << o.parallel.stage_layers << "\n";
  os << "comm-timeout = " << o.parallel.comm_timeout << "\n";
  return os.str();
}

namespace {

std::optional<TrainOptions> parse_impl(int argc, const char* const* argv, std::ostream& out,
                                       const std::string* ini_text) {
  TrainOptions o;
  std::string preset_name, dtype_text = "auto", device_text = "auto", config_file;
  std::string cuda_graphs = "on";
  std::string train_tokens, resume = "none", schedule = "1f1b", recompute = "none";
  std::vector<std::string> train_files, val_files;
  std::string data_weights_text;

  po::options_description general("General");
  general.add_options()
      ("help,h", "print this help and exit")
      ("version", "print the version and exit")
      ("config", po::value(&config_file), "INI-style file of `option = value` lines; the command line wins")
      ("print-params", po::bool_switch(&o.print_params), "print the model's exact parameter count per component and exit")
      ("dry-run", po::bool_switch(&o.dry_run), "check the configuration, data, layout, memory estimate and output paths, print the plan and exit without training");

  po::options_description model("Model");
  model.add_options()
      ("preset", po::value(&preset_name)->default_value("wiola-mini"), "wiola-120m | wiola-360m | wiola-700m | wiola-1.5b | wiola-tiny | wiola-mini | wiola-small (arch wiola); wiola-13m | wiola13m-tiny | wiola13m-small (arch wiola13m); --arch switches a preset's family");
  add_model_options(model);
  model.add_options()
      ("device", po::value(&device_text)->default_value("auto"), "where to train: auto (cuda when built and a device is visible, else cpu) | cpu | cuda")
      ("allow-shared-device", po::bool_switch(&o.device.allow_shared), "let ranks of one host share a GPU when there are more ranks than visible GPUs (refused otherwise)")
      ("dtype", po::value(&dtype_text)->default_value("auto"), "compute type: auto (bf16 on cuda, fp32 on cpu) | bf16 | fp32 (both devices) | fp64 (cpu)")
      ("cuda-graphs", po::value(&cuda_graphs)->default_value("on"), "on cuda: replay each micro-batch's forward and backward as CUDA graphs once a step has run them (each chunk's first forward and last backward of a step stay eager): on | off")
      ("seed", po::value(&o.model.seed)->default_value(1234), "seed of the initialisation and the sample order");

  po::options_description data("Data");
  data.add_options()
      ("train-data", po::value(&train_files)->composing(), "training token files (repeat or comma-separate); default: the embedded dataset")
      ("val-data", po::value(&val_files)->composing(), "validation token files; default: the embedded validation split")
      ("data-weights", po::value(&data_weights_text), "mixing weights of the --train-data files, e.g. 0.7,0.3 (default: in proportion to their windows)")
      ("val-fraction", po::value(&o.data.val_fraction)->default_value(0.0), "hold out this fraction of the training documents for validation (instead of --val-data)")
      ("split-seed", po::value(&o.data.split_seed)->default_value(0), "seed choosing the held-out documents")
      ("prefetch", po::value(&o.data.prefetch)->default_value(2), "micro-batches read ahead in the background (0: none)");

  po::options_description training("Training");
  training.add_options()
      ("micro-batch", po::value(&o.parallel.micro_batch)->default_value(4), "sequences per micro-batch")
      ("global-batch", po::value(&o.parallel.global_batch)->default_value(16), "sequences per optimizer step (all data-parallel ranks)")
      ("train-tokens", po::value(&train_tokens), "token budget: a number, or 'chinchilla' (20 × exact parameter count)")
      ("steps", po::value(&o.optimizer.steps)->default_value(0), "optimizer steps (overrides --train-tokens)")
      ("lr", po::value(&o.optimizer.lr)->default_value(3e-4), "peak learning rate")
      ("min-lr", po::value(&o.optimizer.min_lr)->default_value(0.0), "learning rate at the end of the cosine decay")
      ("warmup-frac", po::value(&o.optimizer.warmup_frac)->default_value(0.05), "fraction of steps of linear warm-up")
      ("weight-decay", po::value(&o.optimizer.adam.weight_decay)->default_value(0.1), "AdamW decoupled weight decay (matrices and embedding only)")
      ("beta1", po::value(&o.optimizer.adam.beta1)->default_value(0.9), "AdamW beta1")
      ("beta2", po::value(&o.optimizer.adam.beta2)->default_value(0.95), "AdamW beta2")
      ("adam-eps", po::value(&o.optimizer.adam.eps)->default_value(1e-8), "AdamW epsilon")
      ("clip", po::value(&o.optimizer.clip)->default_value(1.0), "global gradient-norm clip (0: off)")
      ("threads", po::value(&o.device.threads)->default_value(0), "CPU threads per rank for OpenMP and BLAS (0: library default)");

  po::options_description logging("Logging, evaluation and export");
  logging.add_options()
      ("log-interval", po::value(&o.logging.log_interval)->default_value(10), "log every N steps")
      ("eval-interval", po::value(&o.logging.eval_interval)->default_value(100), "validation loss every M steps (0: never; always at the end)")
      ("eval-batches", po::value(&o.logging.eval_batches)->default_value(8), "micro-batches per validation")
      ("max-nonfinite-steps", po::value(&o.optimizer.max_nonfinite_steps)->default_value(5), "stop with an error after this many steps in a row whose loss or gradient norm is NaN/Inf (no checkpoint of such a step is written)")
      ("export-weights", po::value(&o.checkpoint.export_weights), "write the final weights as a self-describing HDF5 file (wiola-dump's format)")
      ("metrics", po::value(&o.logging.metrics_file), "append the run's records to this JSON Lines file (configuration, logged steps, validation, checkpoints; tools/wiola-plot draws it)")
      ("sample-every", po::value(&o.logging.sample_every)->default_value(0), "every N steps rank 0 prints a 32-token greedy continuation of --sample-prompt (0: never)")
      ("sample-prompt", po::value(&o.logging.sample_prompt), "the prompt of --sample-every (default: \"You will be\", a frequent start of the embedded fortunes)");

  po::options_description checkpoints("Checkpoints and preemption");
  checkpoints.add_options()
      ("save", po::value(&o.checkpoint.save_dir), "directory for checkpoints (written at the end, every --save-interval steps or --save-minutes, and on SIGUSR1/SIGTERM)")
      ("save-interval", po::value(&o.checkpoint.save_interval)->default_value(0), "steps between checkpoints (0: only at the end and on signals)")
      ("save-minutes", po::value(&o.checkpoint.save_minutes)->default_value(0.0), "minutes between checkpoints (0: off)")
      ("keep", po::value(&o.checkpoint.keep)->default_value(3), "newest checkpoints to keep (0: all)")
      ("resume", po::value(&resume)->default_value("none"), "none | auto (newest complete, verified checkpoint in --save) | a checkpoint: a step folder, or a save folder (its latest complete step)")
      ("init-weights", po::value(&o.checkpoint.init_weights), "start from the parameters of a weights file (fresh optimizer)")
      ("exit-after-step", po::value(&o.checkpoint.exit_after_step)->default_value(0), "checkpoint and stop after this step (0: off)");

  po::options_description parallel("Parallelism");
  parallel.add_options()
      ("pp", po::value(&o.parallel.pp)->default_value(1), "pipeline stages")
      ("dp", po::value(&o.parallel.dp)->default_value(1), "data-parallel replicas (world size = pp × dp)")
      ("schedule", po::value(&schedule)->default_value("1f1b"), "pipeline schedule: 1f1b | gpipe | interleaved | zb-h1 | zb-h2")
      ("virtual-stages", po::value(&o.parallel.virtual_stages)->default_value(1), "model chunks per pipeline stage (--schedule interleaved: 2 or more; chunk c of stage s is virtual stage c·pp + s)")
      ("stage-layers", po::value(&o.parallel.stage_layers), "explicit layers per stage (per virtual stage when interleaved), e.g. 7,7,7,7 (default: cost model)")
      ("recompute", po::value(&recompute)->default_value("none"), "activation recomputation: none | full (keep each layer's input only; its forward runs again in backward)")
      ("zero", po::value(&o.parallel.zero)->default_value(0), "ZeRO stage: 0 | 1 (optimizer state sharded) | 2 (and gradients)")
      ("comm-timeout", po::value(&o.parallel.comm_timeout)->default_value(300.0), "seconds a rank may wait on a peer before all ranks abort (0: forever)");

  po::options_description all;
  all.add(general).add(model).add(data).add(training).add(logging).add(checkpoints).add(parallel);
  tidy_real_defaults(all);

  po::variables_map vm;
  try {
    po::store(po::parse_command_line(argc, argv, all), vm);
    if (vm.count("help")) {
      out << "Usage: wiola-train [options]\n\nTrains a Wiola model. Every option can also be set in "
             "a --config file.\n"
          << all << "\n";
      return std::nullopt;
    }
    if (vm.count("version")) {
      print_version(out, "wiola-train");
      return std::nullopt;
    }
    if (ini_text) store_ini(*ini_text, "recorded configuration", all, vm);
    if (vm.count("config")) {
      const std::string path = vm["config"].as<std::string>();
      const std::optional<std::string> text = try_read_text_file(path);
      require(text.has_value(), "--config: cannot read '", path, "'");
      store_ini(*text, "--config " + path, all, vm);
    }
    po::notify(vm);
  } catch (const po::error& e) {
    fail(error_text(e));
  }

  o.model.config = preset(preset_name);
  apply_model_options(vm, o.model.config);
  o.model.vocab_explicit = vm.count("vocab") > 0;
  o.device.choice = parse_device_choice(device_text);
  o.device.dtype_explicit = dtype_text != "auto";
  if (o.device.dtype_explicit) o.device.dtype = parse_dtype(dtype_text);
  require(cuda_graphs == "on" || cuda_graphs == "off", "--cuda-graphs must be on or off, got '",
          cuda_graphs, "'");
  o.device.cuda_graphs = cuda_graphs == "on";
  require(recompute == "none" || recompute == "full", "--recompute must be none or full, got '",
          recompute, "'");
  o.parallel.recompute = recompute == "full";
  o.optimizer.train_tokens = TokenBudget::parse(train_tokens);
  o.checkpoint.resume = ResumeFrom::parse(resume);
  try {
    o.parallel.schedule = pipeline::parse_schedule_kind(schedule);
  } catch (const Error&) {
    fail("--schedule must be 1f1b, gpipe, interleaved, zb-h1 or zb-h2, got '", schedule, "'");
  }
  o.data.train_files = file_list(train_files);
  o.data.val_files = file_list(val_files);
  if (o.data.train_files.empty()) o.data.train_files = {default_train_file()};
  if (!data_weights_text.empty())
    o.data.data_weights = parse_weight_list(data_weights_text, "--data-weights");
  if (o.data.val_files.empty() && !vm.count("train-data") && o.data.val_fraction == 0)
    o.data.val_files = {default_val_file()};
  o.check_values();
  return o;
}

}  // namespace

std::optional<TrainOptions> parse_train_options(int argc, const char* const* argv,
                                                std::ostream& out) {
  return parse_impl(argc, argv, out, nullptr);
}

TrainOptions options_from_ini(const std::string& text) {
  const char* argv[] = {"wiola-train"};
  std::ostringstream quiet;
  return *parse_impl(1, argv, quiet, &text);
}

}  // namespace wiola
