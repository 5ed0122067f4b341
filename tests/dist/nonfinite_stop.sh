#!/usr/bin/env bash
# nonfinite_stop.sh WIOLA_TRAIN MPIRUN...: a run whose loss turns NaN (the
# fault injector sets one rank's parameters to NaN) stops with an error after
# --max-nonfinite-steps steps in a row, writes no checkpoint or export of the
# bad steps, and leaves the last good checkpoint as `latest`.
set -u
train=$1
shift
mpirun=("$@")
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; cat "$dir/log"; exit 1; }
run() { "${mpirun[@]}" 2 "$train" --preset wiola-tiny --pp 2 --log-interval 1 --eval-interval 0 \
          --comm-timeout 60 "$@" >"$dir/log" 2>&1; }

# 1. NaN from step 5 on rank 1; three bad steps in a row end the run.
WIOLA_FAULT_INJECT=nan,rank=1,step=5 run --steps 20 --save "$dir/ck" --save-interval 2 \
  --max-nonfinite-steps 3 --export-weights "$dir/w.h5"
rc=$?
[ "$rc" -ne 0 ] || fail "the run with NaN parameters exited 0"
[ "$rc" -lt 128 ] || fail "killed by a signal (status $rc)"
grep -q "steps 5..7: the loss or gradient norm was not finite 3 steps in a row (--max-nonfinite-steps 3); stopping without saving: the last good checkpoint is $dir/ck/step-00000004" "$dir/log" ||
  fail "no message naming the steps and the last good checkpoint"
grep -q "checkpoint of step 6 not written" "$dir/log" || fail "the save at step 6 was not refused by name"
[ "$(cat "$dir/ck/latest")" = step-00000004 ] || fail "latest is $(cat "$dir/ck/latest")"
ls "$dir/ck" | grep -q 'step-0000000[5-9]' && fail "a checkpoint of a NaN step exists: $(ls "$dir/ck")"
[ -e "$dir/w.h5" ] && fail "NaN weights were exported"
grep -q "^step      8/" "$dir/log" && fail "the run went on after the limit"
echo "ok: stopped after steps 5..7 ($(grep -m1 'stopping without saving' "$dir/log" | sed 's/^.*wiola-train: //'))"

# 2. The last good checkpoint resumes.
run --steps 6 --save "$dir/ck" --resume auto || fail "resuming the last good checkpoint failed"
grep -q "resume: $dir/ck/step-00000004 at step 4" "$dir/log" || fail "did not resume from step 4"
echo "ok: resumed from the last good checkpoint"

# 3. A run that ends while its loss is NaN does not finish "successfully".
rm -rf "$dir/ck2"
WIOLA_FAULT_INJECT=nan,rank=0,step=4 run --steps 5 --save "$dir/ck2" --export-weights "$dir/w.h5"
rc=$?
[ "$rc" -ne 0 ] && [ "$rc" -lt 128 ] || fail "a run ending on NaN steps exited $rc"
grep -q "the run ended with 2 steps in a row whose loss or gradient norm was not finite" "$dir/log" ||
  fail "no message for a run ending on NaN steps"
[ -e "$dir/ck2/step-00000005" ] && fail "the final checkpoint of NaN weights was written"
[ -e "$dir/w.h5" ] && fail "NaN weights were exported"
echo "ok: a run ending on NaN steps exits $rc without saving or exporting"
echo PASS
