#include "pipeline/time_split.hpp"

#include <algorithm>
#include <limits>

namespace wiola {

TimeSplit& TimeSplit::operator+=(const TimeSplit& o) {
  compute += o.compute;
  wait += o.wait;
  drain += o.drain;
  comm += o.comm;
  reduce += o.reduce;
  optimizer += o.optimizer;
  other += o.other;
  step += o.step;
  return *this;
}

TimeSplit TimeSplit::scaled(double f) const {
  return {compute * f, wait * f, drain * f, comm * f, reduce * f, optimizer * f, other * f, step * f};
}

void align_drains(std::vector<TimeSplit>& ranks) {
  // The last rank to arrive has the shortest way from its arrival to the exit.
  double last = std::numeric_limits<double>::infinity();
  for (const TimeSplit& t : ranks) last = std::min(last, t.reduce + t.drain);
  for (TimeSplit& t : ranks) {
    const double tail = t.reduce + t.drain;
    const double waited = std::clamp(tail - last, 0.0, tail);
    const double in_allreduce = std::min(waited, t.drain);
    t.optimizer += t.drain - in_allreduce;
    t.reduce -= waited - in_allreduce;
    t.drain = waited;
  }
}

}  // namespace wiola
