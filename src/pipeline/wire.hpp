#pragma once
// What crosses a stage boundary (docs/pipeline.md, "Wire format"), per
// micro-batch and direction:
//   forward  (stage k -> k+1): X_b [B*T, d], then the carried summaries
//   backward (stage k+1 -> k): dX_b, then the gradients of the carried summaries
// A carried summary has B*T rows (causal summaries) or B rows (sequence).
// A Wiola 13M model (arch wiola13m) carries the activation alone; the header's
// `arch` field says which family's boundary a message is, and a receiver
// refuses the other one.
//
// The tensors travel as they are, in the backend's memory and compute dtype
// (device memory goes to a device-aware transport without a host copy), one
// message per tensor. Before them goes a small host message: a fixed 32-byte
// header and the row count of every tensor, which the receiver checks against
// the shape it expects before it uses the tensors. Each part has its own tag;
// per (peer, direction) micro-batches are sent and received in the same order
// (the schedule checker proves it), so the header's step and micro-batch catch
// any mismatch.
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "core/dtype.hpp"
#include "backend/backend.hpp"  // SummaryMode
#include "core/model_config.hpp"  // Arch

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
  std::int32_t arch;          // Arch: 0 wiola (X and summaries), 1 wiola13m (X alone)
};
static_assert(sizeof(WireHeader) == 32, "the wire header is 32 bytes");
inline constexpr std::uint32_t kWireMagic = 0x31414C57;  // "WLA1" little-endian

struct BoundaryShape {
  int batch = 0, seq = 0, width = 0;
  DType dtype = DType::F32;
  Arch arch = Arch::Wiola;
  std::vector<std::int64_t> rows;  // per tensor
  std::int64_t total_rows() const;
  std::size_t header_bytes() const;   // the header message
  std::size_t payload_bytes() const;  // all tensors
};

// The shape of what crosses into a stage: X plus `carry` summaries (the main
// family), or X alone (arch wiola13m; carry must be 0).
BoundaryShape boundary_shape(int batch, int seq, int width, DType dtype, int carry,
                             SummaryMode summary, Arch arch = Arch::Wiola);

// The header message of one micro-batch.
std::vector<std::byte> encode_header(WireKind kind, int step, int microbatch,
                                     const BoundaryShape& shape);
// Checks a received header message against what this stage expects; throws
// wiola::Error naming the mismatch.
void check_header(WireKind kind, int step, int microbatch, const BoundaryShape& shape,
                  std::span<const std::byte> message);

// Tag of part `part` (0: the header, 1..: the tensors) of a message of `kind`;
// `parts_per_message` is the same on both ends (1 + the most tensors a
// boundary of this model can carry).
inline int wire_tag(WireKind kind, int part, int parts_per_message) {
  return static_cast<int>(kind) * parts_per_message + part;
}

}  // namespace wiola
