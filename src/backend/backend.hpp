#pragma once
// The seam between model math and hardware. The model (src/model) composes a
// Wiola layer out of these ops and never touches memory directly; a backend
// implements each op's forward and backward for its device. The CPU backend is
// the exact reference (fp32 and fp64); a CUDA backend implements the same list.
//
// Every op has one front: the public call below checks its arguments
// (backend_front*.cpp), tells the observer (timing, test coverage) and calls
// the protected do_* that a backend implements. op_table.hpp lists the ops.
//
// Conventions for every op below:
//  * Matrices are row-major views (core/tensor.hpp); "x [N, C]" means rows x cols.
//    Views may be column slices of a wider buffer (ld > cols) unless stated.
//  * All floating tensors of one call share one dtype; index tensors are I32 [n, 1].
//  * Activation gradients ("dx") are written, or added when `accumulate` is true.
//  * Parameter gradients ("dw", "dgamma", ...) are always added (+=), because they
//    accumulate over micro-batches.
//  * Linear layers store W as [out, in] and compute y = x · Wᵀ.
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "backend/device_counts.hpp"
#include "backend/op_table.hpp"
#include "core/model_config.hpp"  // SummaryMode
#include "core/tensor.hpp"

namespace wiola {

// Shapes of one attention call. Q, O have `batch * seq` rows in blocks of `seq`
// rows per sequence; K and V likewise. Rows past a sequence's valid count are
// padding (written as zero, receive zero gradient).
struct AttentionDims {
  int batch = 0;
  int seq = 0;       // rows per sequence block (the context length T)
  int heads = 0;     // H query heads
  int kv_heads = 0;  // Hkv key/value heads; query head h reads group h % kv_heads
  int head_dim = 0;  // dh; scores are scaled by 1/sqrt(dh)
};

// Which coordinates of a head a rotary map pairs: rotate-half (j, j + dh/2),
// the main family's SRPE, or interleaved (2j, 2j + 1), Wiola 13M's spiral RoPE.
enum class RotaryPairs : std::uint8_t { Half, Interleaved };

// Which keys each query row may see, so one kernel serves plain causal GCLA and
// both ATM modes. Row indices inside a sequence block are 0-based.
struct AttentionIndex {
  Tensor n_queries;   // I32 [batch, 1]: valid query rows at the start of each block
  Tensor key_prefix;  // I32 [batch*seq, 1]: query i sees key rows [0, key_prefix[i])
  Tensor key_extra;   // I32 [batch*seq, 1]: ... and also key row key_extra[i] (-1: none)
  Tensor ctx_row;     // I32 [batch*seq, 1]: absolute row of every context tensor for query i
};

// GCLA's output gate Y = σ(G) ⊙ O taken by the attention op itself, so that
// O is not read again by a pass of its own. Forward: reads glog, writes y
// (sigmoid_mul_fwd(glog, o, y)). Backward: reads glog, O and dY, writes dglog
// and d_o (sigmoid_mul_bwd(glog, o, dy, dglog, d_o)), then reads d_o as the
// ungated backward does. The same bits as the separate ops; undefined
// members: no gate.
struct AttentionGate {
  Tensor glog, y;  // [B*T, H*dh]
};
struct AttentionGateGrad {
  Tensor glog, o, dy, dglog;  // [B*T, H*dh]
};

// SRPE taken by the attention op itself, so that Q and K are not rotated by
// passes of their own. Q: the forward takes it straight from its product and
// rotates it in place (srpe_fwd(q, pos_q, ..., q)); the backward takes it
// rotated, and rotates dq back in place once made (srpe_bwd). K: both passes
// take it before SRPE and rotate what they read, so no rotated copy is kept;
// the backward rotates dk back in place. The same bits as the separate ops;
// undefined tables: no SRPE.
struct AttentionRotary {
  Tensor pos_q, pos_kv;     // I32 [B*T, 1]
  Tensor cos_tab, sin_tab;  // [P, dh/2], as srpe_fwd takes them
  RotaryPairs pairs = RotaryPairs::Half;
  bool defined() const { return cos_tab.defined() || sin_tab.defined(); }
};

// A token plan's maps as the attention, SRPE and row-map ops read them
// (ops/token_plan.hpp says what each holds for plain, paper and causal plans).
struct TokenPlanTensors {
  AttentionIndex index;
  Tensor pos_q, pos_kv;     // I32 [batch*seq, 1]: SRPE positions of query and key/value rows
  Tensor merge_a, merge_b;  // I32 [batch*seq, 1]: ATM plans only
  Tensor unmerge;           // I32 [batch*seq, 1]: paper plans only
  Tensor groups;            // I32 [batch, 1]: T' of each sequence; ATM plans only
};

// WIOLA_POISON_UNINIT=1 in the environment (read once): alloc_uninit fills
// with all bits set (NaN in fp32, fp64 and bf16, -1 in i32).
inline bool poison_uninit_requested() {
  static const bool on = [] {
    const char* v = std::getenv("WIOLA_POISON_UNINIT");
    return v != nullptr && std::string_view(v) == "1";
  }();
  return on;
}

// Sees the ops called through a backend, the outermost call of each (an op
// that a backend implements with another op is one call).
class OpObserver {
 public:
  virtual ~OpObserver() = default;
  virtual void op_begins(Op op) = 0;
  virtual void op_ends(Op op) = 0;
};

// The gradients head_loss_fwd makes when it is given them (see there): of
// scale · Σ loss, dxf [N, d] written and dembed [V, d] (wide) added to.
struct HeadLossGrads {
  double scale = 0;
  Tensor dxf, dembed;
};

// Device work recorded once and queued again by each replay(): a CUDA graph
// (Backend::capture).
class DeviceGraph {
 public:
  virtual ~DeviceGraph() = default;
  virtual void replay() = 0;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual Device device() const = 0;
  virtual std::string name() const = 0;
  // The floating dtypes this backend computes in (the CPU: fp32 and fp64;
  // CUDA: bf16 and fp32). Statistics, parameter gradients and rotary tables
  // are wide_dtype() of the call's compute dtype.
  virtual bool computes_in(DType dtype) const = 0;
  // Every op from now on is reported to `observer` (nullptr: none).
  void set_observer(OpObserver* observer) { observer_ = observer; }
  // Waits until every op queued so far has finished (a no-op on the CPU).
  virtual void synchronize() {}
  // Whether capture() records graphs (CUDA; not the CPU, whose ops run as
  // they are called).
  virtual bool records_graphs() const { return false; }
  // Runs `work` without running its device work: records it as one graph,
  // which replay() queues again -- the same kernels on the same addresses,
  // without the host's launch costs. Tensors allocated inside `work` come
  // from a pool private to the graph, kept while the graph or the tensor
  // lives, so each replay writes the same tensors again and no other tensor
  // shares their memory. Nothing inside may read device memory on the host
  // or synchronise (the capture throws, naming the call, and records
  // nothing); values on the host are recorded as they were. Throws where
  // records_graphs() is false.
  virtual std::unique_ptr<DeviceGraph> capture(const std::function<void()>& work);
  // The device stream the ops are queued on (a cudaStream_t for CUDA), for a
  // communicator that orders its transfers after them; nullptr when there is
  // none (the CPU, the emulated CUDA backend of the tests).
  virtual void* native_stream() const { return nullptr; }
  // Whether the attention op takes SRPE (AttentionRotary) for less than the
  // separate srpe ops cost: true where its kernels rotate Q and K as they
  // read them (CUDA). By default it composes those ops and, K being passed
  // unrotated to both passes, rotates K twice, so a caller runs srpe_fwd
  // and srpe_bwd itself instead (the CPU).
  virtual bool attention_takes_srpe() const { return false; }
  // Whether a stage's loss should run through head_loss_fwd/bwd, which keep
  // no logits: true where they compute z in fp32 a block of rows at a time
  // (CUDA: [N, V] logits never exist, and the loss reads fp32 logits). By
  // default they make the whole [N, V] logits in the compute dtype, the
  // backward a second time, so a caller keeps the forward's logits instead
  // and runs linear_fwd and the cross-entropy ops itself (the CPU).
  virtual bool head_loss_keeps_no_logits() const { return false; }
  // Whether products that share an operand run as one product where their
  // other operands lie side by side in memory: the context projections of a
  // layer's summaries (kept one after another), and a plain layer's Q, gate,
  // K and V over [W_q; W_gate; W_k; W_v] with the weight gradient and the
  // data gradient's sum likewise. True where one larger product costs less
  // than several (CUDA: one launch). The CPU runs the products it always
  // ran: OpenBLAS may sum a larger product in another order, and its
  // results would change.
  virtual bool joins_products() const { return false; }
  // What a backend whose head loss keeps no logits takes for one block of
  // rows by default (their fp32 logits and compute-dtype gradient):
  // wiola-1.5b's 8,192 rows of 32,000 logits go in 6 blocks of 1,366 rows,
  // products still far above the sizes where cuBLASLt runs at full rate.
  static constexpr std::size_t kHeadLossBlockBytes = std::size_t(256) << 20;
  // Sets that budget (bytes); no effect on a backend that keeps the logits.
  virtual void set_head_loss_block_bytes(std::size_t bytes) { (void)bytes; }

  // Memory this backend holds for tensors now, and the most it ever held (bytes).
  struct MemoryStats {
    std::size_t in_use = 0, peak = 0;
    std::size_t graphs = 0;  // held for the tensors of live graphs (capture())
  };
  virtual MemoryStats memory() const { return {}; }
  // What this backend has asked of its device since the process started
  // (device_counts.hpp): launches, products, memsets, copies, host syncs,
  // allocations, bytes and FLOPs; a phase is the difference of two reads.
  // None where nothing is counted (the CPU).
  virtual std::optional<DeviceCounts> device_counts() const { return std::nullopt; }
  // Memory this rank may use for tensors: the device's memory, or on the CPU
  // this machine's share per local rank (bytes).
  virtual std::size_t memory_capacity() const = 0;
  // Sets aside `bytes` for the tensors to come, so that a step's allocations
  // are served without asking the driver (the CUDA backend's stream-ordered
  // pool keeps it); a no-op where allocation is cheap anyway (the CPU).
  virtual void reserve_memory(std::size_t /*bytes*/) {}

  // ---- memory -------------------------------------------------------------
  // Zero-filled, contiguous rows x cols tensor.
  Tensor alloc(DType dtype, std::int64_t rows, std::int64_t cols);
  // The same, its contents unspecified: for an op's output that the op
  // writes whole (a product with accumulate = false, an elementwise result),
  // where zero-filling first is wasted memory traffic. A backend may return
  // zeros; the CPU and CUDA backends fill it with NaN when
  // WIOLA_POISON_UNINIT=1 (poison_uninit_requested(); the test suite sets
  // it), so a reader of an element nobody wrote fails a test.
  Tensor alloc_uninit(DType dtype, std::int64_t rows, std::int64_t cols);
  void fill(const Tensor& t, double value);
  // dst = src (same shape and dtype; either may be strided).
  void copy(const Tensor& src, const Tensor& dst);
  // dst = src converted to dst's dtype (same shape).
  void convert(const Tensor& src, const Tensor& dst);
  // Contiguous tensor <-> host bytes in the tensor's own dtype.
  void to_host(const Tensor& src, void* dst);
  void from_host(const void* src, const Tensor& dst);
  // Raw bytes between this backend's memory and host memory (staging device
  // buffers for a transport that reads only host memory).
  void copy_to_host(const void* src, void* host_dst, std::size_t bytes);
  void copy_from_host(const void* host_src, void* dst, std::size_t bytes);

  // ---- elementwise and reductions ----------------------------------------
  void add(const Tensor& a, const Tensor& b, const Tensor& out);  // out = a + b
  void axpy(double alpha, const Tensor& x, const Tensor& y);      // y += alpha * x
  void scale(const Tensor& x, double alpha);                      // x *= alpha
  // Reductions into an F64 [1, 1] accumulator in backend memory, so that
  // orchestration can sum losses and norms without reading them back until
  // it needs them (once per step). NaN or Inf anywhere propagates.
  // acc += Σ x, the elements added in double one after another in row-major order.
  void sum(const Tensor& x, const Tensor& acc);
  // acc += Σ x², accumulated in double (in fixed-size chunks, so the result
  // does not depend on the thread count).
  void sum_squares(const Tensor& x, const Tensor& acc);

  // ---- linear: y = x·Wᵀ, x [N, in], W [out, in], y [N, out] ------------------
  void linear_fwd(const Tensor& x, const Tensor& w, const Tensor& y, bool accumulate);
  // dx = dy · W
  void linear_bwd_data(const Tensor& dy, const Tensor& w, const Tensor& dx, bool accumulate);
  // dw += dyᵀ · x
  void linear_bwd_weight(const Tensor& dy, const Tensor& x, const Tensor& dw);
  // The products of a weight stacked from parts, w = [W_0; W_1; ...] with
  // part_rows[p] rows each: y = x·wᵀ (written; y's columns follow the
  // parts) and dx = dy·w (written, or added into). By default one product
  // per part, as if each part were a weight of its own (the data gradient
  // adds the parts' products in order), which is the CPU's way: OpenBLAS
  // may sum a larger product in another order, and its results would
  // change. A device backend runs one product over the whole of w.
  void linear_fwd_stacked(const Tensor& x, const Tensor& w, std::span<const std::int64_t> part_rows,
                          const Tensor& y);
  void linear_bwd_data_stacked(const Tensor& dy, const Tensor& w,
                               std::span<const std::int64_t> part_rows, const Tensor& dx,
                               bool accumulate);

  // ---- embedding: out[i] = table[tokens[i]] -------------------------------
  // tokens I32 [N, 1] (already validated < V), table [V, d], out [N, d].
  void embedding_fwd(const Tensor& tokens, const Tensor& table, const Tensor& out);
  // dtable[tokens[i]] += dout[i]
  void embedding_bwd(const Tensor& tokens, const Tensor& dout, const Tensor& dtable);

  // ---- WRMSNorm: z = x + δ, y = γ ⊙ z / sqrt(mean(z²) + eps) ---------------
  // gamma, delta [1, d]; rstd [N, 1] receives 1/sqrt(mean(z²)+eps) for backward.
  // delta may be an undefined Tensor: plain RMSNorm (δ = 0, Wiola 13M); ddelta
  // is then undefined too and nothing is added for it.
  void wrmsnorm_fwd(const Tensor& x, const Tensor& gamma, const Tensor& delta, double eps,
                    const Tensor& y, const Tensor& rstd);
  void wrmsnorm_bwd(const Tensor& x, const Tensor& gamma, const Tensor& delta, const Tensor& rstd,
                    const Tensor& dy, const Tensor& dx, bool accumulate, const Tensor& dgamma,
                    const Tensor& ddelta);
  // A residual sum and its normalisation in one pass: sum = x + r (rounded to
  // the dtype, as add writes it), then wrmsnorm_fwd(sum) into y and rstd. The
  // same bits as add followed by wrmsnorm_fwd; its backward is theirs.
  void add_wrmsnorm_fwd(const Tensor& x, const Tensor& r, const Tensor& gamma,
                        const Tensor& delta, double eps, const Tensor& sum, const Tensor& y,
                        const Tensor& rstd);

  // ---- SRPE / rotary maps (pairs inside every head) -------------------------
  // x, y [N, heads*head_dim] (y may be x); positions I32 [N, 1];
  // cos_tab, sin_tab [P, head_dim/2] hold c_j and s_j per position (SRPE:
  // c = r·cos Θ, s = r·sin Θ; spiral RoPE: cos and sin of the angle). Pair j is
  // (a, b) = (j, j + dh/2) for RotaryPairs::Half, (2j, 2j + 1) for Interleaved:
  // y_a = x_a c − x_b s ; y_b = x_a s + x_b c.
  void srpe_fwd(const Tensor& x, const Tensor& positions, const Tensor& cos_tab,
                const Tensor& sin_tab, int head_dim, RotaryPairs pairs, const Tensor& y);
  // dx = R(p)ᵀ dy (written; dx may be dy).
  void srpe_bwd(const Tensor& dy, const Tensor& positions, const Tensor& cos_tab,
                const Tensor& sin_tab, int head_dim, RotaryPairs pairs, const Tensor& dx);

  // ---- GCLA attention core -------------------------------------------------
  // Q [B*T, H*dh] (after SRPE), K, V [B*T, Hkv*dh] (K after SRPE).
  // ctx_k[c], ctx_v[c] [R_c, Hkv*dh]: context keys/values from the c-th summary
  // (oldest first); query i reads row ctx_row[i] of each. n_ctx = ctx_k.size() >= 0.
  // phi [1, 1]: β = σ(φ).
  //   O_self = softmax(Q_h K_gᵀ / √dh over visible keys) V_g
  //   O_ctx  = softmax(Q_h · ctx_k[c]_g / √dh over c) · ctx_v[c]_g
  //   O      = (1 − β) O_self + β O_ctx
  // Saves O_self, O_ctx [B*T, H*dh] and the log-sum-exp of each softmax,
  // lse_self, lse_ctx [B*T, H], for the backward pass.
  // No context (n_ctx = 0; plain causal attention, Wiola 13M): O = O_self
  // exactly; phi, o_ctx, lse_ctx (and in backward dphi) are neither read nor
  // written and may be undefined Tensors; o_self may be the same tensor as o.
  // With a gate (AttentionGate), also y = σ(glog) ⊙ O; with SRPE
  // (AttentionRotary), q and k are taken before it.
  void attention_fwd(const AttentionDims& dims, const Tensor& q, const Tensor& k, const Tensor& v,
                     std::span<const Tensor> ctx_k, std::span<const Tensor> ctx_v,
                     const Tensor& phi, const AttentionIndex& index, const Tensor& o,
                     const Tensor& o_self, const Tensor& o_ctx, const Tensor& lse_self,
                     const Tensor& lse_ctx, const AttentionGate& gate = {},
                     const AttentionRotary& rotary = {});
  // Writes dq, dk, dv (same shapes as q, k, v) and dctx_k[c], dctx_v[c];
  // adds into dphi. With a gate (AttentionGateGrad), d_o is written first,
  // from dY, with dglog; with SRPE (AttentionRotary), dq and dk are rotated
  // back last.
  void attention_bwd(const AttentionDims& dims, const Tensor& q, const Tensor& k, const Tensor& v,
                     std::span<const Tensor> ctx_k, std::span<const Tensor> ctx_v,
                     const Tensor& phi, const AttentionIndex& index, const Tensor& o_self,
                     const Tensor& o_ctx, const Tensor& lse_self, const Tensor& lse_ctx,
                     const Tensor& d_o, const Tensor& dq, const Tensor& dk, const Tensor& dv,
                     std::span<const Tensor> dctx_k, std::span<const Tensor> dctx_v,
                     const Tensor& dphi, const AttentionGateGrad& gate = {},
                     const AttentionRotary& rotary = {});

  // ---- per-head maps of x [N, heads*head_dim] (Wiola 13M's gate) ------------
  // y [N, head_dim] = the mean over the heads: y_j = (1/heads) Σ_h x[h*head_dim + j].
  void head_mean_fwd(const Tensor& x, int head_dim, const Tensor& y);
  // dx[h*head_dim + j] = dy_j / heads (written, or added when accumulate).
  void head_mean_bwd(const Tensor& dy, int head_dim, const Tensor& dx, bool accumulate);
  // y[h*head_dim + j] = s[h] · x[h*head_dim + j], s [N, heads] (y may be x).
  void head_scale_fwd(const Tensor& x, const Tensor& s, int head_dim, const Tensor& y);
  // dx = s · dy per head (written; dx may be dy); ds[h] = Σ_j dy·x over the
  // head's columns (written, summed in at least fp32).
  void head_scale_bwd(const Tensor& x, const Tensor& s, const Tensor& dy, int head_dim,
                      const Tensor& dx, const Tensor& ds);

  // ---- gates and activations (all [N, C], element by element) --------------
  // y = σ(g) ⊙ x
  void sigmoid_mul_fwd(const Tensor& g, const Tensor& x, const Tensor& y);
  void sigmoid_mul_bwd(const Tensor& g, const Tensor& x, const Tensor& dy, const Tensor& dg,
                       const Tensor& dx);
  // y = SiLU(g) ⊙ u, SiLU(g) = g σ(g)
  void silu_mul_fwd(const Tensor& g, const Tensor& u, const Tensor& y);
  void silu_mul_bwd(const Tensor& g, const Tensor& u, const Tensor& dy, const Tensor& dg,
                    const Tensor& du);
  // y = GELU(x), exact: x Φ(x) = x (1 + erf(x/√2)) / 2
  void gelu_fwd(const Tensor& x, const Tensor& y);
  void gelu_bwd(const Tensor& x, const Tensor& dy, const Tensor& dx);
  // The DSFF's two activations of the same rows, ha = SiLU(ga) ⊙ ua
  // ([N, dA]) and hb = GELU(ub) ([N, dB]), and their gradients: by default
  // silu_mul and gelu one after the other; a device runs both in one pass.
  void dsff_act_fwd(const Tensor& ga, const Tensor& ua, const Tensor& ub, const Tensor& ha,
                    const Tensor& hb);
  void dsff_act_bwd(const Tensor& ga, const Tensor& ua, const Tensor& dha, const Tensor& ub,
                    const Tensor& dhb, const Tensor& dga, const Tensor& dua, const Tensor& dub);
  // DSFF fusion: α = σ(logits), out = α ⊙ a + (1 − α) ⊙ b
  void fusion_fwd(const Tensor& logits, const Tensor& a, const Tensor& b, const Tensor& out);
  void fusion_bwd(const Tensor& logits, const Tensor& a, const Tensor& b, const Tensor& dout,
                  const Tensor& dlogits, const Tensor& da, const Tensor& db);
  // The fusion added to a residual in one pass: out = residual + fusion, the
  // fusion rounded to the dtype first (the same bits as fusion_fwd followed by
  // add). Its backward is fusion_bwd's (the residual's gradient is dout).
  void fusion_add_fwd(const Tensor& logits, const Tensor& a, const Tensor& b,
                      const Tensor& residual, const Tensor& out);

  // ---- GCLA layer summaries of x [B*T, d] ----------------------------------
  // Causal:   s [B*T, d], s[b,t] = mean of x[b,0..t].
  // Sequence: s [B, d],   s[b]   = mean of x[b,0..T-1].
  void summary_fwd(SummaryMode mode, const Tensor& x, int batch, int seq, const Tensor& s);
  // dx += ∂s/∂x applied to ds.
  void summary_bwd(SummaryMode mode, const Tensor& ds, int batch, int seq, const Tensor& dx);

  // ---- ATM row maps -----------------------------------------------------------
  // rho [B*T, 1] (fp32, or fp64 where the backend computes in it);
  // rho[b,t] = cos(x[b,t], x[b,t+1]) for t < T−1 (0 when either row is zero),
  // rho[b,T−1] = −2.
  void row_cosine_next(const Tensor& x, int batch, int seq, const Tensor& rho);
  // ATM's token plan from rho, built where rho lives (no host round trip, so
  // a micro-batch needs no host synchronisation): each sequence's greedy
  // adjacent merge (t pairs with t+1 when rho[t] > tau, and the walk goes on
  // at t+2), then the paper or causal maps of ops/token_plan.hpp. Every
  // tensor of `plan` is written whole; `unmerge` is for paper plans only.
  void atm_plan(const Tensor& rho, int batch, int seq, double tau, AtmMode mode,
                SummaryMode summary, const TokenPlanTensors& plan);
  // dst[r] = mean of src rows {idx_a[r], idx_b[r]} leaving out −1 entries; a row
  // with idx_a[r] = −1 is zero. Indices are absolute rows of src.
  void merge_rows_fwd(const Tensor& src, const Tensor& idx_a, const Tensor& idx_b,
                      const Tensor& dst);
  // dsrc[idx] += ddst[r] / count(r)   (the adjoint of merge_rows_fwd)
  void merge_rows_bwd(const Tensor& ddst, const Tensor& idx_a, const Tensor& idx_b,
                      const Tensor& dsrc);
  // The same adjoint written whole (dsrc = 0, then merge_rows_bwd) for the
  // maps of a causal ATM plan: per sequence of `seq` rows, its T' = groups[b]
  // groups (ascending first members), then the unmerged first members of its
  // pairs (ascending). A device gathers each source row's two rows (its
  // group's and its unmerged copy's) instead of scattering, so dsrc needs no
  // zeroing first. Other maps give a device a wrong result: causal plans only.
  void causal_merge_bwd(const Tensor& ddst, const Tensor& idx_a, const Tensor& idx_b,
                        const Tensor& groups, int batch, int seq, const Tensor& dsrc);

  // ---- loss: mean-free cross-entropy per row --------------------------------
  // logits [N, V], targets I32 [N, 1] (−1: ignored row). Writes loss[i] =
  // lse_i − logits[i, target] (0 for ignored rows) and lse [N, 1], both in the
  // logits' dtype but computed in at least fp32 with max-subtraction.
  void cross_entropy_fwd(const Tensor& logits, const Tensor& targets, const Tensor& loss,
                         const Tensor& lse);
  // dlogits = scale · (softmax(logits) − onehot(target)); 0 for ignored rows.
  // dlogits may be logits (in place).
  void cross_entropy_bwd(const Tensor& logits, const Tensor& targets, const Tensor& lse,
                         double scale, const Tensor& dlogits);

  // ---- head: the tied-embedding logits and their loss in one op -------------
  // z = xf · embedᵀ [N, V] and cross_entropy_fwd on z: loss and lse [N, 1]
  // (wide). xf [N, d], embed [V, d] in the compute dtype. With `grads` (its
  // dxf defined: a backward with that scale will follow) the op also makes
  // head_loss_bwd's gradients from the same logits, so nothing is left to
  // make them again.
  void head_loss_fwd(const Tensor& xf, const Tensor& embed, const Tensor& targets,
                     const Tensor& loss, const Tensor& lse, const HeadLossGrads& grads = {});
  // z again, dz = scale · (softmax(z) − onehot(target)) (0 for ignored rows);
  // dxf = dz · embed (written) and dembed += dzᵀ · xf (wide).
  void head_loss_bwd(const Tensor& xf, const Tensor& embed, const Tensor& targets,
                     const Tensor& lse, double scale, const Tensor& dxf, const Tensor& dembed);

  // ---- optimizer ---------------------------------------------------------------
  // One AdamW step on a contiguous range (param, grad, m, v share a shape):
  //   g = grad · grad_scale; m = β1 m + (1−β1) g; v = β2 v + (1−β2) g²
  //   param −= lr · ( (m / (1−β1^step)) / (sqrt(v / (1−β2^step)) + eps) + wd · param )
  // param, grad, m, v share shape and dtype (fp32 master state on every device;
  // fp64 on the CPU when the whole model runs in fp64).
  struct AdamW {
    double lr, beta1, beta2, eps, weight_decay, grad_scale;
    long step;  // 1-based
  };
  void adamw_step(const AdamW& h, const Tensor& param, const Tensor& grad, const Tensor& m,
                  const Tensor& v);

 protected:
  // What each backend implements: the math of an op on its device. The public
  // op above has checked every argument (tensors defined and in this
  // backend's memory, dtypes, shapes, the attention arguments) before it calls
  // one of these, so an implementation checks only the limits of its own
  // kernels.
  virtual Tensor do_alloc(DType dtype, std::int64_t rows, std::int64_t cols) = 0;
  virtual Tensor do_alloc_uninit(DType dtype, std::int64_t rows, std::int64_t cols) {
    return do_alloc(dtype, rows, cols);
  }
  virtual void do_fill(const Tensor& t, double value) = 0;
  virtual void do_copy(const Tensor& src, const Tensor& dst) = 0;
  virtual void do_convert(const Tensor& src, const Tensor& dst) = 0;
  virtual void do_to_host(const Tensor& src, void* dst) = 0;
  virtual void do_from_host(const void* src, const Tensor& dst) = 0;
  virtual void do_copy_to_host(const void* src, void* host_dst, std::size_t bytes) = 0;
  virtual void do_copy_from_host(const void* host_src, void* dst, std::size_t bytes) = 0;
  virtual void do_add(const Tensor& a, const Tensor& b, const Tensor& out) = 0;
  virtual void do_axpy(double alpha, const Tensor& x, const Tensor& y) = 0;
  virtual void do_scale(const Tensor& x, double alpha) = 0;
  virtual void do_sum(const Tensor& x, const Tensor& acc) = 0;
  virtual void do_sum_squares(const Tensor& x, const Tensor& acc) = 0;
  virtual void do_linear_fwd(const Tensor& x, const Tensor& w, const Tensor& y,
                             bool accumulate) = 0;
  virtual void do_linear_bwd_data(const Tensor& dy, const Tensor& w, const Tensor& dx,
                                  bool accumulate) = 0;
  virtual void do_linear_bwd_weight(const Tensor& dy, const Tensor& x, const Tensor& dw) = 0;
  virtual void do_linear_fwd_stacked(const Tensor& x, const Tensor& w,
                                     std::span<const std::int64_t> part_rows, const Tensor& y) {
    std::int64_t r0 = 0;
    for (const std::int64_t rows : part_rows) {
      do_linear_fwd(x, w.rows_slice(r0, r0 + rows), y.cols_slice(r0, r0 + rows), false);
      r0 += rows;
    }
  }
  virtual void do_linear_bwd_data_stacked(const Tensor& dy, const Tensor& w,
                                          std::span<const std::int64_t> part_rows,
                                          const Tensor& dx, bool accumulate) {
    std::int64_t r0 = 0;
    for (const std::int64_t rows : part_rows) {
      do_linear_bwd_data(dy.cols_slice(r0, r0 + rows), w.rows_slice(r0, r0 + rows), dx,
                         accumulate || r0 > 0);
      r0 += rows;
    }
  }
  virtual void do_embedding_fwd(const Tensor& tokens, const Tensor& table, const Tensor& out) = 0;
  virtual void do_embedding_bwd(const Tensor& tokens, const Tensor& dout, const Tensor& dtable) = 0;
  virtual void do_wrmsnorm_fwd(const Tensor& x, const Tensor& gamma, const Tensor& delta,
                               double eps, const Tensor& y, const Tensor& rstd) = 0;
  virtual void do_wrmsnorm_bwd(const Tensor& x, const Tensor& gamma, const Tensor& delta,
                               const Tensor& rstd, const Tensor& dy, const Tensor& dx,
                               bool accumulate, const Tensor& dgamma, const Tensor& ddelta) = 0;
  // Fused forms: by default the two ops they stand for, one after the other
  // (the CPU's reference); a device backend runs them as one kernel.
  virtual void do_add_wrmsnorm_fwd(const Tensor& x, const Tensor& r, const Tensor& gamma,
                                   const Tensor& delta, double eps, const Tensor& sum,
                                   const Tensor& y, const Tensor& rstd) {
    do_add(x, r, sum);
    do_wrmsnorm_fwd(sum, gamma, delta, eps, y, rstd);
  }
  virtual void do_srpe_fwd(const Tensor& x, const Tensor& positions, const Tensor& cos_tab,
                           const Tensor& sin_tab, int head_dim, RotaryPairs pairs,
                           const Tensor& y) = 0;
  virtual void do_srpe_bwd(const Tensor& dy, const Tensor& positions, const Tensor& cos_tab,
                           const Tensor& sin_tab, int head_dim, RotaryPairs pairs,
                           const Tensor& dx) = 0;
  virtual void do_attention_fwd(const AttentionDims& dims, const Tensor& q, const Tensor& k,
                                const Tensor& v, std::span<const Tensor> ctx_k,
                                std::span<const Tensor> ctx_v, const Tensor& phi,
                                const AttentionIndex& index, const Tensor& o, const Tensor& o_self,
                                const Tensor& o_ctx, const Tensor& lse_self,
                                const Tensor& lse_ctx) = 0;
  virtual void do_attention_bwd(const AttentionDims& dims, const Tensor& q, const Tensor& k,
                                const Tensor& v, std::span<const Tensor> ctx_k,
                                std::span<const Tensor> ctx_v, const Tensor& phi,
                                const AttentionIndex& index, const Tensor& o_self,
                                const Tensor& o_ctx, const Tensor& lse_self, const Tensor& lse_ctx,
                                const Tensor& d_o, const Tensor& dq, const Tensor& dk,
                                const Tensor& dv, std::span<const Tensor> dctx_k,
                                std::span<const Tensor> dctx_v, const Tensor& dphi) = 0;
  // SRPE of k into a tensor of its own: the keys the default fused forms
  // attend over.
  Tensor rotated_keys(const Tensor& k, int head_dim, const AttentionRotary& r) {
    const Tensor kr = alloc_uninit(k.dtype(), k.rows(), k.cols());
    do_srpe_fwd(k, r.pos_kv, r.cos_tab, r.sin_tab, head_dim, r.pairs, kr);
    return kr;
  }
  // The fused forms (AttentionGate, AttentionRotary; either may be
  // undefined): by default the separate ops around the attention op, the
  // gate's after it (forward) or before it (backward), SRPE's before it
  // (forward) or after it (backward).
  virtual void do_attention_fwd_fused(const AttentionDims& dims, const Tensor& q, const Tensor& k,
                                      const Tensor& v, std::span<const Tensor> ctx_k,
                                      std::span<const Tensor> ctx_v, const Tensor& phi,
                                      const AttentionIndex& index, const Tensor& o,
                                      const Tensor& o_self, const Tensor& o_ctx,
                                      const Tensor& lse_self, const Tensor& lse_ctx,
                                      const AttentionGate& gate, const AttentionRotary& rotary) {
    const Tensor kr = rotary.defined() ? rotated_keys(k, dims.head_dim, rotary) : k;
    if (rotary.defined())
      do_srpe_fwd(q, rotary.pos_q, rotary.cos_tab, rotary.sin_tab, dims.head_dim, rotary.pairs, q);
    do_attention_fwd(dims, q, kr, v, ctx_k, ctx_v, phi, index, o, o_self, o_ctx, lse_self,
                     lse_ctx);
    if (gate.glog.defined()) do_sigmoid_mul_fwd(gate.glog, o, gate.y);
  }
  virtual void do_attention_bwd_fused(
      const AttentionDims& dims, const Tensor& q, const Tensor& k, const Tensor& v,
      std::span<const Tensor> ctx_k, std::span<const Tensor> ctx_v, const Tensor& phi,
      const AttentionIndex& index, const Tensor& o_self, const Tensor& o_ctx,
      const Tensor& lse_self, const Tensor& lse_ctx, const Tensor& d_o, const Tensor& dq,
      const Tensor& dk, const Tensor& dv, std::span<const Tensor> dctx_k,
      std::span<const Tensor> dctx_v, const Tensor& dphi, const AttentionGateGrad& gate,
      const AttentionRotary& rotary) {
    if (gate.glog.defined()) do_sigmoid_mul_bwd(gate.glog, gate.o, gate.dy, gate.dglog, d_o);
    const Tensor kr = rotary.defined() ? rotated_keys(k, dims.head_dim, rotary) : k;
    do_attention_bwd(dims, q, kr, v, ctx_k, ctx_v, phi, index, o_self, o_ctx, lse_self, lse_ctx,
                     d_o, dq, dk, dv, dctx_k, dctx_v, dphi);
    if (rotary.defined()) {
      do_srpe_bwd(dq, rotary.pos_q, rotary.cos_tab, rotary.sin_tab, dims.head_dim, rotary.pairs,
                  dq);
      do_srpe_bwd(dk, rotary.pos_kv, rotary.cos_tab, rotary.sin_tab, dims.head_dim, rotary.pairs,
                  dk);
    }
  }
  virtual void do_head_mean_fwd(const Tensor& x, int head_dim, const Tensor& y) = 0;
  virtual void do_head_mean_bwd(const Tensor& dy, int head_dim, const Tensor& dx,
                                bool accumulate) = 0;
  virtual void do_head_scale_fwd(const Tensor& x, const Tensor& s, int head_dim,
                                 const Tensor& y) = 0;
  virtual void do_head_scale_bwd(const Tensor& x, const Tensor& s, const Tensor& dy, int head_dim,
                                 const Tensor& dx, const Tensor& ds) = 0;
  virtual void do_sigmoid_mul_fwd(const Tensor& g, const Tensor& x, const Tensor& y) = 0;
  virtual void do_sigmoid_mul_bwd(const Tensor& g, const Tensor& x, const Tensor& dy,
                                  const Tensor& dg, const Tensor& dx) = 0;
  virtual void do_silu_mul_fwd(const Tensor& g, const Tensor& u, const Tensor& y) = 0;
  virtual void do_silu_mul_bwd(const Tensor& g, const Tensor& u, const Tensor& dy, const Tensor& dg,
                               const Tensor& du) = 0;
  virtual void do_gelu_fwd(const Tensor& x, const Tensor& y) = 0;
  virtual void do_gelu_bwd(const Tensor& x, const Tensor& dy, const Tensor& dx) = 0;
  virtual void do_dsff_act_fwd(const Tensor& ga, const Tensor& ua, const Tensor& ub,
                               const Tensor& ha, const Tensor& hb) {
    do_silu_mul_fwd(ga, ua, ha);
    do_gelu_fwd(ub, hb);
  }
  virtual void do_dsff_act_bwd(const Tensor& ga, const Tensor& ua, const Tensor& dha,
                               const Tensor& ub, const Tensor& dhb, const Tensor& dga,
                               const Tensor& dua, const Tensor& dub) {
    do_gelu_bwd(ub, dhb, dub);
    do_silu_mul_bwd(ga, ua, dha, dga, dua);
  }
  virtual void do_fusion_fwd(const Tensor& logits, const Tensor& a, const Tensor& b,
                             const Tensor& out) = 0;
  virtual void do_fusion_bwd(const Tensor& logits, const Tensor& a, const Tensor& b,
                             const Tensor& dout, const Tensor& dlogits, const Tensor& da,
                             const Tensor& db) = 0;
  virtual void do_fusion_add_fwd(const Tensor& logits, const Tensor& a, const Tensor& b,
                                 const Tensor& residual, const Tensor& out) {
    do_fusion_fwd(logits, a, b, out);
    do_add(residual, out, out);
  }
  virtual void do_summary_fwd(SummaryMode mode, const Tensor& x, int batch, int seq,
                              const Tensor& s) = 0;
  virtual void do_summary_bwd(SummaryMode mode, const Tensor& ds, int batch, int seq,
                              const Tensor& dx) = 0;
  virtual void do_row_cosine_next(const Tensor& x, int batch, int seq, const Tensor& rho) = 0;
  virtual void do_atm_plan(const Tensor& rho, int batch, int seq, double tau, AtmMode mode,
                           SummaryMode summary, const TokenPlanTensors& plan) = 0;
  virtual void do_merge_rows_fwd(const Tensor& src, const Tensor& idx_a, const Tensor& idx_b,
                                 const Tensor& dst) = 0;
  virtual void do_merge_rows_bwd(const Tensor& ddst, const Tensor& idx_a, const Tensor& idx_b,
                                 const Tensor& dsrc) = 0;
  // By default any maps: zeros, then the scatter (the plan's shape unused).
  virtual void do_causal_merge_bwd(const Tensor& ddst, const Tensor& idx_a, const Tensor& idx_b,
                                   const Tensor& /*groups*/, int /*batch*/, int /*seq*/,
                                   const Tensor& dsrc) {
    do_fill(dsrc, 0.0);
    do_merge_rows_bwd(ddst, idx_a, idx_b, dsrc);
  }
  virtual void do_cross_entropy_fwd(const Tensor& logits, const Tensor& targets, const Tensor& loss,
                                    const Tensor& lse) = 0;
  virtual void do_cross_entropy_bwd(const Tensor& logits, const Tensor& targets, const Tensor& lse,
                                    double scale, const Tensor& dlogits) = 0;
  // By default the ops a stage runs without it, in its order, over whole
  // logits in xf's dtype: the same bits.
  virtual void do_head_loss_fwd(const Tensor& xf, const Tensor& embed, const Tensor& targets,
                                const Tensor& loss, const Tensor& lse,
                                const HeadLossGrads& grads) {
    const Tensor z = do_alloc_uninit(xf.dtype(), xf.rows(), embed.rows());
    do_linear_fwd(xf, embed, z, false);
    do_cross_entropy_fwd(z, targets, loss, lse);
    if (grads.dxf.defined()) head_loss_grads(xf, embed, targets, lse, grads, z);
  }
  virtual void do_head_loss_bwd(const Tensor& xf, const Tensor& embed, const Tensor& targets,
                                const Tensor& lse, double scale, const Tensor& dxf,
                                const Tensor& dembed) {
    const Tensor z = do_alloc_uninit(xf.dtype(), xf.rows(), embed.rows());
    do_linear_fwd(xf, embed, z, false);
    head_loss_grads(xf, embed, targets, lse, {scale, dxf, dembed}, z);
  }
  // The default's gradients from logits z (overwritten by their gradient).
  void head_loss_grads(const Tensor& xf, const Tensor& embed, const Tensor& targets,
                       const Tensor& lse, const HeadLossGrads& g, const Tensor& z) {
    do_cross_entropy_bwd(z, targets, lse, g.scale, z);
    do_linear_bwd_weight(z, xf, g.dembed);
    do_linear_bwd_data(z, embed, g.dxf, false);
  }
  virtual void do_adamw_step(const AdamW& h, const Tensor& param, const Tensor& grad,
                             const Tensor& m, const Tensor& v) = 0;
  // Hears, before an outermost op runs, the bytes of its operands, as
  // op_checks.hpp counts them: a device backend counts them as the op's
  // memory-traffic floor. The CPU backend ignores them.
  virtual void note_operand_bytes(Op /*op*/, std::int64_t /*bytes*/) {}

 private:
  friend class ObservedOp;
  OpObserver* observer_ = nullptr;
  int depth_ = 0;  // ops in progress: only the outermost is observed
};

std::unique_ptr<Backend> make_cpu_backend();

}  // namespace wiola
