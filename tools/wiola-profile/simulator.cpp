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

// One kind of message (activation or gradient) from one rank to the next
// (previous) one in the pipeline: the messages in the sender's send order,
// which the receiver's receives follow (the executor's FIFO per peer and
// direction). With one chunk per rank that is one virtual boundary in
// micro-batch order; with several, the chunks' boundaries between the two
// ranks share it.
struct Channel {
  std::vector<Message> msgs;
  std::vector<double> bytes;                 // per message
  std::map<std::pair<int, int>, std::size_t> index;  // (micro-batch, sender chunk) -> message
  std::size_t next = 0;  // first message whose arrival is not computed yet
  double free_at = 0;    // the link is busy with earlier messages until then
  Link link;
  Message& at(int microbatch, int chunk) {
    const auto it = index.find({microbatch, chunk});
    require(it != index.end(), "simulator: no message for micro-batch ", microbatch, " chunk ",
            chunk, " on this channel");
    return msgs[it->second];
  }
  // Computes arrivals in order while both ends have posted.
  void resolve() {
    while (next < msgs.size() && !std::isnan(msgs[next].send_post) &&
           !std::isnan(msgs[next].recv_post)) {
      Message& m = msgs[next];
      const double start = std::max({m.send_post, m.recv_post, free_at});
      m.arrival = start + link.time(bytes[next]);
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

double weight_seconds(const SimStage& s) {
  if (s.weight_s < 0) return kDefaultWeightShare * s.backward_s;
  return std::clamp(s.weight_s, 0.0, s.backward_s);
}

SimResult simulate(const SimInput& in) {
  const int P = in.pp, D = in.dp, m = in.microbatches, V = in.chunks;
  require(P >= 1 && D >= 1 && m >= 1 && V >= 1,
          "simulator: pp, dp, micro-batches and chunks must be positive");
  require(int(in.stages.size()) == P * V, "simulator: ", in.stages.size(),
          " stage costs for pp ", P, " x ", V, " chunk(s)");
  require(in.cluster.ranks_per_node >= 1, "simulator: ranks per node must be positive");
  const int W = P * D;
  const auto schedules = pipeline::make_schedules(in.schedule, P, m, V);
  auto cost_of = [&](int stage, int chunk) -> const SimStage& {
    return in.stages.at(std::size_t(chunk * P + stage));
  };

  // channels[(direction, sending stage, dp index)]: direction 0 = activations
  // to stage s + 1 (the wrap: P - 1 -> 0), 1 = gradients to stage s - 1
  // (0 -> P - 1). Messages in the sender's order.
  std::map<std::tuple<int, int, int>, Channel> channels;
  for (int s = 0; s < P; ++s)
    for (const Action& a : schedules[std::size_t(s)]) {
      if (a.kind != ActionKind::SendActivation && a.kind != ActionKind::SendGrad) continue;
      const bool act = a.kind == ActionKind::SendActivation;
      const int to = act ? (s + 1) % P : (s + P - 1) % P;
      // The boundary's lower virtual stage gives the size: the sender's for an
      // activation, the receiver's for the gradient coming back.
      const int lower = act ? a.chunk * P + s : a.chunk * P + s - 1;
      for (int i = 0; i < D; ++i) {
        Channel& c = channels[{act ? 0 : 1, s, i}];
        c.link = in.cluster.between(s * D + i, to * D + i);
        c.index[{a.microbatch, a.chunk}] = c.msgs.size();
        c.msgs.emplace_back();
        c.bytes.push_back(in.stages.at(std::size_t(lower)).message_bytes);
      }
    }
  auto channel = [&](int dir, int sender, int i) -> Channel& {
    return channels.at({dir, sender, i});
  };
  // The rank-level costs of stage s: its chunks' sums.
  std::vector<SimStage> rank_cost(static_cast<std::size_t>(P));
  for (int s = 0; s < P; ++s) {
    SimStage& rc = rank_cost[std::size_t(s)];
    rc = cost_of(s, 0);
    for (int c = 1; c < V; ++c) {
      const SimStage& x = cost_of(s, c);
      rc.optimizer_s += x.optimizer_s;
      rc.other_s += x.other_s;
      rc.grad_bytes += x.grad_bytes;
      rc.param_bytes += x.param_bytes;
      rc.buckets += x.buckets;
    }
  }

  std::vector<RankState> ranks(static_cast<std::size_t>(W));
  for (int r = 0; r < W; ++r) {
    RankState& st = ranks[std::size_t(r)];
    st.stage = r / D;
    st.dp_index = r % D;
    st.actions = schedules[std::size_t(st.stage)];
    st.clock = rank_cost[std::size_t(st.stage)].other_s;
    st.rec.rank = r;
    st.rec.stage = st.stage;
    st.rec.dp_index = st.dp_index;
    st.rec.steps = 1;
  }
  auto record = [](RankState& st, EventKind kind, int mb, double begin, double end,
                   double waited, int chunk = 0) {
    st.rec.actions.push_back({1, kind, mb, begin, end, waited, chunk});
  };
  auto record_action = [&](RankState& st, const Action& a, double begin, double end,
                           double waited) {
    record(st, event_kind(a.kind), a.microbatch, begin, end, waited, a.chunk);
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
      const int s = st.stage, i = st.dp_index;
      while (!st.at_reduce) {
        if (st.pc == st.actions.size()) {
          if (finish_list(st)) progress = true;
          break;
        }
        const Action& a = st.actions[st.pc];
        const double t = st.clock;
        // The virtual stage of the action and its neighbours' (stage, chunk).
        const int k = a.chunk * P + s;
        const int prev_stage = (s + P - 1) % P, prev_chunk = s == 0 ? a.chunk - 1 : a.chunk;
        const int next_stage = (s + 1) % P, next_chunk = s == P - 1 ? a.chunk + 1 : a.chunk;
        bool done = true;
        switch (a.kind) {
          case ActionKind::RecvActivation:
            channel(0, prev_stage, i).at(a.microbatch, prev_chunk).recv_post = t;
            record_action(st, a, t, t, 0);
            break;
          case ActionKind::RecvGrad:
            channel(1, next_stage, i).at(a.microbatch, next_chunk).recv_post = t;
            record_action(st, a, t, t, 0);
            break;
          case ActionKind::SendActivation:
          case ActionKind::SendGrad: {
            Channel& c = channel(a.kind == ActionKind::SendActivation ? 0 : 1, s, i);
            c.at(a.microbatch, a.chunk).send_post = t;
            if (std::find(st.sent.begin(), st.sent.end(), &c) == st.sent.end())
              st.sent.push_back(&c);
            record_action(st, a, t, t, 0);
            break;
          }
          case ActionKind::Forward:
          case ActionKind::Backward:
          case ActionKind::BackwardInput:
          case ActionKind::BackwardWeight: {
            const bool fwd = a.kind == ActionKind::Forward;
            const bool needs_input = fwd ? k > 0
                                         : pipeline::takes_output_grad(a.kind) && k < P * V - 1;
            double ready = t;
            if (needs_input) {
              Channel& c = fwd ? channel(0, prev_stage, i) : channel(1, next_stage, i);
              c.resolve();
              const double arrival =
                  c.at(a.microbatch, fwd ? prev_chunk : next_chunk).arrival;
              if (std::isnan(arrival)) {
                done = false;
                break;
              }
              ready = std::max(t, arrival);
            }
            const SimStage& cost = cost_of(s, a.chunk);
            double dur = cost.forward_s;
            if (a.kind == ActionKind::Backward) dur = cost.backward_s;
            if (a.kind == ActionKind::BackwardInput) dur = cost.backward_s - weight_seconds(cost);
            if (a.kind == ActionKind::BackwardWeight) dur = weight_seconds(cost);
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
                          ring_allreduce_s(cost_of(0, 0).embed_bytes, 2,
                                           in.cluster.between(a, b));
      t[std::size_t(a)] = t[std::size_t(b)] = done;
    }
  auto data_group = [&](int s) {
    std::vector<int> g;
    for (int i = 0; i < D; ++i) g.push_back(s * D + i);
    return g;
  };
  // Compute intervals of a rank's first Forward and last backward (Backward
  // or W: the one that completes weight gradients; after their waits).
  auto first_forward_end = [&](int r) {
    for (const TimedAction& a : ranks[std::size_t(r)].rec.actions)
      if (a.kind == EventKind::Forward) return a.end;
    return 0.0;
  };
  auto last_backward_begin = [&](int r) {
    double b = 0;
    for (const TimedAction& a : ranks[std::size_t(r)].rec.actions)
      if (a.kind == EventKind::Backward || a.kind == EventKind::BackwardWeight)
        b = a.begin + a.waited;
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
    const SimStage& cost = rank_cost[std::size_t(s)];
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
    const SimStage& cost = rank_cost[std::size_t(ranks[std::size_t(r)].stage)];
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
        ring_allgather_s(rank_cost[std::size_t(s)].param_bytes, D, in.cluster.ring_link(g));
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
    st.rec.times.step = t[std::size_t(r)] - rank_cost[std::size_t(st.stage)].other_s;
    st.rec.window_s = t[std::size_t(r)];
    st.rec.step_ends = {st.rec.window_s};
    res.step_s = std::max(res.step_s, st.rec.window_s);
    res.records.push_back(std::move(st.rec));
  }
  return res;
}

}  // namespace wiola::profile
