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

double clock_seconds(Clock::time_point t) {
  return std::chrono::duration<double>(t.time_since_epoch()).count();
}

// One direction of one micro-batch's boundary: the header message and one
// message per tensor, each with its own request.
struct Transfer {
  std::vector<std::byte> header;
  std::vector<Tensor> tensors;  // sends: what goes out; receives: views of one buffer
  std::vector<std::unique_ptr<comm::Request>> requests;
  bool posted() const { return !requests.empty(); }
  void wait() {
    for (auto& r : requests) r->wait();
    requests.clear();
  }
};

// Everything one micro-batch holds on this stage during a step.
struct Slot {
  StageSaved saved;
  Transfer recv_act, recv_grad, send_act, send_grad;
  bool forwarded = false, backwarded = false;
};

Tensor upload_tokens(Backend& be, const std::vector<std::int32_t>& host) {
  Tensor t = be.alloc(DType::I32, static_cast<std::int64_t>(host.size()), 1);
  be.from_host(host.data(), t);
  return t;
}

// The walk of one action list; lives for one run().
class Run {
 public:
  Run(StageModel& model, comm::Communicator* pipe, int stage, int stages,
      const StageExecutor::RunSpec& spec, const StageExecutor::Hooks& hooks)
      : model_(model), be_(model.backend()), pipe_(pipe), stage_(stage),
        first_(stage == 0), last_(stage == stages - 1), spec_(spec), hooks_(hooks),
        parts_(max_boundary_carry(model.config()) + 2) {
    const ModelConfig& cfg = model.config();
    const StageSpec& st = model.spec();
    shape_in_ = boundary_shape(spec.batch, spec.seq, cfg.d, model.dtype(),
                               model.carry_count(st.first_layer), cfg.summary, cfg.arch);
    shape_out_ = boundary_shape(spec.batch, spec.seq, cfg.d, model.dtype(),
                                model.carry_count(st.end_layer), cfg.summary, cfg.arch);
    if (last_) {
      res_.loss_sums = be_.alloc(DType::F64, spec.microbatches, 1);
      res_.loss_tokens.assign(static_cast<std::size_t>(spec.microbatches), 0);
    }
  }

  StageExecutor::Result run(std::span<const Action> actions) {
    const auto t_run = Clock::now();
    // The final Backward of the list completes every gradient of the step.
    std::size_t last_backward = actions.size();
    for (std::size_t i = 0; i < actions.size(); ++i)
      if (actions[i].kind == ActionKind::Backward) last_backward = i;

    for (std::size_t i = 0; i < actions.size(); ++i) {
      const Action& a = actions[i];
      require(a.microbatch >= 0 && a.microbatch < spec_.microbatches, "schedule: ",
              pipeline::to_string(a), " is outside the ", spec_.microbatches, " micro-batches");
      if (hooks_.before_action) hooks_.before_action(a);
      const auto t_action = Clock::now();
      const double waited_before = res_.times.wait;
      execute(a, i == last_backward);
      if (hooks_.record_events)
        res_.events.push_back({a, clock_seconds(t_action), clock_seconds(Clock::now()),
                               res_.times.wait - waited_before});
    }
    const auto t0 = Clock::now();
    for (auto& [mb, s] : slots_) {
      s.send_act.wait();
      s.send_grad.wait();
    }
    res_.times.comm += seconds_since(t0);
    if (spec_.training)
      for (auto& [mb, s] : slots_)
        require(!s.forwarded || s.backwarded, "schedule: micro-batch ", mb,
                " was forwarded but never backwarded");
    res_.times.total = seconds_since(t_run);
    return std::move(res_);
  }

 private:
  void execute(const Action& a, bool final_backward) {
    Slot& s = slots_[a.microbatch];
    switch (a.kind) {
      case ActionKind::RecvActivation:
        require(!first_, "schedule: RecvActivation on the first stage");
        post_recv(s.recv_act, WireKind::Activation, shape_in_, stage_ - 1);
        break;
      case ActionKind::Forward: forward(a.microbatch, s); break;
      case ActionKind::SendActivation:
        require(!last_ && s.forwarded, "schedule: SendActivation of micro-batch ", a.microbatch,
                " before its Forward");
        post_send(s.send_act, WireKind::Activation, a.microbatch, shape_out_, stage_ + 1);
        break;
      case ActionKind::RecvGrad:
        require(!last_, "schedule: RecvGrad on the last stage");
        post_recv(s.recv_grad, WireKind::Gradient, shape_out_, stage_ + 1);
        break;
      case ActionKind::Backward: backward(a.microbatch, s, final_backward); break;
      case ActionKind::SendGrad:
        require(!first_ && s.backwarded, "schedule: SendGrad of micro-batch ", a.microbatch,
                " before its Backward");
        post_send(s.send_grad, WireKind::Gradient, a.microbatch, shape_in_, stage_ - 1);
        break;
    }
  }

  // Posts the header and tensor receives into views of one fresh buffer.
  void post_recv(Transfer& t, WireKind kind, const BoundaryShape& shape, int peer) {
    const auto t0 = Clock::now();
    t.header.resize(shape.header_bytes());
    t.requests.push_back(
        pipe_->irecv(t.header.data(), t.header.size(), peer, wire_tag(kind, 0, parts_)));
    const Tensor all = be_.alloc(shape.dtype, shape.total_rows(), shape.width);
    std::int64_t row = 0;
    for (std::size_t i = 0; i < shape.rows.size(); ++i) {
      t.tensors.push_back(all.rows_slice(row, row + shape.rows[i]));
      row += shape.rows[i];
      t.requests.push_back(
          pipe_->irecv(t.tensors.back(), peer, wire_tag(kind, int(i) + 1, parts_)));
    }
    res_.times.comm += seconds_since(t0);
  }

  // Waits for a posted receive (the bubble) and checks its header.
  std::vector<Tensor> complete_recv(Transfer& t, WireKind kind, int mb,
                                    const BoundaryShape& shape) {
    auto t0 = Clock::now();
    t.wait();
    res_.times.wait += seconds_since(t0);
    t0 = Clock::now();
    check_header(kind, spec_.step, mb, shape, t.header);
    res_.times.comm += seconds_since(t0);
    std::vector<Tensor> out = std::move(t.tensors);
    t = Transfer{};
    return out;
  }

  void post_send(Transfer& t, WireKind kind, int mb, const BoundaryShape& shape, int peer) {
    const auto t0 = Clock::now();
    require(t.tensors.size() == shape.rows.size(), "pipeline: ", t.tensors.size(),
            " tensors for a boundary of ", shape.rows.size());
    for (std::size_t i = 0; i < t.tensors.size(); ++i) {
      const Tensor& x = t.tensors[i];
      require(x.rows() == shape.rows[i] && x.cols() == shape.width && x.dtype() == shape.dtype &&
                  x.contiguous(),
              "pipeline: boundary tensor ", i, " is ", x.rows(), "x", x.cols(), " ",
              dtype_name(x.dtype()), ", the boundary expects ", shape.rows[i], "x", shape.width,
              " ", dtype_name(shape.dtype));
    }
    t.header = encode_header(kind, spec_.step, mb, shape);
    t.requests.push_back(
        pipe_->isend(t.header.data(), t.header.size(), peer, wire_tag(kind, 0, parts_)));
    for (std::size_t i = 0; i < t.tensors.size(); ++i)
      t.requests.push_back(pipe_->isend(t.tensors[i], peer, wire_tag(kind, int(i) + 1, parts_)));
    res_.times.comm += seconds_since(t0);
  }

  void forward(int mb, Slot& s) {
    StageInput in;
    in.batch = spec_.batch;
    in.seq = spec_.seq;
    if (first_ || last_) {
      const HostBatch hb = hooks_.batch(mb);
      require(hb.batch == spec_.batch && hb.seq == spec_.seq, "pipeline: micro-batch ", mb,
              " has ", hb.batch, " x ", hb.seq, " tokens, the step expects ", spec_.batch, " x ",
              spec_.seq);
      if (first_) in.tokens = upload_tokens(be_, hb.inputs);
      if (last_) {
        in.targets = upload_tokens(be_, hb.targets);
        in.loss_sum = res_.loss_sums.rows_slice(mb, mb + 1);
        res_.loss_tokens[static_cast<std::size_t>(mb)] = hb.target_tokens();
      }
    }
    if (!first_) {
      require(s.recv_act.posted(), "schedule: Forward of micro-batch ", mb,
              " before its RecvActivation");
      std::vector<Tensor> ts = complete_recv(s.recv_act, WireKind::Activation, mb, shape_in_);
      in.x = ts[0];
      in.carry.assign(ts.begin() + 1, ts.end());
    }
    const auto t0 = Clock::now();
    StageOutput out = model_.forward(in, spec_.training, s.saved, hooks_.before_layer_forward);
    res_.times.compute += seconds_since(t0);
    s.forwarded = true;
    if (!last_) {
      s.send_act.tensors = {out.x};
      s.send_act.tensors.insert(s.send_act.tensors.end(), out.carry.begin(), out.carry.end());
    }
    if (!spec_.training) s.saved = StageSaved{};  // evaluation keeps nothing for a backward
  }

  void backward(int mb, Slot& s, bool final_backward) {
    require(spec_.training, "schedule: Backward in an evaluation run");
    require(s.forwarded && !s.backwarded, "schedule: Backward of micro-batch ", mb,
            " without a pending Forward");
    std::vector<Tensor> grads_in;
    if (!last_) {
      require(s.recv_grad.posted(), "schedule: Backward of micro-batch ", mb,
              " before its RecvGrad");
      grads_in = complete_recv(s.recv_grad, WireKind::Gradient, mb, shape_out_);
    }
    const auto t0 = Clock::now();
    const std::function<void(int)> none;
    StageGrads g = model_.backward(
        last_ ? Tensor{} : grads_in[0],
        last_ ? std::span<const Tensor>{} : std::span<const Tensor>(grads_in).subspan(1),
        spec_.loss_scale, s.saved, final_backward ? hooks_.final_layer_grads : none);
    res_.times.compute += seconds_since(t0);
    s.backwarded = true;
    if (!first_) {
      s.send_grad.tensors = {g.dx};
      s.send_grad.tensors.insert(s.send_grad.tensors.end(), g.dcarry.begin(), g.dcarry.end());
    }
  }

  StageModel& model_;
  Backend& be_;
  comm::Communicator* pipe_;
  int stage_;
  bool first_, last_;
  const StageExecutor::RunSpec& spec_;
  const StageExecutor::Hooks& hooks_;
  int parts_;  // header + the most tensors a boundary of this model carries
  BoundaryShape shape_in_, shape_out_;
  std::map<int, Slot> slots_;
  StageExecutor::Result res_;
};

}  // namespace

StageExecutor::StageExecutor(StageModel& model, comm::Communicator* pipeline, int stage,
                             int stages)
    : model_(model), pipe_(pipeline), stage_(stage), stages_(stages) {
  require(stages == 1 || pipeline != nullptr, "a pipeline of ", stages,
          " stages needs a communicator");
  require(0 <= stage && stage < stages, "stage ", stage, " out of ", stages);
}

StageExecutor::Result StageExecutor::run(std::span<const Action> actions, const RunSpec& spec,
                                         const Hooks& hooks) {
  require(spec.microbatches >= 1 && spec.batch >= 1 && spec.seq >= 1,
          "pipeline: a run needs at least one micro-batch of one sequence (got ",
          spec.microbatches, " of ", spec.batch, " x ", spec.seq, ")");
  require((stage_ != 0 && stage_ != stages_ - 1) || hooks.batch != nullptr,
          "pipeline: the first and last stage need a source of micro-batches");
  return Run(model_, pipe_, stage_, stages_, spec, hooks).run(actions);
}

}  // namespace wiola
