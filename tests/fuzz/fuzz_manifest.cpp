// A checkpoint's manifest.txt (CheckpointManifest::parse). What parses must
// write back to text that parses to the same text.
#include "fuzz/fuzz_target.hpp"
#include "io/checkpoint_manifest.hpp"

WIOLA_FUZZ_TARGET(manifest) {
  const std::string where = "ckpt/manifest.txt";
  wiola::CheckpointManifest m;
  if (!wiola::fuzz::read_or_refuse(where, [&] { m = wiola::CheckpointManifest::parse(std::string(bytes), where); }))
    return;
  const std::string text = m.to_text();
  wiola::fuzz::must_succeed("reading back a written manifest", [&] {
    if (wiola::CheckpointManifest::parse(text, where).to_text() != text)
      wiola::fuzz::bug("a parsed manifest does not survive to_text and parse");
  });
}
