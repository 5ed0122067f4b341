// The header message a stage receives before a micro-batch's tensors
// (pipeline/wire.hpp): it comes from another process, so a corrupt or
// mismatched one must be refused by name before any tensor is sized by it.
#include <cstring>
#include <vector>

#include "fuzz/fuzz_target.hpp"
#include "pipeline/wire.hpp"

WIOLA_FUZZ_TARGET(wire_header) {
  const wiola::BoundaryShape shapes[] = {
      wiola::boundary_shape(2, 8, 16, wiola::DType::F32, 2, wiola::SummaryMode::Causal),
      wiola::boundary_shape(2, 8, 16, wiola::DType::BF16, 1, wiola::SummaryMode::Sequence),
      wiola::boundary_shape(1, 4, 8, wiola::DType::F64, 0, wiola::SummaryMode::Causal,
                            wiola::Arch::Wiola13m)};
  for (const auto& shape : shapes) {
    for (const auto kind : {wiola::WireKind::Activation, wiola::WireKind::Gradient}) {
      std::vector<std::byte> message(bytes.size());
      if (!bytes.empty()) std::memcpy(message.data(), bytes.data(), bytes.size());
      const bool accepted = wiola::fuzz::read_or_refuse(
          "pipeline ", [&] { wiola::check_header(kind, 3, 1, shape, message); });
      // Only the exact header this stage would have been sent is accepted.
      if (accepted && message != wiola::encode_header(kind, 3, 1, shape))
        wiola::fuzz::bug("a header accepted that differs from the expected one");
    }
  }
}
