// CpuBackend: memory and the elementwise ops; the factory.
#include "backend/cpu/cpu_backend.hpp"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <new>
#include <utility>

#include <unistd.h>

#include "backend/cpu/cpu_checks.hpp"
#include "core/process_identity.hpp"
#include "ops/elementwise.hpp"

namespace wiola {

using namespace cpu;

namespace {

constexpr std::size_t kAlignment = 64;

// Same dtype (any of fp32, fp64, i32) and same shape.
void check_same(std::string_view op, const Tensor& src, const Tensor& dst) {
  check_tensor(op, "src", src);
  check_tensor(op, "dst", dst);
  require(src.dtype() != DType::BF16 && dst.dtype() != DType::BF16, op,
          ": bf16 is not supported by the CPU backend (use fp32 or fp64)");
  check_shape(op, "dst", dst, src.rows(), src.cols());
}

}  // namespace

std::unique_ptr<Backend> make_cpu_backend() { return std::make_unique<CpuBackend>(); }

std::size_t CpuBackend::memory_capacity() const {
  const auto pages = static_cast<std::size_t>(sysconf(_SC_PHYS_PAGES));
  const auto page = static_cast<std::size_t>(sysconf(_SC_PAGE_SIZE));
  return pages * page / static_cast<std::size_t>(process_identity().local_size);
}

Backend::MemoryStats CpuBackend::memory() const {
  return {counters_->in_use.load(), counters_->peak.load()};
}

Tensor CpuBackend::allocate(DType dtype, std::int64_t rows, std::int64_t cols, const char* op) {
  require(dtype != DType::BF16, op,
          ": bf16 is not supported by the CPU backend (use fp32 or fp64)");
  require(rows >= 0 && cols >= 0, op, ": negative shape ", rows, "x", cols);
  const std::size_t es = dtype_size(dtype);
  require(cols == 0 || static_cast<std::uint64_t>(rows) <=
                           std::numeric_limits<std::size_t>::max() / 2 / es / static_cast<std::uint64_t>(cols),
          op, ": ", rows, "x", cols, " ", dtype_name(dtype), " is too large");
  // At least one aligned block, so an empty tensor still owns storage.
  std::size_t bytes = static_cast<std::size_t>(rows * cols) * es;
  bytes = (bytes + kAlignment - 1) / kAlignment * kAlignment;
  if (bytes == 0) bytes = kAlignment;
  std::byte* p = nullptr;
  try {
    p = static_cast<std::byte*>(::operator new(bytes, std::align_val_t{kAlignment}));
  } catch (const std::bad_alloc&) {
    fail(op, ": out of memory allocating ", bytes, " bytes for a ", rows, "x", cols, " ",
         dtype_name(dtype), " tensor");
  }
  const std::size_t now = counters_->in_use += bytes;
  std::size_t peak = counters_->peak.load();
  while (now > peak && !counters_->peak.compare_exchange_weak(peak, now)) {
  }
  std::shared_ptr<std::byte> storage(p, [counters = counters_, bytes](std::byte* q) {
    ::operator delete(q, std::align_val_t{kAlignment});
    counters->in_use -= bytes;
  });
  return Tensor(std::move(storage), p, dtype, Device::CPU, rows, cols, cols);
}

Tensor CpuBackend::alloc(DType dtype, std::int64_t rows, std::int64_t cols) {
  Tensor t = allocate(dtype, rows, cols, "alloc");
  std::memset(t.data(), 0, t.bytes());
  return t;
}

Tensor CpuBackend::alloc_uninit(DType dtype, std::int64_t rows, std::int64_t cols) {
  Tensor t = allocate(dtype, rows, cols, "alloc_uninit");
  // All bits set: NaN in fp32 and fp64, -1 in i32.
  if (poison_uninit_requested()) std::memset(t.data(), 0xFF, t.bytes());
  return t;
}

void CpuBackend::fill(const Tensor& t, double value) {
  check_tensor("fill", "t", t);
  if (t.dtype() == DType::I32) {
    require(std::trunc(value) == value && value >= std::numeric_limits<std::int32_t>::min() &&
                value <= std::numeric_limits<std::int32_t>::max(),
            "fill: ", value, " is not an i32 value");
    ops::fill(t.rows(), t.cols(), static_cast<std::int32_t>(value), t.ptr<std::int32_t>(), t.ld());
    return;
  }
  dispatch(float_dtype("fill", "t", t), [&](auto zero) {
    using T = decltype(zero);
    ops::fill(t.rows(), t.cols(), static_cast<T>(value), t.ptr<T>(), t.ld());
  });
}

void CpuBackend::copy(const Tensor& src, const Tensor& dst) {
  check_same("copy", src, dst);
  require(src.dtype() == dst.dtype(), "copy: src is ", dtype_name(src.dtype()), " but dst is ",
          dtype_name(dst.dtype()), " (use convert)");
  const std::int64_t n = src.rows(), c = src.cols();
  switch (src.dtype()) {
    case DType::F32:
      ops::convert(n, c, src.ptr<float>(), src.ld(), dst.ptr<float>(), dst.ld());
      break;
    case DType::F64:
      ops::convert(n, c, src.ptr<double>(), src.ld(), dst.ptr<double>(), dst.ld());
      break;
    default:
      ops::convert(n, c, src.ptr<std::int32_t>(), src.ld(), dst.ptr<std::int32_t>(), dst.ld());
      break;
  }
}

void CpuBackend::convert(const Tensor& src, const Tensor& dst) {
  check_same("convert", src, dst);
  if (src.dtype() == dst.dtype()) return copy(src, dst);
  float_dtype("convert", "src", src);
  float_dtype("convert", "dst", dst);
  const std::int64_t n = src.rows(), c = src.cols();
  if (src.dtype() == DType::F32)
    ops::convert(n, c, src.ptr<float>(), src.ld(), dst.ptr<double>(), dst.ld());
  else
    ops::convert(n, c, src.ptr<double>(), src.ld(), dst.ptr<float>(), dst.ld());
}

void CpuBackend::to_host(const Tensor& src, void* dst) {
  check_tensor("to_host", "src", src);
  require(src.contiguous(), "to_host: src ", dims(src), " is a strided view (ld ", src.ld(),
          "); copy it to a contiguous tensor first");
  if (src.bytes() > 0) std::memcpy(dst, src.data(), src.bytes());
}

void CpuBackend::from_host(const void* src, const Tensor& dst) {
  check_tensor("from_host", "dst", dst);
  require(dst.contiguous(), "from_host: dst ", dims(dst), " is a strided view (ld ", dst.ld(),
          ")");
  if (dst.bytes() > 0) std::memcpy(dst.data(), src, dst.bytes());
}

void CpuBackend::add(const Tensor& a, const Tensor& b, const Tensor& out) {
  const DType dt = float_dtype("add", "a", a);
  check_float("add", "b", b, dt, a.rows(), a.cols());
  check_float("add", "out", out, dt, a.rows(), a.cols());
  dispatch(dt, [&](auto zero) {
    using T = decltype(zero);
    ops::add(a.rows(), a.cols(), a.ptr<T>(), a.ld(), b.ptr<T>(), b.ld(), out.ptr<T>(), out.ld());
  });
}

void CpuBackend::axpy(double alpha, const Tensor& x, const Tensor& y) {
  const DType dt = float_dtype("axpy", "x", x);
  check_float("axpy", "y", y, dt, x.rows(), x.cols());
  dispatch(dt, [&](auto zero) {
    using T = decltype(zero);
    ops::axpy(x.rows(), x.cols(), static_cast<T>(alpha), x.ptr<T>(), x.ld(), y.ptr<T>(), y.ld());
  });
}

void CpuBackend::scale(const Tensor& x, double alpha) {
  dispatch(float_dtype("scale", "x", x), [&](auto zero) {
    using T = decltype(zero);
    ops::scale(x.rows(), x.cols(), static_cast<T>(alpha), x.ptr<T>(), x.ld());
  });
}

namespace {

double& accumulator(std::string_view op, const Tensor& acc) {
  check_tensor(op, "acc", acc);
  require(acc.dtype() == DType::F64 && acc.rows() == 1 && acc.cols() == 1, op,
          ": the accumulator must be an F64 [1, 1] tensor, got ", dtype_name(acc.dtype()), " ",
          acc.rows(), "x", acc.cols());
  return *acc.ptr<double>();
}

}  // namespace

void CpuBackend::sum(const Tensor& x, const Tensor& acc) {
  double& out = accumulator("sum", acc);
  dispatch(float_dtype("sum", "x", x), [&](auto zero) {
    using T = decltype(zero);
    out += ops::sum_in_order(x.rows(), x.cols(), x.ptr<T>(), x.ld());
  });
}

void CpuBackend::sum_squares(const Tensor& x, const Tensor& acc) {
  double& out = accumulator("sum_squares", acc);
  dispatch(float_dtype("sum_squares", "x", x), [&](auto zero) {
    using T = decltype(zero);
    out += ops::sum_squares(x.rows(), x.cols(), x.ptr<T>(), x.ld());
  });
}

}  // namespace wiola
