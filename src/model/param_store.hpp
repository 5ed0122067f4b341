#pragma once
// A stage's parameters and gradients: two flat backend buffers with the same
// layout (param_layout.hpp) and named views into them. Parameters are in the
// compute dtype; gradients in wide_dtype() of it (fp32 when computing in bf16,
// so micro-batches accumulate in fp32).
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "backend/backend.hpp"
#include "core/param_layout.hpp"

namespace wiola {

class ParamStore {
 public:
  ParamStore(Backend& backend, ParamLayout layout, DType dtype);

  const ParamLayout& layout() const { return layout_; }

  const Tensor& params() const { return params_; }  // [1, total]
  // [1, total]; throws when released (ZeRO-2 between steps).
  const Tensor& grads() const;
  Tensor param(const std::string& name) const { return view(params_, name); }
  Tensor grad(const std::string& name) const { return view(grads(), name); }
  bool has(const std::string& name) const { return index_.count(name) != 0; }

  // Initial values: a pure function of (seed, name, element index).
  void init(std::uint64_t seed);
  // Zeroes the gradient buffer, allocating it first if it was released.
  void zero_grads();
  // Frees the full gradient buffer (ZeRO-2 keeps only its shard between the
  // last backward and the next step). Views taken earlier keep it alive, so
  // model code looks gradients up when it needs them.
  void release_grads() { grads_ = Tensor{}; }

  // Host copies in double, by name (for export, tests and checkpoints).
  std::vector<double> get(const std::string& name) const;
  void set(const std::string& name, const std::vector<double>& values);
  std::vector<double> get_grad(const std::string& name) const;

 private:
  Tensor view(const Tensor& flat, const std::string& name) const;
  const ParamSpec& spec(const std::string& name) const;
  Backend* backend_;
  ParamLayout layout_;
  DType dtype_;
  Tensor params_, grads_;
  std::unordered_map<std::string, std::size_t> index_;
};

// Host <-> backend transfer of any floating tensor through doubles.
std::vector<double> to_host_f64(Backend& be, const Tensor& t);
void from_host_f64(Backend& be, const std::vector<double>& host, const Tensor& t);

}  // namespace wiola
