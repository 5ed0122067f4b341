#pragma once
// The stage-boundary message (docs/pipeline.md, "Wire format"). One message
// per micro-batch and direction: a fixed 32-byte header, the row count of
// every tensor, then the tensors back to back in the compute dtype:
//   forward  (stage k -> k+1): X_b [B*T, d], then the carried summaries
//   backward (stage k+1 -> k): dX_b, then the gradients of the carried summaries
// A carried summary has B*T rows (causal summaries) or B rows (sequence).
// The receiver knows the expected shape, so it posts a receive of exactly the
// right size and checks the header before using the payload.
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "backend/backend.hpp"

namespace wiola {

enum class WireKind : std::uint8_t { Activation = 0, Gradient = 1 };

struct WireHeader {
  std::uint32_t magic;       // kWireMagic
  std::uint8_t kind;         // WireKind
  std::uint8_t dtype;        // DType
  std::uint16_t n_tensors;
  std::int32_t step;
  std::int32_t microbatch;
  std::int32_t batch;
  std::int32_t seq;
  std::int32_t width;        // d
  std::int32_t reserved;
};
static_assert(sizeof(WireHeader) == 32, "the wire header is 32 bytes");
inline constexpr std::uint32_t kWireMagic = 0x31414C57;  // "WLA1" little-endian

struct BoundaryShape {
  int batch = 0, seq = 0, width = 0;
  DType dtype = DType::F32;
  std::vector<std::int64_t> rows;  // per tensor
  std::size_t bytes() const;       // whole message
};

// The shape of what crosses into a stage: X plus `carry` summaries.
BoundaryShape boundary_shape(int batch, int seq, int width, DType dtype, int carry,
                             SummaryMode summary);

void pack_message(Backend& be, WireKind kind, int step, int microbatch, const BoundaryShape& shape,
                  std::span<const Tensor> tensors, std::vector<std::byte>& out);
// Checks the header against what was expected (throws wiola::Error naming the
// mismatch) and returns freshly allocated tensors.
std::vector<Tensor> unpack_message(Backend& be, WireKind kind, int step, int microbatch,
                                   const BoundaryShape& shape, const std::vector<std::byte>& in);

}  // namespace wiola
