#include "model/param_store.hpp"

#include "core/error.hpp"

namespace wiola {

std::vector<double> to_host_f64(Backend& be, const Tensor& t) {
  require(t.contiguous(), "to_host_f64: tensor must be contiguous");
  std::vector<double> out(static_cast<std::size_t>(t.numel()));
  if (t.dtype() == DType::F64) {
    be.to_host(t, out.data());
  } else if (t.dtype() == DType::F32) {
    std::vector<float> tmp(out.size());
    be.to_host(t, tmp.data());
    for (std::size_t i = 0; i < out.size(); ++i) out[i] = tmp[i];
  } else {
    Tensor f = be.alloc(DType::F32, t.rows(), t.cols());
    be.convert(t, f);
    return to_host_f64(be, f);
  }
  return out;
}

void from_host_f64(Backend& be, const std::vector<double>& host, const Tensor& t) {
  require(t.contiguous(), "from_host_f64: tensor must be contiguous");
  require(static_cast<std::int64_t>(host.size()) == t.numel(), "from_host_f64: ", host.size(),
          " values for a tensor of ", t.numel());
  if (t.dtype() == DType::F64) {
    be.from_host(host.data(), t);
  } else if (t.dtype() == DType::F32) {
    std::vector<float> tmp(host.begin(), host.end());
    be.from_host(tmp.data(), t);
  } else {
    Tensor f = be.alloc(DType::F32, t.rows(), t.cols());
    from_host_f64(be, host, f);
    be.convert(f, t);
  }
}

ParamStore::ParamStore(Backend& backend, ParamLayout layout, DType dtype)
    : backend_(&backend), layout_(std::move(layout)), dtype_(dtype) {
  params_ = backend.alloc(dtype, 1, layout_.total());
  grads_ = backend.alloc(wide_dtype(dtype), 1, layout_.total());
  require(params_.defined(), "parameter buffer allocation failed");
  for (std::size_t i = 0; i < layout_.entries().size(); ++i) index_[layout_.entries()[i].name] = i;
}

const ParamSpec& ParamStore::spec(const std::string& name) const {
  auto it = index_.find(name);
  require(it != index_.end(), "parameter '", name, "' is not held by this stage");
  return layout_.entries()[it->second];
}

Tensor ParamStore::view(const Tensor& flat, const std::string& name) const {
  const ParamSpec& p = spec(name);
  return flat.range(p.offset, p.numel()).reshape(p.rows, p.cols);
}

void ParamStore::init(std::uint64_t seed) {
  std::vector<double> host;
  init_params_host(layout_, seed, host);
  from_host_f64(*backend_, host, params_);
}

const Tensor& ParamStore::grads() const {
  require(grads_.defined(), "gradient buffer accessed while released");
  return grads_;
}

void ParamStore::zero_grads() {
  if (!grads_.defined())
    grads_ = backend_->alloc(wide_dtype(dtype_), 1, layout_.total());  // allocation zero-fills
  else
    backend_->fill(grads_, 0.0);
}

std::vector<double> ParamStore::get(const std::string& name) const {
  return to_host_f64(*backend_, param(name));
}

std::vector<double> ParamStore::get_grad(const std::string& name) const {
  return to_host_f64(*backend_, grad(name));
}

void ParamStore::set(const std::string& name, const std::vector<double>& values) {
  from_host_f64(*backend_, values, param(name));
}

}  // namespace wiola
