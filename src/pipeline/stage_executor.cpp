#include "pipeline/stage_executor.hpp"

#include <chrono>
#include <map>
#include <memory>
#include <vector>

#include "core/error.hpp"
#include "pipeline/wire.hpp"

namespace wiola {

StageTimes& StageTimes::operator+=(const StageTimes& o) {
  compute += o.compute;
  wait += o.wait;
  comm += o.comm;
  optimizer += o.optimizer;
  total += o.total;
  return *this;
}

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// Everything one micro-batch holds on this stage during a step.
struct Slot {
  StageSaved saved;
  std::vector<std::byte> recv_act, recv_grad, send_act, send_grad;
  std::unique_ptr<comm::Request> recv_act_req, recv_grad_req, send_act_req, send_grad_req;
  bool forwarded = false, backwarded = false;
};

int tag_of(int microbatch, WireKind kind) { return 2 * microbatch + static_cast<int>(kind); }

Tensor upload_tokens(Backend& be, const std::vector<std::int32_t>& host) {
  Tensor t = be.alloc(DType::I32, static_cast<std::int64_t>(host.size()), 1);
  be.from_host(host.data(), t);
  return t;
}

}  // namespace

StageExecutor::StageExecutor(StageModel& model, comm::Communicator* pipeline, int stage,
                             int stages)
    : model_(model), pipe_(pipeline), stage_(stage), stages_(stages) {
  require(stages == 1 || pipeline != nullptr, "a pipeline of ", stages,
          " stages needs a communicator");
  require(0 <= stage && stage < stages, "stage ", stage, " out of ", stages);
}

StageExecutor::Result StageExecutor::run(std::span<const Action> actions, int step, int batch,
                                         int seq, bool training, double loss_scale,
                                         const Hooks& hooks) {
  const auto t_run = Clock::now();
  Backend& be = model_.backend();
  const ModelConfig& cfg = model_.config();
  const StageSpec& spec = model_.spec();
  const bool first = stage_ == 0, last = stage_ == stages_ - 1;
  std::map<int, Slot> slots;
  Result res;
  int held = 0;

  // The final Backward of the list completes every gradient of the step.
  int last_backward = -1;
  for (std::size_t i = 0; i < actions.size(); ++i)
    if (actions[i].kind == ActionKind::Backward) last_backward = static_cast<int>(i);

  auto shape_in = [&](int b, int t) {
    return boundary_shape(b, t, cfg.d, model_.dtype(), model_.carry_count(spec.first_layer),
                          cfg.summary);
  };
  auto shape_out = [&](int b, int t) {
    return boundary_shape(b, t, cfg.d, model_.dtype(), model_.carry_count(spec.end_layer),
                          cfg.summary);
  };
  auto wait_sends = [&]() {
    const auto t0 = Clock::now();
    for (auto& [mb, s] : slots) {
      if (s.send_act_req) s.send_act_req->wait();
      if (s.send_grad_req) s.send_grad_req->wait();
    }
    res.times.comm += seconds_since(t0);
  };

  for (std::size_t i = 0; i < actions.size(); ++i) {
    const Action& a = actions[i];
    if (hooks.before_action) hooks.before_action(a);
    const auto t_action = Clock::now();
    const double waited_before = res.times.wait;
    Slot& s = slots[a.microbatch];
    switch (a.kind) {
      case ActionKind::RecvActivation: {
        require(!first, "schedule: RecvActivation on the first stage");
        s.recv_act.resize(shape_in(batch, seq).bytes());
        s.recv_act_req = pipe_->irecv(s.recv_act.data(), s.recv_act.size(), stage_ - 1,
                                      tag_of(a.microbatch, WireKind::Activation));
        break;
      }
      case ActionKind::Forward: {
        StageInput in;
        HostBatch hb;
        if (first || last) {
          hb = hooks.batch(a.microbatch);
          batch = hb.batch;
          seq = hb.seq;
        } else {
          }
        in.batch = batch;
        in.seq = seq;
        if (first) in.tokens = upload_tokens(be, hb.inputs);
        if (last) in.targets = upload_tokens(be, hb.targets);
        if (!first) {
          require(s.recv_act_req != nullptr, "schedule: Forward of micro-batch ", a.microbatch,
                  " before its RecvActivation");
          auto t0 = Clock::now();
          s.recv_act_req->wait();
          res.times.wait += seconds_since(t0);
          t0 = Clock::now();
          std::vector<Tensor> ts = unpack_message(be, WireKind::Activation, step, a.microbatch,
                                                  shape_in(batch, seq), s.recv_act);
          s.recv_act = {};
          in.x = ts[0];
          in.carry.assign(ts.begin() + 1, ts.end());
          res.times.comm += seconds_since(t0);
        }
        auto t0 = Clock::now();
        StageOutput out = model_.forward(in, training, s.saved);
        res.times.compute += seconds_since(t0);
        res.merged_tokens += s.saved.merged_tokens;
        res.loss_sum += out.loss_sum;
        res.loss_tokens += out.loss_tokens;
        s.forwarded = true;
        if (!last) {
          t0 = Clock::now();
          std::vector<Tensor> ts{out.x};
          ts.insert(ts.end(), out.carry.begin(), out.carry.end());
          pack_message(be, WireKind::Activation, step, a.microbatch, shape_out(batch, seq), ts,
                       s.send_act);
          res.times.comm += seconds_since(t0);
        }
        if (training) {
          res.peak_activations = std::max(res.peak_activations, ++held);
        } else {
          s.saved = StageSaved{};  // evaluation keeps nothing for a backward
        }
        break;
      }
      case ActionKind::SendActivation: {
        require(!last && s.forwarded, "schedule: SendActivation of micro-batch ", a.microbatch,
                " before its Forward");
        s.send_act_req = pipe_->isend(s.send_act.data(), s.send_act.size(), stage_ + 1,
                                      tag_of(a.microbatch, WireKind::Activation));
        break;
      }
      case ActionKind::RecvGrad: {
        require(!last, "schedule: RecvGrad on the last stage");
        s.recv_grad.resize(shape_out(batch, seq).bytes());
        s.recv_grad_req = pipe_->irecv(s.recv_grad.data(), s.recv_grad.size(), stage_ + 1,
                                       tag_of(a.microbatch, WireKind::Gradient));
        break;
      }
      case ActionKind::Backward: {
        require(training, "schedule: Backward in an evaluation run");
        require(s.forwarded && !s.backwarded, "schedule: Backward of micro-batch ",
                a.microbatch, " without a pending Forward");
        std::vector<Tensor> grads_in;
        if (!last) {
          require(s.recv_grad_req != nullptr, "schedule: Backward of micro-batch ",
                  a.microbatch, " before its RecvGrad");
          auto t0 = Clock::now();
          s.recv_grad_req->wait();
          res.times.wait += seconds_since(t0);
          t0 = Clock::now();
          grads_in = unpack_message(be, WireKind::Gradient, step, a.microbatch,
                                    shape_out(batch, seq), s.recv_grad);
          s.recv_grad = {};
          res.times.comm += seconds_since(t0);
        }
        // Sends of earlier micro-batches may still hold buffers: fine, each slot owns its own.
        auto t0 = Clock::now();
        const std::function<void(int)> none;
        const bool final_backward = static_cast<int>(i) == last_backward;
        StageGrads g = model_.backward(
            last ? Tensor{} : grads_in[0],
            last ? std::span<const Tensor>{} : std::span<const Tensor>(grads_in).subspan(1),
            loss_scale, s.saved, final_backward ? hooks.final_layer_grads : none);
        res.times.compute += seconds_since(t0);
        s.backwarded = true;
        --held;
        if (!first) {
          t0 = Clock::now();
          std::vector<Tensor> ts{g.dx};
          ts.insert(ts.end(), g.dcarry.begin(), g.dcarry.end());
          pack_message(be, WireKind::Gradient, step, a.microbatch, shape_in(batch, seq), ts,
                       s.send_grad);
          res.times.comm += seconds_since(t0);
        }
        break;
      }
      case ActionKind::SendGrad: {
        require(!first && s.backwarded, "schedule: SendGrad of micro-batch ", a.microbatch,
                " before its Backward");
        s.send_grad_req = pipe_->isend(s.send_grad.data(), s.send_grad.size(), stage_ - 1,
                                       tag_of(a.microbatch, WireKind::Gradient));
        break;
      }
      case ActionKind::ReduceGrads: {
        wait_sends();
        const auto t0 = Clock::now();
        if (hooks.reduce_grads) hooks.reduce_grads();
        res.times.optimizer += seconds_since(t0);
        break;
      }
      case ActionKind::OptimizerStep: {
        wait_sends();
        const auto t0 = Clock::now();
        if (hooks.optimizer_step) hooks.optimizer_step(res);
        res.times.optimizer += seconds_since(t0);
        break;
      }
    }
    if (hooks.record_events)
      res.events.push_back({a, std::chrono::duration<double>(t_action.time_since_epoch()).count(),
                            std::chrono::duration<double>(Clock::now().time_since_epoch()).count(),
                            res.times.wait - waited_before});
  }
  wait_sends();
  if (training)
    for (auto& [mb, s] : slots)
      require(!s.forwarded || s.backwarded, "schedule: micro-batch ", mb,
              " was forwarded but never backwarded");
  res.times.total = seconds_since(t_run);
  return res;
}

}  // namespace wiola
