// wiola-generate: text from a trained model, one token at a time with the
// incremental cache (src/model/cached_decoder.hpp), streamed as it comes.
//   wiola-generate MODEL --prompt TEXT [--max-new-tokens N] [--greedy | --temperature T
//                  --top-k K --top-p P --seed S] [--chat] [--tokenizer FILE] [--no-cache]
// MODEL: a checkpoint (SAVE/step-N), a save folder (its latest checkpoint), a
// weights file (W.h5) or a safetensors export (directory or model.safetensors).
// The continuation goes to stdout; what was loaded and the speed to stderr.
#include <algorithm>
#include <boost/program_options.hpp>
#include <cstdio>
#include <iostream>

#include "backend/cpu_threads.hpp"
#include "core/error.hpp"
#include "core/text.hpp"
#include "core/version.hpp"
#include "io/bpe_tokenizer.hpp"
#include "model/generate.hpp"
#include "train/checkpoint.hpp"
#include "train/model_source.hpp"
#include "core/option_errors.hpp"

namespace po = boost::program_options;
using namespace wiola;

namespace {

struct Options {
  std::string model, prompt, prompt_file, tokenizer, dtype = "fp32";
  SamplingOptions sampling;
  bool chat = false, ignore_eod = false;
  int threads = 0;
};

// The chat tokens of the papers' template, or a clear refusal.
struct ChatTokens {
  std::int32_t user, assistant, end;
};
ChatTokens chat_tokens(const Tokenizer& tok) {
  require(tok.name() == BpeTokenizer::kName, "--chat needs a tokenizer with the chat tokens "
          "<|user|>, <|assistant|> and <|end|> (wiola's BPE tokenizer has them); this model's "
          "tokenizer '", tok.name(), "' has not");
  return {BpeTokenizer::special_id("<|user|>"), BpeTokenizer::special_id("<|assistant|>"),
          BpeTokenizer::special_id("<|end|>")};
}

std::optional<Options> parse(int argc, char** argv) {
  Options o;
  SamplingOptions& s = o.sampling;
  po::options_description d("wiola-generate options");
  d.add_options()
      ("help,h", "print this help and exit")
      ("version", "print the version and exit")
      ("model", po::value(&o.model), "checkpoint directory, save folder (its latest checkpoint), weights file (W.h5) or safetensors export (also the first positional argument)")
      ("prompt", po::value(&o.prompt), "the prompt text")
      ("prompt-file", po::value(&o.prompt_file), "read the prompt from this file")
      ("max-new-tokens", po::value(&s.max_new_tokens)->default_value(64), "tokens to generate at most")
      ("greedy", po::bool_switch(&s.greedy), "always take the most likely token")
      ("temperature", po::value(&s.temperature)->default_value(1.0), "divide the logits by this (0: greedy)")
      ("top-k", po::value(&s.top_k)->default_value(0), "sample among the k most likely tokens (0: all)")
      ("top-p", po::value(&s.top_p)->default_value(1.0), "sample among the most likely tokens whose probabilities reach p, in (0, 1]")
      ("seed", po::value(&s.seed)->default_value(0), "seed of the sampling (the same seed repeats the text)")
      ("chat", po::bool_switch(&o.chat), "wrap the prompt in the chat template <|user|>PROMPT<|end|><|assistant|> and stop at <|end|>")
      ("ignore-eod", po::bool_switch(&o.ignore_eod), "keep generating after the end-of-document token")
      ("tokenizer", po::value(&o.tokenizer), "the tokenizer: a .bpe file, a token file (*.h5) of the run's data, or 'byte' (default: the run's, from a checkpoint)")
      ("no-cache", po::bool_switch(&s.recompute), "recompute the whole window for every token (slow; to measure and check the cache)")
      ("dtype", po::value(&o.dtype)->default_value("fp32"), "fp32 | fp64")
      ("threads", po::value(&o.threads)->default_value(0), "CPU threads (0: the library default)");
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
    std::cout << "Usage: wiola-generate MODEL (--prompt TEXT | --prompt-file FILE) [options]\n\n"
                 "Generates text from a trained Wiola model with the incremental cache.\n"
              << d << "\n";
    return std::nullopt;
  }
  if (vm.count("version")) {
    print_version(std::cout, "wiola-generate");
    return std::nullopt;
  }
  require(!o.model.empty(), "give the model: a checkpoint, a save folder, W.h5 or a safetensors "
          "export (wiola-generate --help)");
  require(vm.count("prompt") + vm.count("prompt-file") == 1,
          "give the prompt: --prompt TEXT or --prompt-file FILE (one of them)");
  if (vm.count("prompt-file")) o.prompt = read_text_file(o.prompt_file, "--prompt-file");
  s.validate();
  return o;
}

int run(int argc, char** argv) {
  const std::optional<Options> parsed = parse(argc, argv);
  if (!parsed) return 0;
  Options o = *parsed;
  const DType dtype = parse_dtype(o.dtype);
  require(dtype == DType::F32 || dtype == DType::F64, "--dtype must be fp32 or fp64");
  set_cpu_threads(o.threads);

  const ModelSource source = open_model_source(o.model);
  const std::unique_ptr<Tokenizer> tok = model_tokenizer(source, o.tokenizer);
  // A document starts after an end-of-document id in the training data, so
  // the prompt does too.
  std::vector<std::int32_t> text;
  try {
    text = tok->encode(o.prompt);
  } catch (const Error& e) {
    fail("the prompt cannot be encoded: ", e.what());
  }
  std::vector<std::int32_t> prompt{tok->eod_id()};
  SamplingOptions& s = o.sampling;
  s.vocab = tok->vocab_size();  // the model's vocabulary may be wider
  if (o.chat) {
    const ChatTokens chat = chat_tokens(*tok);
    prompt.push_back(chat.user);
    prompt.insert(prompt.end(), text.begin(), text.end());
    prompt.push_back(chat.end);
    prompt.push_back(chat.assistant);
    s.stop_ids = {chat.end, tok->eod_id()};
  } else {
    prompt.insert(prompt.end(), text.begin(), text.end());
    if (!o.ignore_eod) s.stop_ids = {tok->eod_id()};
  }

  auto backend = make_cpu_backend();
  StageModel model(*backend, source.config, StageSpec::whole(source.config), dtype);
  load_parameters(source, model);
  CachedDecoder decoder(model);
  std::cerr << "wiola-generate: " << source.description << "\n  model " << source.config.describe()
            << "\n  tokenizer " << tok->name() << " (" << tok->vocab_size() << " ids), prompt "
            << prompt.size() << " tokens, " << dtype_name(dtype) << " on the CPU\n";
  if (!decoder.exact())
    std::cerr << "  summary = sequence: every position's context is the mean of the whole "
                 "sequence, so no cache can be exact; each token recomputes the whole window\n";
  else if (s.recompute)
    std::cerr << "  --no-cache: each token recomputes the whole window\n";

  if (!o.chat) std::cout << o.prompt << std::flush;
  const GenerationStats st = generate(decoder, prompt, s, [&](std::int32_t id) {
    if (std::find(s.stop_ids.begin(), s.stop_ids.end(), id) != s.stop_ids.end()) return;
    const std::int32_t one[1] = {id};
    std::cout << tok->decode(one) << std::flush;
  });
  std::cout << "\n";

  char buf[200];
  std::snprintf(buf, sizeof buf,
                "%lld new tokens: prompt (%lld tokens) and first token %.3f s, then %.1f tokens/s "
                "(%s)%s\n",
                static_cast<long long>(st.new_tokens), static_cast<long long>(st.prompt_tokens),
                st.prefill_seconds, st.tokens_per_second(),
                decoder.exact() && !s.recompute ? "cached" : "full recompute",
                st.stopped ? "; stopped at an end token" : "");
  std::cerr << buf;
  if (st.window_shifts > 0)
    std::cerr << "the context (T = " << source.config.T << ") filled up " << st.window_shifts
              << " time(s); each time the model continued from the last " << source.config.T / 2
              << " tokens\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "wiola-generate: " << wiola::printable_lines(wiola::error_text(e)) << "\n";
    return 2;
  }
}
