# What the Slurm tests share (sourced by slurm_jobs.sh and slurm_multinode.sh,
# which set `work`, `pids` and `test_name` first): reporting, the skip rule,
# Slurm's and MUNGE's packages, a private munged, free ports, and waiting on
# a job's state.

say() { echo "[$test_name $(date +%T)] $*"; }
fail() {
  say "FAIL: $*"
  for f in "$work"/log/*.log "$work"/out/*.out; do
    [ -f "$f" ] && { echo "---- $f (last 25 lines)"; tail -n 25 "$f"; }
  done
  exit 1
}
# Where the whole suite must run (CI sets WIOLA_REQUIRE_ALL_TESTS=1), a skip
# is a failure; elsewhere it is reported (CTest: skipped, run-all.sh: a banner).
skip() {
  say "SKIPPED: $*"
  if [ "${WIOLA_REQUIRE_ALL_TESTS:-0}" = 1 ]; then
    say "FAIL: WIOLA_REQUIRE_ALL_TESTS=1 (CI): $test_name must run here"
    exit 1
  fi
  exit 77
}

# install_slurm: Slurm's daemons and client and MUNGE, from Debian's packages
# when missing (root only; otherwise a skip).
install_slurm() {
  local missing=() p
  for p in slurmctld slurmd slurm-client munge; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -gt 0 ] || return 0
  [ "$(id -u)" -eq 0 ] || skip "Slurm packages missing (${missing[*]}) and not root to install them"
  say "installing ${missing[*]}"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" \
    >"$work/apt.log" 2>&1 || skip "apt-get install ${missing[*]} failed: $(tail -n 3 "$work/apt.log")"
}

# start_munged: a private munged with its socket at $sock (a path, so every
# network namespace shares it); its PID joins `pids`.
start_munged() {
  mkdir -p "$work/munge"
  chown munge:munge "$work/munge"
  chmod 700 "$work/munge"
  local key=/etc/munge/munge.key
  [ -f "$key" ] || { mungekey --create --keyfile="$work/munge/munge.key" && key="$work/munge/munge.key"; }
  sock="$work/munge/munge.socket"
  su -s /bin/sh munge -c "/usr/sbin/munged --force --socket=$sock --key-file=$key \
    --log-file=$work/munge/munged.log --pid-file=$work/munge/munged.pid \
    --seed-file=$work/munge/munged.seed" || skip "munged would not start: $(tail -n 2 "$work/munge/munged.log")"
  for _ in $(seq 50); do [ -s "$work/munge/munged.pid" ] && break; sleep 0.1; done
  pids+=("$(cat "$work/munge/munged.pid")")
}

# free_ports N: N distinct TCP ports nothing listens on, from the kernel's
# socket tables (no Python or iproute2 needed).
free_ports() {
  local taken=" " line port n=0
  while read -r _ line _; do taken+="$((16#${line##*:})) "; done < <(grep -hv local_address /proc/net/tcp /proc/net/tcp6 2>/dev/null)
  while [ "$n" -lt "$1" ]; do
    port=$((20000 + RANDOM % 40000))
    case $taken in *" $port "*) continue ;; esac
    taken+="$port "
    echo "$port"
    n=$((n + 1))
  done
}

job_state() { scontrol show job "$1" 2>/dev/null | sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p'; }
wait_state() {  # wait_state JOB SECONDS STATE...: true once JOB is in one of STATE
  local job=$1 end=$((SECONDS + $2)) s want
  shift 2
  while [ $SECONDS -lt $end ]; do
    s=$(job_state "$job")
    for want in "$@"; do [ "$s" = "$want" ] && return 0; done
    sleep 0.2
  done
  return 1
}
# final_loss LOG: the loss the log prints at step $steps of $steps.
final_loss() { grep -E "^step +$steps/$steps \\|" "$1" | tail -n 1 | sed 's/.*| loss \([0-9.]*\) |.*/\1/'; }
