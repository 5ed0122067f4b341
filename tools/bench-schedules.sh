#!/usr/bin/env bash
# The pipeline schedules side by side on this machine: the same wiola-train
# run (model, partition, micro-batches, threads) under 1F1B, interleaved 1F1B,
# ZB-H1 and ZB-H2, one after another in one invocation. Per schedule it prints
# the steady step time, its ratio to 1F1B's, the measured bubble of each stage
# beside the schedule's theory (pipeline::theoretical_bubble) and the
# micro-batches the busiest stage holds (the memory estimate's in-flight count).
#
#   tools/bench-schedules.sh [--build DIR] [--pp P] [--layers L] [--microbatches M]
#                            [--steps N] [--rounds R] [--virtual-stages V] [--preset NAME]
#                            [--split A,B,..] [--split-interleaved A,B,..]
#
# Defaults: wiola-small with 8 layers, P = 2 ranks (one per core of a 2-core
# machine: the run stays compute-bound), m = 8 micro-batches of 2 sequences,
# 8 steps (the first is warm-up), v = 2, R = 2 rounds alternating the
# schedules (the best step time of each is kept: the machine may be shared).
# --split gives the layers per stage (--stage-layers), --split-interleaved
# the layers per chunk in model order; give splits whose per-rank sums agree
# so every schedule runs the same stage costs. Without them the layers are
# split evenly when L allows (the head then makes the last stage heavier).
# With P larger than the cores the ranks share cores and the measured bubble
# also holds the operating system's scheduling; say so when quoting such runs.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
build=$here/../build
pp=2 layers=8 m=8 steps=8 rounds=2 v=2 preset=wiola-small split="" split_v=""
while (($#)); do
  case $1 in
    --build) build=$2; shift 2 ;;
    --pp) pp=$2; shift 2 ;;
    --layers) layers=$2; shift 2 ;;
    --microbatches) m=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --virtual-stages) v=$2; shift 2 ;;
    --preset) preset=$2; shift 2 ;;
    --split) split=$2; shift 2 ;;
    --split-interleaved) split_v=$2; shift 2 ;;
    -h|--help) sed -n '2,22p' "$0"; exit 0 ;;
    *) echo "bench-schedules: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
train=$build/tools/wiola-train/wiola-train
[[ -x $train ]] || { echo "bench-schedules: $train is missing; build first" >&2; exit 1; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mpirun=(mpirun --oversubscribe --bind-to none -np "$pp" -x OMP_NUM_THREADS=1 -x OPENBLAS_NUM_THREADS=1)
# Waiting ranks yield their core instead of spinning (matters once P > cores).
mpirun+=(--mca mpi_yield_when_idle 1)
mb=2
common=(--preset "$preset" --layers "$layers" --pp "$pp" --dp 1 --micro-batch $mb
        --global-batch $((mb * m)) --steps "$steps" --threads 1 --eval-interval 0
        --log-interval "$steps" --warmup-frac 0)
schedules=("1f1b" "interleaved" "zb-h1" "zb-h2")
declare -A best report
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "bench-schedules: $preset, L = $layers, P = $pp, m = $m x $mb sequences, $steps steps, $rounds rounds"
for ((r = 1; r <= rounds; ++r)); do
  for s in "${schedules[@]}"; do
    extra=()
    pieces=$pp given=$split
    [[ $s == interleaved ]] && { extra=(--virtual-stages "$v"); pieces=$((pp * v)); given=$split_v; }
    if [[ -n $given ]]; then
      extra+=(--stage-layers "$given")
    elif ((layers % pieces == 0)); then
      even=$(printf "$((layers / pieces)),%.0s" $(seq "$pieces")); extra+=(--stage-layers "${even%,}")
    fi
    log=$tmp/$s.$r.log
    if ! "${mpirun[@]}" "$train" "${common[@]}" --schedule "$s" "${extra[@]}" >"$log" 2>&1; then
      echo "bench-schedules: $s failed:" >&2; tail -5 "$log" >&2; exit 1
    fi
    # Steady step time: the slowest stage's "step" column of the per-stage report.
    t=$(awk '/^  stage [0-9]+ layers/ { for (i = 1; i <= NF; ++i) if ($i == "step") v = $(i + 1);
                                         if (v > m) m = v } END { print m }' "$log")
    steady=$(grep -oE 'over steps [0-9]+\.\.[0-9]+' "$log" | head -1 | grep -oE '[0-9]+$' || echo 1)
    first=$(grep -oE 'over steps [0-9]+' "$log" | head -1 | grep -oE '[0-9]+$' || echo 1)
    per_step=$(awk -v t="$t" -v a="$first" -v b="$steady" 'BEGIN { printf "%.4f", t / (b - a + 1) }')
    if [[ -z ${best[$s]:-} ]] || awk -v a="$per_step" -v b="${best[$s]}" 'BEGIN { exit !(a < b) }'; then
      best[$s]=$per_step
      report[$s]=$log
    fi
  done
done
base=${best[1f1b]}
printf '\n%-12s %10s %9s %8s  %-36s %s\n' schedule "s/step" "vs 1f1b" theory "measured bubble per stage" "held (busiest stage)"
for s in "${schedules[@]}"; do
  log=${report[$s]}
  theory=$(grep -oE 'bubble [0-9.]+%; throughput' "$log" | grep -oE '[0-9.]+%' | head -1)
  bubbles=$(awk '/^  stage [0-9]+ layers/ { printf "%s ", $NF }' "$log")
  held=$(grep -oE 'for [0-9]+ micro-batch(es)?( of one chunk)?, head' "$log" |
         grep -oE '[0-9]+ micro-batch(es)?( of one chunk)?' | sort -n | tail -1)
  ratio=$(awk -v a="$base" -v b="${best[$s]}" 'BEGIN { printf "%.3f", a / b }')
  printf '%-12s %10s %9s %8s  %-36s %s\n' "$s" "${best[$s]}" "${ratio}x" "$theory" "$bubbles" "$held"
done
echo "(vs 1f1b: 1F1B's step time over this one's; bubble = (wait + drain) / step, docs/profiling.md)"
