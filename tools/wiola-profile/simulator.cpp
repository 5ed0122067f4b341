#include "wiola-profile/simulator.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <tuple>

#include "core/error.hpp"

namespace wiola::profile {

namespace {

using pipeline::Action;
using pipeline::ActionKind;

constexpr double kUnknown = std::numeric_limits<double>::quiet_NaN();

struct Message {
  double send_post = kUnknown, recv_post = kUnknown, arrival = kUnknown;
};

// One direction of one pipeline boundary of one data-parallel replica: the
// messages in send order (= micro-batch order in every schedule here).
struct Channel {
  std::vector<Message> msgs;
  std::size_t next = 0;  // first message whose arrival is not computed yet
  double free_at = 0;    // the link is busy with earlier messages until then
  Link link;
  double bytes = 0;
  // Computes arrivals in order while both ends have posted.
  void resolve() {
    while (next < msgs.size() && !std::isnan(msgs[next].send_post) &&
           !std::isnan(msgs[next].recv_post)) {
      Message& m = msgs[next];
      const double start = std::max({m.send_post, m.recv_post, free_at});
      m.arrival = start + link.time(bytes);
      free_at = m.arrival;
      ++next;
    }
  }
};

struct RankState {
  int stage = 0, dp_index = 0;
  std::vector<Action> actions;
  std::size_t pc = 0;
  double clock = 0;
  bool at_reduce = false;  // the list is done and its sends complete
  double rg_begin = 0;
  std::vector<Channel*> sent;  // channels this rank sent on, to complete at the end of the list
  RankRecord rec;
};

}  // namespace

SimResult simulate(const SimInput& in) {
  const int P = in.pp, D = in.dp, m = in.microbatches;
  require(P >= 1 && D >= 1 && m >= 1, "simulator: pp, dp and micro-batches must be positive");
  require(int(in.stages.size()) == P, "simulator: ", in.stages.size(), " stage costs for pp ", P);
  require(in.cluster.ranks_per_node >= 1, "simulator: ranks per node must be positive");
  const int W = P * D;
  const auto schedules = pipeline::make_schedules(in.schedule, P, m);

  // channels[(direction, boundary, dp index)]: direction 0 = activation b -> b+1, 1 = gradient b+1 -> b.
  std::map<std::tuple<int, int, int>, Channel> channels;
  for (int b = 0; b + 1 < P; ++b)
    for (int i = 0; i < D; ++i)
      for (int dir = 0; dir < 2; ++dir) {
        Channel& c = channels[{dir, b, i}];
        c.msgs.resize(std::size_t(m));
        c.link = in.cluster.between(b * D + i, (b + 1) * D + i);
        c.bytes = in.stages[std::size_t(b)].message_bytes;
      }
  auto channel = [&](int dir, int b, int i) -> Channel& { return channels.at({dir, b, i}); };

  std::vector<RankState> ranks(static_cast<std::size_t>(W));
  for (int r = 0; r < W; ++r) {
    RankState& st = ranks[std::size_t(r)];
    st.stage = r / D;
    st.dp_index = r % D;
    st.actions = schedules[std::size_t(st.stage)];
    st.clock = in.stages[std::size_t(st.stage)].other_s;
    st.rec.rank = r;
    st.rec.stage = st.stage;
    st.rec.dp_index = st.dp_index;
    st.rec.steps = 1;
  }
  auto record = [](RankState& st, EventKind kind, int mb, double begin, double end,
                   double waited) { st.rec.actions.push_back({1, kind, mb, begin, end, waited}); };
  auto record_action = [&](RankState& st, const Action& a, double begin, double end,
                           double waited) {
    record(st, event_kind(a.kind), a.microbatch, begin, end, waited);
  };
  // The end of a rank's list: the executor completes its sends (comm time),
  // then the trainer's reduction starts. False while a send is incomplete.
  auto finish_list = [](RankState& st) {
    const double t = st.clock;
    double sends_done = t;
    for (Channel* c : st.sent) {
      c->resolve();
      if (c->next < c->msgs.size()) return false;
      sends_done = std::max(sends_done, c->free_at);
    }
    st.rg_begin = t;
    st.rec.times.comm += sends_done - t;
    st.clock = sends_done;
    st.at_reduce = true;
    return true;
  };

  // Pipeline phase: advance every rank through its list.
  for (bool progress = true; progress;) {
    progress = false;
    for (RankState& st : ranks) {
      const SimStage& cost = in.stages[std::size_t(st.stage)];
      const int s = st.stage, i = st.dp_index;
      while (!st.at_reduce) {
        if (st.pc == st.actions.size()) {
          if (finish_list(st)) progress = true;
          break;
        }
        const Action& a = st.actions[st.pc];
        const double t = st.clock;
        bool done = true;
        switch (a.kind) {
          case ActionKind::RecvActivation:
            channel(0, s - 1, i).msgs.at(std::size_t(a.microbatch)).recv_post = t;
            record_action(st, a, t, t, 0);
            break;
          case ActionKind::RecvGrad:
            channel(1, s, i).msgs.at(std::size_t(a.microbatch)).recv_post = t;
            record_action(st, a, t, t, 0);
            break;
          case ActionKind::SendActivation:
          case ActionKind::SendGrad: {
            Channel& c = a.kind == ActionKind::SendActivation ? channel(0, s, i)
                                                              : channel(1, s - 1, i);
            c.msgs.at(std::size_t(a.microbatch)).send_post = t;
            if (std::find(st.sent.begin(), st.sent.end(), &c) == st.sent.end())
              st.sent.push_back(&c);
            record_action(st, a, t, t, 0);
            break;
          }
          case ActionKind::BackwardInput:
          case ActionKind::BackwardWeight:
            fail("simulator: the split backward of zero-bubble schedules is not modelled");
          case ActionKind::Forward:
          case ActionKind::Backward: {
            const bool fwd = a.kind == ActionKind::Forward;
            double ready = t;
            if ((fwd && s > 0) || (!fwd && s < P - 1)) {
              Channel& c = fwd ? channel(0, s - 1, i) : channel(1, s, i);
              c.resolve();
              const double arrival = c.msgs.at(std::size_t(a.microbatch)).arrival;
              if (std::isnan(arrival)) {
                done = false;
                break;
              }
              ready = std::max(t, arrival);
            }
            const double dur = fwd ? cost.forward_s : cost.backward_s;
            st.rec.times.wait += ready - t;
            st.rec.times.compute += dur;
            st.clock = ready + dur;
            record_action(st, a, t, st.clock, ready - t);
            break;
          }
        }
        if (!done) break;
        progress = true;
        ++st.pc;
      }
    }
  }
  for (const RankState& st : ranks)
    require(st.at_reduce, "simulator: the schedule deadlocks at stage ", st.stage, " action ",
            st.pc);

  // The reduction: the tied embedding's sum, then the data-group reduction.
  std::vector<double> t(static_cast<std::size_t>(W));
  for (int r = 0; r < W; ++r) t[std::size_t(r)] = ranks[std::size_t(r)].clock;
  if (P > 1)
    for (int i = 0; i < D; ++i) {
      const int a = i, b = (P - 1) * D + i;
      const double done = std::max(t[std::size_t(a)], t[std::size_t(b)]) +
                          ring_allreduce_s(in.stages.front().embed_bytes, 2,
                                           in.cluster.between(a, b));
      t[std::size_t(a)] = t[std::size_t(b)] = done;
    }
  auto data_group = [&](int s) {
    std::vector<int> g;
    for (int i = 0; i < D; ++i) g.push_back(s * D + i);
    return g;
  };
  // Compute intervals of a rank's first Forward and last Backward (after their waits).
  auto first_forward_end = [&](int r) {
    for (const TimedAction& a : ranks[std::size_t(r)].rec.actions)
      if (a.kind == EventKind::Forward) return a.end;
    return 0.0;
  };
  auto last_backward_begin = [&](int r) {
    double b = 0;
    for (const TimedAction& a : ranks[std::size_t(r)].rec.actions)
      if (a.kind == EventKind::Backward) b = a.begin + a.waited;
    return b;
  };
  for (int s = 0; s < P && D > 1; ++s) {
    const std::vector<int> g = data_group(s);
    double start = 0, bwd_begin = 0;
    for (int r : g) {
      start = std::max(start, t[std::size_t(r)]);
      bwd_begin = std::max(bwd_begin, last_backward_begin(r));
    }
    const Link link = in.cluster.ring_link(g);
    const SimStage& cost = in.stages[std::size_t(s)];
    const double reduce = in.zero == 0 ? ring_allreduce_s(cost.grad_bytes, D, link)
                                       : ring_reduce_scatter_s(cost.grad_bytes, D, link);
    double done = start + reduce;
    if (in.zero == 2 && in.overlap_comm) {
      // Each layer's bucket is reduced as soon as the last backward finishes
      // it: the reductions stream behind the backward, and only the last
      // bucket's (and whatever the backward could not hide) remains.
      const double per_bucket = reduce / std::max(1, cost.buckets);
      done = std::max(start + per_bucket, bwd_begin + reduce);
    }
    for (int r : g) t[std::size_t(r)] = done;
  }
  std::vector<double> rg_end = t;

  // The optimizer phase: the world all-reduce of the squared norm and loss (small:
  // latency-bound, a tree of 2 log2(W) hops over the slowest link).
  std::vector<int> world(static_cast<std::size_t>(W));
  for (int r = 0; r < W; ++r) world[std::size_t(r)] = r;
  const Link wl = in.cluster.ring_link(world);
  const double norm_reduce = W > 1 ? 2.0 * std::ceil(std::log2(double(W))) * wl.latency_s : 0.0;
  double sync = 0;
  for (double v : rg_end) sync = std::max(sync, v);
  sync += norm_reduce;
  for (int r = 0; r < W; ++r) {
    const SimStage& cost = in.stages[std::size_t(ranks[std::size_t(r)].stage)];
    t[std::size_t(r)] = sync + cost.optimizer_s / (in.zero >= 1 ? D : 1);
  }
  for (int s = 0; s < P && D > 1 && in.zero >= 1; ++s) {
    const std::vector<int> g = data_group(s);
    double start = 0, hide = 1e300;
    for (int r : g) {
      start = std::max(start, t[std::size_t(r)]);
      hide = std::min(hide, first_forward_end(r));
    }
    double gather =
        ring_allgather_s(in.stages[std::size_t(s)].param_bytes, D, in.cluster.ring_link(g));
    // Overlapped, the gather runs into the next step until each layer's first
    // forward needs it: the next step's wait for its input and first forward
    // hide that much of it (one step stands for every step).
    if (in.overlap_comm) gather = std::max(0.0, gather - hide);
    const double done = start + gather;
    for (int r : g) t[std::size_t(r)] = done;
  }

  SimResult res;
  for (int r = 0; r < W; ++r) {
    RankState& st = ranks[std::size_t(r)];
    record(st, EventKind::ReduceGrads, -1, st.rg_begin, rg_end[std::size_t(r)], 0);
    record(st, EventKind::OptimizerStep, -1, rg_end[std::size_t(r)], t[std::size_t(r)], 0);
    // Everything from the end of the sends to the end of the step is optimizer time.
    st.rec.times.optimizer = t[std::size_t(r)] - st.clock;
    st.rec.times.total = t[std::size_t(r)] - in.stages[std::size_t(st.stage)].other_s;
    st.rec.window_s = t[std::size_t(r)];
    st.rec.step_ends = {st.rec.window_s};
    res.step_s = std::max(res.step_s, st.rec.window_s);
    res.records.push_back(std::move(st.rec));
  }
  return res;
}

}  // namespace wiola::profile
