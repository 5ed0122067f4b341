#!/usr/bin/env bash
# signal_requeue.sh WIOLA_TRAIN MPIRUN...: the stop-signal contract on one
# machine (docs/checkpoints.md, jobs/lib/signals.sh):
#   1. SIGUSR1 to mpirun (what Slurm's --signal sends): every rank finishes
#      its step, they checkpoint together and mpirun exits 75; the run resumes;
#   2. SIGTERM to a launch script that runs mpirun through wiola_launch (as
#      jobs/train-embedded.sh does): the same, the script exits 75;
#   3. SIGTERM to the ranks themselves (what srun and Slurm deliver to tasks):
#      the same, mpirun exits 75.
# (SIGTERM to mpirun itself is Open MPI's: it SIGKILLs the ranks about a
# second later and exits 1; that is printed, not required.)
set -u
train=$1
shift
mpirun=("$@")
root=$(cd "$(dirname "$0")/../.." && pwd)
dir=$(mktemp -d)
trap 'rm -rf "$dir"; [ -n "${pid:-}" ] && kill -9 "$pid" 2>/dev/null' EXIT
fail() { echo "FAIL: $*"; cat "$dir/log"; exit 1; }
args=(--preset wiola-tiny --pp 2 --log-interval 1 --eval-interval 0 --comm-timeout 60)

# The wiola-train processes among the descendants of $1 (from /proc: no procps).
ranks_of() {
  local tree=" $1 " c stat rest ppid grew=1
  while [ "$grew" = 1 ]; do
    grew=0
    for c in /proc/[0-9]*; do
      stat=$(cat "$c/stat" 2>/dev/null) || continue
      rest=${stat##*) }
      ppid=${rest#* }
      ppid=${ppid%% *}
      if [[ $tree == *" $ppid "* && $tree != *" ${c#/proc/} "* ]]; then
        tree+="${c#/proc/} "
        grew=1
      fi
    done
  done
  for c in $tree; do
    [ "$(cat "/proc/$c/comm" 2>/dev/null)" = wiola-train ] && echo "$c"
  done
}

# start SAVE CMD...: runs CMD in the background into $dir/log; waits for step 5.
start() {
  local save=$1
  shift
  "$@" "${args[@]}" --save "$save" --steps 100000 >"$dir/log" 2>&1 &
  pid=$!
  for _ in $(seq 1 1200); do grep -q "^step      5/" "$dir/log" && return 0; sleep 0.1; done
  fail "the run did not get going"
}
# finish SAVE SIGNAL: waits for the run, checks status 75 and the checkpoint;
# sets $stopped.
finish() {
  local save=$1 sig=$2 rc
  wait "$pid"
  rc=$?
  pid=
  [ "$rc" -eq 75 ] || fail "exit status $rc, expected 75"
  stopped=$(sed -n "s/^stopping after step \([0-9]*\) on signal $sig\$/\1/p" "$dir/log" | head -n 1)
  [ -n "$stopped" ] || fail "no 'stopping after step N on signal $sig' line"
  [ -f "$save/$(printf 'step-%08d' "$stopped")/manifest.txt" ] || fail "no checkpoint of step $stopped"
}

# 1. SIGUSR1 to mpirun.
start "$dir/ck" "${mpirun[@]}" 2 "$train"
kill -USR1 "$pid"
finish "$dir/ck" 10
echo "ok: SIGUSR1 to mpirun: stopped after step $stopped with status 75 and a checkpoint"
"${mpirun[@]}" 2 "$train" "${args[@]}" --save "$dir/ck" --steps $((stopped + 2)) --resume auto >"$dir/log" 2>&1 ||
  fail "resume failed"
grep -q "at step $stopped" "$dir/log" || fail "did not resume at step $stopped"
echo "ok: resumed at step $stopped and finished"

# 2. SIGTERM to a launch script (mpirun through wiola_launch).
launcher=(bash -c 'source "$0"; wiola_launch "$@"' "$root/jobs/lib/signals.sh" "${mpirun[@]}" 2 "$train")
start "$dir/ck2" "${launcher[@]}"
kill -TERM "$pid"
finish "$dir/ck2" 10
grep -q "TERM received: asking the ranks to checkpoint" "$dir/log" || fail "the launcher did not say it passed TERM on"
echo "ok: SIGTERM to the launch script: the ranks stopped after step $stopped, status 75, a checkpoint"

# 3. SIGTERM to every rank (srun's and Slurm's delivery).
start "$dir/ck3" "${mpirun[@]}" 2 "$train"
mapfile -t ranks < <(ranks_of "$pid")
[ "${#ranks[@]}" -eq 2 ] || fail "found ${#ranks[@]} wiola-train processes under mpirun, expected 2"
kill -TERM "${ranks[@]}"
finish "$dir/ck3" 15
echo "ok: SIGTERM to the ranks: stopped after step $stopped, mpirun exits 75, a checkpoint"

# For the record: SIGTERM to mpirun itself.
start "$dir/ck4" "${mpirun[@]}" 2 "$train"
kill -TERM "$pid"
wait "$pid"
echo "note: SIGTERM to mpirun itself: exit status $? (Open MPI's; launch scripts pass USR1 instead)"
pid=
echo PASS
