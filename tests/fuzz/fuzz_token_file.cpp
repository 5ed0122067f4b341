// Token files (HDF5): not the HDF5 bytes (that would fuzz the HDF5 library,
// which is not hardened against crafted files; docs/data-format.md) but what
// wiola checks on top of it. The input describes a file that HDF5 writes
// faithfully: its attributes, the element type, length and values of
// `tokens` and `doc_offsets`, and whether `tokens` stores any data at all.
// The file is then opened for training windows and for the validation split,
// and every window is read.
#include <hdf5.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "fuzz/fuzz_target.hpp"
#include "io/byte_tokenizer.hpp"
#include "io/h5.hpp"
#include "io/token_dataset.hpp"
#include "support/hollow_dataset.hpp"

namespace {

// Reads the input front to back; past its end every value is 0.
class Bytes {
 public:
  explicit Bytes(std::string_view b) : b_(b) {}
  std::uint64_t next(int n) {
    std::uint64_t v = 0;
    for (int i = 0; i < n; ++i) v |= std::uint64_t(at_ < b_.size() ? static_cast<unsigned char>(b_[at_++]) : 0) << (8 * i);
    return v;
  }
  std::int64_t small(std::int64_t limit) { return static_cast<std::int64_t>(next(1)) % limit; }
  // True once in k (never for zero bytes: an empty input is a valid file).
  bool rare(int k) { return small(k) == k - 1; }
  // A count near `typical`, sometimes far off (negative, huge).
  std::int64_t count(std::int64_t typical) {
    switch (next(1) % 8) {
      case 7: return -static_cast<std::int64_t>(next(1)) - 1;
      case 6: return static_cast<std::int64_t>(next(8));
      default: return typical + small(5) - 2;
    }
  }

 private:
  std::string_view b_;
  std::size_t at_ = 0;
};

constexpr wiola::h5::Type kTypes[] = {wiola::h5::Type::U16, wiola::h5::Type::U32,
                                      wiola::h5::Type::U64, wiola::h5::Type::I32,
                                      wiola::h5::Type::I64, wiola::h5::Type::U8,
                                      wiola::h5::Type::F32};

}  // namespace

WIOLA_FUZZ_TARGET(token_file) {
  // HDF5 frees its large per-file structures back to the system at every
  // close, and ASan maps them afresh at every open: let its free lists keep
  // them (no effect on what is checked; about 3x the executions a second).
  static const bool kept = H5set_free_list_limits(-1, -1, -1, -1, -1, -1) >= 0;
  (void)kept;
  Bytes in(bytes);
  const std::string path = wiola::fuzz::scratch_file("tokens.h5", "");
  const int vocab_choice = static_cast<int>(in.small(4));
  const std::int64_t vocab = vocab_choice == 0 ? 257 : vocab_choice == 1 ? 70000 : in.count(257);
  const std::int64_t eod = in.rare(3) ? in.count(256) : vocab - 1;
  const std::int64_t n_tok = 64 - in.small(64);
  const std::int64_t n_docs = 1 + in.small(n_tok);
  std::vector<std::int64_t> tokens(static_cast<std::size_t>(n_tok));
  for (auto& t : tokens) t = static_cast<std::int64_t>(in.next(in.rare(4) ? 4 : 1));
  std::vector<std::int64_t> offsets(static_cast<std::size_t>(n_docs));
  for (std::size_t i = 0; i < offsets.size(); ++i)
    offsets[i] = in.rare(4) ? in.count(0) : static_cast<std::int64_t>(i) * (n_tok / n_docs);
  const wiola::h5::Type token_type = kTypes[in.rare(4) ? in.small(7) : 0];
  const wiola::h5::Type offset_type = kTypes[in.rare(4) ? in.small(7) : 2];
  const bool hollow = in.rare(8);
  const bool bad_format = in.rare(16);
  const std::int64_t attr_tokens = in.rare(4) ? in.count(n_tok) : n_tok;
  const std::int64_t attr_docs = in.rare(4) ? in.count(n_docs) : n_docs;
  const int seq_len = 1 + static_cast<int>(in.small(8));
  const bool split = in.small(2) == 1;
  {
    wiola::h5::File f = wiola::h5::File::create(path);
    if (!hollow) f.write<std::int64_t>("tokens", {n_tok}, tokens, token_type);
    f.write<std::int64_t>("doc_offsets", {n_docs}, offsets, offset_type);
    f.write_attr_string("format", bad_format ? "wiola-tokenz" : "wiola-tokens");
    f.write_attr_int("format_version", 1);
    f.write_attr_int("vocab_size", vocab);
    f.write_attr_string("tokenizer", "byte");
    f.write_attr_string("tokenizer_hash", wiola::ByteTokenizer().hash());
    f.write_attr_int("eod_id", eod);
    f.write_attr_int("n_tokens", attr_tokens);
    f.write_attr_int("n_documents", attr_docs);
  }
  if (hollow) wiola::test::add_hollow_dataset(path, "tokens", static_cast<hsize_t>(n_tok), H5T_STD_U16LE);
  wiola::fuzz::read_or_refuse(path, [&] {
    wiola::DatasetSpec spec = wiola::DatasetSpec::from_files({path});
    if (split) {
      spec.split = wiola::DataSplit::HeldOut;
      spec.heldout = {0.5, 0};
    }
    const wiola::TokenDataset ds(spec, seq_len);
    std::vector<std::int32_t> window(static_cast<std::size_t>(seq_len) + 1);
    for (std::int64_t w = 0; w < ds.num_windows(); ++w) {
      ds.read_window(w, window.data());
      for (auto id : window)
        if (id < 0 || id >= ds.vocab_size()) wiola::fuzz::bug("a window holds an id outside the vocabulary");
    }
  });
}
