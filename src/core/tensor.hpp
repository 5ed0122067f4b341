#pragma once
// A 2-D strided view onto backend-owned memory. Every activation, weight and
// gradient in wiola is a matrix of rows x cols with a row stride `ld` (in
// elements); vectors are 1 x n. Views share ownership of the allocation, so a
// slice keeps its parent alive. Memory is allocated only by a Backend.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "core/dtype.hpp"
#include "core/error.hpp"

namespace wiola {

enum class Device : std::uint8_t { CPU, CUDA };

class Tensor {
 public:
  Tensor() = default;
  Tensor(std::shared_ptr<std::byte> storage, std::byte* data, DType dtype, Device device,
         std::int64_t rows, std::int64_t cols, std::int64_t ld)
      : storage_(std::move(storage)), data_(data), dtype_(dtype), device_(device),
        rows_(rows), cols_(cols), ld_(ld) {}

  bool defined() const { return data_ != nullptr || (rows_ * cols_ == 0 && storage_); }
  DType dtype() const { return dtype_; }
  Device device() const { return device_; }
  std::int64_t rows() const { return rows_; }
  std::int64_t cols() const { return cols_; }
  std::int64_t ld() const { return ld_; }
  std::int64_t numel() const { return rows_ * cols_; }
  bool contiguous() const { return ld_ == cols_ || rows_ <= 1; }
  std::size_t bytes() const { return static_cast<std::size_t>(numel()) * dtype_size(dtype_); }

  void* data() const { return data_; }
  template <class T>
  T* ptr() const {
    require(dtype_of<T>::value == dtype_, "tensor holds ", dtype_name(dtype_),
            ", accessed as ", dtype_name(dtype_of<T>::value));
    return reinterpret_cast<T*>(data_);
  }

  // Rows [r0, r1) of this view.
  Tensor rows_slice(std::int64_t r0, std::int64_t r1) const {
    require(0 <= r0 && r0 <= r1 && r1 <= rows_, "rows_slice [", r0, ",", r1, ") out of ", rows_);
    return Tensor(storage_, data_ + r0 * ld_ * es(), dtype_, device_, r1 - r0, cols_, ld_);
  }
  // Columns [c0, c1) of this view (strided; keeps ld).
  Tensor cols_slice(std::int64_t c0, std::int64_t c1) const {
    require(0 <= c0 && c0 <= c1 && c1 <= cols_, "cols_slice [", c0, ",", c1, ") out of ", cols_);
    return Tensor(storage_, data_ + c0 * es(), dtype_, device_, rows_, c1 - c0, ld_);
  }
  // Same elements seen as rows x cols; the view must be contiguous.
  Tensor reshape(std::int64_t rows, std::int64_t cols) const {
    require(contiguous(), "reshape of a strided view");
    require(rows * cols == numel(), "reshape ", rows_, "x", cols_, " to ", rows, "x", cols);
    return Tensor(storage_, data_, dtype_, device_, rows, cols, cols);
  }
  // This view and `next` as one view of both their rows, when next's rows
  // follow this view's in the same allocation with the same columns and
  // stride; an undefined Tensor otherwise.
  Tensor rows_joined(const Tensor& next) const {
    if (!defined() || next.storage_ != storage_ || next.dtype_ != dtype_ ||
        next.cols_ != cols_ || next.ld_ != ld_ || next.data_ != data_ + rows_ * ld_ * es())
      return Tensor{};
    return Tensor(storage_, data_, dtype_, device_, rows_ + next.rows_, cols_, ld_);
  }
  // Elements [off, off + n) of a contiguous tensor, as a 1 x n vector.
  Tensor range(std::int64_t off, std::int64_t n) const {
    require(contiguous(), "range of a strided view");
    require(0 <= off && 0 <= n && off + n <= numel(), "range [", off, ",", off + n, ") out of ",
            numel());
    return Tensor(storage_, data_ + off * es(), dtype_, device_, 1, n, n);
  }

 private:
  std::int64_t es() const { return static_cast<std::int64_t>(dtype_size(dtype_)); }
  std::shared_ptr<std::byte> storage_;
  std::byte* data_ = nullptr;
  DType dtype_ = DType::F32;
  Device device_ = Device::CPU;
  std::int64_t rows_ = 0, cols_ = 0, ld_ = 0;
};

// A run of views laid out one after another (a stage's summaries and their
// gradients, docs/architecture.md).

// Rows of the views together.
inline std::int64_t total_rows(std::span<const Tensor> parts) {
  std::int64_t rows = 0;
  for (const Tensor& t : parts) rows += t.rows();
  return rows;
}

// `all` cut into views of as many rows as each of `like` has, in order.
inline std::vector<Tensor> rows_like(const Tensor& all, std::span<const Tensor> like) {
  std::vector<Tensor> parts;
  std::int64_t r = 0;
  for (const Tensor& t : like) {
    parts.push_back(all.rows_slice(r, r + t.rows()));
    r += t.rows();
  }
  return parts;
}

// The views as one view of all their rows when each follows the one before
// in memory; else an undefined Tensor.
inline Tensor rows_joined(std::span<const Tensor> parts) {
  if (parts.empty()) return Tensor{};
  Tensor all = parts.front();
  for (std::size_t i = 1; i < parts.size() && all.defined(); ++i) all = all.rows_joined(parts[i]);
  return all;
}

}  // namespace wiola
