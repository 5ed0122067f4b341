// wiola-data bench: throughput figures of the data path (printed, never
// asserted): BPE training, text encoding with 1 thread and with all threads,
// and random-window reads.
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>

#include "commands.hpp"
#include "core/error.hpp"
#include "io/bpe_trainer.hpp"
#include "io/fortunes.hpp"
#include "io/sample_reader.hpp"
#include "io/text_encoder.hpp"

namespace wiola::data {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "wiola-bench-XXXXXX").string();
    require(::mkdtemp(tmpl.data()) != nullptr, "bench: cannot create a temporary folder");
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  fs::path path_;
};

}  // namespace

int bench(const Args& args) {
  double megabytes = 32;
  int vocab = 4096, threads = 0, seq_len = 1024;
  std::int64_t windows = 20000;
  std::string source;
  po::options_description opts("bench options");
  opts.add_options()("help,h", "show this help")
      ("mb", po::value(&megabytes)->default_value(32), "megabytes of text to encode (fortunes, repeated)")
      ("vocab", po::value(&vocab)->default_value(4096), "BPE vocabulary trained for the benchmark")
      ("threads", po::value(&threads)->default_value(0), "threads of the parallel run (0: all hardware threads)")
      ("seq-len", po::value(&seq_len)->default_value(1024), "window length T of the reader benchmark")
      ("windows", po::value(&windows)->default_value(20000), "random windows read")
      ("source", po::value(&source)->default_value(kFortunesDir), "fortune files the text comes from");
  po::variables_map vm;
  if (!parse("bench", opts, {}, args, vm)) return 0;
  require(megabytes > 0 && windows > 0 && seq_len > 0, "bench: sizes must be positive");
  if (threads <= 0) threads = default_thread_count();

  const std::vector<std::string> docs = read_fortune_documents(source);
  TempDir tmp;
  const std::string text_path = tmp.file("corpus.txt");
  std::int64_t text_bytes = 0;
  {
    std::ofstream out(text_path, std::ios::binary);
    const auto want = static_cast<std::int64_t>(megabytes * 1e6);
    for (std::size_t i = 0; text_bytes < want; i = (i + 1) % docs.size()) {
      out << docs[i] << "\n%\n";
      text_bytes += static_cast<std::int64_t>(docs[i].size()) + 3;
    }
  }
  std::cout << "wiola-data bench: " << std::fixed << std::setprecision(1) << text_bytes / 1e6
            << " MB of fortunes text (" << docs.size() << " documents, repeated), "
            << default_thread_count() << " hardware threads\n";

  auto t = Clock::now();
  PieceCounts counts;
  std::int64_t train_bytes = 0;
  for (const auto& d : docs) {
    counts.add_document(d);
    train_bytes += static_cast<std::int64_t>(d.size());
  }
  const double t_count = since(t);
  BpeTrainOptions o;
  o.vocab_size = vocab;
  t = Clock::now();
  const BpeTokenizer tok = train_bpe(counts, o);
  const double t_train = since(t);
  std::cout << "  train-tokenizer: " << train_bytes / 1e6 << " MB, vocab " << tok.vocab_size()
            << ": counting " << std::setprecision(2) << t_count << " s, " << tok.merges().size()
            << " merges " << t_train << " s\n";

  TextInputOptions in;
  in.split = TextSplit::Separator;
  in.separator = "%";
  std::string encoded;
  for (const int n : {1, threads}) {
    DocumentReader reader({text_path}, in);
    EncodeOptions e;
    e.threads = n;
    e.progress = false;
    const std::string out = tmp.file("corpus-" + std::to_string(n) + ".h5");
    t = Clock::now();
    const EncodeReport r = encode_text(reader, tok, out, e);
    const double s = since(t);
    std::cout << "  encode, " << n << (n == 1 ? " thread:  " : " threads: ") << std::setprecision(1)
              << double(r.bytes) / 1e6 / s << " MB/s (" << r.tokens << " tokens, "
              << std::setprecision(2) << double(r.bytes) / double(r.tokens) << " bytes/token, "
              << s << " s)\n";
    encoded = out;
  }

  DatasetSpec spec = DatasetSpec::from_files({encoded});
  const SampleReader reader(spec, seq_len, 1234);
  const std::int64_t n_windows = reader.dataset().num_windows();
  t = Clock::now();
  std::int64_t checksum = 0;
  constexpr int kBatch = 8;
  for (std::int64_t g = 0; g < windows; g += kBatch) {
    const auto rows = reader.read(g, kBatch);
    checksum += rows[0];
  }
  const double s = since(t);
  const double tokens = double(windows) * (seq_len + 1);
  std::cout << "  reader: " << windows << " random windows of T+1 = " << seq_len + 1 << " over "
            << n_windows << " windows: " << std::setprecision(1) << tokens / s / 1e6
            << " M tokens/s (" << std::setprecision(0) << double(windows) / s
            << " windows/s, page cache warm; checksum " << checksum % 1000 << ")\n";
  return 0;
}

}  // namespace wiola::data
