#!/usr/bin/env bash
# checkpoint_faults.sh WIOLA_TRAIN MPIRUN...: a rank killed while writing a
# checkpoint leaves the previous one loadable; --resume auto skips a corrupt
# checkpoint; an explicit --resume of a corrupt one is refused by name.
set -u
train=$1
shift
mpirun=("$@")
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
run() { "${mpirun[@]}" 2 "$train" --preset wiola-tiny --pp 2 --log-interval 1 --eval-interval 0 \
          --save "$dir/ck" --save-interval 2 --keep 0 --comm-timeout 30 "$@" >"$dir/log" 2>&1; }

# 1. Rank 1 dies in the middle of writing the checkpoint of step 4.
WIOLA_FAULT_INJECT=checkpoint,rank=1,step=4 run --steps 6 && fail "the killed run exited 0"
[ -f "$dir/ck/step-00000002/manifest.txt" ] || fail "step 2's checkpoint is not complete"
[ -d "$dir/ck/step-00000004" ] && fail "a half-written step 4 was published"
[ -d "$dir/ck/step-00000004.partial" ] || fail "no partial directory was left to inspect"
[ "$(cat "$dir/ck/latest")" = step-00000002 ] || fail "latest is $(cat "$dir/ck/latest")"
echo "ok: killed mid-write, step-00000002 is still the latest complete checkpoint"

# 2. Resume picks it up and finishes.
run --steps 6 --resume auto || { cat "$dir/log"; fail "resume after the crash failed"; }
grep -q "resume: $dir/ck/step-00000002 at step 2" "$dir/log" || { cat "$dir/log"; fail "did not resume from step 2"; }
grep -q "step      6/6" "$dir/log" || fail "did not reach step 6"
[ -d "$dir/ck/step-00000004.partial" ] && fail "the stale partial directory was not cleaned up"
echo "ok: resumed from step 2 and finished"

# 3. Corrupt the newest checkpoint: --resume auto reports and skips it.
f=$(ls "$dir/ck/step-00000006/"rank-*.h5 | head -n 1)
printf 'garbage' | dd of="$f" bs=1 seek=100 conv=notrunc status=none
run --steps 8 --resume auto || { cat "$dir/log"; fail "resume with a corrupt newest checkpoint failed"; }
grep -q "skipping $dir/ck/step-00000006" "$dir/log" || { cat "$dir/log"; fail "corrupt checkpoint not reported"; }
grep -q "resume: $dir/ck/step-00000004 at step 4" "$dir/log" || { cat "$dir/log"; fail "did not fall back to step 4"; }
echo "ok: the corrupt step-00000006 was skipped, resumed from step 4"

# 4. Asking for a corrupt one by name is refused, naming the file.
f=$(ls "$dir/ck/step-00000008/"rank-*.h5 | head -n 1)
printf 'garbage' | dd of="$f" bs=1 seek=100 conv=notrunc status=none
run --steps 10 --resume "$dir/ck/step-00000008" && fail "a corrupt checkpoint was loaded"
grep -q "checksum mismatch" "$dir/log" || { cat "$dir/log"; fail "no checksum message"; }
echo "ok: explicit --resume of the corrupt checkpoint refused: $(grep -m1 checksum "$dir/log")"
echo PASS
