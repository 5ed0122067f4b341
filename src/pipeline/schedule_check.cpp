#include "pipeline/schedule_check.hpp"

#include <algorithm>

#include "core/error.hpp"

namespace wiola::pipeline {

std::string ScheduleCheck::message() const {
  std::string s;
  for (const auto& e : errors) s += e + "\n";
  return s;
}

namespace {

using detail::concat;
constexpr int kKinds = 8;
constexpr std::size_t kMaxErrors = 40;  // one broken rule can repeat for every micro-batch

enum Dir { Act = 0, Grad = 1 };

class Checker {
 public:
  Checker(const std::vector<std::vector<Action>>& stages, int m, int chunks)
      : st_(stages), P_(static_cast<int>(stages.size())), m_(m), C_(chunks), V_(P_ * chunks) {}

  ScheduleCheck run() {
    if (P_ < 1 || m_ < 1 || C_ < 1) {
      error("schedule check: need at least one stage, micro-batch and chunk (got ", P_, ", ", m_,
            ", ", C_, ")");
      return out_;
    }
    for (int s = 0; s < P_; ++s) check_stage(s);
    out_.peak_in_flight.resize(P_);
    for (int s = 0; s < P_; ++s) out_.peak_in_flight[s] = peak(s);
    if (!out_.ok()) return out_;  // (b) and (c) assume well-formed lists
    check_matching();
    if (!out_.ok()) return out_;
    simulate();
    return out_;
  }

 private:
  template <class... Args>
  void error(Args&&... args) {
    if (out_.errors.size() < kMaxErrors) out_.errors.push_back(concat(std::forward<Args>(args)...));
  }
  int virt(int s, int c) const { return c * P_ + s; }
  // Name of the virtual stage for messages: "stage 2" or "stage 2 chunk 1".
  std::string where(int v) const {
    return C_ == 1 ? concat("stage ", v) : concat("stage ", v % P_, " chunk ", v / P_);
  }
  static Action act(ActionKind k, int mb, int c) { return Action{k, mb, c}; }
  // A message by the (micro-batch, chunk) it carries to the receiver.
  std::string mb_name(const std::pair<int, int>& m) const {
    return C_ == 1 ? concat("micro-batch ", m.first)
                   : concat("micro-batch ", m.first, " chunk ", m.second);
  }
  bool in_range(const Action& a) const {
    if (a.chunk < 0 || a.chunk >= C_) return false;
    return a.microbatch >= 0 && a.microbatch < m_;
  }

  // ---- (a) ------------------------------------------------------------------
  void check_stage(int s) {
    const auto& list = st_[s];
    // pos[kind][chunk][mb]: index of the action, -1 if absent, -2 if repeated.
    std::vector<int> pos(std::size_t(kKinds) * C_ * m_, -1);
    auto at = [&](ActionKind k, int c, int mb) -> int& {
      return pos[(std::size_t(k) * C_ + c) * m_ + mb];
    };
    for (int i = 0; i < static_cast<int>(list.size()); ++i) {
      const Action& a = list[i];
      if (!in_range(a)) {
        error("stage ", s, ": action ", i, " '", to_string(a), "' is out of range (", m_,
              " micro-batches, ", C_, " chunk", C_ == 1 ? "" : "s", ")");
        continue;
      }
      int& p = at(a.kind, a.chunk, a.microbatch);
      if (p != -1) error("stage ", s, ": ", to_string(a), " appears more than once");
      p = p == -1 ? i : -2;
    }

    for (int c = 0; c < C_; ++c) {
      const int v = virt(s, c);
      const bool first = v == 0, last = v == V_ - 1;
      for (int mb = 0; mb < m_; ++mb) {
        const int f = at(ActionKind::Forward, c, mb);
        auto name = [&](ActionKind k) { return to_string(act(k, mb, c)); };
        if (f == -1) error("stage ", s, ": ", name(ActionKind::Forward), " is missing");
        // Either one Backward, or a B (BackwardInput) followed by its W.
        const int whole = at(ActionKind::Backward, c, mb);
        const int bi = at(ActionKind::BackwardInput, c, mb);
        const int w = at(ActionKind::BackwardWeight, c, mb);
        const bool split = bi != -1 || w != -1;
        if (split && whole != -1)
          error("stage ", s, ": ", name(ActionKind::Backward), " and a split backward (",
                name(ActionKind::BackwardInput), " / ", name(ActionKind::BackwardWeight),
                ") both appear");
        if (!split && whole == -1)
          error("stage ", s, ": ", name(ActionKind::Backward), " is missing");
        if (split && bi == -1)
          error("stage ", s, ": ", name(ActionKind::BackwardInput), " is missing");
        if (split && w == -1)
          error("stage ", s, ": ", name(ActionKind::BackwardWeight), " is missing");
        if (bi >= 0 && w >= 0 && w < bi)
          error("stage ", s, ": ", name(ActionKind::BackwardWeight), " comes before ",
                name(ActionKind::BackwardInput));
        const ActionKind bkind = split ? ActionKind::BackwardInput : ActionKind::Backward;
        const int b = split ? bi : whole;
        if (f >= 0 && b >= 0 && b < f)
          error("stage ", s, ": ", name(bkind), " comes before ", name(ActionKind::Forward));
        // Which communication this virtual stage must (and must not) have,
        // and the compute it must precede (receives) or follow (sends).
        struct Need {
          ActionKind kind;
          bool needed;
          int compute;
          bool before;
          const char* why;
        };
        const Need needs[] = {
            {ActionKind::RecvActivation, !first, f, true,
             "the first stage receives no activations"},
            {ActionKind::SendActivation, !last, f, false, "the last stage sends no activations"},
            {ActionKind::RecvGrad, !last, b, true, "the last stage receives no gradients"},
            {ActionKind::SendGrad, !first, b, false, "the first stage sends no gradients"},
        };
        for (const Need& n : needs) {
          const int p = at(n.kind, c, mb);
          if (!n.needed) {
            if (p != -1) error("stage ", s, ": has ", name(n.kind), " but ", n.why);
            continue;
          }
          if (p == -1) error("stage ", s, ": ", name(n.kind), " is missing");
          if (p < 0 || n.compute < 0) continue;
          if (n.before && p > n.compute)
            error("stage ", s, ": ", name(n.kind),
                  " is posted after the compute that waits for it");
          if (!n.before && p < n.compute)
            error("stage ", s, ": ", name(n.kind), " comes before the compute that produces it");
        }
      }
    }
  }

  // ---- (b) ------------------------------------------------------------------
  // Messages per (direction, sender, receiver), each named by the receiving
  // (micro-batch, chunk), in posting order.
  void check_matching() {
    using Msgs = std::vector<std::pair<int, int>>;
    std::vector<Msgs> sends(std::size_t(2) * P_ * P_), recvs(std::size_t(2) * P_ * P_);
    auto slot = [&](int dir, int from, int to) { return (std::size_t(dir) * P_ + from) * P_ + to; };
    for (int s = 0; s < P_; ++s)
      for (const Action& a : st_[s]) {
        const int v = virt(s, a.chunk);
        switch (a.kind) {
          case ActionKind::SendActivation:
            sends[slot(Act, s, (v + 1) % P_)].push_back({a.microbatch, (v + 1) / P_});
            break;
          case ActionKind::SendGrad:
            sends[slot(Grad, s, (v - 1) % P_)].push_back({a.microbatch, (v - 1) / P_});
            break;
          case ActionKind::RecvActivation:
            recvs[slot(Act, (v - 1) % P_, s)].push_back({a.microbatch, a.chunk});
            break;
          case ActionKind::RecvGrad:
            recvs[slot(Grad, (v + 1) % P_, s)].push_back({a.microbatch, a.chunk});
            break;
          default: break;
        }
      }
    for (int dir = 0; dir < 2; ++dir)
      for (int from = 0; from < P_; ++from)
        for (int to = 0; to < P_; ++to) {
          const Msgs& snd = sends[slot(dir, from, to)];
          const Msgs& rcv = recvs[slot(dir, from, to)];
          const char* what = dir == Act ? "activations" : "gradients";
          if (snd.size() != rcv.size()) {
            error(what, " from stage ", from, " to stage ", to, ": ", snd.size(), " sends but ",
                  rcv.size(), " receives");
            continue;
          }
          for (std::size_t k = 0; k < snd.size(); ++k)
            if (snd[k] != rcv[k]) {
              error(what, " from stage ", from, " to stage ", to,
                    " are not in FIFO order: message ", k, " is ", mb_name(snd[k]),
                    " on the send side but ", mb_name(rcv[k]), " on the receive side");
              break;
            }
        }
  }

  // ---- (c) ------------------------------------------------------------------
  void simulate() {
    const std::size_t n_msgs = std::size_t(2) * V_ * m_;
    std::vector<char> sent(n_msgs, 0), posted(n_msgs, 0);
    auto key = [&](int dir, int v, int mb) { return (std::size_t(dir) * V_ + v) * m_ + mb; };
    std::vector<std::vector<std::size_t>> my_sends(P_);
    std::vector<std::size_t> pc(P_, 0);

    auto try_run = [&](int s, const Action& a) -> bool {
      const int v = virt(s, a.chunk);
      switch (a.kind) {
        case ActionKind::RecvActivation: posted[key(Act, v, a.microbatch)] = 1; return true;
        case ActionKind::RecvGrad: posted[key(Grad, v, a.microbatch)] = 1; return true;
        case ActionKind::SendActivation:
          sent[key(Act, v + 1, a.microbatch)] = 1;
          my_sends[s].push_back(key(Act, v + 1, a.microbatch));
          return true;
        case ActionKind::SendGrad:
          sent[key(Grad, v - 1, a.microbatch)] = 1;
          my_sends[s].push_back(key(Grad, v - 1, a.microbatch));
          return true;
        case ActionKind::Forward: return v == 0 || sent[key(Act, v, a.microbatch)];
        case ActionKind::Backward:
        case ActionKind::BackwardInput: return v == V_ - 1 || sent[key(Grad, v, a.microbatch)];
        case ActionKind::BackwardWeight: return true;
      }
      return true;
    };

    for (bool progress = true; progress;) {
      progress = false;
      for (int s = 0; s < P_; ++s)
        while (pc[s] < st_[s].size() && try_run(s, st_[s][pc[s]])) {
          ++pc[s];
          progress = true;
        }
    }
    // A stage's step ends when every send it posted has a posted receive.
    auto sends_received = [&](int s) {
      return std::all_of(my_sends[s].begin(), my_sends[s].end(),
                         [&](std::size_t k) { return posted[k] != 0; });
    };
    std::string blocked;
    for (int s = 0; s < P_; ++s) {
      if (pc[s] >= st_[s].size()) {
        if (!sends_received(s))
          blocked += concat(blocked.empty() ? "" : "; ", "stage ", s,
                            " waits at the end of its list for a peer to post the receive of a "
                            "send");
        continue;
      }
      const Action& a = st_[s][pc[s]];
      const int v = virt(s, a.chunk);
      std::string why;
      switch (a.kind) {
        case ActionKind::Forward:
          why = concat("for ", to_string(act(ActionKind::SendActivation, a.microbatch, 0)),
                       " from ", where(v - 1));
          break;
        case ActionKind::Backward:
        case ActionKind::BackwardInput:
          why = concat("for ", to_string(act(ActionKind::SendGrad, a.microbatch, 0)), " from ",
                       where(v + 1));
          break;
        default: break;
      }
      blocked +=
          concat(blocked.empty() ? "" : "; ", "stage ", s, " waits at ", to_string(a), " ", why);
    }
    if (!blocked.empty()) error("deadlock: ", blocked);
  }

  // ---- (d) ------------------------------------------------------------------
  int peak(int s) const { return peak_in_flight(st_[s]); }

  const std::vector<std::vector<Action>>& st_;
  int P_, m_, C_, V_;
  ScheduleCheck out_;
};

}  // namespace

ScheduleCheck check_schedules(const std::vector<std::vector<Action>>& stages, int microbatches,
                              int chunks) {
  return Checker(stages, microbatches, chunks).run();
}

}  // namespace wiola::pipeline
