// Fill, strided copy and conversion. Views whose rows start 16-byte aligned
// and hold whole chunks move one chunk per thread with 16-byte accesses on a
// 2D grid (no division); other views one element per thread.
#include "backend/cuda/kernels/common.cuh"
#include "backend/cuda/kernels/memory.hpp"
#include "core/error.hpp"

namespace wiola::cuda::kernels {

namespace {

template <class T>
__global__ void fill_kernel(std::int64_t rows, std::int64_t cols, T* p, std::int64_t ld, T v) {
  const std::int64_t n = rows * cols;
  for (std::int64_t e = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; e < n;
       e += std::int64_t(gridDim.x) * blockDim.x) {
    const Index2D i = split(e, cols);
    p[i.r * ld + i.c] = v;
  }
}

template <class S, class D>
__device__ __forceinline__ D cast(S v) {
  if constexpr (std::is_same_v<S, D>) {
    return v;
  } else if constexpr (std::is_same_v<D, __nv_bfloat16>) {
    return __float2bfloat16(static_cast<float>(v));
  } else if constexpr (std::is_same_v<S, __nv_bfloat16>) {
    return static_cast<D>(__bfloat162float(v));
  } else {
    return static_cast<D>(v);
  }
}

// Elements per thread of the chunked fill: one 16-byte store.
template <class T>
constexpr int kFillWidth = 16 / static_cast<int>(sizeof(T));

template <class T>
__global__ void fill_chunks_kernel(std::int64_t rows, std::int64_t chunks, T* p, std::int64_t ld,
                                   T v) {
  constexpr int W = kFillWidth<T>;
  Chunk<T, W> c;
  WIOLA_UNROLL
  for (int j = 0; j < W; ++j) c.v[j] = v;
  for (std::int64_t r = blockIdx.y * std::int64_t(blockDim.y) + threadIdx.y; r < rows;
       r += std::int64_t(gridDim.y) * blockDim.y)
    for (std::int64_t g = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; g < chunks;
         g += std::int64_t(gridDim.x) * blockDim.x)
      *reinterpret_cast<Chunk<T, W>*>(p + r * ld + g * W) = c;
}

template <class S, class D>
__global__ void convert_kernel(std::int64_t rows, std::int64_t cols, const S* src,
                               std::int64_t lds, D* dst, std::int64_t ldd) {
  const std::int64_t n = rows * cols;
  for (std::int64_t e = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; e < n;
       e += std::int64_t(gridDim.x) * blockDim.x) {
    const Index2D i = split(e, cols);
    dst[i.r * ldd + i.c] = cast<S, D>(src[i.r * lds + i.c]);
  }
}

// Elements per thread of the chunked conversion: 16 bytes of the narrower
// type (bf16 to fp32: 8 elements, one 16-byte load and two stores).
template <class S, class D>
constexpr int kConvertWidth = 16 / static_cast<int>(sizeof(S) < sizeof(D) ? sizeof(S) : sizeof(D));

template <class S, class D>
__global__ void convert_chunks_kernel(std::int64_t rows, std::int64_t chunks, const S* src,
                                      std::int64_t lds, D* dst, std::int64_t ldd) {
  constexpr int W = kConvertWidth<S, D>;
  for (std::int64_t r = blockIdx.y * std::int64_t(blockDim.y) + threadIdx.y; r < rows;
       r += std::int64_t(gridDim.y) * blockDim.y) {
    for (std::int64_t g = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; g < chunks;
         g += std::int64_t(gridDim.x) * blockDim.x) {
      const Chunk<S, W> a = *reinterpret_cast<const Chunk<S, W>*>(src + r * lds + g * W);
      Chunk<D, W> b;
      WIOLA_UNROLL
      for (int j = 0; j < W; ++j) b.v[j] = cast<S, D>(a.v[j]);
      *reinterpret_cast<Chunk<D, W>*>(dst + r * ldd + g * W) = b;
    }
  }
}

template <class F>
void with_type(DType t, F&& f) {
  switch (t) {
    case DType::F32: f(float{}); break;
    case DType::F64: f(double{}); break;
    case DType::BF16: f(__nv_bfloat16{}); break;
    case DType::I32: f(std::int32_t{}); break;
  }
}

}  // namespace

void fill(const Tensor& t, double value, Stream s) {
  if (t.numel() == 0) return;
  const char* kernel = "fill_kernel";
  with_type(t.dtype(), [&](auto zero) {
    using T = decltype(zero);
    T v;
    if constexpr (std::is_same_v<T, __nv_bfloat16>)
      v = __float2bfloat16(static_cast<float>(value));
    else
      v = static_cast<T>(value);
    const Tensor* views[] = {&t};
    const ChunkWalk w = chunk_walk(views, kFillWidth<T>);
    if (w.ok) {
      kernel = "fill_chunks_kernel";
      const Grid2D g = grid_2d(w.rows, w.chunks);
      WIOLA_LAUNCH(fill_chunks_kernel<T>, g.grid, g.block, 0, static_cast<cudaStream_t>(s))(
          w.rows, w.chunks, static_cast<T*>(t.data()), w.ld_of(t), v);
      return;
    }
    WIOLA_LAUNCH(fill_kernel<T>, dim3(blocks_for(t.numel())), dim3(kThreads), 0,
                 static_cast<cudaStream_t>(s))(t.rows(), t.cols(), static_cast<T*>(t.data()),
                                               t.ld(), v);
  });
  WIOLA_CHECK_LAUNCH(kernel, bytes_of(t));
}

void convert(const Tensor& src, const Tensor& dst, Stream s) {
  if (src.numel() == 0) return;
  const char* kernel = "convert_kernel";
  with_type(src.dtype(), [&](auto zs) {
    with_type(dst.dtype(), [&](auto zd) {
      using S = decltype(zs);
      using D = decltype(zd);
      const Tensor* views[] = {&src, &dst};
      const ChunkWalk w = chunk_walk(views, kConvertWidth<S, D>);
      if (w.ok) {
        kernel = "convert_chunks_kernel";
        const Grid2D g = grid_2d(w.rows, w.chunks);
        WIOLA_LAUNCH((convert_chunks_kernel<S, D>), g.grid, g.block, 0,
                     static_cast<cudaStream_t>(s))(
            w.rows, w.chunks, static_cast<const S*>(src.data()), w.ld_of(src),
            static_cast<D*>(dst.data()), w.ld_of(dst));
        return;
      }
      WIOLA_LAUNCH((convert_kernel<S, D>), dim3(blocks_for(src.numel())), dim3(kThreads), 0,
                   static_cast<cudaStream_t>(s))(src.rows(), src.cols(),
                                                 static_cast<const S*>(src.data()), src.ld(),
                                                 static_cast<D*>(dst.data()), dst.ld());
    });
  });
  WIOLA_CHECK_LAUNCH(kernel, bytes_of(src) + bytes_of(dst));
}

void copy(const Tensor& src, const Tensor& dst, Stream s) {
  require(src.dtype() == dst.dtype(), "copy: ", dtype_name(src.dtype()), " into ",
          dtype_name(dst.dtype()));
  if (src.contiguous() && dst.contiguous()) {
    copy_on_device(dst.data(), src.data(), src.bytes(), s);
    return;
  }
  convert(src, dst, s);  // same type: an elementwise strided copy
}

}  // namespace wiola::cuda::kernels
