// wiola-data encode: text or JSON lines -> token files, in parallel.
#include <iomanip>
#include <iostream>

#include "commands.hpp"
#include "core/error.hpp"
#include "io/progress.hpp"
#include "io/text_encoder.hpp"

namespace wiola::data {

int encode(const Args& args) {
  TextArgs text;
  std::string out, tokenizer;
  std::int64_t shard_tokens = 0;
  po::options_description opts("encode options");
  opts.add_options()("help,h", "show this help")
      ("tokenizer", po::value(&tokenizer)->required(), "'byte', or a tokenizer file (train-tokenizer)")
      ("out", po::value(&out)->required(), "the token file to write (with --shard-tokens: NAME-00000.h5, ...)")
      ("shard-tokens", po::value(&shard_tokens)->default_value(0), "start a new output file after this many tokens (0: one file)");
  text.add_to(opts);
  po::positional_options_description pos;
  pos.add("input", -1);
  po::variables_map vm;
  if (!parse("encode", opts, pos, args, vm)) return 0;
  DocumentReader reader(text.inputs, text.resolve());
  const auto tok = tokenizer_arg(tokenizer);
  EncodeOptions o;
  o.threads = text.threads;
  o.skip_invalid = text.skip_invalid;
  o.shard_tokens = shard_tokens;
  o.progress = !text.quiet;
  const EncodeReport r = encode_text(reader, *tok, out, o);
  std::cout << "encoded " << r.documents << " documents, " << r.tokens << " tokens ("
            << tok->name() << ", vocab_size " << tok->vocab_size() << ") from "
            << Progress::bytes_text(double(r.bytes)) << " in " << std::fixed
            << std::setprecision(1) << r.seconds << " s ("
            << Progress::bytes_text(r.seconds > 0 ? double(r.bytes) / r.seconds : 0) << "/s, "
            << std::setprecision(2)
            << (r.tokens > 0 ? double(r.bytes) / double(r.tokens) : 0.0) << " bytes/token)\n";
  for (const auto& f : r.outputs) std::cout << "  " << f << "\n";
  for (int s = 0; s < kDocStatusCount; ++s) {
    const auto k = static_cast<std::size_t>(s);
    if (r.skipped[k] > 0) {
      std::cout << "  skipped " << r.skipped[k] << " documents " << doc_status_name(static_cast<DocStatus>(s));
      if (!r.first_problem[k].empty()) std::cout << " (first: " << r.first_problem[k] << ")";
      std::cout << "\n";
    }
  }
  return 0;
}

}  // namespace wiola::data
