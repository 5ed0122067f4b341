// BatchFeed: micro-batches of the global order, with mixing, a held-out
// split and prefetching; the same samples for DP = 1, 2, 4, and a restarted
// run reproduces the next batch from the step number alone.
#include <gtest/gtest.h>

#include <algorithm>

#include "io/data_config.hpp"
#include "io_test_util.hpp"
#include "train/batch_feed.hpp"

namespace wiola {
namespace {

constexpr int kVocab = 1 << 20;
constexpr int T = 6;

struct Data {
  test::TempDir dir;
  test::FakeTokenizer tok{kVocab, kVocab - 1};
  std::string a, b;
  Data() {
    a = test::numbered_docs(dir.file("a.h5"), tok, 120, 10);
    b = test::numbered_docs(dir.file("b.h5"), tok, 30, 10);
  }
};

// A batch's rows as sortable values (inputs followed by the last target).
std::vector<std::vector<std::int32_t>> rows(const HostBatch& hb) {
  std::vector<std::vector<std::int32_t>> out;
  for (int i = 0; i < hb.batch; ++i) {
    std::vector<std::int32_t> r(hb.inputs.begin() + i * hb.seq, hb.inputs.begin() + (i + 1) * hb.seq);
    r.push_back(hb.targets[static_cast<std::size_t>((i + 1) * hb.seq - 1)]);
    // Targets are the inputs shifted by one.
    for (int t = 0; t + 1 < hb.seq; ++t)
      EXPECT_EQ(hb.targets[static_cast<std::size_t>(i * hb.seq + t)], hb.inputs[static_cast<std::size_t>(i * hb.seq + t + 1)]);
    out.push_back(std::move(r));
  }
  return out;
}

DatasetSpec mixed(const Data& d) {
  DataConfig c;
  c.train = {d.a, d.b};
  c.train_weights = {0.5, 0.5};
  return train_spec(c);
}

TEST(BatchFeed, TheGlobalBatchIsTheSameForEveryDataParallelDegree) {
  const Data d;
  const int global = 16, micro = 2;
  const BatchFeed one(mixed(d), T, 99);
  for (std::int64_t step = 0; step < 30; ++step) {
    auto single = rows(one.samples(step * global, global));
    std::sort(single.begin(), single.end());
    for (int dp : {1, 2, 4}) {
      std::vector<std::vector<std::int32_t>> merged;
      for (int r = 0; r < dp; ++r) {
        const BatchFeed feed(mixed(d), T, 99);
        const int share = global / dp;
        for (int mb = 0; mb < share / micro; ++mb) {
          auto part = rows(feed.samples(step * global + r * share + mb * micro, micro));
          merged.insert(merged.end(), part.begin(), part.end());
        }
      }
      std::sort(merged.begin(), merged.end());
      ASSERT_EQ(merged, single) << "step " << step << " dp " << dp;
    }
  }
}

TEST(BatchFeed, ResumingAtAStepReproducesTheNextBatch) {
  const Data d;
  const int global = 8;
  std::vector<HostBatch> run;
  {
    BatchFeed feed(mixed(d), T, 7);
    for (int step = 0; step < 40; ++step) run.push_back(feed.samples(step * global, global));
  }
  for (int s : {0, 1, 17, 39}) {
    const BatchFeed restarted(mixed(d), T, 7);  // nothing but the step number
    EXPECT_EQ(restarted.samples(s * global, global).inputs, run[static_cast<std::size_t>(s)].inputs);
  }
  // Another seed, another order.
  const BatchFeed other(mixed(d), T, 8);
  EXPECT_NE(other.samples(0, global).inputs, run[0].inputs);
}

TEST(BatchFeed, PrefetchingChangesNothing) {
  const Data d;
  FeedOptions off;
  off.prefetch = 0;
  FeedOptions deep;
  deep.prefetch = 4;
  BatchFeed a(mixed(d), T, 3, off), b(mixed(d), T, 3, deep);
  b.set_access_pattern(16, 8, 8);
  for (int step = 0; step < 20; ++step)
    for (int mb = 0; mb < 4; ++mb) {
      const std::int64_t first = step * 16 + 8 + mb * 2;
      EXPECT_EQ(a.samples(first, 2).inputs, b.samples(first, 2).inputs);
    }
  EXPECT_GT(b.prefetch_stats().hits + b.prefetch_stats().misses, 0);
}

TEST(BatchFeed, OldConstructorAndValidationSplit) {
  const Data d;
  const BatchFeed plain(std::vector<std::string>{d.a, d.b}, T, 1);
  EXPECT_EQ(plain.dataset().num_components(), 1u);
  EXPECT_FALSE(plain.dataset().weighted());

  DataConfig c;
  c.train = {d.a, d.b};
  c.val_fraction = 0.25;
  const auto vs = val_spec(c);
  ASSERT_TRUE(vs.has_value());
  const BatchFeed train(train_spec(c), T, 1), val(*vs, T, 0);
  EXPECT_EQ(train.dataset().num_tokens() + val.dataset().num_tokens(), 1500);
  require_same_tokenizer(train.dataset(), val.dataset());
  EXPECT_EQ(val.samples(0, 3).batch, 3);

  c.val = {d.b};
  EXPECT_ERROR(val_spec(c), "--val-fraction and --val-data are exclusive");
  c.val.clear();
  c.val_fraction = 1.0;
  EXPECT_ERROR(train_spec(c), "--val-fraction must be in [0, 1)");
  DataConfig none;
  none.train = {d.a};
  EXPECT_FALSE(val_spec(none).has_value());
}

TEST(BatchFeed, ValidationWithAnotherTokenizerIsRefused) {
  const Data d;
  const test::FakeTokenizer other(kVocab, kVocab - 1, "other");
  const std::string v = test::numbered_docs(d.dir.file("v.h5"), other, 10, 10);
  const TokenDataset train(std::vector<std::string>{d.a}, T), val(std::vector<std::string>{v}, T);
  EXPECT_ERROR(require_same_tokenizer(train, val), "v.h5: the validation data's tokenizer 'other'",
               "differs from the training data's 'fake'");
  DatasetSpec s = DatasetSpec::from_files({v});
  s.require_tokenizer_hash = train.tokenizer_hash();
  EXPECT_ERROR(TokenDataset(s, T), "v.h5: tokenizer 'other'", "disagrees with the configured");
  s.require_tokenizer_hash.clear();
  s.require_vocab_size = 257;
  EXPECT_ERROR(TokenDataset(s, T), "v.h5: vocab_size 1048576 disagrees with the configured vocabulary 257");
}

}  // namespace
}  // namespace wiola
