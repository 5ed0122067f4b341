// The stage-boundary header: what a receiver accepts and what it refuses.
#include "pipeline/wire.hpp"

#include <gtest/gtest.h>

#include <cstring>

#include "core/error.hpp"

namespace wiola {
namespace {

// Runs check_header and returns its error ("" when accepted).
std::string refusal(WireKind kind, int step, int mb, const BoundaryShape& shape,
                    const std::vector<std::byte>& msg) {
  try {
    check_header(kind, step, mb, shape, msg);
    return "";
  } catch (const Error& e) {
    return e.what();
  }
}

TEST(pipelineWire, ShapesOfBothSummaryModes) {
  const BoundaryShape causal = boundary_shape(3, 8, 16, DType::F32, 1, SummaryMode::Causal);
  EXPECT_EQ(causal.rows, (std::vector<std::int64_t>{24, 24}));
  EXPECT_EQ(causal.payload_bytes(), std::size_t(48 * 16 * 4));
  EXPECT_EQ(causal.header_bytes(), sizeof(WireHeader) + 2 * sizeof(std::int64_t));
  const BoundaryShape seq = boundary_shape(3, 8, 16, DType::F64, 2, SummaryMode::Sequence);
  EXPECT_EQ(seq.rows, (std::vector<std::int64_t>{24, 3, 3}));
  EXPECT_EQ(seq.total_rows(), 30);
}

TEST(pipelineWire, AcceptsItsOwnHeaderAndRefusesEveryMismatchByName) {
  const BoundaryShape shape = boundary_shape(2, 4, 8, DType::F32, 1, SummaryMode::Causal);
  const auto msg = encode_header(WireKind::Gradient, 5, 3, shape);
  EXPECT_EQ(refusal(WireKind::Gradient, 5, 3, shape, msg), "");

  EXPECT_NE(refusal(WireKind::Gradient, 6, 3, shape, msg).find("for step 5 micro-batch 3"),
            std::string::npos);
  EXPECT_NE(refusal(WireKind::Gradient, 5, 2, shape, msg).find("micro-batch 2 was expected"),
            std::string::npos);
  EXPECT_NE(refusal(WireKind::Activation, 5, 3, shape, msg).find("activation was expected"),
            std::string::npos);
  const BoundaryShape wider = boundary_shape(2, 4, 16, DType::F32, 1, SummaryMode::Causal);
  EXPECT_NE(refusal(WireKind::Gradient, 5, 3, wider, msg).find("does not match this stage"),
            std::string::npos);
  const BoundaryShape more = boundary_shape(2, 4, 8, DType::F32, 2, SummaryMode::Causal);
  EXPECT_NE(refusal(WireKind::Gradient, 5, 3, more, msg).find("bytes, expected"),
            std::string::npos);

  auto bad_magic = msg;
  bad_magic[0] = std::byte{0};
  EXPECT_NE(refusal(WireKind::Gradient, 5, 3, shape, bad_magic).find("magic"), std::string::npos);
  auto bad_rows = msg;
  const std::int64_t rows = 7;
  std::memcpy(bad_rows.data() + sizeof(WireHeader) + sizeof(std::int64_t), &rows, sizeof rows);
  EXPECT_NE(refusal(WireKind::Gradient, 5, 3, shape, bad_rows).find("rows do not match"),
            std::string::npos);
}

TEST(pipelineWire, TagsOfEveryPartDiffer) {
  std::vector<int> tags;
  for (WireKind k : {WireKind::Activation, WireKind::Gradient})
    for (int part = 0; part < 4; ++part) tags.push_back(wire_tag(k, part, 4));
  for (std::size_t i = 0; i < tags.size(); ++i)
    for (std::size_t j = i + 1; j < tags.size(); ++j) EXPECT_NE(tags[i], tags[j]);
}

// Wiola 13M's boundary carries the activation alone, and the header says which
// family a message is: a main-family receiver of the same shape refuses it.
TEST(pipelineWire, Wiola13mCarriesTheActivationAloneAndSaysSo) {
  const BoundaryShape b13 = boundary_shape(2, 4, 8, DType::F32, 0, SummaryMode::Causal,
                                           Arch::Wiola13m);
  EXPECT_EQ(b13.rows, (std::vector<std::int64_t>{8}));
  const auto msg = encode_header(WireKind::Activation, 1, 0, b13);
  EXPECT_EQ(refusal(WireKind::Activation, 1, 0, b13, msg), "");
  WireHeader h;
  std::memcpy(&h, msg.data(), sizeof h);
  EXPECT_EQ(h.arch, 1);
  const BoundaryShape main0 = boundary_shape(2, 4, 8, DType::F32, 0, SummaryMode::Causal);
  EXPECT_EQ(main0.rows, b13.rows);
  EXPECT_NE(refusal(WireKind::Activation, 1, 0, main0, msg)
                .find("is of wiola13m: the activation alone, where this stage expects wiola"),
            std::string::npos);
  const auto main_msg = encode_header(WireKind::Activation, 1, 0, main0);
  EXPECT_NE(refusal(WireKind::Activation, 1, 0, b13, main_msg).find("expects wiola13m"),
            std::string::npos);
  // The main family's header keeps 0 where the field was reserved.
  std::memcpy(&h, encode_header(WireKind::Activation, 1, 0, main0).data(), sizeof h);
  EXPECT_EQ(h.arch, 0);
  EXPECT_THROW(boundary_shape(2, 4, 8, DType::F32, 1, SummaryMode::Causal, Arch::Wiola13m), Error);
}

}  // namespace
}  // namespace wiola
