// CpuBackend: memory and the elementwise ops; the factory.
#include "backend/cpu/cpu_backend.hpp"

#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <new>
#include <utility>

#include "backend/cpu/cpu_checks.hpp"
#include "core/process_identity.hpp"
#include "ops/elementwise.hpp"

namespace wiola {

using namespace cpu;

namespace {

constexpr std::size_t kAlignment = 64;

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
  const std::size_t es = dtype_size(dtype);
  require(cols == 0 || static_cast<std::uint64_t>(rows) <= std::numeric_limits<std::size_t>::max() /
                                                               2 / es /
                                                               static_cast<std::uint64_t>(cols),
          op, ": ", rows, "x", cols, " ", dtype_name(dtype), " is too large");
  // At least one aligned block, so an empty tensor still owns storage.
  std::size_t bytes = static_cast<std::size_t>(rows * cols) * es;
  bytes = (bytes + kAlignment - 1) / kAlignment * kAlignment;
  if (bytes == 0) bytes = kAlignment;
  std::byte* p = nullptr;
  try {
    p = static_cast<std::byte*>(::operator new (bytes, std::align_val_t{kAlignment}));
  } catch (const std::bad_alloc&) {
    fail(op, ": out of memory allocating ", bytes, " bytes for a ", rows, "x", cols, " ",
         dtype_name(dtype), " tensor");
  }
  const std::size_t now = counters_->in_use += bytes;
  std::size_t peak = counters_->peak.load();
  while (now > peak && !counters_->peak.compare_exchange_weak(peak, now)) {
  }
  std::shared_ptr<std::byte> storage(p, [counters = counters_, bytes](std::byte* q) {
    ::operator delete (q, std::align_val_t{kAlignment});
    counters->in_use -= bytes;
  });
  return Tensor(std::move(storage), p, dtype, Device::CPU, rows, cols, cols);
}

Tensor CpuBackend::do_alloc(DType dtype, std::int64_t rows, std::int64_t cols) {
  Tensor t = allocate(dtype, rows, cols, "alloc");
  std::memset(t.data(), 0, t.bytes());
  return t;
}

Tensor CpuBackend::do_alloc_uninit(DType dtype, std::int64_t rows, std::int64_t cols) {
  Tensor t = allocate(dtype, rows, cols, "alloc_uninit");
  // All bits set: NaN in fp32 and fp64, -1 in i32.
  if (poison_uninit_requested()) std::memset(t.data(), 0xFF, t.bytes());
  return t;
}

void CpuBackend::do_fill(const Tensor& t, double value) {
  if (t.dtype() == DType::I32) {
    ops::fill(t.rows(), t.cols(), static_cast<std::int32_t>(value), t.ptr<std::int32_t>(), t.ld());
    return;
  }
  dispatch(t.dtype(), [&](auto zero) {
    using T = decltype(zero);
    ops::fill(t.rows(), t.cols(), static_cast<T>(value), t.ptr<T>(), t.ld());
  });
}

void CpuBackend::do_copy(const Tensor& src, const Tensor& dst) {
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

void CpuBackend::do_convert(const Tensor& src, const Tensor& dst) {
  if (src.dtype() == dst.dtype()) return do_copy(src, dst);
  const std::int64_t n = src.rows(), c = src.cols();
  if (src.dtype() == DType::F32)
    ops::convert(n, c, src.ptr<float>(), src.ld(), dst.ptr<double>(), dst.ld());
  else
    ops::convert(n, c, src.ptr<double>(), src.ld(), dst.ptr<float>(), dst.ld());
}

void CpuBackend::do_to_host(const Tensor& src, void* dst) {
  if (src.bytes() > 0) std::memcpy(dst, src.data(), src.bytes());
}

void CpuBackend::do_from_host(const void* src, const Tensor& dst) {
  if (dst.bytes() > 0) std::memcpy(dst.data(), src, dst.bytes());
}

void CpuBackend::do_add(const Tensor& a, const Tensor& b, const Tensor& out) {
  dispatch(a.dtype(), [&](auto zero) {
    using T = decltype(zero);
    ops::add(a.rows(), a.cols(), a.ptr<T>(), a.ld(), b.ptr<T>(), b.ld(), out.ptr<T>(), out.ld());
  });
}

void CpuBackend::do_axpy(double alpha, const Tensor& x, const Tensor& y) {
  dispatch(x.dtype(), [&](auto zero) {
    using T = decltype(zero);
    ops::axpy(x.rows(), x.cols(), static_cast<T>(alpha), x.ptr<T>(), x.ld(), y.ptr<T>(), y.ld());
  });
}

void CpuBackend::do_scale(const Tensor& x, double alpha) {
  dispatch(x.dtype(), [&](auto zero) {
    using T = decltype(zero);
    ops::scale(x.rows(), x.cols(), static_cast<T>(alpha), x.ptr<T>(), x.ld());
  });
}

void CpuBackend::do_sum(const Tensor& x, const Tensor& acc) {
  double& out = *acc.ptr<double>();
  dispatch(x.dtype(), [&](auto zero) {
    using T = decltype(zero);
    out += ops::sum_in_order(x.rows(), x.cols(), x.ptr<T>(), x.ld());
  });
}

void CpuBackend::do_sum_squares(const Tensor& x, const Tensor& acc) {
  double& out = *acc.ptr<double>();
  dispatch(x.dtype(), [&](auto zero) {
    using T = decltype(zero);
    out += ops::sum_squares(x.rows(), x.cols(), x.ptr<T>(), x.ld());
  });
}

}  // namespace wiola
