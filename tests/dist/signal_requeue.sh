#!/usr/bin/env bash
# signal_requeue.sh WIOLA_TRAIN MPIRUN...: SIGUSR1 to mpirun (what Slurm's
# --signal sends) makes every rank finish its step, checkpoint and exit with
# status 75; the run then resumes from that checkpoint.
set -u
train=$1
shift
mpirun=("$@")
dir=$(mktemp -d)
trap 'rm -rf "$dir"; [ -n "${pid:-}" ] && kill -9 "$pid" 2>/dev/null' EXIT
fail() { echo "FAIL: $*"; cat "$dir/log"; exit 1; }
args=(--preset wiola-tiny --pp 2 --log-interval 1 --eval-interval 0 --save "$dir/ck" --comm-timeout 30)

"${mpirun[@]}" 2 "$train" "${args[@]}" --steps 100000 >"$dir/log" 2>&1 &
pid=$!
for _ in $(seq 1 300); do grep -q "^step      5/" "$dir/log" && break; sleep 0.1; done
grep -q "^step      5/" "$dir/log" || fail "the run did not get going"
kill -USR1 "$pid"
wait "$pid"
rc=$?
pid=
[ "$rc" -eq 75 ] || fail "exit status $rc, expected 75"
stopped=$(sed -n 's/^stopping after step \([0-9]*\) on signal 10$/\1/p' "$dir/log")
[ -n "$stopped" ] || fail "no 'stopping after step N on signal 10' line"
[ -f "$dir/ck/$(printf 'step-%08d' "$stopped")/manifest.txt" ] || fail "no checkpoint of step $stopped"
echo "ok: stopped after step $stopped with status 75 and a checkpoint"

"${mpirun[@]}" 2 "$train" "${args[@]}" --steps $((stopped + 2)) --resume auto >"$dir/log" 2>&1 ||
  fail "resume failed"
grep -q "at step $stopped" "$dir/log" || fail "did not resume at step $stopped"
echo "ok: resumed at step $stopped and finished"
echo PASS
