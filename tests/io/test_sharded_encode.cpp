// encode --out-dir: shares by size, the same bytes whatever the task count,
// re-runs redo only what is missing, and no manifest lists an unfinished part.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "io/byte_tokenizer.hpp"
#include "io/data_sources.hpp"
#include "io/sharded_encode.hpp"
#include "io_test_util.hpp"

namespace wiola {
namespace {

namespace fs = std::filesystem;

std::string bytes_of(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Every file of a folder, name -> contents.
std::map<std::string, std::string> folder(const fs::path& dir) {
  std::map<std::string, std::string> files;
  for (const auto& e : fs::directory_iterator(dir)) files[e.path().filename().string()] = bytes_of(e.path());
  return files;
}

struct Corpus {
  test::TempDir dir;
  std::vector<std::string> inputs;
  explicit Corpus(int n) {
    for (int f = 0; f < n; ++f) {
      std::string text;
      for (int d = 0; d < 20 + 13 * f; ++d)
        text += "{\"text\": \"file " + std::to_string(f) + " document " + std::to_string(d) + "\"}\n";
      inputs.push_back(dir.file("in-" + std::to_string(f) + ".jsonl"));
      test::write_text(inputs.back(), text);
    }
  }
};

TextInputOptions jsonl() {
  TextInputOptions in;
  in.format = TextFormat::JsonLines;
  return in;
}

ShardedEncodeReport run(const Corpus& c, const std::string& out, int task, int tasks,
                        std::int64_t shard_tokens = 0) {
  ShardedEncodeOptions o;
  o.out_dir = out;
  o.task = task;
  o.tasks = tasks;
  o.encode.progress = false;
  o.encode.threads = 1;
  o.encode.shard_tokens = shard_tokens;
  return encode_sharded(c.inputs, jsonl(), ByteTokenizer(), o);
}

TEST(ShardedEncode, SharesGoByteSizeLargestFirst) {
  EXPECT_EQ(assign_units({10, 50, 30, 20, 40}, 2), (std::vector<int>{0, 0, 1, 0, 1}));
  EXPECT_EQ(assign_units({5, 5, 5}, 5), (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(assign_units({7, 7}, 1), (std::vector<int>{0, 0}));
}

TEST(ShardedEncode, TheSameBytesWhateverTheTaskCount) {
  Corpus c(5);
  const std::string one = c.dir.file("one"), three = c.dir.file("three");
  const ShardedEncodeReport r1 = run(c, one, 0, 1, 300);
  EXPECT_EQ(r1.units.size(), 5u);
  EXPECT_FALSE(r1.manifest.empty());
  // HDF5 keeps times to the second: a later second must not change a byte.
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));
  std::vector<std::size_t> seen;
  for (int t = 0; t < 3; ++t) {
    const ShardedEncodeReport r = run(c, three, t, 3, 300);
    seen.insert(seen.end(), r.units.begin(), r.units.end());
    EXPECT_EQ(r.manifest.empty(), t < 2) << "task " << t;  // the last task completes the set
  }
  std::sort(seen.begin(), seen.end());
  EXPECT_EQ(seen, (std::vector<std::size_t>{0, 1, 2, 3, 4}));  // disjoint, all covered
  EXPECT_EQ(folder(one), folder(three));
  // The manifest is a dataset --train-data takes: every part, in input order.
  const DataSources s = resolve_data_sources({c.dir.file("three/dataset.manifest")});
  ASSERT_GE(s.all_files().size(), 6u);  // shard_tokens 300 splits the larger inputs
  EXPECT_EQ(fs::path(s.all_files().front()).filename(), "part-00000-00000.h5");
  EXPECT_EQ(fs::path(s.all_files().back()).filename().string().substr(0, 10), "part-00004");
}

TEST(ShardedEncode, ARerunRedoesOnlyWhatIsMissing) {
  Corpus c(4);
  const std::string out = c.dir.file("out");
  run(c, out, 0, 2);
  const ShardedEncodeReport second = run(c, out, 1, 2);
  ASSERT_FALSE(second.manifest.empty());
  const auto before = folder(out);
  // A task lost its part (and a manifest is never left listing a lost part
  // as done: the record is checked against the files).
  fs::remove(fs::path(out) / "part-00002.h5");
  const ShardedEncodeReport again = run(c, out, 0, 1);
  EXPECT_EQ(again.units.size(), 4u);
  EXPECT_EQ(again.skipped_done.size(), 3u);
  EXPECT_EQ(again.encoded.outputs.size(), 1u);
  EXPECT_EQ(folder(out), before);
  // Another tokenizer into the same folder is refused, naming the part.
  ShardedEncodeOptions o;
  o.out_dir = out;
  o.encode.progress = false;
  o.encode.shard_tokens = 1000;
  EXPECT_ERROR(encode_sharded(c.inputs, jsonl(), ByteTokenizer(), o), "part-00000.done",
               "other settings", "another --out-dir");
}

TEST(ShardedEncode, BadInputsAreNamedAndNoManifestIsWritten) {
  Corpus c(3);
  const std::string out = c.dir.file("out");
  std::vector<std::string> missing = c.inputs;
  missing.push_back(c.dir.file("nowhere.jsonl"));
  ShardedEncodeOptions o;
  o.out_dir = out;
  o.encode.progress = false;
  EXPECT_ERROR(encode_sharded(missing, jsonl(), ByteTokenizer(), o), "nowhere.jsonl: no such file");
  std::vector<std::string> twice = c.inputs;
  twice.push_back(c.inputs[0]);
  EXPECT_ERROR(encode_sharded(twice, jsonl(), ByteTokenizer(), o), "listed twice");
  o.task = 3;
  o.tasks = 3;
  EXPECT_ERROR(encode_sharded(c.inputs, jsonl(), ByteTokenizer(), o), "--task 3 is outside");

  // Input 1 turns bad at line 5: its task stops naming file and line, the
  // others finish, and no manifest appears until it is fixed.
  std::ofstream(c.inputs[1], std::ios::app) << "{\"text\": broken\n";
  const std::string good = bytes_of(c.inputs[1]);
  for (int t = 0; t < 3; ++t) {
    if (t == assign_units({1, 2, 3}, 3)[1]) {
      EXPECT_ERROR(run(c, out, t, 3), "in-1.jsonl:34", "not valid JSON");
    } else {
      EXPECT_TRUE(run(c, out, t, 3).manifest.empty());
    }
  }
  EXPECT_FALSE(fs::exists(fs::path(out) / "dataset.manifest"));
  EXPECT_FALSE(fs::exists(fs::path(out) / "part-00001.h5"));
  EXPECT_FALSE(fs::exists(fs::path(out) / "part-00001.h5.tmp"));
  test::write_text(c.inputs[1], good.substr(0, good.rfind("{\"text\": broken")));
  const ShardedEncodeReport fixed = run(c, out, 0, 1);
  EXPECT_EQ(fixed.skipped_done.size(), 2u);
  EXPECT_FALSE(fixed.manifest.empty());
}

}  // namespace
}  // namespace wiola
