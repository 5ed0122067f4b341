#pragma once
// What wiola-eval reads: windows of T + 1 tokens, in a fixed order, from
// token files (HDF5, in file order: io/token_dataset.hpp) or from text files
// encoded on the fly with the model's tokenizer (each file one document, a
// .jsonl line one document; every document ends with the end-of-document id;
// window k starts at token k·T, as in token files). And how many bytes of text
// each id stands for, for bits per byte.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "io/tokenizer.hpp"
#include "pipeline/host_batch.hpp"

namespace wiola {

class EvalWindows {
 public:
  virtual ~EvalWindows() = default;
  virtual std::int64_t count() const = 0;
  virtual int vocab_size() const = 0;
  // Window w: T + 1 tokens into out.
  virtual void read(std::int64_t w, std::int32_t* out) const = 0;
  int seq() const { return seq_; }

  // Micro-batch g of `micro_batch` windows out of the first `windows`; past
  // the last of them the rows repeat it with every target ignored (-1), so
  // they count nothing.
  HostBatch microbatch(std::int64_t g, int micro_batch, std::int64_t windows) const;

 protected:
  explicit EvalWindows(int seq) : seq_(seq) {}
  int seq_;
};

// Token files (paths, globs, manifests), every document, windows in order.
// The tokenizer hash the files record is returned through `tokenizer_hash`.
std::unique_ptr<EvalWindows> token_file_windows(const std::vector<std::string>& files, int seq,
                                                std::string* tokenizer_hash);
// Text files encoded with `tokenizer`.
std::unique_ptr<EvalWindows> text_windows(const std::vector<std::string>& files, int seq,
                                          const Tokenizer& tokenizer);

// Bytes of text each id decodes to (special ids, such as the end of a
// document, stand for none); empty when the tokenizer cannot decode.
std::vector<std::int64_t> text_bytes_per_id(const Tokenizer& tokenizer);

}  // namespace wiola
