#include "model/generate.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>

#include "core/error.hpp"
#include "core/rng.hpp"

namespace wiola {

void SamplingOptions::validate() const {
  require(max_new_tokens >= 0, "--max-new-tokens must be >= 0, got ", max_new_tokens);
  require(std::isfinite(temperature) && temperature >= 0, "--temperature must be >= 0, got ",
          temperature);
  require(top_k >= 0, "--top-k must be >= 0 (0 keeps every token), got ", top_k);
  require(top_p > 0 && top_p <= 1, "--top-p must be in (0, 1] (1 keeps every token), got ",
          top_p);
  require(vocab >= 0, "sampling: vocabulary limit ", vocab, " is negative");
}

Sampler::Sampler(SamplingOptions options)
    : o_(std::move(options)), key_(stream_key(o_.seed, hash_name("wiola-generate"))) {
  o_.validate();
}

std::int32_t Sampler::pick(std::span<const double> all, std::uint64_t step) const {
  const std::span<const double> logits =
      o_.vocab > 0 && all.size() > std::size_t(o_.vocab) ? all.first(std::size_t(o_.vocab)) : all;
  const std::size_t V = logits.size();
  require(V > 0, "sampling from an empty row of logits");
  for (std::size_t i = 0; i < V; ++i)
    require(std::isfinite(logits[i]), "the model produced a non-finite logit (id ", i, ")");
  if (o_.greedy || o_.temperature == 0)
    return static_cast<std::int32_t>(std::max_element(logits.begin(), logits.end()) -
                                     logits.begin());

  // Candidates, most likely first (ties: lower id first), cut to top-k.
  std::vector<std::int32_t> order(V);
  std::iota(order.begin(), order.end(), 0);
  const std::size_t keep = o_.top_k > 0 ? std::min(V, std::size_t(o_.top_k)) : V;
  const auto more_likely = [&](std::int32_t a, std::int32_t b) {
    return logits[std::size_t(a)] > logits[std::size_t(b)] ||
           (logits[std::size_t(a)] == logits[std::size_t(b)] && a < b);
  };
  std::partial_sort(order.begin(), order.begin() + std::ptrdiff_t(keep), order.end(), more_likely);
  order.resize(keep);

  // Softmax at the temperature, then the nucleus: the shortest head reaching top_p.
  const double top = logits[std::size_t(order[0])];
  std::vector<double> p(keep);
  double total = 0;
  for (std::size_t i = 0; i < keep; ++i) {
    p[i] = std::exp((logits[std::size_t(order[i])] - top) / o_.temperature);
    total += p[i];
  }
  std::size_t n = keep;
  if (o_.top_p < 1) {
    double mass = 0;
    for (n = 0; n < keep;) {
      mass += p[n++] / total;
      if (mass >= o_.top_p) break;
    }
  }
  const double mass = std::accumulate(p.begin(), p.begin() + std::ptrdiff_t(n), 0.0);
  double u = uniform01(key_, step) * mass;
  for (std::size_t i = 0; i < n; ++i) {
    u -= p[i];
    if (u < 0) return order[i];
  }
  return order[n - 1];
}

double GenerationStats::tokens_per_second() const {
  return new_tokens > 1 && decode_seconds > 0 ? double(new_tokens - 1) / decode_seconds : 0.0;
}

GenerationStats generate(CachedDecoder& decoder, std::span<const std::int32_t> prompt,
                         const SamplingOptions& options,
                         const std::function<void(std::int32_t)>& on_token) {
  using Clock = std::chrono::steady_clock;
  const auto seconds = [](Clock::time_point a, Clock::time_point b) {
    return std::chrono::duration<double>(b - a).count();
  };
  const Sampler sampler(options);
  require(!prompt.empty(), "the prompt is empty: generation needs at least one token");
  Backend& be = decoder.backend();
  const std::size_t T = std::size_t(decoder.capacity());

  // The tokens so far; the decoder holds the window [start, context.size()).
  std::vector<std::int32_t> context(prompt.begin(), prompt.end());
  std::size_t start = context.size() > T ? context.size() - T : 0;
  const auto refeed_window = [&] {
    decoder.reset();
    return decoder.feed(
        std::span<const std::int32_t>(context.data() + start, context.size() - start), true);
  };

  GenerationStats st;
  st.prompt_tokens = std::int64_t(prompt.size());
  const auto t0 = Clock::now();
  auto t_first = t0;
  Tensor logits = refeed_window();
  for (int step = 0; step < options.max_new_tokens; ++step) {
    const std::int32_t id = sampler.pick(to_host_f64(be, logits), std::uint64_t(step));
    context.push_back(id);
    ++st.new_tokens;
    if (step == 0) {
      t_first = Clock::now();
      st.prefill_seconds = seconds(t0, t_first);
    }
    if (on_token) on_token(id);
    if (std::find(options.stop_ids.begin(), options.stop_ids.end(), id) !=
        options.stop_ids.end()) {
      st.stopped = true;
      break;
    }
    if (step + 1 == options.max_new_tokens) break;
    if (context.size() - start > T) {
      start = context.size() - std::max<std::size_t>(1, T / 2);
      ++st.window_shifts;
      logits = refeed_window();
    } else if (options.recompute) {
      logits = refeed_window();
    } else {
      logits = decoder.feed(std::span<const std::int32_t>(&context.back(), 1), true);
    }
  }
  if (st.new_tokens > 0) st.decode_seconds = seconds(t_first, Clock::now());
  return st;
}

}  // namespace wiola
