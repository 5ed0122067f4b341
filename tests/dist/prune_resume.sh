#!/usr/bin/env bash
# prune_resume.sh WIOLA_TRAIN WIOLA_RESHARD MPIRUN...: pruning is atomic and
# --resume auto never loads or silently skips past what it should not:
#   1. a kill between the rename and the delete of pruning (fault injection)
#      leaves every step-N directory complete, the pruned one only under a
#      hidden name, and `latest` on a complete checkpoint;
#   2. the next run removes the leftovers before its first step, ignores a
#      step-N.partial that already holds a manifest (a crash between the
#      manifest and the rename) and resumes from the newest complete one;
#   3. a corrupt last rank file is found (verification covers every file);
#   4. when every checkpoint is corrupt, --resume auto refuses, naming each and
#      why, and writes nothing; --resume none then starts from step 0 by choice.
set -u
train=$1 reshard=$2
shift 2
mpirun=("$@")
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; cat "$dir/log"; ls -la "$dir/ck"; exit 1; }
run() { "${mpirun[@]}" 2 "$train" --preset wiola-tiny --pp 2 --log-interval 1 --eval-interval 0 \
          --save "$dir/ck" --comm-timeout 60 "$@" >"$dir/log" 2>&1; }
complete_and_verified() {  # every step-N directory has a manifest and verifies
  local d
  for d in "$dir"/ck/step-*; do
    case $d in *.partial) continue ;; esac
    "$reshard" verify "$d" >/dev/null 2>&1 || fail "$d is under its final name but does not verify"
  done
}
corrupt() { printf 'garbage' | dd of="$1" bs=1 seek=100 conv=notrunc status=none; }

# 1. Killed between renaming step 2 away (keep 2) and deleting it.
WIOLA_FAULT_INJECT=prune,rank=0,step=4 run --steps 8 --save-interval 1 --keep 2 &&
  fail "the killed run exited 0"
[ -d "$dir/ck/step-00000004" ] && [ -d "$dir/ck/step-00000003" ] || fail "steps 3 and 4 should be there"
[ -e "$dir/ck/step-00000002" ] && fail "step 2 is still under its final name"
[ -d "$dir/ck/.step-00000002.retired" ] || fail "the retired step 2 was not left under its hidden name"
[ "$(cat "$dir/ck/latest")" = step-00000004 ] || fail "latest is $(cat "$dir/ck/latest")"
complete_and_verified
echo "ok: killed mid-prune; step-00000003 and step-00000004 verify, step 2 only as .step-00000002.retired"

# 2. A crash between the manifest and the rename leaves a .partial that holds a
#    manifest: it must be ignored, and cleaned with the hidden leftover.
cp -r "$dir/ck/step-00000004" "$dir/ck/step-00000009.partial"
run --steps 6 --resume auto || fail "resume after the kill failed"
grep -q "removed what an interrupted save or prune left in $dir/ck: .step-00000002.retired, step-00000009.partial" "$dir/log" ||
  fail "the leftovers were not reported as removed"
grep -q "resume: $dir/ck/step-00000004 at step 4" "$dir/log" || fail "did not resume from step 4"
ls -A "$dir/ck" | grep -Eq 'partial|retired' && fail "leftovers remain: $(ls -A "$dir/ck")"
complete_and_verified
echo "ok: the .partial with a manifest was ignored and removed with the hidden leftover; resumed from step 4"

# An explicit --resume of a .partial is refused before anything is removed.
cp -r "$dir/ck/step-00000006" "$dir/ck/step-00000007.partial"
run --steps 8 --resume "$dir/ck/step-00000007.partial" && fail "a .partial directory was loaded"
grep -q "an unfinished checkpoint (.partial" "$dir/log" || fail "no message for an explicit .partial"
[ -d "$dir/ck/step-00000007.partial" ] || fail "the named .partial was removed before the refusal"
rm -rf "$dir/ck/step-00000007.partial"
echo "ok: --resume of a .partial directory refused by name"

# 3. The newest checkpoint's last rank file is corrupt: skipped, named.
last=$(ls "$dir/ck/step-00000006/"rank-*.h5 | tail -n 1)
corrupt "$last"
run --steps 6 --resume auto || fail "resume with a corrupt last file failed"
grep -q "resume: skipping $dir/ck/step-00000006 ($last: checksum mismatch" "$dir/log" ||
  fail "the corrupt last file was not found"
grep -q "resume: $dir/ck/step-00000004 at step 4" "$dir/log" || fail "did not fall back to step 4"
echo "ok: a corrupt last rank file is found; resumed from step 4"

# 4. Every checkpoint corrupt: refused, each named, nothing written.
for d in "$dir"/ck/step-*; do corrupt "$(ls "$d"/rank-*.h5 | tail -n 1)"; done
before=$(ls -A "$dir/ck")
run --steps 10 --resume auto
rc=$?
[ "$rc" -ne 0 ] && [ "$rc" -lt 128 ] || fail "resume with every checkpoint corrupt exited $rc"
grep -q -- "--resume auto: none of the 3 checkpoints in $dir/ck loads:" "$dir/log" || fail "no refusal"
for d in step-00000006 step-00000004 step-00000003; do
  grep -q "^  $d: .*checksum mismatch" "$dir/log" || fail "the refusal does not name $d and why"
done
grep -q "pass --resume none" "$dir/log" || fail "the refusal does not say how to start fresh"
grep -q '^step ' "$dir/log" && fail "a step ran"
[ "$(ls -A "$dir/ck")" = "$before" ] || fail "the save folder changed"
echo "ok: every checkpoint corrupt: refused ($(grep -m1 'none of the' "$dir/log" | sed 's/.*wiola-train: //'))"
run --steps 2 --resume none || fail "an explicit fresh start failed"
grep -q "WARNING: --save $dir/ck already holds 3 checkpoint(s), the newest step-00000006" "$dir/log" ||
  fail "the fresh start over old checkpoints was silent"
grep -q "^step      2/2" "$dir/log" || fail "the fresh start did not train"
[ -d "$dir/ck/step-00000006" ] || fail "the fresh run removed a later step of the earlier run"
echo "ok: --resume none starts from step 0, with a warning"
echo PASS
