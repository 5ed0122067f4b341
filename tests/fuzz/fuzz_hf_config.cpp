// config.json of a Hugging Face export (read_hf_config).
#include "fuzz/fuzz_target.hpp"
#include "io/safetensors.hpp"

WIOLA_FUZZ_TARGET(hf_config) {
  const std::string path = wiola::fuzz::scratch_file("config.json", bytes);
  wiola::fuzz::read_or_refuse(path, [&] { (void)wiola::read_hf_config(path); });
}
