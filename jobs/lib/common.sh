# Shared by the batch scripts in jobs/ (sourced; Slurm runs a copy of the
# batch script, so they find this file through WIOLA_ROOT).
#
# Every variable below can be overridden from the environment of `sbatch`
# (sbatch exports the submitting environment by default); jobs/README.md lists
# them.

source "$WIOLA_ROOT/jobs/lib/signals.sh"

wiola_log() { echo "[wiola $(date '+%F %T')] $*"; }
wiola_die() { echo "[wiola $(date '+%F %T')] error: $*" >&2; exit 2; }

: "${WIOLA_BUILD:=$WIOLA_ROOT/build}"
: "${WIOLA_BIN_DIR:=$WIOLA_BUILD/tools}"
: "${RUN_DIR:=$WIOLA_ROOT/runs/${SLURM_JOB_NAME:-wiola}}"
: "${SRUN_MPI:=pmix}"          # Debian's OpenMPI starts under srun only with PMIx
: "${EXTRA_ARGS:=}"            # appended to the tool's command line
: "${WIOLA_LOSS_REQUEUES:=3}"  # requeues after a lost rank or node, per job
[ -n "${SLURM_JOB_ID:-}" ] || wiola_die "not inside a Slurm job (submit with sbatch)"

# The ranks to start, TASKS. A submission that names a task count (--ntasks,
# --ntasks-per-node) gets exactly that (SLURM_NTASKS). One that names none
# gets TASKS_PER_NODE ranks on every node it was given, each with an equal
# share of the node's CPUs (srun is told so through SRUN_ARGS). Only the
# second kind can come back on fewer nodes: Slurm keeps a named task count
# across a requeue, so a job submitted as --nodes=4-8 --ntasks-per-node=8
# that started on 8 nodes waits for 8 again (docs/checkpoints.md, "Elastic
# resume").
: "${TASKS_PER_NODE:=8}"
if [ -n "${SLURM_NTASKS:-}" ]; then
  TASKS=$SLURM_NTASKS
else
  TASKS=$(( ${SLURM_JOB_NUM_NODES:-1} * TASKS_PER_NODE ))
  cpus_per_rank=$(( ${SLURM_CPUS_ON_NODE:-$TASKS_PER_NODE} / TASKS_PER_NODE ))
  [ "$cpus_per_rank" -ge 1 ] || cpus_per_rank=1
  SRUN_ARGS="--ntasks=$TASKS --ntasks-per-node=$TASKS_PER_NODE --cpus-per-task=$cpus_per_rank ${SRUN_ARGS:-}"
  export SLURM_CPUS_PER_TASK=$cpus_per_rank
fi

# One thread per rank unless Slurm gave the task more CPUs.
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-${SLURM_CPUS_PER_TASK:-1}}
export OPENBLAS_NUM_THREADS=$OMP_NUM_THREADS
# NCCL (GPU runs): report problems, and a generous InfiniBand retry timeout;
# a stuck collective is caught by wiola's own watchdog (--comm-timeout). The
# socket interface is chosen below (wiola_choose_net_if); set NCCL_IB_HCA for
# the site's InfiniBand if NCCL picks wrong.
export NCCL_DEBUG=${NCCL_DEBUG:-WARN}
export NCCL_IB_TIMEOUT=${NCCL_IB_TIMEOUT:-22}

# wiola_choose_net_if: on a multi-node allocation, the network interface MPI
# (OpenMPI's TCP BTL and OOB) and NCCL's bootstrap sockets use: WIOLA_NET_IF
# when set, otherwise the interface this node routes to another node of the
# allocation through (its NodeAddr, `ip -o route get`), so that traffic does
# not go to a loopback, docker or management interface that cannot reach the
# other nodes. Interface names must be the same on every node. Variables the
# user set already (OMPI_MCA_btl_tcp_if_include / _exclude,
# OMPI_MCA_oob_tcp_if_include / _exclude, NCCL_SOCKET_IFNAME) are kept; a
# one-node allocation leaves them all alone (WIOLA_NET_IF still applies).
# Prints one line saying what it chose and why.
wiola_choose_net_if() {
  local dev="" why="" me other="" addr="" chose=() kept=()
  if [ -n "${WIOLA_NET_IF:-}" ]; then
    dev=$WIOLA_NET_IF why="WIOLA_NET_IF"
  elif [ "${SLURM_JOB_NUM_NODES:-1}" -le 1 ]; then
    wiola_log "network: one node; MPI and NCCL choose their own interfaces (set WIOLA_NET_IF to pin one)"
    return 0
  else
    me=$(hostname -s)
    for other in $(scontrol show hostnames "${SLURM_JOB_NODELIST:-}" 2>/dev/null); do
      [ "$other" != "$me" ] && [ "$other" != "${SLURMD_NODENAME:-}" ] && break
      other=""
    done
    [ -n "$other" ] && addr=$(scontrol show node -o "$other" 2>/dev/null | sed -n 's/.* NodeAddr=\([^ ]*\).*/\1/p')
    [ -n "$addr" ] || addr=$other
    case $addr in
      *[!0-9.]*) addr=$(getent ahostsv4 "$addr" 2>/dev/null | awk 'NR == 1 { print $1 }') ;;
    esac
    [ -n "$addr" ] && dev=$(ip -o route get "$addr" 2>/dev/null | sed -n 's/.* dev \([^ ]*\).*/\1/p')
    if [ -z "$dev" ] || [ "$dev" = lo ]; then
      wiola_log "network: no route to another node found (node '${other:-none}', address '${addr:-none}', interface '${dev:-none}'); MPI and NCCL choose their own interfaces (set WIOLA_NET_IF to pin one)"
      return 0
    fi
    why="the route from $me to $other ($addr)"
  fi
  # OpenMPI refuses an _include beside an _exclude: either one set keeps both.
  local var pair
  for pair in OMPI_MCA_btl_tcp_if_include:OMPI_MCA_btl_tcp_if_exclude \
              OMPI_MCA_oob_tcp_if_include:OMPI_MCA_oob_tcp_if_exclude NCCL_SOCKET_IFNAME:; do
    var=${pair%%:*} other=${pair#*:}
    if [ -n "${!var:-}" ]; then kept+=("$var=${!var}")
    elif [ -n "$other" ] && [ -n "${!other:-}" ]; then kept+=("$other=${!other}")
    else export "$var=$dev"; chose+=("$var"); fi
  done
  wiola_log "network: interface $dev (from $why) for ${chose[*]:-nothing}${kept:+; kept as set: ${kept[*]}}"
}
wiola_choose_net_if

mkdir -p "$RUN_DIR/logs"

# wiola_check_layout PP DP: the job must start exactly PP x DP tasks (and,
# when GPUS_PER_TASK > 0, have that many GPUs per task).
wiola_check_layout() {
  local pp=$1 dp=$2 want=$(( $1 * $2 ))
  [ "$TASKS" -eq "$want" ] ||
    wiola_die "the allocation has $TASKS tasks but PP $pp x DP $dp needs $want; refusing to start"
  if [ "${GPUS_PER_TASK:-0}" -gt 0 ]; then
    local gpus=${SLURM_GPUS_ON_NODE:-0} tasks=${SLURM_NTASKS_PER_NODE:-${SLURM_TASKS_PER_NODE%%(*}}
    [ -n "${SLURM_NTASKS:-}" ] || tasks=$TASKS_PER_NODE
    [ "$gpus" -ge $(( tasks * GPUS_PER_TASK )) ] ||
      wiola_die "$tasks tasks per node need $(( tasks * GPUS_PER_TASK )) GPUs, the allocation has $gpus; refusing to start"
  fi
}

# wiola_run_step CMD...: runs `srun CMD` through wiola_launch (lib/signals.sh):
# USR1 or TERM to the batch shell (the time-limit warning, a preemption, a
# requeue) is passed on to the ranks as USR1, which makes them checkpoint and
# exit with 75. Returns srun's exit status.
wiola_run_step() {
  wiola_launch srun --mpi="$SRUN_MPI" --kill-on-bad-exit=1 ${SRUN_ARGS:-} "$@"
}

# wiola_requeue: after the ranks checkpointed on a signal (status 75), puts the
# job back in the queue. When Slurm is requeueing it already (a preemption or
# `scontrol requeue`: it signalled the job itself and raised its restart
# count), that is all that is needed.
wiola_requeue() {
  local out restarts
  out=$(scontrol requeue "$SLURM_JOB_ID" 2>&1) && return 0
  restarts=$(scontrol show job "$SLURM_JOB_ID" 2>/dev/null | sed -n 's/.*Restarts=\([0-9]*\).*/\1/p')
  if [ -n "$restarts" ] && [ "$restarts" -gt "${SLURM_RESTART_COUNT:-0}" ]; then
    wiola_log "Slurm is requeueing job $SLURM_JOB_ID already (restart $restarts: a preemption or scontrol requeue)"
    return 0
  fi
  wiola_die "scontrol requeue $SLURM_JOB_ID failed: $out"
}

# wiola_requeue_after_loss STATUS: the launcher ended with STATUS after the
# ranks lost one of their own: 70-72 are wiola's communication failures (an
# MPI error, a wait past --comm-timeout, a rank on this node found dead),
# which srun passes on. (When Slurm marks a node down first, it kills and
# requeues the job itself, --requeue.) Put the job back in the
# queue, to resume from the newest complete checkpoint on whatever nodes it is
# given next (the batch script recomputes DP from the tasks when DP is not
# set), at most WIOLA_LOSS_REQUEUES times per job (counted in
# RUN_DIR/logs/losses-JOBID), so that a failure that repeats ends the job.
# Returns 0 when requeued, 1 when the budget is spent.
wiola_requeue_after_loss() {
  local count_file="$RUN_DIR/logs/losses-$SLURM_JOB_ID" used
  used=0
  [ -f "$count_file" ] && used=$(wc -l <"$count_file")
  if [ "$used" -ge "$WIOLA_LOSS_REQUEUES" ]; then
    wiola_log "training failed with status $1 after $used requeue(s) for lost ranks (WIOLA_LOSS_REQUEUES=$WIOLA_LOSS_REQUEUES); not requeueing"
    return 1
  fi
  echo "restart ${SLURM_RESTART_COUNT:-0}: status $1" >>"$count_file"
  wiola_log "training failed with status $1: a rank or node was lost; requeueing job $SLURM_JOB_ID ($((used + 1)) of $WIOLA_LOSS_REQUEUES) to resume from the newest checkpoint"
  wiola_requeue
}
