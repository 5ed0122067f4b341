#include "pipeline/wire.hpp"

#include <cstring>
#include <string>

#include "core/error.hpp"

namespace wiola {

std::int64_t BoundaryShape::total_rows() const {
  std::int64_t n = 0;
  for (auto r : rows) n += r;
  return n;
}

std::size_t BoundaryShape::header_bytes() const {
  return sizeof(WireHeader) + rows.size() * sizeof(std::int64_t);
}

std::size_t BoundaryShape::payload_bytes() const {
  return static_cast<std::size_t>(total_rows()) * width * dtype_size(dtype);
}

BoundaryShape boundary_shape(int batch, int seq, int width, DType dtype, int carry,
                             SummaryMode summary, Arch arch) {
  require(arch == Arch::Wiola || carry == 0, "a ", arch_name(arch),
          " stage boundary carries the activation alone, not ", carry, " summaries");
  BoundaryShape s;
  s.arch = arch;
  s.batch = batch;
  s.seq = seq;
  s.width = width;
  s.dtype = dtype;
  s.rows.push_back(std::int64_t(batch) * seq);
  const std::int64_t summary_rows =
      summary == SummaryMode::Causal ? std::int64_t(batch) * seq : batch;
  for (int c = 0; c < carry; ++c) s.rows.push_back(summary_rows);
  return s;
}

std::vector<std::byte> encode_header(WireKind kind, int step, int microbatch,
                                     const BoundaryShape& shape) {
  std::vector<std::byte> out(shape.header_bytes());
  const WireHeader h{kWireMagic,        static_cast<std::uint8_t>(kind),
                     static_cast<std::uint8_t>(shape.dtype),
                     static_cast<std::uint16_t>(shape.rows.size()),
                     step,              microbatch,
                     shape.batch,       shape.seq,
                     shape.width,       static_cast<std::int32_t>(shape.arch)};
  std::memcpy(out.data(), &h, sizeof h);
  std::memcpy(out.data() + sizeof h, shape.rows.data(), shape.rows.size() * sizeof(std::int64_t));
  return out;
}

void check_header(WireKind kind, int step, int microbatch, const BoundaryShape& shape,
                  std::span<const std::byte> message) {
  const char* what = kind == WireKind::Activation ? "activation" : "gradient";
  require(message.size() == shape.header_bytes(), "pipeline ", what, " header of ",
          message.size(), " bytes, expected ", shape.header_bytes());
  WireHeader h;
  std::memcpy(&h, message.data(), sizeof h);
  require(h.magic == kWireMagic, "pipeline ", what, " message has a bad magic number");
  require(h.kind == static_cast<std::uint8_t>(kind), "pipeline message kind ", int(h.kind),
          " where a ", what, " was expected");
  require(h.step == step && h.microbatch == microbatch, "pipeline ", what, " for step ", h.step,
          " micro-batch ", h.microbatch, " arrived where step ", step, " micro-batch ",
          microbatch, " was expected");
  const auto family = [](std::int32_t a) -> std::string {
    if (a == static_cast<std::int32_t>(Arch::Wiola)) return "wiola: the activation and summaries";
    if (a == static_cast<std::int32_t>(Arch::Wiola13m)) return "wiola13m: the activation alone";
    return "unknown architecture " + std::to_string(a);
  };
  const auto expected = static_cast<std::int32_t>(shape.arch);
  require(h.arch == expected, "pipeline ", what, " message is of ", family(h.arch),
          ", where this stage expects ", family(expected));
  require(h.dtype == static_cast<std::uint8_t>(shape.dtype) && h.batch == shape.batch &&
              h.seq == shape.seq && h.width == shape.width && h.n_tensors == shape.rows.size(),
          "pipeline ", what, " header (B=", h.batch, " T=", h.seq, " d=", h.width,
          " tensors=", h.n_tensors, ") does not match this stage (B=", shape.batch,
          " T=", shape.seq, " d=", shape.width, " tensors=", shape.rows.size(), ")");
  std::vector<std::int64_t> rows(shape.rows.size());
  std::memcpy(rows.data(), message.data() + sizeof h, rows.size() * sizeof(std::int64_t));
  require(rows == shape.rows, "pipeline ", what, " tensor rows do not match this stage");
}

}  // namespace wiola
