#!/usr/bin/env bash
# Side-by-side CPU training speed: wiola (wiola-bench model) against a plain
# PyTorch eager implementation of the same model (tools/bench/torch_wiola.py),
# on the same shapes, threads and micro-batch, in one run.
#
#   tools/bench-vs-torch.sh [--build DIR] [--threads N] [--steps N] [--rounds R] [CONFIG...]
#
# CONFIG: d256-atm-off, d256-atm-on (d = 256, L = 4, H = 4, Hkv = 2, dA = 256,
# dB = 1024, T = 256, micro-batch 4, ATM off / causal) and wiola-small (its
# preset, micro-batch 8); all three by default. The two programs alternate
# R times per config (default 2: the machine may be shared) and the best
# tokens/s of each is kept. Per config it prints both tokens/s, their ratio,
# and each one's training FLOP/s (the project's FLOP formula, model/flops.hpp)
# as a share of a plain OpenBLAS sgemm call measured by wiola-bench in the same
# run (1024^3 and the model's largest GEMM shape; the best of the rounds).
#
# Needs Debian's python3-torch for /usr/bin/python3 (the script says so and
# stops when it is missing). Both programs use the same OpenBLAS and the same
# thread count: OMP_NUM_THREADS and OPENBLAS_NUM_THREADS are set to N for
# both, wiola-bench gets --threads N, torch_wiola.py torch.set_num_threads(N).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
build=$here/../build
threads=2
steps=8
rounds=2
configs=()
while (($#)); do
  case $1 in
    --build) build=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    -h|--help) sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "bench-vs-torch.sh: unknown option $1" >&2; exit 2 ;;
    *) configs+=("$1"); shift ;;
  esac
done
((${#configs[@]})) || configs=(d256-atm-off d256-atm-on wiola-small)

bench=$build/tools/wiola-bench/wiola-bench
[[ -x $bench ]] || { echo "bench-vs-torch.sh: no $bench (build the wiola-bench target)" >&2; exit 2; }
python=/usr/bin/python3
if ! "$python" -c 'import torch' 2>/dev/null; then
  echo "bench-vs-torch.sh: $python cannot import torch; install Debian's python3-torch" >&2
  exit 3
fi

export OMP_NUM_THREADS=$threads OPENBLAS_NUM_THREADS=$threads

# The shapes of a config as torch_wiola.py options (wiola-bench takes the same names).
shape() {
  case $1 in
    d256-atm-off) echo "--d 256 --layers 4 --heads 4 --kv-heads 2 --dsff-a 256 --dsff-b 1024 --seq-len 256 --vocab 2048 --micro-batch 4 --atm off" ;;
    d256-atm-on) echo "--d 256 --layers 4 --heads 4 --kv-heads 2 --dsff-a 256 --dsff-b 1024 --seq-len 256 --vocab 2048 --micro-batch 4 --atm causal" ;;
    wiola-small) echo "--d 128 --layers 6 --heads 4 --kv-heads 2 --dsff-a 128 --dsff-b 512 --seq-len 128 --vocab 2048 --micro-batch 8 --atm causal" ;;
    *) echo "bench-vs-torch.sh: unknown config $1 (d256-atm-off, d256-atm-on, wiola-small)" >&2; return 2 ;;
  esac
}

max() { awk -v a="$1" -v b="$2" 'BEGIN { print (a > b ? a : b) }'; }

printf '%-13s %3s %12s %12s %6s %13s %13s %10s %10s\n' config thr "wiola tok/s" "torch tok/s" ratio \
  "wiola/sgemm" "torch/sgemm" "sgemm GF/s" "model GF/s"
for cfg in "${configs[@]}"; do
  args=$(shape "$cfg")
  best_w=0 best_t=0 sq=0 shp=0 out=
  for ((r = 0; r < rounds; ++r)); do
    # shellcheck disable=SC2086  # the shape is a list of options
    t=$("$python" "$here/bench/torch_wiola.py" $args --threads "$threads" --steps "$steps" --warmup 2)
    best_t=$(max "$best_t" "$(awk '{ print $3 }' <<<"$t")")
    # shellcheck disable=SC2086
    out=$("$bench" model --preset wiola-small $args --threads "$threads" --steps "$((steps + 1))" \
      --split-steps 0)
    best_w=$(max "$best_w" "$(awk '/^  training/ { print $2 }' <<<"$out")")
    # The OpenBLAS sgemm rates, best over the rounds like the tokens/s.
    sq=$(max "$sq" "$(awk '/OpenBLAS sgemm  1024x 1024x 1024/ { print $(NF-1) }' <<<"$out")")
    shp=$(max "$shp" "$(awk '/OpenBLAS sgemm/ && !/1024x 1024x 1024/ { print $(NF-5) }' <<<"$out")")
  done
  flop=$(sed -n 's/.*GFLOP\/s (\(.*\) FLOP\/token).*/\1/p' <<<"$out")
  awk -v c="$cfg" -v th="$threads" -v w="$best_w" -v t="$best_t" -v f="$flop" -v sq="$sq" \
    -v shp="$shp" 'BEGIN {
      printf "%-13s %3d %12.0f %12.0f %6.2f %6.1f%%/%5.1f%% %6.1f%%/%5.1f%% %10.1f %10.1f\n",
        c, th, w, t, w / t, 100 * w * f / 1e9 / sq, 100 * w * f / 1e9 / shp,
        100 * t * f / 1e9 / sq, 100 * t * f / 1e9 / shp, sq, shp }'
done
echo "(x/sgemm: training FLOP/s over a plain OpenBLAS sgemm of 1024^3 / of the model's largest"
echo " GEMM shape, measured in the same run; all figures the best of $rounds alternating runs of"
echo " $steps timed steps)"
