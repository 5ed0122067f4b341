// wiola-eval: loss, perplexity and bits per byte of a trained model on token
// files or text files, on one process or as the ranks of an mpirun/srun job
// (world size = --pp × --dp), through the same forward-only pipeline
// evaluation as wiola-train's validation (src/train/evaluation.hpp). The
// numbers are the same for every layout.
//   wiola-eval MODEL --data FILES | --text FILES [--pp P --dp D] [--micro-batch B]
//              [--max-windows N] [--tokenizer FILE]
#include <boost/program_options.hpp>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <sstream>

#include "backend/cpu_threads.hpp"
#include "backend/select/device_backends.hpp"
#include "comm/agreement.hpp"
#include "comm/mpi_communicator.hpp"
#include "core/error.hpp"
#include "core/text.hpp"
#include "core/version.hpp"
#include "eval_data.hpp"
#include "partition/partition.hpp"
#include "train/checkpoint.hpp"
#include "train/device_choice.hpp"
#include "train/evaluation.hpp"
#include "train/model_source.hpp"
#include "train/options.hpp"
#include "core/option_errors.hpp"

namespace po = boost::program_options;
using namespace wiola;

namespace {

struct Options {
  std::string model, tokenizer, stage_layers, device = "auto", dtype = "auto";
  std::vector<std::string> data, text;
  int pp = 1, dp = 1, micro_batch = 4, threads = 0;
  std::int64_t max_windows = 0;
  double comm_timeout = 300;
};

std::optional<Options> parse(int argc, char** argv, std::ostream& out) {
  Options o;
  po::options_description d("wiola-eval options");
  d.add_options()
      ("help,h", "print this help and exit")
      ("version", "print the version and exit")
      ("model", po::value(&o.model), "checkpoint directory, save folder (its latest checkpoint), weights file (W.h5) or safetensors export (also the first positional argument)")
      ("data", po::value(&o.data)->composing(), "token files (HDF5; paths, globs or manifests; repeat or comma-separate)")
      ("text", po::value(&o.text)->composing(), "text files (each one document; .jsonl: one document per line, field 'text'), encoded with the model's tokenizer")
      ("tokenizer", po::value(&o.tokenizer), "the tokenizer for --text and bits per byte: a .bpe file, a token file (*.h5) or 'byte' (default: the run's, or the token files')")
      ("micro-batch", po::value(&o.micro_batch)->default_value(4), "windows per micro-batch (the same value gives the same numbers on every layout)")
      ("max-windows", po::value(&o.max_windows)->default_value(0), "evaluate the first N windows only (0: all)")
      ("pp", po::value(&o.pp)->default_value(1), "pipeline stages")
      ("dp", po::value(&o.dp)->default_value(1), "data-parallel replicas (world size = pp × dp)")
      ("stage-layers", po::value(&o.stage_layers), "explicit layers per stage, e.g. 2,2 (default: cost model)")
      ("device", po::value(&o.device)->default_value("auto"), "auto | cpu | cuda")
      ("dtype", po::value(&o.dtype)->default_value("auto"), "auto (bf16 on cuda, fp32 on cpu) | bf16 | fp32 | fp64 (cpu)")
      ("threads", po::value(&o.threads)->default_value(0), "CPU threads per rank (0: the library default)")
      ("comm-timeout", po::value(&o.comm_timeout)->default_value(300.0), "seconds a rank may wait on a peer before all ranks abort (0: forever)");
  po::positional_options_description pos;
  pos.add("model", 1);
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(argc, argv).options(d).positional(pos).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    fail(wiola::error_text(e));
  }
  if (vm.count("help")) {
    out << "Usage: [mpirun -np P*D] wiola-eval MODEL (--data FILES | --text FILES) [options]\n\n"
           "Loss, perplexity and bits per byte of a trained Wiola model.\n"
        << d << "\n";
    return std::nullopt;
  }
  if (vm.count("version")) {
    print_version(out, "wiola-eval");
    return std::nullopt;
  }
  o.data = file_list(o.data);
  o.text = file_list(o.text);
  require(!o.model.empty(), "give the model: a checkpoint, a save folder, W.h5 or a safetensors "
          "export (wiola-eval --help)");
  require(o.data.empty() != o.text.empty(), "give the data: --data TOKEN_FILES or --text "
          "TEXT_FILES (one of them)");
  require(o.micro_batch >= 1, "--micro-batch must be positive, got ", o.micro_batch);
  require(o.max_windows >= 0, "--max-windows must be >= 0, got ", o.max_windows);
  require(o.comm_timeout >= 0, "--comm-timeout must be >= 0 seconds");
  return o;
}

// 1234567 -> "1,234,567" (built by appending: GCC 12 warns falsely on insert).
std::string with_commas(double v) {
  const std::string digits = std::to_string(std::llround(v));
  std::string s;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0 && digits[i - 1] != '-') s += ',';
    s += digits[i];
  }
  return s;
}

// Everything one rank needs, checked on every rank before any work.
struct Setup {
  comm::ProcessGrid grid;
  ModelSource source;
  std::unique_ptr<Tokenizer> tokenizer;  // null when unknown (token files of an imported vocabulary)
  std::unique_ptr<EvalWindows> windows;
  std::vector<StageSpec> stages;
  ChosenBackend backend;
  std::string data_text;
};

Setup prepare(const Options& o, comm::Communicator& world) {
  Setup s;
  s.grid = comm::ProcessGrid::make(world.size(), o.pp, o.dp, world.rank());
  set_cpu_threads(o.threads);
  s.source = open_model_source(o.model, world.rank(), world.size());
  const ModelConfig& cfg = s.source.config;
  if (!o.text.empty()) {
    s.tokenizer = model_tokenizer(s.source, o.tokenizer);
    s.windows = text_windows(o.text, cfg.T, *s.tokenizer);
    s.data_text = "text " + o.text.front() + (o.text.size() > 1 ? " …" : "");
  } else {
    std::string hash;
    s.windows = token_file_windows(o.data, cfg.T, &hash);
    s.data_text = "token files " + o.data.front() + (o.data.size() > 1 ? " …" : "");
    try {
      s.tokenizer = o.tokenizer.empty() ? token_file_tokenizer(o.data.front())
                                        : model_tokenizer(s.source, o.tokenizer);
    } catch (const Error&) {
      if (!o.tokenizer.empty()) throw;  // asked for: its problem is the user's to see
    }
    if (s.tokenizer)
      require(s.tokenizer->hash() == hash, "--tokenizer ", o.tokenizer, " is not the tokenizer of ",
              o.data.front());
    // The data must be tokenised as the run's training data was.
    if (s.source.run && !s.source.run->data.train_files.empty()) {
      std::string run_hash;
      try {
        run_hash = token_file_tokenizer(s.source.run->data.train_files.front())->hash();
      } catch (const Error&) {
        // The run's data is not here: nothing to compare with.
      }
      require(run_hash.empty() || run_hash == hash, o.data.front(), " is tokenised with ",
              "another tokenizer (hash ", hash, ") than the model's training data ",
              s.source.run->data.train_files.front(), " (hash ", run_hash, ")");
    }
  }
  require(s.windows->vocab_size() <= cfg.V, "the data's vocabulary (", s.windows->vocab_size(),
          " ids) is larger than the model's (", cfg.V, ")");
  s.stages = o.stage_layers.empty() ? partition_layers(cfg, o.pp)
                                    : parse_stage_layers(o.stage_layers, cfg, o.pp);
  s.backend = choose_backend(parse_device_choice(o.device), o.dtype == "auto" ? DType::F32
                                                                        : parse_dtype(o.dtype),
                             o.dtype != "auto");
  return s;
}

int run(const Options& o, comm::Communicator& world) {
  const bool rank0 = world.rank() == 0;
  Setup s;
  comm::agree(world, [&] { s = prepare(o, world); }, "another rank refused the input (see its message)");
  const ModelConfig& cfg = s.source.config;
  Backend& be = *s.backend.backend;
  const comm::GridGroups groups = comm::make_groups(world, s.grid);
  StageModel model(be, cfg, s.stages[std::size_t(s.grid.stage())], s.backend.dtype);
  comm::agree(world, [&] { load_parameters(s.source, model); });
  StageExecutor executor(model, groups.pipeline.get(), s.grid.stage(), s.grid.pp);

  const std::int64_t windows = o.max_windows > 0 ? std::min(o.max_windows, s.windows->count())
                                                 : s.windows->count();
  EvalSpec spec;
  spec.micro_batch = o.micro_batch;
  spec.seq = cfg.T;
  spec.microbatches = (windows + o.micro_batch - 1) / o.micro_batch;
  spec.batch = [&](std::int64_t g) { return s.windows->microbatch(g, o.micro_batch, windows); };
  if (rank0) {
    std::ostringstream os;
    os << "wiola-eval: " << s.source.description << "\n  model " << cfg.describe() << "\n  "
       << s.data_text << ": " << windows << " windows of " << cfg.T << " tokens, "
       << spec.microbatches << " micro-batches of " << o.micro_batch << " on pp " << o.pp
       << " x dp " << o.dp << ", " << s.backend.description << "\n";
    std::cout << os.str() << std::flush;
  }
  const EvalTotals t = evaluate(executor, be, s.grid, world, spec);
  if (!rank0) return 0;

  // Bits per byte: the nats of every counted target over the bytes of text
  // those targets decode to.
  std::string bpb = "bits/byte n/a (the tokenizer cannot decode these ids)";
  const std::vector<std::int64_t> bytes_of = s.tokenizer ? text_bytes_per_id(*s.tokenizer)
                                                         : std::vector<std::int64_t>{};
  if (!bytes_of.empty()) {
    std::int64_t bytes = 0;
    std::vector<std::int32_t> w(std::size_t(cfg.T) + 1);
    for (std::int64_t k = 0; k < windows; ++k) {
      s.windows->read(k, w.data());
      for (std::size_t i = 1; i < w.size(); ++i) bytes += bytes_of[std::size_t(w[i])];
    }
    char buf[96];
    std::snprintf(buf, sizeof buf, "bits/byte %.6f (%s bytes)",
                  t.loss_sum / (double(bytes) * std::log(2.0)), with_commas(double(bytes)).c_str());
    bpb = buf;
  }
  char buf[160];
  std::snprintf(buf, sizeof buf, "loss %.6f nats/token | perplexity %.4f | %s | %s tokens\n",
                t.mean_loss(), t.perplexity(), bpb.c_str(), with_commas(t.tokens).c_str());
  std::cout << buf << std::flush;
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  comm::MpiRuntime mpi(&argc, &argv);
  register_device_backends();
  auto& world = mpi.world();
  const bool rank0 = world.rank() == 0;
  std::ostringstream quiet;
  try {
    std::optional<Options> o;
    try {
      o = parse(argc, argv, rank0 ? std::cout : quiet);
    } catch (const Error& e) {
      throw CollectiveError(e.what());
    }
    if (!o) return 0;
    world.set_timeout(o->comm_timeout);
    return run(*o, world);
  } catch (const CollectiveError& e) {
    if (rank0) std::cerr << "wiola-eval: " << printable_lines(e.what()) << "\n";
    return 2;
  } catch (const std::exception& e) {
    world.abort(std::string("wiola-eval: ") + printable_lines(wiola::error_text(e)), 3);
  }
}
