#pragma once
// The time split of a training step on one rank, and the bubble: one
// definition for wiola-train's end-of-run report and wiola-profile's tables
// (docs/profiling.md, "Time split and bubble").
//
//   compute    forward and backward kernels
//   wait       blocked on a neighbour's activation or gradient (the bubble
//              inside the pipeline)
//   drain      idle at the end of the step, in the gradient reduction and the
//              optimizer's world all-reduce of norm and loss, waiting for ranks
//              that are still computing (the pipeline's cool-down bubble)
//   comm       packing, unpacking and completing point-to-point sends
//   reduce     the gradient reduction, without its wait for partners
//   optimizer  the rest of the optimizer: norm all-reduce, clipping, AdamW,
//              ZeRO all-gather
//   other      the step's wall time in none of these
// The parts add up to `step`, and
//   bubble = (wait + drain) / step,
// the share of the step the rank sat idle because other ranks were not ready.
//
// wiola-profile measures the drain on the ranks' aligned timeline; wiola-train,
// which has none, with align_drains below.
#include <vector>

namespace wiola {

struct TimeSplit {
  double compute = 0, wait = 0, drain = 0, comm = 0, reduce = 0, optimizer = 0, other = 0;
  double step = 0;

  double bubble() const { return step > 0 ? (wait + drain) / step : 0; }
  TimeSplit& operator+=(const TimeSplit& o);
  TimeSplit scaled(double f) const;
};

// wiola-train's drain. A rank alone sees only how long it sat in the world
// all-reduce of norm and loss; a rank that waits for its partners in the
// gradient reduction (the last stage for the first, over the tied embedding)
// waits there instead. But every rank leaves the all-reduce at about the same
// instant, so the time from a rank's arrival at the reduction to that exit
// (reduce + all-reduce) exceeds the last-arriving rank's by how long the rank
// waited for it. `ranks[r]` is rank r's split summed over the same steps, as
// the rank measured it alone (`reduce`: the reduction phase, `drain`: its time
// in the all-reduce). This sets each drain to that excess, taken from the
// all-reduce first, then from the reduction; the rest of the all-reduce, its
// own cost, counts as optimizer. The parts still add up to the step.
void align_drains(std::vector<TimeSplit>& ranks);

}  // namespace wiola
