// safetensors: a whole file (read_safetensors), and a header alone
// (check_safetensors_header) so that mutations spend themselves on the JSON.
#include <cstdint>
#include <cstring>

#include "fuzz/fuzz_target.hpp"
#include "io/safetensors.hpp"

WIOLA_FUZZ_TARGET(safetensors_file) {
  const std::string path = wiola::fuzz::scratch_file("model.safetensors", bytes);
  wiola::fuzz::read_or_refuse(path, [&] {
    const auto tensors = wiola::read_safetensors(path);
    // What was read is what the header promised.
    for (const auto& t : tensors) {
      std::uint64_t n = 1;
      for (auto d : t.shape) n *= static_cast<std::uint64_t>(d);
      if (n != t.data.size()) wiola::fuzz::bug("tensor '" + t.name + "' holds a wrong count");
    }
  });
}

// Input: 4 bytes of data size (little-endian, modulo 1 MiB), then the header.
WIOLA_FUZZ_TARGET(safetensors_header) {
  if (bytes.size() < 4) return;
  std::uint32_t data_size = 0;
  std::memcpy(&data_size, bytes.data(), 4);
  data_size %= 1u << 20;
  const std::string header(bytes.substr(4));
  const std::uint64_t file_size = 8 + header.size() + data_size;
  const std::string where = "fuzz.safetensors";
  wiola::fuzz::read_or_refuse(where, [&] {
    const auto entries = wiola::check_safetensors_header(where, file_size, header.size(), header);
    std::uint64_t covered = 0;
    for (const auto& e : entries) {
      if (e.begin > e.end || e.end > data_size) wiola::fuzz::bug("accepted a range past the data");
      covered += e.end - e.begin;
    }
    if (covered != data_size) wiola::fuzz::bug("accepted ranges that do not tile the data");
  });
}
