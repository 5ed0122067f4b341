#include "pipeline/stage_executor.hpp"

#include <chrono>
#include <map>
#include <memory>
#include <vector>

#include "core/error.hpp"
#include "pipeline/wire.hpp"

namespace wiola {

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

// Everything one micro-batch holds in one chunk of this stage during a step.
struct Slot {
  StageSaved saved;
  Transfer recv_act, recv_grad, send_act, send_grad;
  bool forwarded = false, backwarded = false;  // backwarded: B or Backward done
  bool weights_done = false;                    // W or Backward done
  int graph_slot = -1;  // the MicroBatchGraphs slot its forward replayed in, if any
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
      const StageExecutor::RunSpec& spec, const StageExecutor::Hooks& hooks,
      MicroBatchGraphs* graphs)
      : model_(model), be_(model.backend()), pipe_(pipe), stage_(stage), stages_(stages),
        chunks_(model.num_chunks()), first_(stage == 0), last_(stage == stages - 1),
        spec_(spec), hooks_(hooks), parts_(max_boundary_carry(model.config()) + 2),
        graphs_(spec.training ? graphs : nullptr),
        chunk_forwarded_(std::size_t(model.num_chunks()), false) {
    const ModelConfig& cfg = model.config();
    for (const StageSpec& st : model.chunks()) {
      shape_in_.push_back(boundary_shape(spec.batch, spec.seq, cfg.d, model.dtype(),
                                         model.carry_count(st.first_layer), cfg.summary,
                                         cfg.arch));
      shape_out_.push_back(boundary_shape(spec.batch, spec.seq, cfg.d, model.dtype(),
                                          model.carry_count(st.end_layer), cfg.summary,
                                          cfg.arch));
    }
    if (last_) {
      res_.loss_sums = be_.alloc(DType::F64, spec.microbatches, 1);
      res_.loss_tokens.assign(static_cast<std::size_t>(spec.microbatches), 0);
    }
  }

  StageExecutor::Result run(std::span<const Action> actions) {
    const auto t_run = Clock::now();
    // A chunk's gradients of the step are final after its last Backward or W.
    std::vector<std::size_t> last_completing(std::size_t(chunks_), actions.size());
    for (std::size_t i = 0; i < actions.size(); ++i)
      if (pipeline::completes_backward(actions[i].kind) && actions[i].chunk >= 0 &&
          actions[i].chunk < chunks_)
        last_completing[std::size_t(actions[i].chunk)] = i;

    for (std::size_t i = 0; i < actions.size(); ++i) {
      const Action& a = actions[i];
      require(a.microbatch >= 0 && a.microbatch < spec_.microbatches, "schedule: ",
              pipeline::to_string(a), " is outside the ", spec_.microbatches, " micro-batches");
      require(a.chunk >= 0 && a.chunk < chunks_, "schedule: ", pipeline::to_string(a),
              " names a chunk this stage does not hold (it holds ", chunks_, ")");
      if (hooks_.observer) hooks_.observer->before_action(a);
      const auto t_action = Clock::now();
      const double waited_before = res_.times.wait;
      execute(a, i == last_completing[std::size_t(a.chunk)]);
      if (hooks_.record_events)
        res_.events.push_back({a, clock_seconds(t_action), clock_seconds(Clock::now()),
                               res_.times.wait - waited_before});
    }
    const auto t0 = Clock::now();
    for (auto& [key, s] : slots_) {
      s.send_act.wait();
      s.send_grad.wait();
    }
    res_.times.comm += seconds_since(t0);
    if (spec_.training)
      for (auto& [key, s] : slots_)
        require(!s.forwarded || (s.backwarded && s.weights_done), "schedule: micro-batch ",
                key.first, " chunk ", key.second, " was forwarded but its backward is not complete");
    res_.times.step = seconds_since(t_run);
    return std::move(res_);
  }

 private:
  // Virtual stage of chunk c (chunk c of stage s is c * P + s); the first
  // holds the embedding, the last the head.
  bool first_virtual(int c) const { return c == 0 && first_; }
  bool last_virtual(int c) const { return c == chunks_ - 1 && last_; }
  int prev_rank() const { return (stage_ + stages_ - 1) % stages_; }
  int next_rank() const { return (stage_ + 1) % stages_; }

  void execute(const Action& a, bool final_backward) {
    const int c = a.chunk;
    Slot& s = slots_[{a.microbatch, c}];
    const std::size_t k = std::size_t(c);
    switch (a.kind) {
      case ActionKind::RecvActivation:
        require(!first_virtual(c), "schedule: RecvActivation on the first stage");
        post_recv(s.recv_act, WireKind::Activation, shape_in_[k], prev_rank());
        break;
      case ActionKind::Forward: forward(a.microbatch, c, s); break;
      case ActionKind::SendActivation:
        require(!last_virtual(c) && s.forwarded, "schedule: ", pipeline::to_string(a),
                " before its Forward");
        post_send(s.send_act, WireKind::Activation, a.microbatch, shape_out_[k], next_rank());
        break;
      case ActionKind::RecvGrad:
        require(!last_virtual(c), "schedule: RecvGrad on the last stage");
        post_recv(s.recv_grad, WireKind::Gradient, shape_out_[k], next_rank());
        break;
      case ActionKind::Backward:
      case ActionKind::BackwardInput:
        backward(a, s, final_backward);
        break;
      case ActionKind::BackwardWeight: backward_weights(a, s, final_backward); break;
      case ActionKind::SendGrad:
        require(!first_virtual(c) && s.backwarded, "schedule: ", pipeline::to_string(a),
                " before its Backward");
        post_send(s.send_grad, WireKind::Gradient, a.microbatch, shape_in_[k], prev_rank());
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

  void forward(int mb, int chunk, Slot& s) {
    StageInput in;
    in.chunk = chunk;
    in.batch = spec_.batch;
    in.seq = spec_.seq;
    const bool first = first_virtual(chunk), last = last_virtual(chunk);
    const std::size_t k = std::size_t(chunk);
    if (first || last) {
      const HostBatch hb = hooks_.batches->microbatch(mb);
      require(hb.batch == spec_.batch && hb.seq == spec_.seq, "pipeline: micro-batch ", mb,
              " has ", hb.batch, " x ", hb.seq, " tokens, the step expects ", spec_.batch, " x ",
              spec_.seq);
      if (first) in.tokens = upload_tokens(be_, hb.inputs);
      if (last) {
        in.targets = upload_tokens(be_, hb.targets);
        in.loss_sum = res_.loss_sums.rows_slice(mb, mb + 1);
        if (spec_.training) in.loss_scale = spec_.loss_scale;
        res_.loss_tokens[static_cast<std::size_t>(mb)] = hb.target_tokens();
      }
    }
    if (!first) {
      require(s.recv_act.posted(), "schedule: Forward of micro-batch ", mb, " chunk ", chunk,
              " before its RecvActivation");
      std::vector<Tensor> ts = complete_recv(s.recv_act, WireKind::Activation, mb, shape_in_[k]);
      in.x = ts[0];
      in.carry.assign(ts.begin() + 1, ts.end());
    }
    const auto t0 = Clock::now();
    StageOutput out;
    if (graphs_ && chunk_forwarded_[k] && graphs_->forward_ready(chunk, graph_key())) {
      hear_boundaries_before(chunk);
      s.graph_slot = graphs_->take_slot(chunk);
      out = graphs_->forward(s.graph_slot, graph_key(), in, s.saved);
    } else {
      out = model_.forward(in, spec_.training, s.saved, hooks_.boundaries);
      if (graphs_) graphs_->ran_forward_eagerly(chunk, graph_key());
    }
    chunk_forwarded_[k] = true;
    res_.times.compute += seconds_since(t0);
    s.forwarded = true;
    if (!last) {
      s.send_act.tensors = {out.x};
      s.send_act.tensors.insert(s.send_act.tensors.end(), out.carry.begin(), out.carry.end());
    }
    if (!spec_.training) s.saved = StageSaved{};  // evaluation keeps nothing for a backward
  }

  // Backward, or a split backward's B (BackwardInput).
  void backward(const Action& a, Slot& s, bool final_backward) {
    const int mb = a.microbatch;
    const bool split = a.kind == ActionKind::BackwardInput;
    const bool last = last_virtual(a.chunk);
    require(spec_.training, "schedule: ", pipeline::to_string(a), " in an evaluation run");
    require(s.forwarded && !s.backwarded, "schedule: ", pipeline::to_string(a),
            " without a pending Forward");
    std::vector<Tensor> grads_in;
    if (!last) {
      require(s.recv_grad.posted(), "schedule: ", pipeline::to_string(a), " before its RecvGrad");
      grads_in = complete_recv(s.recv_grad, WireKind::Gradient, mb, shape_out_[std::size_t(a.chunk)]);
    }
    const auto t0 = Clock::now();
    const Tensor dx_out = last ? Tensor{} : grads_in[0];
    const std::span<const Tensor> dcarry_out =
        last ? std::span<const Tensor>{} : std::span<const Tensor>(grads_in).subspan(1);
    StageGrads g;
    if (graphs_ && s.graph_slot >= 0 && !split && !final_backward &&
        graphs_->backward_ready(a.chunk, graph_key())) {
      g = graphs_->backward(s.graph_slot, graph_key(), dx_out, dcarry_out, s.saved);
    } else {
      g = model_.backward(dx_out, dcarry_out, spec_.loss_scale, s.saved,
                          final_backward ? hooks_.boundaries : nullptr, split);
      if (graphs_ && !split) graphs_->ran_backward_eagerly(a.chunk, graph_key());
    }
    res_.times.compute += seconds_since(t0);
    s.backwarded = true;
    s.weights_done = !split;
    if (s.weights_done) give_back_graph_slot(a.chunk, s);
    if (!first_virtual(a.chunk)) {
      s.send_grad.tensors = {g.dx};
      s.send_grad.tensors.insert(s.send_grad.tensors.end(), g.dcarry.begin(), g.dcarry.end());
    }
  }

  // A split backward's W: the weight gradients its B queued.
  void backward_weights(const Action& a, Slot& s, bool final_backward) {
    require(s.backwarded && !s.weights_done, "schedule: ", pipeline::to_string(a),
            " without a pending BackwardInput");
    const auto t0 = Clock::now();
    model_.backward_weights(s.saved, final_backward ? hooks_.boundaries : nullptr);
    res_.times.compute += seconds_since(t0);
    s.weights_done = true;
    give_back_graph_slot(a.chunk, s);
  }

  MicroBatchGraphs::Key graph_key() const {
    return graphs_->key(spec_.batch, spec_.seq, spec_.loss_scale);
  }

  // What the chunk's forward would tell the boundaries, told before a
  // replay: the chunk's first forward of the run has waited for them already.
  void hear_boundaries_before(int chunk) {
    if (!hooks_.boundaries) return;
    const StageSpec& spec = model_.chunk(chunk);
    if (spec.embed || spec.head) hooks_.boundaries->before_layer_forward(-1);
    for (int l = spec.first_layer; l < spec.end_layer; ++l)
      hooks_.boundaries->before_layer_forward(l);
  }

  void give_back_graph_slot(int chunk, Slot& s) {
    if (s.graph_slot < 0) return;
    s.saved = StageSaved{};  // the slot's tensors are the next micro-batch's
    graphs_->give_back_slot(chunk, s.graph_slot);
    s.graph_slot = -1;
  }

  StageModel& model_;
  Backend& be_;
  comm::Communicator* pipe_;
  int stage_, stages_, chunks_;
  bool first_, last_;  // this stage holds the embedding (chunk 0) / the head (its last chunk)
  const StageExecutor::RunSpec& spec_;
  const StageExecutor::Hooks& hooks_;
  int parts_;  // header + the most tensors a boundary of this model carries
  std::vector<BoundaryShape> shape_in_, shape_out_;  // [chunk]
  std::map<std::pair<int, int>, Slot> slots_;         // [(micro-batch, chunk)]
  StageExecutor::Result res_;
  MicroBatchGraphs* graphs_;           // null: every micro-batch runs eagerly
  std::vector<bool> chunk_forwarded_;  // [chunk] a forward of this run has run
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
  require((stage_ != 0 && stage_ != stages_ - 1) || hooks.batches != nullptr,
          "pipeline: the first and last stage need a source of micro-batches");
  return Run(model_, pipe_, stage_, stages_, spec, hooks, graphs_.get()).run(actions);
}

void StageExecutor::use_graphs(bool on) {
  if (!on) {
    graphs_.reset();
    return;
  }
  if (!graphs_ && model_.backend().records_graphs())
    graphs_ = std::make_unique<MicroBatchGraphs>(model_);
}

}  // namespace wiola
