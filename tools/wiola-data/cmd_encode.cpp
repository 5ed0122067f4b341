// wiola-data encode: text or JSON lines -> token files, in parallel; with
// --out-dir, one share of the input files per task (io/sharded_encode.hpp).
#include <iomanip>
#include <iostream>

#include "commands.hpp"
#include "core/error.hpp"
#include "io/progress.hpp"
#include "io/sharded_encode.hpp"
#include "io/text_encoder.hpp"

namespace wiola::data {

namespace {

void print_report(const EncodeReport& r, const Tokenizer& tok) {
  std::cout << "encoded " << r.documents << " documents, " << r.tokens << " tokens ("
            << tok.name() << ", vocab_size " << tok.vocab_size() << ") from "
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
}

}  // namespace

int encode(const Args& args) {
  TextArgs text;
  std::string out, tokenizer;
  std::int64_t shard_tokens = 0;
  ShardedEncodeOptions sharded;
  po::options_description opts("encode options");
  opts.add_options()("help,h", "show this help")
      ("tokenizer", po::value(&tokenizer)->required(), "'byte', or a tokenizer file (train-tokenizer)")
      ("out", po::value(&out), "the token file to write (with --shard-tokens: NAME-00000.h5, ...)")
      ("out-dir", po::value(&sharded.out_dir), "instead of --out: a folder with one part per input file (part-00000.h5, ...) and a manifest; many tasks may share the work (--task, --tasks) and a re-run redoes only unfinished parts")
      ("task", po::value(&sharded.task)->default_value(0), "with --out-dir: this task's index, in [0, --tasks)")
      ("tasks", po::value(&sharded.tasks)->default_value(1), "with --out-dir: how many tasks share the input files")
      ("manifest", po::value(&sharded.manifest), "with --out-dir: the manifest to write once every part is done (default OUT_DIR/dataset.manifest)")
      ("shard-tokens", po::value(&shard_tokens)->default_value(0), "start a new output file after this many tokens (0: one file)");
  text.add_to(opts);
  po::positional_options_description pos;
  pos.add("input", -1);
  po::variables_map vm;
  if (!parse("encode", opts, pos, args, vm)) return 0;
  const bool dir_mode = vm.count("out-dir") > 0;
  require(dir_mode != (vm.count("out") > 0), "encode: give either --out FILE or --out-dir FOLDER");
  if (!dir_mode)
    for (const char* only : {"task", "tasks", "manifest"})
      require(vm[only].defaulted() || vm.count(only) == 0, "encode: --", only,
              " goes with --out-dir");
  const auto tok = tokenizer_arg(tokenizer);
  TextInputOptions in = text.resolve();
  if (tok->encodes_in_parts()) in.part_bytes = kDocumentPartBytes;
  EncodeOptions o;
  o.threads = text.threads;
  o.skip_invalid = text.skip_invalid;
  o.shard_tokens = shard_tokens;
  o.progress = !text.quiet;
  if (!dir_mode) {
    DocumentReader reader(text.inputs, in);
    print_report(encode_text(reader, *tok, out, o), *tok);
    return 0;
  }
  sharded.encode = o;
  const ShardedEncodeReport r = encode_sharded(text.inputs, in, *tok, sharded);
  std::cout << "task " << sharded.task << " of " << sharded.tasks << ": " << r.units.size()
            << " of " << text.inputs.size() << " input files, " << r.skipped_done.size()
            << " already done\n";
  if (r.units.size() > r.skipped_done.size()) print_report(r.encoded, *tok);
  if (!r.manifest.empty()) {
    std::cout << "manifest: " << r.manifest << "\n";
  } else {
    std::cout << "no manifest yet: " << r.missing.size() << " input files are not encoded (first: "
              << text.inputs.at(r.missing.front()) << ")\n";
  }
  return 0;
}

}  // namespace wiola::data
