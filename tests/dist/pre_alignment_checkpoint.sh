#!/usr/bin/env bash
# pre_alignment_checkpoint.sh WIOLA_TRAIN MPIRUN...: a checkpoint written
# before the flat parameter layout was padded for alignment
# (docs/architecture.md, "Alignment") loads after it and resumes to the values
# the old code reached from it.
#
# The fixture fixtures/pre-alignment/step-00000002 was written by wiola
# 599f243 (unpadded layout) after 2 steps of the run below at pp 1 dp 2 zero 1,
# where the ZeRO shard boundary fell at element 4373 of embed.weight; with the
# padded layout it falls elsewhere, so each rank now reads ranges cut
# differently from the ones written. 599f243 resumed from it gave the values
# below (--metrics: step_loss and grad_norm of steps 3-6, the final
# validation loss). The same operations run in the same order, except that the
# gradient norm's fp64 partial sums are cut at other elements, so the values
# agree to 1e-9 relative (measured: equal losses; one gradient norm 1 ulp off).
set -u
train=$1
shift
mpirun=("$@")
here=$(cd "$(dirname "$0")" && pwd)
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cp -r "$here/fixtures/pre-alignment" "$dir/ck"
"${mpirun[@]}" 2 "$train" --preset wiola-tiny --layers 2 --d 4 --heads 1 --kv-heads 1 \
  --dsff-a 4 --dsff-b 8 --dp 2 --zero 1 --micro-batch 2 --global-batch 8 --steps 6 --lr 3e-3 \
  --warmup-frac 0 --log-interval 1 --eval-interval 0 --threads 1 --comm-timeout 60 \
  --resume "$dir/ck/step-00000002" --metrics "$dir/metrics.jsonl" >"$dir/log" 2>&1 ||
  { cat "$dir/log"; echo "FAIL: the resumed run failed"; exit 1; }

# field FIELD STEP TYPE: the value of FIELD in the metrics line of that step and type.
field() {
  grep "\"type\":\"$3\"" "$dir/metrics.jsonl" | grep "\"step\":$2," |
    grep -o "\"$1\":[^,}]*" | cut -d: -f2
}
status=0
check() {  # what expected got
  if awk -v e="$2" -v g="$3" 'BEGIN { d = e - g; if (d < 0) d = -d; exit !(g != "" && d <= 1e-9 * (e < 0 ? -e : e)) }'; then
    echo "ok: $1: $3 (599f243: $2)"
  else
    echo "FAIL: $1: resumed $3, 599f243 resumed $2"
    status=1
  fi
}
expected_loss=(7.625914264470339 7.624924890697002 7.62505517154932 7.625009942799807)
expected_norm=(0.4460604162279198 0.49548147701349426 0.3011788945041555 0.30809924258916166)
for i in 0 1 2 3; do
  step=$((i + 3))
  check "step $step loss" "${expected_loss[$i]}" "$(field step_loss $step step)"
  check "step $step gradient norm" "${expected_norm[$i]}" "$(field grad_norm $step step)"
done
check "validation loss at step 6" 7.6215678583830595 "$(field val_loss 6 validation)"
[ $status = 0 ] || cat "$dir/log"
exit $status
