// Raw token imports of `wiola-data import`: GPT-2-style .bin shards, NumPy
// .npy arrays and bare ids. The last input byte picks how the file is named
// to the reader (auto-detected, bin, npy, raw u16/u32); the rest is the file.
#include <vector>

#include "fuzz/fuzz_target.hpp"
#include "io/raw_tokens.hpp"

WIOLA_FUZZ_TARGET(raw_tokens) {
  if (bytes.empty()) return;
  const unsigned choice = static_cast<unsigned char>(bytes.back()) % 5;
  const wiola::RawKind kinds[] = {wiola::RawKind::Auto, wiola::RawKind::Bin, wiola::RawKind::Npy,
                                  wiola::RawKind::Raw, wiola::RawKind::Raw};
  const std::string dtype = choice == 3 ? "u16" : choice == 4 ? "u32" : "";
  const std::string path = wiola::fuzz::scratch_file("shard.tok", bytes.substr(0, bytes.size() - 1));
  wiola::fuzz::read_or_refuse(path, [&] {
    const wiola::RawTokenFile f = wiola::open_raw_tokens(path, kinds[choice], dtype);
    if (f.count < 0 || f.data_offset < 0 ||
        static_cast<std::uint64_t>(f.data_offset) + static_cast<std::uint64_t>(f.count) * f.elem_size >
            bytes.size() - 1)
      wiola::fuzz::bug("a header accepted that promises more ids than the file holds");
    wiola::RawTokenReader reader(f);
    std::vector<std::int64_t> ids(4096);
    std::int64_t total = 0;
    for (std::int64_t n; (n = reader.read(static_cast<std::int64_t>(ids.size()), ids.data())) > 0;)
      total += n;
    if (total != f.count) wiola::fuzz::bug("read a different number of ids than the header promised");
  });
}
