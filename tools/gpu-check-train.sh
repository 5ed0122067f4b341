#!/usr/bin/env bash
# Call 2 of tools/gpu-check.sh: the main job's model (jobs/configs/embedded.ini,
# wiola-mini) trained for 30 steps on the GPU in several layouts, every step's
# loss and gradient norm compared with the same run on the CPU backend.
#
#   layouts: 1 rank; pp 2; pp 2 x dp 2 with ZeRO-1; pp 2 x dp 2 with ZeRO-2;
#            interleaved pp 2 (2 chunks per stage); ZB-H2 pp 2 x dp 2 with ZeRO-2;
#            all with CUDA graphs (the default), and 1 rank without them
#   dtypes:  fp32 and bf16, both against the CPU in fp32 (the CPU computes in
#            fp32 or fp64 only)
#
# With fewer GPUs than ranks the ranks share a device (the trainer prints the
# transport it chose). The CPU run is the reference: the CPU backend is exact
# and its layouts agree to rounding, so one CPU run serves every layout.
#
# Bounds at every step (the logs print loss to 6 decimals, grad-norm to 3):
#   fp32: |loss difference| <= 2e-3, |grad-norm difference| <= 1e-2
#   bf16: |loss difference| <= 1e-1, |grad-norm difference| <= 1e-1 (bf16
#         weights and activations against fp32 ones: about 1.5% of the loss)
# and the loss must fall by at least 0.5 over the run on every device.
#
# Usage: tools/gpu-check-train.sh WIOLA_TRAIN OUT_DIR [--config INI] [--data DIR]
#            [--steps N] [--min-fall F] [--run-limit SECONDS]
# --config: the job (default jobs/configs/embedded.ini of the source tree);
# --data: a folder with fortunes-train.h5 and fortunes-val.h5 (default: the
# trainer's built-in embedded data); --steps (30) and --min-fall (0.5): the
# run's length and how far its loss must fall; --run-limit (120): the timeout
# of each mpirun. WIOLA_CHECK_DEVICE=cpu runs the "device" side on the CPU
# too (the dry run of tools/gpu-check.sh, on a machine without a GPU).
set -uo pipefail
train=${1:?usage: gpu-check-train.sh WIOLA_TRAIN OUT_DIR [options]}
out=${2:?usage: gpu-check-train.sh WIOLA_TRAIN OUT_DIR [options]}
shift 2
root=$(cd "$(dirname "$0")/.." && pwd)
config=$root/jobs/configs/embedded.ini data="" steps=30 min_fall=0.5 run_limit=120
while [ $# -gt 0 ]; do
  case $1 in
    --config) config=$2 ;;
    --data) data=$2 ;;
    --steps) steps=$2 ;;
    --min-fall) min_fall=$2 ;;
    --run-limit) run_limit=$2 ;;
    *) echo "gpu-check-train.sh: unknown argument $1" >&2; exit 2 ;;
  esac
  shift 2
done
[ -f "$config" ] || { echo "gpu-check-train.sh: no config file $config" >&2; exit 2; }
device=${WIOLA_CHECK_DEVICE:-cuda}
mkdir -p "$out"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# --allow-shared-device: on one GPU the 2 and 4 ranks share it.
common=(--config "$config" --steps "$steps" --log-interval 1 --eval-interval 0 --comm-timeout 60
        --allow-shared-device)
[ -n "$data" ] && common+=(--train-data "$data/fortunes-train.h5" --val-data "$data/fortunes-val.h5")

run() {  # name device dtype np extra-args...
  local name=$1 dev=$2 dtype=$3 np=$4
  shift 4
  timeout --kill-after=5 "$run_limit" mpirun --oversubscribe --bind-to none -np "$np" -x OMP_NUM_THREADS=1 \
    -x OPENBLAS_NUM_THREADS=1 "$train" "${common[@]}" --device "$dev" --dtype "$dtype" "$@" \
    >"$out/$name.log" 2>&1
}

# Prints "max_loss_diff max_norm_diff steps first_loss last_loss" of two logs.
compare() {
  awk -F'|' '
    # The value of the field labelled `name` ("loss", "grad-norm") of a step line.
    function field(name,   i, parts) {
      for (i = 2; i <= NF; ++i) {
        split($i, parts, " ")
        if (parts[1] == name) return parts[2] + 0
      }
      return "nan"
    }
    /^step +[0-9]+\// {
      split($1, s, " "); step = s[2] + 0
      loss = field("loss"); norm = field("grad-norm")
      if (FILENAME == ARGV[1]) { ref_loss[step] = loss; ref_norm[step] = norm; next }
      if (!(step in ref_loss)) next
      n++
      dl = loss - ref_loss[step]; if (dl < 0) dl = -dl; if (dl > ml) ml = dl
      dn = norm - ref_norm[step]; if (dn < 0) dn = -dn; if (dn > mn) mn = dn
      if (n == 1) first = loss
      last = loss
    }
    END { printf "%.4f %.3f %d %.4f %.4f\n", ml, mn, n, first, last }' "$1" "$2"
}

# The reason a run failed: the trainer's last own line, else mpirun's first.
why() {
  grep '^wiola-train:' "$1" | tail -n 1 | grep . || grep -m1 -iE 'error|abort' "$1"
}

failed=0
echo "| run | result |"
echo "|-----|--------|"
if ! run cpu-fp32 cpu fp32 4; then
  echo "| cpu fp32 reference | FAILED: $(why "$out/cpu-fp32.log") |"
  exit 1
fi
dtypes=(fp32 bf16)
if [ "$device" = cpu ]; then
  # The dry run: the CPU computes in fp32 or fp64 only.
  dtypes=(fp32)
  echo "| cpu bf16, every layout | not run: the CPU computes in fp32 (dry run) |"
fi
for dtype in "${dtypes[@]}"; do
  if [ "$dtype" = fp32 ]; then loss_bound=0.002; norm_bound=0.01; else loss_bound=0.1; norm_bound=0.1; fi
  for layout in "1:--pp 1 --dp 1 --stage-layers 4 --zero 0" \
                "1:--pp 1 --dp 1 --stage-layers 4 --zero 0 --cuda-graphs off" "2:--pp 2 --dp 1" \
                "4:--zero 1" "4:--zero 2" \
                "2:--pp 2 --dp 1 --schedule interleaved --virtual-stages 2 --stage-layers 1,1,1,1" \
                "4:--zero 2 --schedule zb-h2"; do
    np=${layout%%:*}
    args=${layout#*:}
    name="$device-$dtype-np$np-$(tr -d ' -' <<<"$args")"
    # shellcheck disable=SC2086  # the layout's flags split on purpose
    if ! run "$name" "$device" "$dtype" "$np" $args; then
      echo "| $device $dtype, $np ranks ($args) | FAILED: $(why "$out/$name.log") |"
      failed=1
      continue
    fi
    read -r dl dn n first last < <(compare "$out/cpu-fp32.log" "$out/$name.log")
    transport=$(grep -m1 "^comm:" "$out/$name.log" | cut -c1-80)
    memory=$(grep -m1 "^memory after the first step" "$out/$name.log" | sed 's/^[^:]*: //; s/,.*//')
    verdict=ok
    if [ "$n" -ne "$steps" ] ||
       awk -v dl="$dl" -v dn="$dn" -v lb="$loss_bound" -v nb="$norm_bound" -v f="$first" -v l="$last" \
         -v fall="$min_fall" 'BEGIN { exit !(dl > lb || dn > nb || f - l < fall) }'; then
      verdict=FAILED
      failed=1
    fi
    echo "| $device $dtype, $np ranks ($args) | $verdict: $n steps, loss $first -> $last, max |dloss| $dl (bound $loss_bound), max |dnorm| $dn (bound $norm_bound); memory GiB estimate / measured: $memory; $transport |"
  done
done
exit $failed
