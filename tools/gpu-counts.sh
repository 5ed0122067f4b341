#!/usr/bin/env bash
# What one micro-batch asks of a GPU, counted without one: kernel launches,
# matrix products, memsets, copies, host synchronisations, allocations, the
# bytes the non-GEMM kernels move against their floor (every op's operands
# read or written once), the FLOPs of the products and the attention tiles,
# per layer (an ATM layer and a plain one) and for the head, forward and
# backward, and the attention kernels' shared-memory bytes per tensor-core
# FLOP, through the CUDA backend's own code on the emulated execution model
# (tests/cuda/device_counts_main.cpp). The last line reads
#   per layer: launches L, host syncs S, memsets M, allocations A, ...
# for an ATM layer, forward and backward. Figures only: nothing passes or
# fails on them (docs/performance.md, "What a step asks of the GPU").
#
#   tools/gpu-counts.sh [--build DIR] [--preset wiola-1.5b] [--seq 16] [--batch 1] [--dtype bf16]
#                       [--json FILE]
#     --build DIR  the build holding tests/cuda/wiola_cuda_counts (default build-tests/)
#     --json FILE  also count (2B, T) and (B, 2T) and write all three shapes'
#                  counts, part by part, to FILE: the input of
#                  wiola-profile --project's times.counts (docs/profiling.md).
#                  --seq must be a multiple of 128 (the attention
#                  forward's query tile) there; without --seq it is 128.
# The launches depend on the widths and the layer kind, not on the sequence
# length, so the default short sequence gives a full micro-batch's (the
# 1.5b widths take about a minute on 2 cores; with --json at --seq 128, ~4).
# Bytes and FLOPs grow with the tokens: --json's shapes give their growth.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$root/build-tests
args=()
while [ $# -gt 0 ]; do
  case $1 in
    --build) build=${2:?--build needs a folder}; shift 2 ;;
    --preset|--seq|--batch|--dtype|--json) args+=("$1" "${2:?$1 needs a value}"); shift 2 ;;
    -h|--help) sed -n '2,/^set -e/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "gpu-counts: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
counts=$build/tests/cuda/wiola_cuda_counts
[ -x "$counts" ] || { echo "gpu-counts: no $counts: build the project first (or pass --build)" >&2; exit 1; }
# Without --seq: 16 tokens, or with --json 128 (a projection needs whole tiles).
case " ${args[*]-} " in
  *" --seq "*) ;;
  *" --json "*) args+=(--seq 128) ;;
  *) args+=(--seq 16) ;;
esac
exec env OMP_NUM_THREADS=${OMP_NUM_THREADS:-2} "$counts" "${args[@]}"
