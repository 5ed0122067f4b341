# The stop-signal contract of the launch scripts (sourced by lib/common.sh and
# train-embedded.sh; bash).
#
# wiola-train stops cleanly on SIGUSR1 or SIGTERM: every rank finishes its
# step, they write a checkpoint together and exit 75 ("try again"). What the
# launchers do with the signals they receive themselves:
#   srun    forwards USR1 and TERM to every task and returns the tasks' status
#           (75);
#   mpirun  (Open MPI 4.1) forwards USR1; its own TERM makes it forward TERM,
#           then SIGKILL the ranks about a second later
#           (odls_base_sigkill_timeout) and exit 1 whatever the ranks did: a
#           step longer than that second is killed before it can checkpoint.
# So a script that launches ranks runs the launcher in the background and
# turns its own USR1 and TERM (Slurm's time-limit warning, a preemption, a
# `kill`) into USR1 for the launcher; the script then exits with the
# launcher's status, 75 after a checkpoint.

# wiola_launch CMD...: runs CMD (srun ... or mpirun ...) in the background,
# passes USR1 or TERM on to it as USR1, and returns its exit status.
wiola_launch() {
  "$@" &
  local pid=$! rc=0
  trap "echo \"[wiola \$(date '+%F %T')] USR1 received: asking the ranks to checkpoint\"; kill -USR1 $pid 2>/dev/null" USR1
  trap "echo \"[wiola \$(date '+%F %T')] TERM received: asking the ranks to checkpoint\"; kill -USR1 $pid 2>/dev/null" TERM
  # bash runs a trap only between commands: wait returns early on a signal,
  # so wait again until the launcher itself has ended.
  while :; do
    wait "$pid"
    rc=$?
    kill -0 "$pid" 2>/dev/null || break
  done
  trap - USR1 TERM
  return "$rc"
}

# wiola_log_to FILE: a `tee -a FILE` for the launcher's output that outlives
# the job's signals (Slurm sends TERM to every process of the job on a
# requeue or preemption; a tee that died would lose the ranks' last lines and
# break the launcher's output pipe). Use as:  CMD > >(wiola_log_to FILE) 2>&1
wiola_log_to() {
  trap '' TERM USR1 INT HUP
  exec tee -a "$1"
}
