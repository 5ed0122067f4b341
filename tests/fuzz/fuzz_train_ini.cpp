// A training config in INI form (wiola-train --config, and the `config` a
// checkpoint manifest carries). What parses must write back to INI text that
// parses to the same text.
#include "fuzz/fuzz_target.hpp"
#include "train/options.hpp"

WIOLA_FUZZ_TARGET(train_ini) {
  wiola::TrainOptions o;
  // The text has no file name of its own; a refusal names the line instead.
  if (!wiola::fuzz::read_or_refuse("", [&] { o = wiola::options_from_ini(std::string(bytes)); })) return;
  const std::string text = wiola::to_ini(o);
  wiola::fuzz::must_succeed("reading back a written config", [&] {
    if (wiola::to_ini(wiola::options_from_ini(text)) != text)
      wiola::fuzz::bug("a parsed config does not survive to_ini and options_from_ini:\n" + text);
  });
}
