// CudaBackend: memory, transfers, elementwise ops, reductions, the linear
// layer's products, AdamW, and registration. The layer ops are in
// cuda_backend_layers.cpp and cuda_backend_attention.cpp.
#include "backend/cuda/cuda_backend.hpp"
#include "backend/cuda/device_counters.hpp"

#include <atomic>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

#include "backend/backend_registry.hpp"
#include "backend/cuda/kernels/adamw.hpp"
#include "backend/cuda/kernels/elementwise.hpp"
#include "backend/cuda/kernels/memory.hpp"
#include "backend/cuda/kernels/reduce.hpp"

namespace wiola::cuda {

// The stream, the byte counts and the cache of released blocks; lives until
// the last tensor is released.
//
// A released tensor's block is kept for a later tensor of its size, or of a
// size at most 1/8 smaller: a training step asks for the same shapes every
// micro-batch, so after the first step no allocation reaches the CUDA runtime
// (device_counters.hpp counts them). The slack lets an ATM layer's tensors,
// whose row count follows the data, reuse blocks instead of leaving one block
// per row count seen in the cache, and bounds what it wastes. Reuse is as safe
// as cudaFreeAsync then cudaMallocAsync on one stream: every use of a block
// is queued on `stream` (work on another stream orders itself against it, as
// it must for cudaFreeAsync too). When the device is full the cache goes back
// to the driver and the allocation is tried again.
struct CudaBackend::Memory {
  struct Block {
    void* p;
    std::size_t bytes;
    bool graph_memory = false;  // allocate_graph_memory's, not the stream-ordered pool's
  };
  // The blocks a graph's capture took (GraphPool): while the graph lives,
  // every replay writes them again, so no other tensor may have them.
  struct GraphPool {
    std::shared_ptr<Memory> memory;
    std::multimap<std::size_t, Block> free;  // released during or after the capture
    std::vector<Block> owned;
    ~GraphPool() {
      for (const Block& b : owned) {
        memory->graph_bytes -= b.bytes;
        memory->give_back(b);
      }
    }
  };
  Stream stream = nullptr;
  std::atomic<std::size_t> in_use{0}, peak{0};
  std::atomic<std::size_t> graph_bytes{0};  // owned by live graph pools
  std::mutex cache_mutex;                    // deleters run on whichever thread drops a tensor
  std::multimap<std::size_t, Block> cached;  // released blocks by size
  std::shared_ptr<GraphPool> capturing;      // the pool of the capture under way

  // A block of `bytes`, or a size at most 1/8 larger, from `blocks`.
  static std::optional<Block> fit(std::multimap<std::size_t, Block>& blocks, std::size_t bytes) {
    const auto it = blocks.lower_bound(bytes);
    if (it == blocks.end() || it->first - bytes > bytes / 8) return std::nullopt;
    const Block b = it->second;
    blocks.erase(it);
    return b;
  }

  // `describe()` names the tensor for an out-of-memory error; it is called
  // only when the cache has no block, so a hit builds no text. Returns the
  // pool of the capture under way too: the block is that graph's.
  template <class Describe>
  std::pair<Block, std::shared_ptr<GraphPool>> take(std::size_t bytes, Describe describe) {
    std::unique_lock<std::mutex> lock(cache_mutex);
    if (std::shared_ptr<GraphPool> pool = capturing) {
      if (auto b = fit(pool->free, bytes)) return {*b, pool};
      std::optional<Block> b = fit(cached, bytes);
      lock.unlock();
      if (!b) b = Block{allocate_graph_memory(bytes, describe().c_str()), bytes, true};
      lock.lock();
      pool->owned.push_back(*b);
      graph_bytes += b->bytes;
      return {*b, pool};
    }
    if (auto b = fit(cached, bytes)) return {*b, nullptr};
    lock.unlock();
    if (void* p = try_allocate(bytes, stream)) return {{p, bytes}, nullptr};
    drop_cache();
    return {{allocate(bytes, stream, describe().c_str()), bytes},
            nullptr};  // throws, naming it, if still full
  }
  void give_back(Block b) {
    std::lock_guard<std::mutex> lock(cache_mutex);
    cached.emplace(b.bytes, b);
  }
  void give_back(Block b, GraphPool& pool) {
    std::lock_guard<std::mutex> lock(cache_mutex);
    pool.free.emplace(b.bytes, b);
  }
  void drop_cache() {
    std::lock_guard<std::mutex> lock(cache_mutex);
    for (const auto& [bytes, b] : cached)
      if (b.graph_memory)
        release_graph_memory(b.p);
      else
        release(b.p, stream);
    cached.clear();
  }
  ~Memory() {
    if (stream) {
      cuda::synchronize(stream);
      drop_cache();
      destroy_stream(stream);
    }
  }
};

// A captured graph and the pool of its tensors (Backend::capture).
class CudaBackend::CapturedGraph final : public DeviceGraph {
 public:
  CapturedGraph(Graph graph, Stream stream, std::shared_ptr<Memory::GraphPool> pool)
      : graph_(graph), stream_(stream), pool_(std::move(pool)) {}
  ~CapturedGraph() override { destroy_graph(graph_); }
  void replay() override { launch_graph(graph_, stream_); }

 private:
  Graph graph_;
  Stream stream_;
  std::shared_ptr<Memory::GraphPool> pool_;
};

namespace {

constexpr std::size_t kAlignment = 256;

// What an allocation of `bytes` takes: at least one aligned block, whole blocks.
std::size_t rounded_up(std::size_t bytes) {
  return std::max(kAlignment, (bytes + kAlignment - 1) / kAlignment * kAlignment);
}

}  // namespace

CudaBackend::CudaBackend(int device) : device_(device), memory_(std::make_shared<Memory>()) {
  require(device >= 0 && device < device_count(), "CUDA device ", device, " does not exist (",
          device_count(), " visible)");
  set_device(device);
  memory_->stream = create_stream();
  stream_ = memory_->stream;
  blas_ = std::make_unique<Blas>(stream_);
}

CudaBackend::~CudaBackend() {
  blas_.reset();
  cuda::synchronize(stream_);
}

std::string CudaBackend::name() const {
  const DeviceProperties p = device_properties(device_);
  return "cuda (" + p.name + ", device " + std::to_string(device_) + ", sm_" +
         std::to_string(p.major) + std::to_string(p.minor) + ")";
}

void CudaBackend::synchronize() { cuda::synchronize(stream_); }

std::unique_ptr<DeviceGraph> CudaBackend::capture(const std::function<void()>& work) {
  auto pool = std::make_shared<Memory::GraphPool>();
  pool->memory = memory_;
  {
    std::lock_guard<std::mutex> lock(memory_->cache_mutex);
    require(!memory_->capturing, "capture: another capture is under way on this backend");
    memory_->capturing = pool;
  }
  struct EndPool {
    Memory& m;
    ~EndPool() {
      std::lock_guard<std::mutex> lock(m.cache_mutex);
      m.capturing.reset();
    }
  } end_pool{*memory_};
  begin_capture(stream_);
  try {
    work();
  } catch (...) {
    abandon_capture(stream_);
    throw;
  }
  return std::make_unique<CapturedGraph>(end_capture(stream_), stream_, std::move(pool));
}

std::size_t CudaBackend::memory_capacity() const { return device_properties(device_).memory_bytes; }

void CudaBackend::reserve_memory(std::size_t bytes) { reserve_pool(bytes, stream_); }

void* CudaBackend::native_stream() const {
#if defined(WIOLA_CUDA_EMULATION)
  return nullptr;
#else
  return stream_;
#endif
}

Backend::MemoryStats CudaBackend::memory() const {
  return {memory_->in_use.load(), memory_->peak.load(), memory_->graph_bytes.load()};
}

// The process's counters: every CUDA backend of the process counts into them.
std::optional<DeviceCounts> CudaBackend::device_counts() const { return cuda::device_counts(); }

Tensor CudaBackend::do_alloc(DType dtype, std::int64_t rows, std::int64_t cols) {
  Tensor t = allocate_tensor(dtype, rows, cols, "a");
  memset_zero(t.data(), rounded_up(t.bytes()), stream_);  // Backend::alloc hands out zeros
  return t;
}

// The traffic floor counts the non-GEMM device work: not the matrix
// products, nor the host transfers (device_counters.hpp).
void CudaBackend::note_operand_bytes(Op op, std::int64_t bytes) {
  switch (op) {
    case Op::linear_fwd:
    case Op::linear_bwd_data:
    case Op::linear_bwd_weight:
    case Op::linear_fwd_stacked:
    case Op::linear_bwd_data_stacked:
    case Op::to_host:
    case Op::from_host:
    case Op::copy_to_host:
    case Op::copy_from_host:
    // The head's loss counts its own: the embedding table is a product's.
    case Op::head_loss_fwd:
    case Op::head_loss_bwd: return;
    default: count_device_event(DeviceEvent::Floor, bytes);
  }
}

Tensor CudaBackend::do_alloc_uninit(DType dtype, std::int64_t rows, std::int64_t cols) {
  Tensor t = allocate_tensor(dtype, rows, cols, "an uninitialised");
  if (poison_uninit_requested()) memset_bytes(t.data(), 0xFF, rounded_up(t.bytes()), stream_);
  return t;
}

Tensor CudaBackend::allocate_tensor(DType dtype, std::int64_t rows, std::int64_t cols,
                                    const char* kind) {
  require(rows >= 0 && cols >= 0, "alloc: negative shape ", rows, "x", cols);
  const std::size_t es = dtype_size(dtype);
  require(cols == 0 || static_cast<std::uint64_t>(rows) <=
                           (std::size_t(1) << 46) / es / static_cast<std::uint64_t>(cols),
          "alloc: ", rows, "x", cols, " ", dtype_name(dtype), " is too large");
  const std::size_t bytes = rounded_up(static_cast<std::size_t>(rows * cols) * es);
  auto [block, pool] = memory_->take(bytes, [&] {
    return std::string(kind) + " " + std::to_string(rows) + "x" + std::to_string(cols) + " " +
           std::string(dtype_name(dtype)) + " tensor";
  });
  auto* p = static_cast<std::byte*>(block.p);
  const std::size_t now = memory_->in_use += bytes;
  std::size_t peak = memory_->peak.load();
  while (now > peak && !memory_->peak.compare_exchange_weak(peak, now)) {
  }
  std::shared_ptr<Memory> mem = memory_;
  std::shared_ptr<std::byte> storage(p, [mem, block, pool, bytes](std::byte*) {
    if (pool)
      mem->give_back(block, *pool);
    else
      mem->give_back(block);
    mem->in_use -= bytes;
  });
  return Tensor(std::move(storage), p, dtype, Device::CUDA, rows, cols, cols);
}

void CudaBackend::do_fill(const Tensor& t, double value) { kernels::fill(t, value, stream_); }

void CudaBackend::do_copy(const Tensor& src, const Tensor& dst) {
  kernels::copy(src, dst, stream_);
}

void CudaBackend::do_convert(const Tensor& src, const Tensor& dst) {
  kernels::convert(src, dst, stream_);
}

void CudaBackend::do_to_host(const Tensor& src, void* dst) {
  do_copy_to_host(src.data(), dst, src.bytes());
}

void CudaBackend::do_from_host(const void* src, const Tensor& dst) {
  do_copy_from_host(src, dst.data(), dst.bytes());
}

void CudaBackend::do_copy_to_host(const void* src, void* host_dst, std::size_t bytes) {
  cuda::copy_to_host(host_dst, src, bytes, stream_);
}

void CudaBackend::do_copy_from_host(const void* host_src, void* dst, std::size_t bytes) {
  cuda::copy_to_device(dst, host_src, bytes, stream_);
}

// ---- elementwise ----------------------------------------------------------------

void CudaBackend::do_add(const Tensor& a, const Tensor& b, const Tensor& out) {
  kernels::add(a, b, out, stream_);
}

void CudaBackend::do_axpy(double alpha, const Tensor& x, const Tensor& y) {
  kernels::axpy(alpha, x, y, stream_);
}

void CudaBackend::do_scale(const Tensor& x, double alpha) { kernels::scale(x, alpha, stream_); }

void CudaBackend::do_sum(const Tensor& x, const Tensor& acc) {
  const Tensor partials = alloc_uninit(  // every chunk writes its partial sum
      DType::F64, 1, (x.numel() + kernels::kSumChunk - 1) / kernels::kSumChunk + 1);
  kernels::sum(x, false, static_cast<double*>(acc.data()), static_cast<double*>(partials.data()),
               stream_);
}

void CudaBackend::do_sum_squares(const Tensor& x, const Tensor& acc) {
  const Tensor partials = alloc_uninit(  // every chunk writes its partial sum
      DType::F64, 1, (x.numel() + kernels::kSumChunk - 1) / kernels::kSumChunk + 1);
  kernels::sum(x, true, static_cast<double*>(acc.data()), static_cast<double*>(partials.data()),
               stream_);
}

void CudaBackend::do_sigmoid_mul_fwd(const Tensor& g, const Tensor& x, const Tensor& y) {
  kernels::sigmoid_mul_fwd(g, x, y, stream_);
}
void CudaBackend::do_sigmoid_mul_bwd(const Tensor& g, const Tensor& x, const Tensor& dy,
                                     const Tensor& dg, const Tensor& dx) {
  kernels::sigmoid_mul_bwd(g, x, dy, dg, dx, stream_);
}
void CudaBackend::do_silu_mul_fwd(const Tensor& g, const Tensor& u, const Tensor& y) {
  kernels::silu_mul_fwd(g, u, y, stream_);
}
void CudaBackend::do_silu_mul_bwd(const Tensor& g, const Tensor& u, const Tensor& dy,
                                  const Tensor& dg, const Tensor& du) {
  kernels::silu_mul_bwd(g, u, dy, dg, du, stream_);
}
void CudaBackend::do_gelu_fwd(const Tensor& x, const Tensor& y) {
  kernels::gelu_fwd(x, y, stream_);
}
void CudaBackend::do_gelu_bwd(const Tensor& x, const Tensor& dy, const Tensor& dx) {
  kernels::gelu_bwd(x, dy, dx, stream_);
}
void CudaBackend::do_dsff_act_fwd(const Tensor& ga, const Tensor& ua, const Tensor& ub,
                                  const Tensor& ha, const Tensor& hb) {
  kernels::dsff_act_fwd(ga, ua, ub, ha, hb, stream_);
}
void CudaBackend::do_dsff_act_bwd(const Tensor& ga, const Tensor& ua, const Tensor& dha,
                                  const Tensor& ub, const Tensor& dhb, const Tensor& dga,
                                  const Tensor& dua, const Tensor& dub) {
  kernels::dsff_act_bwd(ga, ua, dha, ub, dhb, dga, dua, dub, stream_);
}
void CudaBackend::do_fusion_fwd(const Tensor& logits, const Tensor& a, const Tensor& b,
                                const Tensor& out) {
  kernels::fusion_fwd(logits, a, b, out, stream_);
}
void CudaBackend::do_fusion_add_fwd(const Tensor& logits, const Tensor& a, const Tensor& b,
                                    const Tensor& residual, const Tensor& out) {
  kernels::fusion_add_fwd(logits, a, b, residual, out, stream_);
}
void CudaBackend::do_fusion_bwd(const Tensor& logits, const Tensor& a, const Tensor& b,
                                const Tensor& dout, const Tensor& dlogits, const Tensor& da,
                                const Tensor& db) {
  kernels::fusion_bwd(logits, a, b, dout, dlogits, da, db, stream_);
}

// ---- linear: cuBLASLt, fp32 accumulation ------------------------------------------

namespace {

MatrixView view_of(const Tensor& t) { return {t.data(), t.dtype(), t.ld()}; }

}  // namespace

void CudaBackend::do_linear_fwd(const Tensor& x, const Tensor& w, const Tensor& y,
                                bool accumulate) {
  blas_->gemm(false, true, x.rows(), w.rows(), x.cols(), 1.0f, view_of(x), view_of(w),
              accumulate ? 1.0f : 0.0f, y.data(), y.dtype(), y.ld());
}

void CudaBackend::do_linear_bwd_data(const Tensor& dy, const Tensor& w, const Tensor& dx,
                                     bool accumulate) {
  blas_->gemm(false, false, dy.rows(), w.cols(), dy.cols(), 1.0f, view_of(dy), view_of(w),
              accumulate ? 1.0f : 0.0f, dx.data(), dx.dtype(), dx.ld());
}

void CudaBackend::do_linear_fwd_stacked(const Tensor& x, const Tensor& w,
                                        std::span<const std::int64_t>, const Tensor& y) {
  do_linear_fwd(x, w, y, false);
}

void CudaBackend::do_linear_bwd_data_stacked(const Tensor& dy, const Tensor& w,
                                             std::span<const std::int64_t>, const Tensor& dx,
                                             bool accumulate) {
  do_linear_bwd_data(dy, w, dx, accumulate);
}

void CudaBackend::do_linear_bwd_weight(const Tensor& dy, const Tensor& x, const Tensor& dw) {
  blas_->gemm(true, false, dy.cols(), x.cols(), dy.rows(), 1.0f, view_of(dy), view_of(x), 1.0f,
              dw.data(), dw.dtype(), dw.ld());
}

// ---- optimizer --------------------------------------------------------------------------

void CudaBackend::do_adamw_step(const AdamW& h, const Tensor& param, const Tensor& grad,
                                const Tensor& m, const Tensor& v) {
  kernels::adamw_step(h, param, grad, m, v, stream_);
}

// ---- registration -------------------------------------------------------------------------

void register_backend() {
  register_device_backend(
      {Device::CUDA, "cuda", [] { return device_count(); }, [] { return no_device_reason(); },
       [](int index) -> std::unique_ptr<Backend> { return std::make_unique<CudaBackend>(index); },
       [](int index) { return device_properties(index).uuid; }});
}

}  // namespace wiola::cuda
