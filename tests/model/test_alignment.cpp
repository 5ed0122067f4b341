// Every view a GEMM or a vector kernel reads from a stage's flat buffers
// starts 256-byte aligned (core/alignment.hpp): each parameter of every
// preset's layout, in both families, for every way of cutting the layers into
// stages and into interleaved chunks, in bf16 parameters and fp32 gradients,
// master weights and moments; and every ZeRO shard of those buffers. Without
// the padding, wiola-1.5b's FFN weights sat at odd bf16 offsets behind the
// one-element ctx_logit.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/alignment.hpp"
#include "core/dtype.hpp"
#include "core/param_layout.hpp"
#include "train/zero_shard.hpp"

namespace wiola {
namespace {

// Offsets in elements of every type a flat buffer holds on a device.
bool aligned_in_every_dtype(std::int64_t offset) {
  for (DType t : {DType::BF16, DType::F32})
    if (offset * std::int64_t(dtype_size(t)) % kOperandAlignBytes != 0) return false;
  return true;
}

// The layout's own invariants, and the alignment of every view and shard.
void check_layout(const ParamLayout& layout, const std::string& what) {
  SCOPED_TRACE(what);
  std::int64_t end = 0, parameters = 0;
  for (const ParamSpec& p : layout.entries()) {
    EXPECT_TRUE(aligned_in_every_dtype(p.offset))
        << p.name << " starts at element " << p.offset << ": "
        << p.offset * 2 % kOperandAlignBytes << " bytes past a 256-byte boundary in bf16";
    if (p.stacked)
      EXPECT_EQ(p.offset, end) << p.name << " must follow its neighbour (one fused matrix)";
    else
      EXPECT_GE(p.offset, end) << p.name << " overlaps the parameter before it";
    end = p.offset + p.numel();
    parameters += p.numel();
  }
  EXPECT_EQ(layout.parameters(), parameters);
  EXPECT_GE(layout.total(), end);
  EXPECT_TRUE(aligned_in_every_dtype(layout.total())) << "total " << layout.total();
  // The runs of parameter elements hold every parameter and no padding.
  std::int64_t in_runs = 0;
  for (const auto& [lo, hi] : layout.element_runs(0, layout.total())) in_runs += hi - lo;
  EXPECT_EQ(in_runs, parameters);

  for (int dp = 1; dp <= 8; ++dp) {
    std::int64_t next = 0;
    for (int r = 0; r < dp; ++r) {
      const auto [first, last] = zero_shard(layout.total(), dp, r);
      EXPECT_EQ(first, next) << "dp " << dp << ": shard " << r << " does not follow shard "
                             << r - 1;
      EXPECT_TRUE(aligned_in_every_dtype(first))
          << "dp " << dp << ": shard " << r << " starts at element " << first;
      EXPECT_LE(last - first, layout.total() / dp + kAlignElements);
      next = last;
    }
    EXPECT_EQ(next, layout.total()) << "dp " << dp << ": the shards do not cover the buffer";
  }
}

// Layers [0, L) cut at `cuts` into consecutive stages.
std::vector<StageSpec> stages_from_cuts(int L, const std::vector<int>& cuts) {
  std::vector<StageSpec> out;
  int first = 0;
  for (std::size_t i = 0; i <= cuts.size(); ++i) {
    const int end = i < cuts.size() ? cuts[i] : L;
    out.push_back({first, end, i == 0, i == cuts.size()});
    first = end;
  }
  return out;
}

std::vector<ModelConfig> presets_in_both_families() {
  std::vector<ModelConfig> out;
  for (const std::string& name : preset_names())
    for (Arch arch : {Arch::Wiola, Arch::Wiola13m}) {
      ModelConfig c = preset(name);
      c.arch = arch;
      out.push_back(c);
    }
  return out;
}

std::string describe(const ModelConfig& c) {
  return c.preset + " as " + std::string(arch_name(c.arch));
}

TEST(Alignment, EveryViewOfEveryStageSplitStartsOnA256ByteBoundary) {
  for (const ModelConfig& c : presets_in_both_families()) {
    check_layout(ParamLayout(c, StageSpec::whole(c)), describe(c) + ", one stage");
    // Every cut into two stages and into three.
    for (int a = 1; a < c.L; ++a) {
      for (const StageSpec& s : stages_from_cuts(c.L, {a}))
        check_layout(ParamLayout(c, s), describe(c) + ", 2 stages cut at " + std::to_string(a));
      for (int b = a + 1; b < c.L; ++b)
        for (const StageSpec& s : stages_from_cuts(c.L, {a, b}))
          check_layout(ParamLayout(c, s), describe(c) + ", 3 stages cut at " +
                                              std::to_string(a) + "," + std::to_string(b));
    }
  }
}

TEST(Alignment, InterleavedChunksOnARankStartOnA256ByteBoundary) {
  for (const ModelConfig& c : presets_in_both_families()) {
    // P stages x v chunks of (nearly) equal layer counts; rank s holds chunks s, s + P, ...
    for (int P = 2; P <= 4; ++P)
      for (int v = 2; v <= 3 && P * v <= c.L; ++v) {
        std::vector<int> cuts;
        for (int k = 1; k < P * v; ++k) cuts.push_back(c.L * k / (P * v));
        const std::vector<StageSpec> all = stages_from_cuts(c.L, cuts);
        for (int s = 0; s < P; ++s) {
          std::vector<StageSpec> mine;
          for (int k = s; k < P * v; k += P) mine.push_back(all[std::size_t(k)]);
          check_layout(ParamLayout(c, mine), describe(c) + ", rank " + std::to_string(s) +
                                                 " of pp " + std::to_string(P) + " v " +
                                                 std::to_string(v));
        }
      }
  }
}

TEST(Alignment, PaddingLeavesTheExactParameterCountAndIsZeroAtInit) {
  for (const ModelConfig& c : presets_in_both_families()) {
    const ParamLayout layout(c, StageSpec::whole(c));
    EXPECT_EQ(layout.parameters(), param_count(c)) << describe(c);
    if (layout.total() > 1'000'000) continue;  // the small presets show the padding's values
    std::vector<double> host;
    init_params_host(layout, 1234, host);
    std::vector<bool> is_param(host.size(), false);
    for (const ParamSpec& p : layout.entries())
      for (std::int64_t i = 0; i < p.numel(); ++i) is_param[std::size_t(p.offset + i)] = true;
    for (std::size_t i = 0; i < host.size(); ++i) {
      if (is_param[i]) continue;
      ASSERT_EQ(host[i], 0.0) << describe(c) << ": padding element " << i;
    }
  }
}

TEST(Alignment, AddressAlignmentIsTheLargestPowerOfTwoUpTo256) {
  alignas(512) static unsigned char buffer[1024];
  EXPECT_EQ(address_alignment(buffer), 256);
  EXPECT_EQ(address_alignment(buffer + 256), 256);
  EXPECT_EQ(address_alignment(buffer + 128), 128);
  EXPECT_EQ(address_alignment(buffer + 2), 2);
  EXPECT_EQ(address_alignment(buffer + 6), 2);
  EXPECT_EQ(address_alignment(buffer + 1), 1);
  EXPECT_EQ(address_alignment(buffer + 64 + 32), 32);
}

}  // namespace
}  // namespace wiola
