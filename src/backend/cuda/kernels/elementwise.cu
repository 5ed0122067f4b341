// One generic map kernel: NI inputs and NO outputs of one storage type,
// each a strided view, and a functor computing in fp32 per element.
#include <array>
#include <cstdint>

#include "backend/cuda/kernels/common.cuh"
#include "backend/cuda/kernels/elementwise.hpp"
#include "core/error.hpp"

namespace wiola::cuda::kernels {

namespace {

template <class T>
struct View {
  T* p;
  std::int64_t ld;
};
// N views passed by value to a kernel (std::array is not device code).
template <class T, int N>
struct Views {
  View<T> at[N > 0 ? N : 1];
};

template <class T, int NI, int NO, class F>
__global__ void map_kernel(std::int64_t rows, std::int64_t cols, Views<const T, NI> in,
                           Views<T, NO> out, F f) {
  const std::int64_t n = rows * cols;
  for (std::int64_t e = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; e < n;
       e += std::int64_t(gridDim.x) * blockDim.x) {
    const Index2D i = split(e, cols);
    float x[NI > 0 ? NI : 1], y[NO];
    for (int k = 0; k < NI; ++k) x[k] = to_float(in.at[k].p[i.r * in.at[k].ld + i.c]);
    if constexpr (NI == 0) x[0] = to_float(out.at[0].p[i.r * out.at[0].ld + i.c]);  // in place
    f(x, y);
    for (int k = 0; k < NO; ++k) out.at[k].p[i.r * out.at[k].ld + i.c] = from_float<T>(y[k]);
  }
}

// 16 bytes of consecutive elements: one vector load or store.
template <class T>
constexpr int kPackSize = 16 / static_cast<int>(sizeof(T));
template <class T>
using Pack = Chunk<T, kPackSize<T>>;

// One pack (16 bytes of consecutive elements) of row r of a map's views:
// pack g of every input and output.
template <class T, int NI, int NO, class F>
__device__ __forceinline__ void map_pack(const Views<const T, NI>& in, const Views<T, NO>& out,
                                         const F& f, std::int64_t r, std::int64_t g) {
  constexpr int V = kPackSize<T>;
  Pack<T> a[NI > 0 ? NI : 1], b[NO];
  for (int k = 0; k < NI; ++k)
    a[k] = *reinterpret_cast<const Pack<T>*>(in.at[k].p + r * in.at[k].ld + g * V);
  if constexpr (NI == 0) a[0] = *reinterpret_cast<const Pack<T>*>(out.at[0].p + r * out.at[0].ld + g * V);
  WIOLA_UNROLL
  for (int j = 0; j < V; ++j) {
    float x[NI > 0 ? NI : 1], y[NO];
    for (int k = 0; k < (NI > 0 ? NI : 1); ++k) x[k] = to_float(a[k].v[j]);
    f(x, y);
    for (int k = 0; k < NO; ++k) b[k].v[j] = from_float<T>(y[k]);
  }
  for (int k = 0; k < NO; ++k)
    *reinterpret_cast<Pack<T>*>(out.at[k].p + r * out.at[k].ld + g * V) = b[k];
}

// The same map over views whose rows start 16-byte aligned and hold whole
// packs: each thread moves one pack per input and output, and rows and packs
// come from a 2D grid-stride loop, so no thread divides to find its element.
// The arithmetic per element is the scalar kernel's, so the bits are too.
template <class T, int NI, int NO, class F>
__global__ void map_packed_kernel(std::int64_t rows, std::int64_t packs, Views<const T, NI> in,
                                  Views<T, NO> out, F f) {
  for (std::int64_t r = blockIdx.y * std::int64_t(blockDim.y) + threadIdx.y; r < rows;
       r += std::int64_t(gridDim.y) * blockDim.y) {
    for (std::int64_t g = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; g < packs;
         g += std::int64_t(gridDim.x) * blockDim.x)
      map_pack<T, NI, NO, F>(in, out, f, r, g);
  }
}

// Two packed maps over views of the same rows in one launch: a row's packs
// of the first map, then those of the second. Each element's arithmetic is
// its own map's, so the bits are those of the two maps launched apart.
template <class T, int NI1, int NO1, class F1, int NI2, int NO2, class F2>
__global__ void map_pair_packed_kernel(std::int64_t rows, std::int64_t packs1,
                                       std::int64_t packs2, Views<const T, NI1> in1,
                                       Views<T, NO1> out1, F1 f1, Views<const T, NI2> in2,
                                       Views<T, NO2> out2, F2 f2) {
  for (std::int64_t r = blockIdx.y * std::int64_t(blockDim.y) + threadIdx.y; r < rows;
       r += std::int64_t(gridDim.y) * blockDim.y) {
    for (std::int64_t g = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x;
         g < packs1 + packs2; g += std::int64_t(gridDim.x) * blockDim.x) {
      if (g < packs1)
        map_pack<T, NI1, NO1, F1>(in1, out1, f1, r, g);
      else
        map_pack<T, NI2, NO2, F2>(in2, out2, f2, r, g - packs1);
    }
  }
}

// Tensors as a kernel takes them: each one's data and row stride.
template <class P, int N>
Views<P, N> views_of(const std::array<const Tensor*, N>& t) {
  Views<P, N> v{};
  for (int k = 0; k < N; ++k) v.at[k] = {static_cast<P*>(t[k]->data()), t[k]->ld()};
  return v;
}

template <int NI, int NO, class F>
void map(const std::array<const Tensor*, NI>& in, const std::array<const Tensor*, NO>& out, F f,
         Stream s) {
  const Tensor& shape = *out[0];
  if (shape.numel() == 0) return;
  const char* kernel = "map_kernel";
  auto launch = [&](auto zero) {
    using T = decltype(zero);
    Views<const T, NI> vi = views_of<const T, NI>(in);
    Views<T, NO> vo = views_of<T, NO>(out);
    std::array<const Tensor*, NI + NO> views{};
    for (int k = 0; k < NI; ++k) views[k] = in[k];
    for (int k = 0; k < NO; ++k) views[NI + k] = out[k];
    // Packed when every view's rows start 16-byte aligned and hold whole packs.
    const ChunkWalk w = chunk_walk(views, kPackSize<T>);
    if (w.ok) {
      kernel = "map_packed_kernel";
      for (int k = 0; k < NI; ++k) vi.at[k].ld = w.ld_of(*in[k]);
      for (int k = 0; k < NO; ++k) vo.at[k].ld = w.ld_of(*out[k]);
      const Grid2D g = grid_2d(w.rows, w.chunks);
      WIOLA_LAUNCH((map_packed_kernel<T, NI, NO, F>), g.grid, g.block, 0,
                   static_cast<cudaStream_t>(s))(w.rows, w.chunks, vi, vo, f);
      return;
    }
    WIOLA_LAUNCH((map_kernel<T, NI, NO, F>), dim3(blocks_for(shape.numel())), dim3(kThreads), 0,
                 static_cast<cudaStream_t>(s))(shape.rows(), shape.cols(), vi, vo, f);
  };
  with_compute_type(shape.dtype(), launch);
  // Each input read once and each output written once (scale reads its output).
  std::int64_t bytes = NI == 0 ? bytes_of(*out[0]) : 0;
  for (const Tensor* t : in) bytes += bytes_of(*t);
  for (const Tensor* t : out) bytes += bytes_of(*t);
  WIOLA_CHECK_LAUNCH(kernel, bytes);
}

// One map's views as the packed kernels take them, and whether every view's
// rows start 16-byte aligned and hold whole packs.
template <class T, int NI, int NO>
struct PackedViews {
  bool ok = true;
  std::int64_t rows = 0, packs = 0, bytes = 0;
  Views<const T, NI> in{};
  Views<T, NO> out{};
};
template <class T, int NI, int NO>
PackedViews<T, NI, NO> packed_views(const std::array<const Tensor*, NI>& in,
                                    const std::array<const Tensor*, NO>& out) {
  const Tensor& shape = *out[0];
  PackedViews<T, NI, NO> m;
  m.rows = shape.rows();
  m.packs = shape.cols() / kPackSize<T>;
  m.in = views_of<const T, NI>(in);
  m.out = views_of<T, NO>(out);
  const auto take = [&](const Tensor* t) {
    m.ok = m.ok && rows_in_chunks(t->data(), t->ld(), shape.cols(), kPackSize<T>,
                                  dtype_size(t->dtype()));
    m.bytes += bytes_of(*t);
  };
  for (const Tensor* t : in) take(t);
  for (const Tensor* t : out) take(t);
  return m;
}

// Two maps of one dtype over views of the same rows: one launch where both
// are packed, else one map after the other.
template <int NI1, int NO1, int NI2, int NO2, class F1, class F2>
void map_pair(const std::array<const Tensor*, NI1>& in1, const std::array<const Tensor*, NO1>& out1,
              F1 f1, const std::array<const Tensor*, NI2>& in2,
              const std::array<const Tensor*, NO2>& out2, F2 f2, Stream s) {
  static_assert(NI1 > 0 && NI2 > 0, "a paired map reads its inputs");
  bool paired = false;
  with_compute_type(out1[0]->dtype(), [&](auto zero) {
    using T = decltype(zero);
    const auto a = packed_views<T, NI1, NO1>(in1, out1);
    const auto b = packed_views<T, NI2, NO2>(in2, out2);
    if (!a.ok || !b.ok || a.rows != b.rows || a.rows == 0 || a.packs == 0 || b.packs == 0)
      return;
    paired = true;
    const Grid2D g = grid_2d(a.rows, a.packs + b.packs);
    WIOLA_LAUNCH((map_pair_packed_kernel<T, NI1, NO1, F1, NI2, NO2, F2>), g.grid, g.block, 0,
                 static_cast<cudaStream_t>(s))(a.rows, a.packs, b.packs, a.in, a.out, f1, b.in,
                                               b.out, f2);
    WIOLA_CHECK_LAUNCH("map_pair_packed_kernel", a.bytes + b.bytes);
  });
  if (paired) return;
  map<NI1, NO1>(in1, out1, f1, s);
  map<NI2, NO2>(in2, out2, f2, s);
}

constexpr float kInvSqrt2 = 0.70710678118654752440f;
constexpr float kInvSqrt2Pi = 0.39894228040143267794f;

struct Add {
  __device__ void operator()(const float* x, float* y) const { y[0] = x[0] + x[1]; }
};
struct Axpy {
  float alpha;
  __device__ void operator()(const float* x, float* y) const { y[0] = x[1] + alpha * x[0]; }
};
struct Scale {
  float alpha;
  __device__ void operator()(const float* x, float* y) const { y[0] = x[0] * alpha; }
};
struct SigmoidMulFwd {  // (g, x) -> σ(g) x
  __device__ void operator()(const float* x, float* y) const { y[0] = gate_fwd(x[0], x[1]); }
};
struct SigmoidMulBwd {  // (g, x, dy) -> (dg, dx)
  __device__ void operator()(const float* x, float* y) const {
    gate_bwd(x[0], x[1], x[2], y[0], y[1]);
  }
};
struct SiluMulFwd {  // (g, u) -> g σ(g) u
  __device__ void operator()(const float* x, float* y) const {
    y[0] = x[0] * sigmoid(x[0]) * x[1];
  }
};
struct SiluMulBwd {  // (g, u, dy) -> (dg, du)
  __device__ void operator()(const float* x, float* y) const {
    const float g = x[0], u = x[1], d = x[2], s = sigmoid(g);
    y[0] = d * u * s * (1.0f + g * (1.0f - s));
    y[1] = d * g * s;
  }
};
struct GeluFwd {
  __device__ void operator()(const float* x, float* y) const {
    y[0] = x[0] * (0.5f * (1.0f + erff(x[0] * kInvSqrt2)));
  }
};
struct GeluBwd {  // (x, dy) -> dx
  __device__ void operator()(const float* x, float* y) const {
    const float v = x[0];
    const float cdf = 0.5f * (1.0f + erff(v * kInvSqrt2));
    const float pdf = kInvSqrt2Pi * expf(-0.5f * v * v);
    y[0] = x[1] * (cdf + v * pdf);
  }
};
struct FusionFwd {  // (logits, a, b) -> α a + (1 − α) b
  __device__ void operator()(const float* x, float* y) const {
    const float al = sigmoid(x[0]);
    y[0] = al * x[1] + (1.0f - al) * x[2];
  }
};
// The fusion rounded to the storage type, then added to the residual: the
// bits of fusion_fwd followed by add.
struct FusionAddFwd {  // (logits, a, b, residual) -> residual + (α a + (1 − α) b)
  bool bf16;
  __device__ void operator()(const float* x, float* y) const {
    float f;
    FusionFwd{}(x, &f);
    if (bf16) f = to_float(from_float<__nv_bfloat16>(f));
    y[0] = x[3] + f;
  }
};
struct FusionBwd {  // (logits, a, b, dout) -> (dlogits, da, db)
  __device__ void operator()(const float* x, float* y) const {
    const float al = sigmoid(x[0]), d = x[3];
    y[0] = d * (x[1] - x[2]) * al * (1.0f - al);
    y[1] = d * al;
    y[2] = d * (1.0f - al);
  }
};

}  // namespace

void add(const Tensor& a, const Tensor& b, const Tensor& out, Stream s) {
  map<2, 1>({&a, &b}, {&out}, Add{}, s);
}
void axpy(double alpha, const Tensor& x, const Tensor& y, Stream s) {
  map<2, 1>({&x, &y}, {&y}, Axpy{static_cast<float>(alpha)}, s);
}
void scale(const Tensor& x, double alpha, Stream s) {
  map<0, 1>({}, {&x}, Scale{static_cast<float>(alpha)}, s);
}
void sigmoid_mul_fwd(const Tensor& g, const Tensor& x, const Tensor& y, Stream s) {
  map<2, 1>({&g, &x}, {&y}, SigmoidMulFwd{}, s);
}
void sigmoid_mul_bwd(const Tensor& g, const Tensor& x, const Tensor& dy, const Tensor& dg,
                     const Tensor& dx, Stream s) {
  map<3, 2>({&g, &x, &dy}, {&dg, &dx}, SigmoidMulBwd{}, s);
}
void silu_mul_fwd(const Tensor& g, const Tensor& u, const Tensor& y, Stream s) {
  map<2, 1>({&g, &u}, {&y}, SiluMulFwd{}, s);
}
void silu_mul_bwd(const Tensor& g, const Tensor& u, const Tensor& dy, const Tensor& dg,
                  const Tensor& du, Stream s) {
  map<3, 2>({&g, &u, &dy}, {&dg, &du}, SiluMulBwd{}, s);
}
void gelu_fwd(const Tensor& x, const Tensor& y, Stream s) { map<1, 1>({&x}, {&y}, GeluFwd{}, s); }
void gelu_bwd(const Tensor& x, const Tensor& dy, const Tensor& dx, Stream s) {
  map<2, 1>({&x, &dy}, {&dx}, GeluBwd{}, s);
}
void dsff_act_fwd(const Tensor& ga, const Tensor& ua, const Tensor& ub, const Tensor& ha,
                  const Tensor& hb, Stream s) {
  map_pair<2, 1, 1, 1>({&ga, &ua}, {&ha}, SiluMulFwd{}, {&ub}, {&hb}, GeluFwd{}, s);
}
void dsff_act_bwd(const Tensor& ga, const Tensor& ua, const Tensor& dha, const Tensor& ub,
                  const Tensor& dhb, const Tensor& dga, const Tensor& dua, const Tensor& dub,
                  Stream s) {
  map_pair<3, 2, 2, 1>({&ga, &ua, &dha}, {&dga, &dua}, SiluMulBwd{}, {&ub, &dhb}, {&dub},
                       GeluBwd{}, s);
}
void fusion_fwd(const Tensor& logits, const Tensor& a, const Tensor& b, const Tensor& out,
                Stream s) {
  map<3, 1>({&logits, &a, &b}, {&out}, FusionFwd{}, s);
}
void fusion_add_fwd(const Tensor& logits, const Tensor& a, const Tensor& b,
                    const Tensor& residual, const Tensor& out, Stream s) {
  map<4, 1>({&logits, &a, &b, &residual}, {&out}, FusionAddFwd{out.dtype() == DType::BF16}, s);
}
void fusion_bwd(const Tensor& logits, const Tensor& a, const Tensor& b, const Tensor& dout,
                const Tensor& dlogits, const Tensor& da, const Tensor& db, Stream s) {
  map<4, 3>({&logits, &a, &b, &dout}, {&dlogits, &da, &db}, FusionBwd{}, s);
}

}  // namespace wiola::cuda::kernels
