// The manifest's own text: what a resumed run reads back must be what the
// stopped run wrote, to the bit.
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "io/checkpoint_manifest.hpp"

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

}  // namespace
}  // namespace wiola
