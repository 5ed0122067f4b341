// wiola_counts_fit_check FIT.json CHECK.json: fits FIT's three shapes
// (tools/wiola-profile/counted_work.hpp) and compares the fit with what
// CHECK counted at its own three shapes, part by part. The fit must give the
// matrix products' and the attention tiles' FLOPs and the device operations
// exactly: they are fixed, linear in the tokens or a causal mask's tiles.
// The bytes are printed beside them, not checked: what the embedding's
// backward touches depends on how many distinct tokens a micro-batch holds,
// and parameter-sized partial sums grow with the blocks, not the tokens.
// Exit status 1 when an exact quantity is off.
#include <cmath>
#include <cstdio>
#include <exception>

#include "core/model_config.hpp"
#include "wiola-profile/counted_work.hpp"
#include "wiola-profile/files.hpp"

using namespace wiola;
using namespace wiola::profile;

namespace {

double relative(double fitted, double actual) {
  return actual != 0 ? (fitted - actual) / actual : fitted - actual;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: wiola_counts_fit_check FIT.json CHECK.json\n");
    return 2;
  }
  try {
    const Json check = read_json_file(argv[2]);
    const ModelConfig model = preset(check.at("preset").get<std::string>());
    int wrong = 0;
    for (const Json& shape : check.at("shapes")) {
      const int b = shape.at("batch").get<int>(), t = shape.at("seq").get<int>();
      const CountedWork w = read_counted_work(argv[1], model, b, t);
      const std::pair<const char*, const CountedPart*> parts[] = {
          {"atm_layer", &w.atm_layer}, {"plain_layer", &w.plain_layer},
          {"embedding", &w.embedding}};
      for (const auto& [name, part] : parts) {
        for (const char* pass : {"forward", "backward"}) {
          const Work& fit = std::string(pass) == "forward" ? part->forward : part->backward;
          const Work got = counted_pass(shape.at(name).at(pass), argv[2]);
          const bool exact = fit.gemm_flops == got.gemm_flops &&
                             fit.attention_flops == got.attention_flops &&
                             fit.operations == got.operations;
          wrong += exact ? 0 : 1;
          std::printf("%dx%d %-12s %-8s GEMM %+.1e attention %+.1e operations %+.1e bytes "
                      "%+.2e%s\n",
                      b, t, name, pass, relative(fit.gemm_flops, got.gemm_flops),
                      relative(fit.attention_flops, got.attention_flops),
                      relative(fit.operations, got.operations), relative(fit.bytes, got.bytes),
                      exact ? "" : "  <- not exact");
        }
      }
    }
    std::printf("%s\n", wrong ? "the fit is off" : "the fit gives every FLOP and operation exactly");
    return wrong ? 1 : 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "wiola_counts_fit_check: %s\n", e.what());
    return 2;
  }
}
