// The checkpoint folder's names: what counts as a checkpoint, what pruning
// retires (hidden first, deleted after) and what a run's start removes.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include "io/checkpoint_store.hpp"
#include "io_test_util.hpp"

namespace wiola {
namespace {

namespace fs = std::filesystem;

// A directory with a manifest file (its content does not matter here).
void make_checkpoint(const test::TempDir& d, const std::string& name) {
  fs::create_directories(d.path() / name);
  test::write_text(d.file(name + "/" + kManifestName), "wiola-checkpoint 1\n");
}

std::vector<std::string> entries(const test::TempDir& d) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(d.path())) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

TEST(CheckpointStore, OnlyStepNNamesAreCheckpoints) {
  EXPECT_EQ(checkpoint_step("step-00000120"), 120);
  EXPECT_EQ(checkpoint_step("step-00000120.partial"), -1);
  EXPECT_EQ(checkpoint_step(".step-00000120.retired"), -1);
  EXPECT_EQ(checkpoint_step("step-120"), -1);
  EXPECT_EQ(checkpoint_step("latest"), -1);

  test::TempDir d;
  make_checkpoint(d, "step-00000002");
  make_checkpoint(d, "step-00000004");
  // A crash between the manifest and the rename: a .partial holding a manifest.
  make_checkpoint(d, "step-00000009.partial");
  make_checkpoint(d, ".step-00000008.retired");
  fs::create_directories(d.path() / "step-00000006");  // no manifest
  EXPECT_EQ(list_checkpoints(d.path().string()),
            (std::vector<std::string>{"step-00000004", "step-00000002"}));
  EXPECT_EQ(list_checkpoint_dirs(d.path().string()),
            (std::vector<std::string>{"step-00000006", "step-00000004", "step-00000002"}));
  EXPECT_THROW(require_loadable_name(d.file("step-00000009.partial")), Error);
  EXPECT_THROW(require_loadable_name(d.file(".step-00000008.retired") + "/"), Error);
  EXPECT_NO_THROW(require_loadable_name(d.file("step-00000004")));
}

TEST(CheckpointStore, EveryWayOfNamingACheckpointResolvesAlike) {
  test::TempDir d;
  const std::string save = d.file("save");
  fs::create_directories(save);
  make_checkpoint(d, "save/step-00000002");
  make_checkpoint(d, "save/step-00000004");
  make_checkpoint(d, "save/step-00000006.partial");
  using K = NamedCheckpoint::Kind;
  // A step folder is itself; a save folder without `latest` is its newest
  // complete step; with `latest`, that one; `latest` naming a step removed
  // since falls back to the newest complete one.
  EXPECT_EQ(resolve_checkpoint_dir(d.file("save/step-00000002")), d.file("save/step-00000002"));
  EXPECT_EQ(resolve_checkpoint_dir(save), d.file("save/step-00000004"));
  write_latest(save, "step-00000002");
  EXPECT_EQ(resolve_checkpoint_dir(save), d.file("save/step-00000002"));
  write_latest(save, "step-00000009");
  EXPECT_EQ(resolve_checkpoint_dir(save), d.file("save/step-00000004"));
  // Exports and weights files, for the tools that read weights only.
  fs::create_directories(d.path() / "hf");
  test::write_text(d.file("hf/model.safetensors"), "");
  EXPECT_EQ(resolve_checkpoint(d.file("hf")).kind, K::Safetensors);
  EXPECT_EQ(resolve_checkpoint(d.file("hf")).path, d.file("hf/model.safetensors"));
  EXPECT_EQ(resolve_checkpoint(d.file("hf/model.safetensors")).kind, K::Safetensors);
  test::write_text(d.file("w.h5"), "");
  EXPECT_EQ(resolve_checkpoint(d.file("w.h5")).kind, K::WeightsFile);
  // One message for what is none of them; the export refused where a
  // training checkpoint is needed; unfinished steps never load.
  fs::create_directories(d.path() / "empty");
  EXPECT_ERROR(resolve_checkpoint(d.file("empty")), "empty: not a checkpoint",
               "a step folder (SAVE/step-N", "a save folder", "a safetensors export", "a weights file");
  EXPECT_ERROR(resolve_checkpoint(d.file("nowhere")), "nowhere: no such file or directory");
  EXPECT_ERROR(resolve_checkpoint_dir(d.file("hf")), "a safetensors export holds the weights only");
  EXPECT_ERROR(resolve_checkpoint_dir(d.file("w.h5")), "a weights file holds the weights only");
  EXPECT_ERROR(resolve_checkpoint_dir(d.file("save/step-00000006.partial")), "unfinished checkpoint");
}

TEST(CheckpointStore, PruningHidesBeforeItDeletes) {
  test::TempDir d;
  for (const char* n : {"step-00000001", "step-00000002", "step-00000003", "step-00000004",
                        "step-00000009"})
    make_checkpoint(d, n);
  make_checkpoint(d, "step-00000005.partial");
  // Keep 2 among the steps up to 4; step 9 is an earlier run's and stays.
  const std::vector<std::string> retired = retire_old_checkpoints(d.path().string(), 2, 4);
  EXPECT_EQ(retired, (std::vector<std::string>{"step-00000002", "step-00000001",
                                               "step-00000005.partial"}));
  // Between the two halves (a kill here), nothing under a step-N name is missing
  // a part: the retired ones are only under hidden names.
  EXPECT_EQ(entries(d), (std::vector<std::string>{
                            ".step-00000001.retired", ".step-00000002.retired",
                            ".step-00000005.partial.retired", "step-00000003",
                            "step-00000004", "step-00000009"}));
  EXPECT_EQ(list_checkpoints(d.path().string()),
            (std::vector<std::string>{"step-00000009", "step-00000004", "step-00000003"}));
  remove_retired(d.path().string());
  EXPECT_EQ(entries(d),
            (std::vector<std::string>{"step-00000003", "step-00000004", "step-00000009"}));
  // keep 0 keeps all.
  EXPECT_TRUE(retire_old_checkpoints(d.path().string(), 0, 9).empty());
}

TEST(CheckpointStore, LeftoversAreRemovedAtStart) {
  test::TempDir d;
  make_checkpoint(d, "step-00000004");
  make_checkpoint(d, "step-00000006.partial");
  make_checkpoint(d, ".step-00000002.retired");
  EXPECT_EQ(remove_leftovers(d.path().string()),
            (std::vector<std::string>{".step-00000002.retired", "step-00000006.partial"}));
  EXPECT_EQ(entries(d), (std::vector<std::string>{"step-00000004"}));
  EXPECT_TRUE(remove_leftovers(d.path().string()).empty());
  // Retiring a checkpoint that has an older retired copy of the same name.
  make_checkpoint(d, ".step-00000004.retired");
  retire_checkpoint(d.path().string(), "step-00000004");
  EXPECT_EQ(entries(d), (std::vector<std::string>{".step-00000004.retired"}));
}

}  // namespace
}  // namespace wiola
