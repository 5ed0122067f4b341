// Training on the embedded data: a small model's validation loss falls well
// below the unigram entropy of the training text within a few hundred steps.
#include <gtest/gtest.h>

#include <cmath>
#include <sstream>

#include "comm/mpi_communicator.hpp"
#include "io/h5.hpp"
#include "train/trainer.hpp"

extern wiola::comm::MpiRuntime* g_mpi;

namespace wiola {
namespace {

// Entropy (nats) of the token frequencies of a token file.
double unigram_entropy(const std::string& path) {
  const h5::File f = h5::File::open_read(path);
  const std::vector<std::int32_t> tokens = f.read<std::int32_t>("tokens");
  std::vector<double> count(1 << 16, 0.0);
  for (auto t : tokens) count[static_cast<std::size_t>(t)] += 1;
  double h = 0;
  for (double c : count)
    if (c > 0) {
      const double p = c / double(tokens.size());
      h -= p * std::log(p);
    }
  return h;
}

TEST(Training, ValidationLossFallsWellBelowTheUnigramEntropy) {
  const double h = unigram_entropy(WIOLA_EMBEDDED_TRAIN_FILE);
  TrainOptions o;
  o.model.config = preset("wiola-mini");
  o.data.train_files = {WIOLA_EMBEDDED_TRAIN_FILE};
  o.data.val_files = {WIOLA_EMBEDDED_VAL_FILE};
  o.parallel.micro_batch = 8;
  o.parallel.global_batch = 16;
  o.optimizer.steps = 250;
  o.optimizer.lr = 3e-3;
  o.logging.eval_interval = 0;
  o.logging.eval_batches = 16;
  o.logging.log_interval = 50;
  std::ostringstream log;
  const TrainSummary s = train(o, g_mpi->world(), g_mpi->host(), log);
  std::printf("%s", log.str().c_str());
  std::printf("[training] unigram entropy %.4f nats, first loss %.4f, validation loss %.4f\n", h,
              s.first_loss, s.last_val_loss);
  ASSERT_GT(s.last_val_loss, 0.0);
  // Measured once on the embedded BPE data (docs/testing.md): entropy 6.461,
  // validation loss 5.460 (1.0 below), training loss 7.633 -> 5.433.
  EXPECT_LT(s.last_val_loss, h - 0.75);
  EXPECT_LT(s.last_loss, s.first_loss - 1.8);
}

}  // namespace
}  // namespace wiola
