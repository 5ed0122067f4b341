// wiola-data build-embedded: Debian's fortunes -> fortunes-train.h5 and
// fortunes-val.h5 (split by a hash of each document's text), BPE-tokenised by
// default with a tokenizer trained on the training documents only (saved as
// fortunes.bpe beside them, and embedded in both files).
#include <filesystem>
#include <iostream>

#include "commands.hpp"
#include "core/error.hpp"
#include "io/bpe_trainer.hpp"
#include "io/byte_tokenizer.hpp"
#include "io/fortunes.hpp"
#include "io/token_file.hpp"
#include "io/utf8.hpp"

namespace wiola::data {

namespace fs = std::filesystem;

inline constexpr int kEmbeddedVocab = 2048;

int build_embedded(const Args& args) {
  std::string source, out, tokenizer;
  int val_every = 20, vocab = kEmbeddedVocab;
  po::options_description opts("build-embedded options");
  opts.add_options()("help,h", "show this help")
      ("source", po::value(&source)->default_value(kFortunesDir), "directory of fortune text files")
      ("out", po::value(&out)->required(), "output directory")
      ("val-every", po::value(&val_every)->default_value(20), "hold out about one document in N for validation (by a hash of its text)")
      ("tokenizer", po::value(&tokenizer)->default_value("bpe"), "bpe (trained here on the training documents) | byte")
      ("vocab", po::value(&vocab)->default_value(kEmbeddedVocab), "BPE vocabulary size");
  po::variables_map vm;
  if (!parse("build-embedded", opts, {}, args, vm)) return 0;
  require(val_every >= 2, "--val-every must be at least 2, got ", val_every);
  require(tokenizer == "bpe" || tokenizer == "byte", "--tokenizer must be bpe or byte, got '",
          tokenizer, "'");

  const std::vector<std::string> docs = read_fortune_documents(source);
  std::vector<bool> held(docs.size());
  for (std::size_t i = 0; i < docs.size(); ++i) held[i] = is_validation_document(docs[i], val_every);
  fs::create_directories(out);

  std::unique_ptr<Tokenizer> tok;
  const std::string tok_path = (fs::path(out) / "fortunes.bpe").string();
  if (tokenizer == "bpe") {
    PieceCounts counts;
    for (std::size_t i = 0; i < docs.size(); ++i) {
      const std::size_t bad = find_invalid_utf8(docs[i]);
      require(bad == std::string::npos, source, ": fortune document ", i,
              " is not valid UTF-8 (byte ", bad, "); rebuild with --tokenizer byte");
      if (!held[i]) counts.add_document(docs[i]);
    }
    BpeTrainOptions o;
    o.vocab_size = vocab;
    auto bpe = std::make_unique<BpeTokenizer>(train_bpe(counts, o));
    bpe->save(tok_path);
    tok = std::move(bpe);
  } else {
    tok = std::make_unique<ByteTokenizer>();
  }

  const std::string train_path = (fs::path(out) / "fortunes-train.h5").string();
  const std::string val_path = (fs::path(out) / "fortunes-val.h5").string();
  TokenFileWriter train(train_path, *tok), val(val_path, *tok);
  std::int64_t bytes[2] = {0, 0};
  for (std::size_t i = 0; i < docs.size(); ++i) {
    (held[i] ? val : train).add_document(tok->encode(docs[i]));
    bytes[held[i] ? 1 : 0] += static_cast<std::int64_t>(docs[i].size());
  }
  require(train.n_documents() > 0 && val.n_documents() > 0, source,
          ": the split left one side empty (", train.n_documents(), " train, ", val.n_documents(),
          " validation documents); try another --val-every");
  train.finish();
  val.finish();
  std::cout << "fortunes: " << docs.size() << " documents from " << source << ", tokenizer "
            << tok->name() << " (vocab_size " << tok->vocab_size() << ", hash " << tok->hash()
            << (tokenizer == "bpe" ? ", " + tok_path : std::string()) << ")\n"
            << "  train: " << train_path << ": " << train.n_documents() << " documents, "
            << train.n_tokens() << " tokens, " << bytes[0] << " bytes\n"
            << "  val:   " << val_path << ": " << val.n_documents() << " documents, "
            << val.n_tokens() << " tokens, " << bytes[1] << " bytes\n";
  return 0;
}

}  // namespace wiola::data
