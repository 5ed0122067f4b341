#include "pipeline/wire.hpp"

#include <cstring>

#include "core/error.hpp"

namespace wiola {

std::size_t BoundaryShape::bytes() const {
  std::size_t n = sizeof(WireHeader) + rows.size() * sizeof(std::int64_t);
  for (auto r : rows) n += static_cast<std::size_t>(r) * width * dtype_size(dtype);
  return n;
}

BoundaryShape boundary_shape(int batch, int seq, int width, DType dtype, int carry,
                             SummaryMode summary) {
  BoundaryShape s;
  s.batch = batch;
  s.seq = seq;
  s.width = width;
  s.dtype = dtype;
  s.rows.push_back(std::int64_t(batch) * seq);
  const std::int64_t summary_rows = summary == SummaryMode::Causal ? std::int64_t(batch) * seq : batch;
  for (int c = 0; c < carry; ++c) s.rows.push_back(summary_rows);
  return s;
}

void pack_message(Backend& be, WireKind kind, int step, int microbatch, const BoundaryShape& shape,
                  std::span<const Tensor> tensors, std::vector<std::byte>& out) {
  require(tensors.size() == shape.rows.size(), "pack_message: ", tensors.size(),
          " tensors for a boundary of ", shape.rows.size());
  out.resize(shape.bytes());
  WireHeader h{kWireMagic, static_cast<std::uint8_t>(kind), static_cast<std::uint8_t>(shape.dtype),
               static_cast<std::uint16_t>(tensors.size()), step, microbatch, shape.batch,
               shape.seq, shape.width, 0};
  std::byte* p = out.data();
  std::memcpy(p, &h, sizeof h);
  p += sizeof h;
  std::memcpy(p, shape.rows.data(), shape.rows.size() * sizeof(std::int64_t));
  p += shape.rows.size() * sizeof(std::int64_t);
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const Tensor& t = tensors[i];
    require(t.rows() == shape.rows[i] && t.cols() == shape.width && t.dtype() == shape.dtype &&
                t.contiguous(),
            "pack_message: tensor ", i, " is ", t.rows(), "x", t.cols(), " ", dtype_name(t.dtype()),
            ", the boundary expects ", shape.rows[i], "x", shape.width, " ",
            dtype_name(shape.dtype));
    be.to_host(t, p);
    p += t.bytes();
  }
}

std::vector<Tensor> unpack_message(Backend& be, WireKind kind, int step, int microbatch,
                                   const BoundaryShape& shape, const std::vector<std::byte>& in) {
  const char* what = kind == WireKind::Activation ? "activation" : "gradient";
  require(in.size() == shape.bytes(), "pipeline ", what, " message of ", in.size(),
          " bytes, expected ", shape.bytes());
  WireHeader h;
  std::memcpy(&h, in.data(), sizeof h);
  require(h.magic == kWireMagic, "pipeline ", what, " message has a bad magic number");
  require(h.kind == static_cast<std::uint8_t>(kind), "pipeline message kind ", int(h.kind),
          " where a ", what, " was expected");
  require(h.step == step && h.microbatch == microbatch, "pipeline ", what, " for step ", h.step,
          " micro-batch ", h.microbatch, " arrived where step ", step, " micro-batch ",
          microbatch, " was expected");
  require(h.dtype == static_cast<std::uint8_t>(shape.dtype) && h.batch == shape.batch &&
              h.seq == shape.seq && h.width == shape.width &&
              h.n_tensors == shape.rows.size(),
          "pipeline ", what, " header (B=", h.batch, " T=", h.seq, " d=", h.width,
          " tensors=", h.n_tensors, ") does not match this stage (B=", shape.batch,
          " T=", shape.seq, " d=", shape.width, " tensors=", shape.rows.size(), ")");
  const std::byte* p = in.data() + sizeof h;
  std::vector<std::int64_t> rows(shape.rows.size());
  std::memcpy(rows.data(), p, rows.size() * sizeof(std::int64_t));
  p += rows.size() * sizeof(std::int64_t);
  require(rows == shape.rows, "pipeline ", what, " tensor rows do not match this stage");
  std::vector<Tensor> out;
  for (auto r : rows) {
    Tensor t = be.alloc(shape.dtype, r, shape.width);
    be.from_host(p, t);
    p += t.bytes();
    out.push_back(std::move(t));
  }
  return out;
}

}  // namespace wiola
