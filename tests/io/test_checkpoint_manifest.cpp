// The manifest's own text: what a resumed run reads back must be what the
// stopped run wrote, to the bit.
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "io/checkpoint_manifest.hpp"
#include "io_test_util.hpp"

namespace wiola {
namespace {

std::string minimal_manifest(const std::string& extra_line) {
  return "wiola-checkpoint 1\nstep 6\nconsumed_samples 48\nupdates 6\n" + extra_line + "end\n";
}

TEST(CheckpointManifest, LossWindowSurvivesTheTextExactly) {
  CheckpointManifest m;
  m.step = 6;
  // A sum whose decimal text at 17 digits would still round-trip, and one
  // built by adding (0.1 + 0.2 is not 0.3): the bits must come back either way.
  for (double sum : {0.1 + 0.2, 7.570955631090328 * 2.0 + 1e-300, 0.0, -3.5}) {
    m.loss_window = {sum, 2};
    const CheckpointManifest back = CheckpointManifest::parse(m.to_text(), "manifest.txt");
    EXPECT_EQ(back.loss_window.steps, 2);
    EXPECT_EQ(std::memcmp(&back.loss_window.sum, &sum, sizeof sum), 0) << m.to_text();
  }
}

TEST(CheckpointManifest, OlderManifestsHaveAnEmptyLossWindow) {
  const CheckpointManifest m = CheckpointManifest::parse(minimal_manifest(""), "old/manifest.txt");
  EXPECT_EQ(m.loss_window.steps, 0);
  EXPECT_EQ(m.loss_window.sum, 0.0);
}

TEST(CheckpointManifest, BadLossWindowIsRefusedByLine) {
  for (const char* bad : {"loss_window 2 seven\n", "loss_window -1 0x1p+0\n", "loss_window 2\n",
                          "loss_window 2 0x1p+0junk\n"}) {
    try {
      CheckpointManifest::parse(minimal_manifest(bad), "run/step-6/manifest.txt");
      ADD_FAILURE() << "accepted: " << bad;
    } catch (const std::exception& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("run/step-6/manifest.txt line 5"), std::string::npos) << what;
      EXPECT_NE(what.find("bad loss_window"), std::string::npos) << what;
    }
  }
}

// Pieces are checked as a whole: a reader counts the elements the pieces of a
// tensor cover, so two that overlap would let a gap pass for a full tensor.
TEST(CheckpointManifest, PiecesThatOverlapOrDisagreeOnTheShapeAreRefused) {
  const std::string a = "piece w param 4 4 0 8 rank-00000.h5 param/w@0\n";
  EXPECT_NO_THROW(CheckpointManifest::parse(
      minimal_manifest(a + "piece w param 4 4 8 16 rank-00001.h5 param/w@8\n"), "ck/manifest.txt"));
  // Another kind of the same tensor may use the same range.
  EXPECT_NO_THROW(CheckpointManifest::parse(
      minimal_manifest(a + "piece w exp_avg 4 4 0 8 rank-00000.h5 exp_avg/w@0\n"), "ck/manifest.txt"));
  EXPECT_ERROR(CheckpointManifest::parse(
                   minimal_manifest(a + "piece w param 4 4 0 8 rank-00001.h5 param/w@0\n"), "ck/manifest.txt"),
               "ck/manifest.txt: tensor 'w' (param): pieces [0, 8) in rank-00000.h5 and [0, 8) in "
               "rank-00001.h5 overlap");
  EXPECT_ERROR(CheckpointManifest::parse(
                   minimal_manifest(a + "piece w param 2 8 8 16 rank-00001.h5 param/w@8\n"), "ck/manifest.txt"),
               "ck/manifest.txt: tensor 'w' (param): its pieces disagree on its shape (4x4 in "
               "rank-00000.h5, 2x8 in rank-00001.h5)");
}

// A shape whose element count overflows, or that is not positive, is refused
// by its line (the product was once computed in signed 64 bits, unchecked).
TEST(CheckpointManifest, APieceShapeThatOverflowsIsRefused) {
  for (const char* bad : {"piece w param 4611686018427387904 4 0 1 f d\n", "piece w param -1 -1 0 1 f d\n",
                          "piece w param 0 5 0 1 f d\n"}) {
    EXPECT_ERROR(CheckpointManifest::parse(minimal_manifest(bad), "ck/manifest.txt"),
                 "ck/manifest.txt line 5: piece shape is not two positive dimensions");
  }
}

}  // namespace
}  // namespace wiola
