#pragma once
// The held-out validation split by document: document d of a file is held
// out when
//     splitmix64(file_key XOR splitmix64(seed XOR splitmix64(d))) < fraction * 2^64,
// with file_key = FNV-1a-64 of the file's base name. A pure function of the
// file name, the document index and the split seed, so every rank, every run
// and every training seed sees the same split, and a dataset can be moved to
// another folder without changing it. Training windows read the training
// documents of a file concatenated in file order, validation windows the
// held-out ones, so no window mixes the two sides.
#include <cstdint>
#include <string>
#include <vector>

#include "io/h5.hpp"

namespace wiola {

struct HeldOut {
  double fraction = 0;     // in (0, 1) when a split is wanted
  std::uint64_t seed = 0;  // fixed by default: the split does not follow the training seed
};

std::uint64_t heldout_file_key(const std::string& path);
bool is_heldout_document(std::uint64_t file_key, std::int64_t doc, const HeldOut& h);

// A stretch of consecutive tokens of a file: [start, start + length).
struct TokenRun {
  std::int64_t start = 0, length = 0;
};

// The runs of one side (held-out documents when `heldout`, else the others)
// of a token file with `n_documents` documents and `n_tokens` tokens, in file
// order, adjacent documents of the same side joined. Reads `doc_offsets` in
// chunks and checks it (starts at 0, strictly increasing, below n_tokens).
std::vector<TokenRun> split_runs(const h5::File& f, std::int64_t n_documents,
                                 std::int64_t n_tokens, const HeldOut& h, bool heldout);

}  // namespace wiola
