#pragma once
// Every op of the Backend interface, listed once: its name (as errors,
// timings and profiles print it) and the family it is timed under. Code that
// must cover every op iterates kOps: the device-comparison tests fail for an
// op that has no case (tests/cuda/op_coverage.hpp), and the time split of
// wiola-bench groups its rows by family.
#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace wiola {

enum class Op : std::uint8_t {
  fill, copy, convert, to_host, from_host, copy_to_host, copy_from_host,
  add, axpy, scale, sum, sum_squares,
  linear_fwd, linear_bwd_data, linear_bwd_weight, linear_fwd_stacked, linear_bwd_data_stacked,
  embedding_fwd, embedding_bwd,
  wrmsnorm_fwd, wrmsnorm_bwd, add_wrmsnorm_fwd,
  srpe_fwd, srpe_bwd,
  attention_fwd, attention_bwd,
  head_mean_fwd, head_mean_bwd, head_scale_fwd, head_scale_bwd,
  sigmoid_mul_fwd, sigmoid_mul_bwd, silu_mul_fwd, silu_mul_bwd, gelu_fwd, gelu_bwd,
  dsff_act_fwd, dsff_act_bwd,
  fusion_fwd, fusion_bwd, fusion_add_fwd,
  summary_fwd, summary_bwd,
  row_cosine_next, atm_plan, merge_rows_fwd, merge_rows_bwd, causal_merge_bwd,
  cross_entropy_fwd, cross_entropy_bwd, head_loss_fwd, head_loss_bwd,
  adamw_step,
};

struct OpInfo {
  Op op;
  std::string_view name;
  std::string_view family;
};

inline constexpr std::array kOps = {
    OpInfo{Op::fill, "fill", "memory and transfers"},
    OpInfo{Op::copy, "copy", "memory and transfers"},
    OpInfo{Op::convert, "convert", "memory and transfers"},
    OpInfo{Op::to_host, "to_host", "memory and transfers"},
    OpInfo{Op::from_host, "from_host", "memory and transfers"},
    OpInfo{Op::copy_to_host, "copy_to_host", "memory and transfers"},
    OpInfo{Op::copy_from_host, "copy_from_host", "memory and transfers"},
    OpInfo{Op::add, "add", "residual and axpy"},
    OpInfo{Op::axpy, "axpy", "residual and axpy"},
    OpInfo{Op::scale, "scale", "residual and axpy"},
    OpInfo{Op::sum, "sum", "reductions"},
    OpInfo{Op::sum_squares, "sum_squares", "reductions"},
    OpInfo{Op::linear_fwd, "linear_fwd", "linear (GEMM)"},
    OpInfo{Op::linear_bwd_data, "linear_bwd_data", "linear (GEMM)"},
    OpInfo{Op::linear_bwd_weight, "linear_bwd_weight", "linear (GEMM)"},
    OpInfo{Op::linear_fwd_stacked, "linear_fwd_stacked", "linear (GEMM)"},
    OpInfo{Op::linear_bwd_data_stacked, "linear_bwd_data_stacked", "linear (GEMM)"},
    OpInfo{Op::embedding_fwd, "embedding_fwd", "embedding"},
    OpInfo{Op::embedding_bwd, "embedding_bwd", "embedding"},
    OpInfo{Op::wrmsnorm_fwd, "wrmsnorm_fwd", "norm"},
    OpInfo{Op::wrmsnorm_bwd, "wrmsnorm_bwd", "norm"},
    OpInfo{Op::add_wrmsnorm_fwd, "add_wrmsnorm_fwd", "norm"},
    OpInfo{Op::srpe_fwd, "srpe_fwd", "srpe"},
    OpInfo{Op::srpe_bwd, "srpe_bwd", "srpe"},
    OpInfo{Op::attention_fwd, "attention_fwd", "attention"},
    OpInfo{Op::attention_bwd, "attention_bwd", "attention"},
    OpInfo{Op::head_mean_fwd, "head_mean_fwd", "gates and activations"},
    OpInfo{Op::head_mean_bwd, "head_mean_bwd", "gates and activations"},
    OpInfo{Op::head_scale_fwd, "head_scale_fwd", "gates and activations"},
    OpInfo{Op::head_scale_bwd, "head_scale_bwd", "gates and activations"},
    OpInfo{Op::sigmoid_mul_fwd, "sigmoid_mul_fwd", "gates and activations"},
    OpInfo{Op::sigmoid_mul_bwd, "sigmoid_mul_bwd", "gates and activations"},
    OpInfo{Op::silu_mul_fwd, "silu_mul_fwd", "gates and activations"},
    OpInfo{Op::silu_mul_bwd, "silu_mul_bwd", "gates and activations"},
    OpInfo{Op::gelu_fwd, "gelu_fwd", "gates and activations"},
    OpInfo{Op::gelu_bwd, "gelu_bwd", "gates and activations"},
    OpInfo{Op::dsff_act_fwd, "dsff_act_fwd", "gates and activations"},
    OpInfo{Op::dsff_act_bwd, "dsff_act_bwd", "gates and activations"},
    OpInfo{Op::fusion_fwd, "fusion_fwd", "gates and activations"},
    OpInfo{Op::fusion_bwd, "fusion_bwd", "gates and activations"},
    OpInfo{Op::fusion_add_fwd, "fusion_add_fwd", "gates and activations"},
    OpInfo{Op::summary_fwd, "summary_fwd", "summaries"},
    OpInfo{Op::summary_bwd, "summary_bwd", "summaries"},
    OpInfo{Op::row_cosine_next, "row_cosine_next", "atm"},
    OpInfo{Op::atm_plan, "atm_plan", "atm"},
    OpInfo{Op::merge_rows_fwd, "merge_rows_fwd", "atm"},
    OpInfo{Op::merge_rows_bwd, "merge_rows_bwd", "atm"},
    OpInfo{Op::causal_merge_bwd, "causal_merge_bwd", "atm"},
    OpInfo{Op::cross_entropy_fwd, "cross_entropy_fwd", "loss"},
    OpInfo{Op::cross_entropy_bwd, "cross_entropy_bwd", "loss"},
    OpInfo{Op::head_loss_fwd, "head_loss_fwd", "loss"},
    OpInfo{Op::head_loss_bwd, "head_loss_bwd", "loss"},
    OpInfo{Op::adamw_step, "adamw_step", "optimizer"},
};

// kOps[i].op == Op(i): the table is indexed by the enum.
constexpr bool op_table_in_order() {
  for (std::size_t i = 0; i < kOps.size(); ++i)
    if (static_cast<std::size_t>(kOps[i].op) != i) return false;
  return true;
}
static_assert(op_table_in_order(), "kOps must list the ops in the order of enum Op");
static_assert(static_cast<std::size_t>(Op::adamw_step) + 1 == kOps.size(),
              "every op of enum Op needs a row in kOps");

constexpr const OpInfo& op_info(Op op) { return kOps[static_cast<std::size_t>(op)]; }
constexpr std::string_view op_name(Op op) { return op_info(op).name; }

}  // namespace wiola
