#include "train/model_source.hpp"

#include <filesystem>
#include <map>

#include "core/error.hpp"
#include "core/param_layout.hpp"
#include "io/checkpoint_io.hpp"
#include "io/checkpoint_store.hpp"
#include "io/h5.hpp"
#include "io/safetensors.hpp"
#include "io/token_file.hpp"
#include "io/weights_file.hpp"
#include "train/checkpoint.hpp"

namespace fs = std::filesystem;

namespace wiola {

namespace {

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

ModelSource open_checkpoint_dir(const std::string& dir, int part, int parts) {
  ModelSource s;
  s.kind = ModelSource::Kind::Checkpoint;
  s.path = dir;
  const CheckpointManifest m = read_manifest(dir);
  if (parts > 0) {
    const std::vector<std::string> problems = verify_files(dir, m, part, parts);
    require(problems.empty(), dir, ": ", problems.empty() ? "" : problems.front(), " (",
            problems.size(), " file(s) missing or corrupt)");
  }
  s.run = options_from_ini(m.config);
  s.config = s.run->model.config;
  s.description = "checkpoint " + dir + " (step " + std::to_string(m.step) + ")";
  return s;
}

// The safetensors export: model.safetensors and config.json side by side.
ModelSource open_safetensors(const std::string& file) {
  ModelSource s;
  s.kind = ModelSource::Kind::Safetensors;
  s.path = file;
  const std::string config = (fs::path(file).parent_path() / "config.json").string();
  require(fs::exists(config), file, ": a safetensors export needs its config.json beside it (",
          config, " does not exist)");
  s.config = read_hf_config(config);
  s.description = "safetensors " + file;
  return s;
}

}  // namespace

ModelSource open_model_source(const std::string& path, int part, int parts) {
  const NamedCheckpoint named = resolve_checkpoint(path);
  switch (named.kind) {
    case NamedCheckpoint::Kind::Checkpoint: return open_checkpoint_dir(named.path, part, parts);
    case NamedCheckpoint::Kind::Safetensors: return open_safetensors(named.path);
    case NamedCheckpoint::Kind::WeightsFile: break;
  }
  ModelSource s;
  s.kind = ModelSource::Kind::WeightsFile;
  s.path = path;
  try {
    s.config = read_weights_file(path).config;
  } catch (const Error& e) {
    fail(e.what(), " (a model is a checkpoint directory, a save folder, a weights file W.h5 or "
         "a safetensors export)");
  }
  s.description = "weights file " + path;
  return s;
}

void load_parameters(const ModelSource& source, StageModel& model) {
  ParamStore& params = model.params();
  const ParamLayout& layout = params.layout();
  std::vector<double> flat(static_cast<std::size_t>(layout.total()));
  switch (source.kind) {
    case ModelSource::Kind::Checkpoint: {
      const CheckpointManifest m = read_manifest(source.path);
      CheckpointReader reader(source.path, m);
      flat = read_stage_params(reader, layout);
      break;
    }
    case ModelSource::Kind::WeightsFile:
      for (const NamedArray& a : read_weights_file(source.path).arrays)
        if (params.has(a.name)) params.set(a.name, a.data);
      return;
    case ModelSource::Kind::Safetensors: {
      std::map<std::string, SafeTensor> by_name;
      for (SafeTensor& t : read_safetensors(source.path)) by_name[t.name] = std::move(t);
      for (const ParamSpec& p : layout.entries()) {
        const auto it = by_name.find(p.name);
        require(it != by_name.end(), source.path, ": tensor '", p.name, "' is missing");
        require(std::int64_t(it->second.data.size()) == p.numel(), source.path, ": tensor '",
                p.name, "' has ", it->second.data.size(), " elements, expected ", p.rows, "x",
                p.cols);
        std::copy(it->second.data.begin(), it->second.data.end(),
                  flat.begin() + std::ptrdiff_t(p.offset));
      }
      break;
    }
  }
  from_host_f64(model.backend(), flat, params.params());
}

std::unique_ptr<Tokenizer> token_file_tokenizer(const std::string& path) {
  const h5::File f = h5::File::open_read(path);
  return tokenizer_for(f, read_token_header(f));
}

std::unique_ptr<Tokenizer> model_tokenizer(const ModelSource& source, const std::string& choice) {
  std::unique_ptr<Tokenizer> tok;
  std::string from = choice;
  if (choice == "byte") {
    tok = make_tokenizer(choice);
  } else if (!choice.empty()) {
    tok = ends_with(choice, ".h5") || ends_with(choice, ".hdf5") ? token_file_tokenizer(choice)
                                                                 : load_tokenizer_file(choice);
  } else {
    require(source.run && !source.run->data.train_files.empty(), source.description,
            " does not record its tokenizer: give --tokenizer (the .bpe file, a token file of "
            "the run's data, or 'byte')");
    from = source.run->data.train_files.front();
    require(fs::exists(from), source.description, ": the run's training data ", from,
            " is not readable here, so its tokenizer is unknown: give --tokenizer (the .bpe "
            "file, a token file of the run's data, or 'byte')");
    tok = token_file_tokenizer(from);
  }
  require(tok->vocab_size() <= source.config.V, "the tokenizer of ", from, " has ",
          tok->vocab_size(), " ids, more than the model's vocabulary of ", source.config.V);
  return tok;
}

}  // namespace wiola
