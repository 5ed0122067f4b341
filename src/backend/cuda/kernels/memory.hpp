#pragma once
// Fill, copy and type conversion of 2-D strided views on the device.
#include "backend/cuda/runtime.hpp"
#include "core/tensor.hpp"

namespace wiola::cuda::kernels {

void fill(const Tensor& t, double value, Stream s);          // any dtype
void copy(const Tensor& src, const Tensor& dst, Stream s);   // same dtype, any strides
void convert(const Tensor& src, const Tensor& dst, Stream s);  // F32 <-> BF16 <-> F64

}  // namespace wiola::cuda::kernels
