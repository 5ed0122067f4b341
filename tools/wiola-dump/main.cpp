// wiola-dump: one forward and backward of a trained model, for checking ports
// of the model against this implementation. The model is anything a checkpoint
// is named by (io/checkpoint_store.hpp: a step or save folder, a safetensors
// export, a weights file).
//   wiola-dump --model CKPT|W.h5 --tokens TOK.h5 --out OUT.h5 [--dtype fp32|fp64] [--train]
// OUT.h5 receives `loss` (scalar, mean cross-entropy), `logits` [B, T, V] and
// `grad/<canonical name>` (the gradient of the mean loss) for every parameter.
#include <boost/program_options.hpp>
#include <cstdio>
#include <iostream>

#include "backend/backend.hpp"
#include "core/error.hpp"
#include "core/text.hpp"
#include "core/version.hpp"
#include "io/h5.hpp"
#include "io/weights_file.hpp"
#include "train/model_source.hpp"
#include "core/param_names.hpp"
#include "model/stage_model.hpp"
#include "core/option_errors.hpp"

namespace po = boost::program_options;
using namespace wiola;

namespace {

int run(int argc, char** argv) {
  std::string model_path, tokens, out, dtype_name = "fp32";
  bool train = false;
  po::options_description opts("wiola-dump options");
  opts.add_options()("help,h", "print this help")
      ("version", "print the version and exit")
      ("model", po::value(&model_path), "the model: a checkpoint (step folder), a save folder (its latest complete step), a safetensors export or a weights file (--export-weights)")
      ("weights", po::value(&model_path), "the same as --model (its older name)")
      ("tokens", po::value(&tokens)->required(), "HDF5 file with dataset `tokens` [B, T+1]")
      ("out", po::value(&out)->required(), "output HDF5 file")
      ("dtype", po::value(&dtype_name)->default_value("fp32"), "fp32 | fp64")
      ("train", po::bool_switch(&train), "training mode (ATM active in the middle layers)");
  po::variables_map vm;
  try {
    po::store(po::parse_command_line(argc, argv, opts), vm);
    if (vm.count("version")) {
      print_version(std::cout, "wiola-dump");
      return 0;
    }
    if (vm.count("help")) {
      std::cout << "Usage: wiola-dump --model CKPT|W.h5 --tokens TOK.h5 --out OUT.h5 [--dtype fp32|fp64] [--train]\n"
                << opts << "\n";
      return 0;
    }
    po::notify(vm);
    require(vm.count("model") + vm.count("weights") == 1, "give the model once: --model PATH");
  } catch (const po::error& e) {
    fail(wiola::error_text(e));
  }
  const DType dtype = parse_dtype(dtype_name);
  require(dtype == DType::F32 || dtype == DType::F64, "--dtype must be fp32 or fp64");

  const ModelSource source = open_model_source(model_path);
  const ModelConfig& cfg = source.config;
  std::int64_t rows = 0, cols = 0;
  const std::vector<std::int32_t> tok = read_token_matrix(tokens, rows, cols);
  require(rows >= 1 && cols >= 2, tokens, ": dataset 'tokens' is ", rows, "x", cols,
          ", expected [B, T+1] with T >= 1");
  const int B = static_cast<int>(rows), T = static_cast<int>(cols - 1);
  require(T <= cfg.T, tokens, ": sequences of ", T, " tokens exceed the model context T = ", cfg.T);
  for (std::int64_t i = 0; i < rows * cols; ++i)
    require(tok[i] >= 0 && tok[i] < cfg.V, tokens, ": token id ", tok[i], " at row ", i / cols,
            " column ", i % cols, " is outside [0, V = ", cfg.V, ")");
  for (const auto& msg : leak_warnings(cfg)) std::cerr << "wiola-dump: WARNING: " << msg << "\n";

  auto backend = make_cpu_backend();
  StageModel model(*backend, cfg, StageSpec::whole(cfg), dtype);
  load_parameters(source, model);

  std::vector<std::int32_t> inputs, targets;
  for (int b = 0; b < B; ++b)
    for (int t = 0; t < T; ++t) {
      inputs.push_back(tok[std::size_t(b) * cols + t]);
      targets.push_back(tok[std::size_t(b) * cols + t + 1]);
    }
  StageInput in;
  in.batch = B;
  in.seq = T;
  in.tokens = backend->alloc(DType::I32, std::int64_t(B) * T, 1);
  in.targets = backend->alloc(DType::I32, std::int64_t(B) * T, 1);
  backend->from_host(inputs.data(), in.tokens);
  backend->from_host(targets.data(), in.targets);

  StageSaved saved;
  const StageOutput fwd = model.forward(in, train, saved);
  // Every target of a dumped batch counts in the loss.
  const double counted = double(B) * T;
  const double loss = to_host_f64(*backend, fwd.loss_sum)[0] / counted;
  const std::vector<double> logits = to_host_f64(*backend, model.logits(saved));
  model.params().zero_grads();
  model.backward(Tensor{}, {}, 1.0 / counted, saved);

  const h5::Type ft = dtype == DType::F64 ? h5::Type::F64 : h5::Type::F32;
  const std::string tmp = out + ".tmp";
  {
    h5::File f = h5::File::create(tmp);
    f.write_scalar<double>("loss", loss);
    f.write<double>("logits", {B, T, cfg.V}, logits, ft);
    for (const ParamSpec& p : model.params().layout().entries()) {
      const std::vector<double> g = model.params().get_grad(p.name);
      const h5::Shape shape = param_names::is_vector_param(p.name) ? h5::Shape{p.numel()} : h5::Shape{p.rows, p.cols};
      f.write<double>("grad/" + p.name, shape, g, ft);
    }
    f.write_attr_string("mode", train ? "train" : "eval");
    f.write_attr_string("dtype", std::string(dtype_name));
    f.close();
  }
  require(std::rename(tmp.c_str(), out.c_str()) == 0, out, ": cannot rename the finished file into place");
  std::cout << "wiola-dump: loss " << loss << " over " << B << "x" << T << " tokens ("
            << (train ? "train" : "eval") << " mode, " << dtype_name << ") -> " << out << "\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "wiola-dump: " << wiola::printable_lines(wiola::error_text(e)) << "\n";
    return 2;
  }
}
