#!/usr/bin/env bash
# slurm_multinode.sh SOURCE_DIR BUILD_DIR
#
# The batch scripts of jobs/ on a private three-node Slurm cluster on this
# machine: each node is a network namespace with its own hostname (a UTS
# namespace) and its own /etc/hosts (a mount namespace), linked by veth pairs to
# a bridge in the host's namespace that holds the controller's address; the
# node addresses exist only inside those namespaces. One slurmd per node;
# munged and slurmctld run on the host and are shared. Everything is made by
# this script under names unique to its PID and removed at the end and on
# failure (daemons and leftover job processes by PID, then the namespaces and
# the bridge). With the tiny preset and the CPU backend:
#   1. the flagship job (jobs/wiola-1.5b-chinchilla.sbatch) runs PP 2 x DP 2 as
#      2 nodes x 2 tasks through srun, with CUDA_VISIBLE_DEVICES=0,1 exported
#      to the tasks: the ranks report two distinct hosts, each node's two ranks
#      take devices 0 and 1 (the CPU build prints the device it would take),
#      jobs/lib chose the nodes' interface (eth0) for MPI and NCCL and said so,
#      the traffic crossed the nodes' veth links, and the final loss equals
#      the same layout on one node (4 tasks);
#   2. the same 2-node job with MPI pinned to loopback
#      (OMPI_MCA_btl_tcp_if_include=lo, kept by jobs/lib as the user's
#      choice) fails: its traffic must cross the namespaces' interfaces;
#   2b. the profiling job (jobs/profile.sbatch) runs on the same 2 nodes; the
#      data preparation job (jobs/prepare-data.sbatch) as 2 nodes x 2 tasks
#      writes the same files as 1 task;
#   3. 3 tasks on one node that sees CUDA_VISIBLE_DEVICES=0,1 are refused
#      (--device cuda), naming the host and the two ranks that would share a
#      device; with --allow-shared-device that refusal is not made;
#   4. a node lost mid-step (link down, every process SIGKILLed): the
#      survivors name a rank of the lost node within 60 s, the job is
#      requeued, comes back on the one node left as PP 2 x DP 1, resumes from
#      the newest checkpoint and ends at the loss of that checkpoint resharded
#      by hand (jobs/reshard.sbatch) and trained to the end (within 1e-5).
# Exit 0: all passed. Exit 77 (CTest: skipped): namespaces or Slurm cannot be
# set up here; the reason is printed (with WIOLA_REQUIRE_ALL_TESTS=1, as in CI,
# that is exit 1: failed). Anything else: failed.
set -u
root=$(cd "$1" && pwd)
build=$(cd "$2" && pwd)
# Not under /tmp: every node gets its own /tmp (and /dev/shm), as real nodes
# have (Slurm's PMIx plugin and OpenMPI name their files there per job, not per node).
work=$(mktemp -d /var/tmp/wiola-slurm-mn.XXXXXX)
chmod 755 "$work"
id=$$
bridge=wbr$id
nodes=(node1 node2 node3)
ns_of() { echo "wiola$id-$1"; }          # the network namespace of node $1
host_if() { echo "wv$id${1#node}"; }     # the bridge end of node $1's veth pair
pids=()
made_ns=()
made_bridge=0
test_name=slurm-multinode
source "$(dirname "$0")/slurm_lib.sh"
cleanup() {
  trap - EXIT
  # Jobs first (their steps outlive slurmd), then the daemons, then whatever
  # still runs inside the namespaces (by PID), then the namespaces and bridge.
  if [ -n "${SLURM_CONF:-}" ] && [ ${#pids[@]} -gt 0 ]; then
    timeout 10 scancel --full "--user=$(id -un)" 2>/dev/null
    for _ in $(seq 20); do [ -z "$(timeout 5 squeue -h 2>/dev/null)" ] && break; sleep 0.25; done
  fi
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null; done
  for _ in $(seq 30); do
    alive=0
    for pid in "${pids[@]}"; do kill -0 "$pid" 2>/dev/null && alive=1; done
    [ $alive = 0 ] && break
    sleep 0.1
  done
  for pid in "${pids[@]}"; do kill -9 "$pid" 2>/dev/null; done
  for ns in "${made_ns[@]}"; do
    for pid in $(ip netns pids "$ns" 2>/dev/null); do kill -9 "$pid" 2>/dev/null; done
  done
  for ns in "${made_ns[@]}"; do
    for _ in $(seq 20); do [ -z "$(ip netns pids "$ns" 2>/dev/null)" ] && break; sleep 0.1; done
    ip netns del "$ns" 2>/dev/null
  done
  [ $made_bridge = 1 ] && ip link del "$bridge" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# ---- Slurm, MUNGE, and the right to make namespaces ---------------------------
[ "$(id -u)" -eq 0 ] || skip "making network namespaces and running the test cluster's daemons needs root"
for tool in ip nsenter unshare hostname mount getent; do
  command -v "$tool" >/dev/null || skip "$tool is missing"
done
install_slurm

# ---- the network: a bridge on the host, one namespace per node ------------------
# What an earlier run killed outright (SIGKILL: no cleanup) left: its
# namespaces and bridge, named after its PID, once that PID is gone.
for ns in $(ip netns list 2>/dev/null | grep -oE '^wiola[0-9]+-node[0-9]+'); do
  owner=${ns#wiola}
  owner=${owner%%-*}
  kill -0 "$owner" 2>/dev/null && continue
  for pid in $(ip netns pids "$ns" 2>/dev/null); do kill -9 "$pid" 2>/dev/null; done
  sleep 0.2
  ip netns del "$ns" 2>/dev/null && say "removed $ns, left by a run that was killed"
done
for br in $(ip -o link show type bridge 2>/dev/null | grep -oE ' wbr[0-9]+:' | tr -d ' :'); do
  kill -0 "${br#wbr}" 2>/dev/null || { ip link del "$br" 2>/dev/null && say "removed bridge $br, left by a run that was killed"; }
done
# A 10.77.X.0/24 no interface or route of this machine uses.
subnet=""
for k in $(seq 0 199); do
  x=$(( (id + k) % 200 + 20 ))
  ip -o -4 addr show | grep -q " 10\.77\.$x\." && continue
  ip -4 route show | grep -q "^10\.77\.$x\." && continue
  subnet=10.77.$x
  break
done
[ -n "$subnet" ] || skip "no free 10.77.X.0/24 subnet"
ctl_addr=$subnet.1
addr_of() { echo "$subnet.1${1#node}"; }  # node1 -> 10.77.X.11
ip link add "$bridge" type bridge 2>"$work/ip.err" || skip "cannot make a bridge: $(cat "$work/ip.err")"
made_bridge=1
ip addr add "$ctl_addr/24" dev "$bridge" && ip link set "$bridge" up || skip "cannot configure the bridge"
for n in "${nodes[@]}"; do
  ns=$(ns_of "$n")
  ip netns add "$ns" 2>"$work/ip.err" || skip "cannot make a network namespace: $(cat "$work/ip.err")"
  made_ns+=("$ns")
  ip link add "$(host_if "$n")" type veth peer name "wp$id${n#node}" 2>"$work/ip.err" ||
    skip "cannot make a veth pair: $(cat "$work/ip.err")"
  ip link set "wp$id${n#node}" netns "$ns" &&
    ip link set "$(host_if "$n")" master "$bridge" &&
    ip link set "$(host_if "$n")" up &&
    ip netns exec "$ns" ip link set "wp$id${n#node}" name eth0 &&
    ip netns exec "$ns" ip addr add "$(addr_of "$n")/24" dev eth0 &&
    ip netns exec "$ns" ip link set eth0 up &&
    ip netns exec "$ns" ip link set lo up &&
    ip netns exec "$ns" ip route add default via "$ctl_addr" || skip "cannot configure the namespace of $n"
done
host=$(hostname -s)
{
  echo "127.0.0.1 localhost"
  echo "$ctl_addr $host"
  for n in "${nodes[@]}"; do echo "$(addr_of "$n") $n"; done
} >"$work/hosts"
chmod 644 "$work/hosts"
# node_setup (sh -c, $0 the node, $1 the work folder, then the command): the
# node's hostname, /etc/hosts, /tmp and /dev/shm, then exec the command.
node_setup='hostname "$0" && mount --bind "$1/hosts" /etc/hosts && mount --bind "$1/tmp-$0" /tmp &&
  mount -t tmpfs -o size=512m tmpfs /dev/shm && shift && exec "$@"'
for n in "${nodes[@]}"; do mkdir -p "$work/tmp-$n" && chmod 1777 "$work/tmp-$n"; done
# in_node NODE CMD...: CMD in NODE's namespaces (network, hostname, /etc/hosts).
# nsenter, not `ip netns exec`, which remounts /sys (slurmd needs the host's
# /sys/fs/cgroup).
in_node() {
  local n=$1
  shift
  nsenter --net="/run/netns/$(ns_of "$n")" unshare --uts --mount \
    sh -c "$node_setup" "$n" "$work" "$@"
}
[ "$(in_node node2 hostname)" = node2 ] || skip "cannot give a namespace its own hostname"
[ "$(in_node node2 ip -o route get "$(addr_of node3)" | sed -n 's/.* dev \([^ ]*\).*/\1/p')" = eth0 ] ||
  skip "node2 has no route to node3 through eth0"
say "network: bridge $bridge $ctl_addr/24 ($host), ${nodes[*]} at $(for n in "${nodes[@]}"; do printf '%s ' "$(addr_of "$n")"; done)"

# ---- MUNGE and Slurm -----------------------------------------------------------
mkdir -p "$work"/{state,log,out}
for n in "${nodes[@]}"; do mkdir -p "$work/spool/$n"; done
start_munged
read -r -d '' ctld_port slurmd_port < <(free_ports 2)
cat >"$work/slurm.conf" <<CONF
ClusterName=wiolamn
SlurmctldHost=$host($ctl_addr)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$sock,cred_expire=10
CredType=cred/munge
MpiDefault=pmix
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
ReturnToService=2
StateSaveLocation=$work/state
SlurmdSpoolDir=$work/spool/%n
SlurmctldPidFile=$work/slurmctld.pid
SlurmdPidFile=$work/slurmd-%n.pid
SlurmctldLogFile=$work/log/slurmctld.log
SlurmdLogFile=$work/log/slurmd-%n.log
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SlurmdParameters=config_overrides
KillWait=5
# A lost node is declared down (and its job's nodes released) 20 s after its
# last answer, not 300; the requeued job is scheduled within 2 s, not 60.
SchedulerParameters=sched_interval=2
SlurmdTimeout=20
MessageTimeout=5
NodeName=node1 NodeAddr=$(addr_of node1) CPUs=8 RealMemory=4000 State=UNKNOWN
NodeName=node2 NodeAddr=$(addr_of node2) CPUs=8 RealMemory=4000 State=UNKNOWN
NodeName=node3 NodeAddr=$(addr_of node3) CPUs=8 RealMemory=4000 State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
CONF
export SLURM_CONF="$work/slurm.conf"
slurmctld -D -f "$SLURM_CONF" >"$work/log/slurmctld.out" 2>&1 &
pids+=($!)
for n in "${nodes[@]}"; do
  # nsenter, unshare and sh each exec the next: this PID becomes slurmd's.
  nsenter --net="/run/netns/$(ns_of "$n")" unshare --uts --mount \
    sh -c "$node_setup" "$n" "$work" \
    slurmd -D -N "$n" -f "$SLURM_CONF" >"$work/log/slurmd-$n.out" 2>&1 &
  pids+=($!)
done
idle() { [ "$(sinfo -h -N -o '%N %T' 2>/dev/null | grep -c ' idle$')" = ${#nodes[@]} ]; }
for _ in $(seq 150); do idle && break; sleep 0.2; done
idle || skip "the three-node cluster did not come up: $(sinfo -h -N -o '%N %T' 2>&1 | tr '\n' ' ') $(tail -n 3 "$work"/log/slurmd-node1.log "$work/log/slurmctld.log" 2>/dev/null)"
say "cluster up: $(sinfo -h -N -o '%N %T %c' | tr '\n' ',')"
say "slurmd PIDs: $(for p in "${pids[@]:2}"; do printf '%s=%s ' "$p" "$(cat /proc/"$p"/comm 2>/dev/null)"; done)"

# tx_bytes NODE: bytes NODE's eth0 has sent (counted at the bridge end)
tx_bytes() { cat "/sys/class/net/$(host_if "$1")/statistics/rx_bytes"; }

common=(WIOLA_ROOT="$root" WIOLA_BUILD="$build" WIOLA_CONFIG="$root/jobs/configs/test-tiny.ini"
        TRAIN_DATA="$build/data/fortunes-train.h5" GPUS_PER_TASK=0
        OMPI_MCA_rmaps_base_oversubscribe=1 OMP_WAIT_POLICY=PASSIVE CUDA_VISIBLE_DEVICES=0,1)
cpu=(--gpus-per-node=0 --cpus-per-task=1 --chdir="$root")
steps=40
# train NAME [VAR=VALUE...] -- SBATCH_OPTIONS...: submits the flagship job, prints its id
train() {
  local name=$1 vars=()
  shift
  while [ "$1" != -- ]; do vars+=("$1"); shift; done
  shift
  env "${common[@]}" RUN_DIR="$work/run-$name" PP=2 DP=2 EXTRA_ARGS="--steps $steps --save-interval 0" "${vars[@]}" \
    sbatch --parsable "${cpu[@]}" --output="$work/out/$name-%j.out" "$@" "$root/jobs/wiola-1.5b-chinchilla.sbatch"
}

# ---- 1. 2 nodes x 2 tasks, and the same layout on one node ------------------------
before=("$(tx_bytes node1)" "$(tx_bytes node2)")
two=$(train two -- --nodes=2 --ntasks-per-node=2) || fail "sbatch of the 2-node job"
one=$(train one -- --nodes=1 --ntasks=4 --ntasks-per-node=4 --nodelist=node3) || fail "sbatch of the 1-node job"
say "2-node job $two, 1-node job $one submitted"
out2="$work/out/two-$two.out"
# The interface jobs/lib chose (printed before the ranks start).
wait_state "$two" 60 RUNNING COMPLETED FAILED CANCELLED TIMEOUT || fail "the 2-node job did not start"
for _ in $(seq 100); do grep -q "network:" "$out2" 2>/dev/null && break; sleep 0.2; done
grep -qE "network: interface eth0 \(from the route from node[0-9] to node[0-9] \($subnet\.1[0-9]\)\) for OMPI_MCA_btl_tcp_if_include OMPI_MCA_oob_tcp_if_include NCCL_SOCKET_IFNAME" "$out2" ||
  fail "jobs/lib did not choose eth0 for MPI and NCCL: $(grep 'network:' "$out2")"
say "ok: $(grep -o 'network: .*' "$out2")"
wait_state "$two" 120 COMPLETED FAILED CANCELLED TIMEOUT || fail "the 2-node job did not finish"
[ "$(job_state "$two")" = COMPLETED ] || fail "the 2-node job ended $(job_state "$two")"
after=("$(tx_bytes node1)" "$(tx_bytes node2)")
log2="$work/run-two/logs/train-$two-0.log"
[ -f "$log2" ] || fail "the 2-node job wrote no log"

# Placement: rank 0 prints every rank's line at start.
placement() {  # placement LOG: "rank host local_rank local_size device"
  sed -nE 's/^rank ([0-9]+) on host ([^:]+): local rank ([0-9]+) of ([0-9]+), device ([^ ]+) .*/\1 \2 \3 \4 \5/p' "$1"
}
placement "$log2" >"$work/placement"
[ "$(wc -l <"$work/placement")" = 4 ] || fail "not four placement lines: $(grep '^rank ' "$log2")"
hosts=$(awk '{print $2}' "$work/placement" | sort -u | tr '\n' ' ')
[ "$(awk '{print $2}' "$work/placement" | sort -u | wc -l)" = 2 ] || fail "the ranks ran on hosts $hosts, not two"
for h in $hosts; do
  case $h in node1 | node2 | node3) ;; *) fail "a rank ran on host $h, not a test node" ;; esac
  [ "$(awk -v h="$h" '$2 == h { print $3 ":" $5 }' "$work/placement" | sort | tr '\n' ' ')" = "0:0 1:1 " ] ||
    fail "the ranks on $h do not take devices 0 and 1 by local rank: $(grep "on host $h:" "$log2")"
  awk -v h="$h" '$2 == h && $4 != 2 { bad = 1 } END { exit bad }' "$work/placement" ||
    fail "the ranks on $h do not count 2 local ranks"
done
say "ok: placement across 2 nodes x 2 tasks with CUDA_VISIBLE_DEVICES=0,1:"
grep -E '^rank [0-9]+ on host' "$log2" | sed 's/^/      /'

# The traffic crossed the nodes' links.
sent=$(( after[0] - before[0] + after[1] - before[1] ))
[ "$sent" -gt 1000000 ] || fail "only $sent bytes crossed node1's and node2's links during the 2-node job"
say "ok: $((sent / 1024)) KiB left node1 and node2 through their eth0 during the 2-node job"

wait_state "$one" 120 COMPLETED FAILED CANCELLED TIMEOUT || fail "the 1-node job did not finish"
[ "$(job_state "$one")" = COMPLETED ] || fail "the 1-node job ended $(job_state "$one")"
log1="$work/run-one/logs/train-$one-0.log"
grep -q "network: one node; MPI and NCCL choose their own interfaces" "$work/out/one-$one.out" ||
  fail "jobs/lib did not leave the one-node job's interfaces alone: $(grep 'network:' "$work/out/one-$one.out")"
[ "$(placement "$log1" | awk '{print $2}' | sort -u)" = node3 ] || fail "the 1-node job did not run on node3 alone"
loss2=$(final_loss "$log2")
loss1=$(final_loss "$log1")
[ -n "$loss2" ] && [ -n "$loss1" ] || fail "a job did not reach step $steps (losses '$loss2', '$loss1')"
[ "$loss2" = "$loss1" ] || fail "final loss $loss2 on 2 nodes x 2 tasks differs from $loss1 on 1 node x 4 tasks"
say "ok: final loss $loss2 on 2 nodes x 2 tasks = $loss1 on 1 node x 4 tasks (PP 2 x DP 2, $steps steps)"

# ---- 2. MPI pinned to loopback cannot cross nodes -----------------------------------
# The ranks then connect to 127.0.0.1 in their own namespace, which holds no
# peer (OpenMPI warns, finds the wrong process or none); the job must not
# train: it fails, or it has not finished a step when the eth0 run had
# finished all of them several times over (then it is cancelled).
lo=$(train lo OMPI_MCA_btl_tcp_if_include=lo OMPI_MCA_oob_tcp_if_include=lo \
       EXTRA_ARGS="--steps $steps --save-interval 0 --comm-timeout 10" -- --nodes=2 --ntasks-per-node=2) ||
  fail "sbatch of the loopback job"
# 3 tasks on one node that sees 2 devices, refused and allowed (meanwhile, on node3).
share=$(train share PP=1 DP=3 EXTRA_ARGS="--steps 2 --device cuda --global-batch 6" -- \
          --nodes=1 --ntasks=3 --ntasks-per-node=3 --nodelist=node3) || fail "sbatch of the shared-device job"
allowed=$(train allowed PP=1 DP=3 EXTRA_ARGS="--steps 2 --device cuda --global-batch 6 --allow-shared-device" -- \
            --nodes=1 --ntasks=3 --ntasks-per-node=3 --nodelist=node3) || fail "sbatch of the --allow-shared-device job"
# The profiling job across the same 2 nodes (meanwhile, beside the loopback job).
prof=$(env "${common[@]}" RUN_DIR="$work/run-prof" PP=2 DP=2 PROFILE_STEPS=4 WARMUP_STEPS=2 \
         sbatch --parsable "${cpu[@]}" --nodes=2 --ntasks-per-node=2 --output="$work/out/prof-%j.out" \
         "$root/jobs/profile.sbatch") || fail "sbatch of the profiling job"
# The data preparation job as 2 nodes x 2 tasks, and as 1 task on node3.
corpus=$work/corpus
mkdir -p "$corpus"
for f in "$root"/README.md "$root"/docs/*.md; do cp "$f" "$corpus/$(basename "$f")"; done
gzip -9 "$corpus/architecture.md"
data_job() {  # data_job NAME SBATCH_OPTIONS...: runs prepare-data.sbatch, prints the job id
  local name=$1
  shift
  env "${common[@]}" INPUTS="$corpus/*.md $corpus/*.md.gz" DATA_OUT="$work/$name" VOCAB=300 SAMPLE_MB=1 \
    SPLIT=paragraph RUN_DIR="$work/run-$name" sbatch --parsable "${cpu[@]}" --output="$work/out/$name-%j.out" \
    "$@" "$root/jobs/prepare-data.sbatch"
}
d4=$(data_job data4 --nodes=2 --ntasks-per-node=2) || fail "sbatch of the 2-node data job"
d1=$(data_job data1 --nodes=1 --ntasks=1 --ntasks-per-node=1 --nodelist=node3) || fail "sbatch of the 1-task data job"
lolog="$work/run-lo/logs/train-$lo-0.log"
wait_state "$lo" 30 RUNNING COMPLETED FAILED CANCELLED TIMEOUT || fail "the loopback job did not start"
if wait_state "$lo" 25 COMPLETED FAILED CANCELLED TIMEOUT; then
  [ "$(job_state "$lo")" = FAILED ] || fail "the 2-node job with MPI pinned to loopback ended $(job_state "$lo")"
  how="failed"
else
  grep -qE "^step +[0-9]+/$steps" "$lolog" 2>/dev/null &&
    fail "the 2-node job with MPI pinned to loopback trains: $(grep -E '^step' "$lolog" | tail -n 1)"
  grep -q "^wiola-train: device" "$lolog" 2>/dev/null && started="after" || started="before"
  how="did not finish a step in 25 s, stuck $started wiola-train's start-up report (cancelled; its log ended: $(grep -vE '^[- ]|^$' "$lolog" 2>/dev/null | tail -n 1 | cut -c 1-100))"
  scancel "$lo"
fi
grep -qE "^step +$steps/$steps" "$lolog" 2>/dev/null && fail "the 2-node job with MPI pinned to loopback completed"
grep -q "kept as set: OMPI_MCA_btl_tcp_if_include=lo OMPI_MCA_oob_tcp_if_include=lo" "$work/out/lo-$lo.out" ||
  fail "jobs/lib did not keep the user's interface: $(grep 'network:' "$work/out/lo-$lo.out")"
say "ok: with MPI pinned to loopback the 2-node job $how; OpenMPI: $(grep -m1 -hoE 'connect\(\) to 127\.0\.0\.1:[0-9]+ failed|received unexpected process identifier.*|unable to reach.*' "$work/out/lo-$lo.out" "$lolog" 2>/dev/null | head -n 1)"

wait_state "$prof" 60 COMPLETED FAILED CANCELLED TIMEOUT || fail "the 2-node profiling job did not finish"
[ "$(job_state "$prof")" = COMPLETED ] || fail "the 2-node profiling job ended $(job_state "$prof")"
for f in profile.csv profile.json trace.json; do
  [ -s "$work/run-prof/profile-$prof/$f" ] || fail "the 2-node profiling job wrote no $f"
done
grep -q "network: interface eth0" "$work/out/prof-$prof.out" || fail "the profiling job did not choose eth0"
say "ok: the profiling job on 2 nodes x 2 tasks (eth0) wrote profile.csv, profile.json, trace.json"

for j in "$d4" "$d1"; do
  wait_state "$j" 120 COMPLETED FAILED CANCELLED TIMEOUT || fail "data job $j did not finish"
  [ "$(job_state "$j")" = COMPLETED ] || fail "data job $j ended $(job_state "$j"): $(tail -n 5 "$work"/out/data*-"$j".out)"
done
dnodes=$(scontrol show job "$d4" | sed -n 's/^ *NodeList=\([^ ]*\).*/\1/p')
[ "$(scontrol show hostnames "$dnodes" | wc -l)" = 2 ] || fail "the 2-node data job ran on '$dnodes'"
for t in 0 1 2 3; do
  grep -q "^task $t of 4: " "$work/out/data4-$d4.out" || fail "task $t of 4 did not report its share"
done
diff -r "$work/data1" "$work/data4" >/dev/null || fail "4 tasks on 2 nodes and 1 task wrote different files: $(diff -rq "$work/data1" "$work/data4" | head -n 3)"
say "ok: the data job as 2 nodes x 2 tasks ($dnodes) wrote the same $(ls "$work/data4" | grep -c '\.h5$') parts and manifest as 1 task"

# ---- 3. 3 ranks, 2 devices on one node ------------------------------------------------
wait_state "$share" 60 COMPLETED FAILED CANCELLED TIMEOUT || fail "the shared-device job did not end"
[ "$(job_state "$share")" = FAILED ] || fail "the shared-device job ended $(job_state "$share")"
refusal="ranks 0 and 2 on host node3 would share device 0: 3 ranks run there and each sees 2 devices"
grep -q "$refusal" "$work/run-share/logs/train-$share-0.log" ||
  fail "no refusal naming node3 and ranks 0 and 2: $(grep -i 'wiola-train' "$work/run-share/logs/train-$share-0.log" | head -n 3)"
wait_state "$allowed" 60 COMPLETED FAILED CANCELLED TIMEOUT || fail "the --allow-shared-device job did not end"
alog="$work/run-allowed/logs/train-$allowed-0.log"
[ -s "$alog" ] || fail "the --allow-shared-device job wrote no log"
grep -q "would share device" "$alog" && fail "--allow-shared-device was refused: $(grep 'would share' "$alog" | head -n 1)"
say "ok: 3 tasks on node3 with CUDA_VISIBLE_DEVICES=0,1: $(grep -o "$refusal" "$work/run-share/logs/train-$share-0.log" | head -n 1)"
say "    with --allow-shared-device not refused for sharing (this CPU build then: $(grep -m1 -o 'wiola-train: .*' "$alog" | cut -c 1-120 || true))"

# ---- 4. a node lost mid-step; the job back on fewer nodes -------------------------------
# node3 drained (no spare node). The flagship job as --nodes=1-2 with no task
# count (2 ranks per node, TASKS_PER_NODE), PP 2 and DP left to the script,
# a checkpoint every 20 steps, all kept. Once it has saved step 40, node2
# dies: its link goes down (nothing more leaves or arrives, as when a node
# loses power) and every process in its namespace (slurmd, slurmstepd, the
# two ranks) gets SIGKILL. Then: the survivors on node1 end within 60 s naming
# a rank on node2; the job is requeued and starts on node1 alone as PP 2 x
# DP 1; it resumes from the newest checkpoint and finishes; its final loss
# equals, within 1e-5, a run resumed from that checkpoint converted by hand
# (jobs/reshard.sbatch) to PP 2 x DP 1.
elastic() {
  scontrol update nodename=node3 state=drain reason="no spare node" || fail "cannot drain node3"
  local esteps=300 job out log0 log1 t0 waited k newest line ref_loss el_loss
  job=$(env "${common[@]}" RUN_DIR="$work/run-el" PP=2 DP= TASKS_PER_NODE=2 \
          EXTRA_ARGS="--steps $esteps --save-interval 20 --keep 0 --comm-timeout 10" \
          sbatch --parsable --gpus-per-node=0 --cpus-per-task=2 --chdir="$root" --nodes=1-2 --output="$work/out/el-%j.out" \
          "$root/jobs/wiola-1.5b-chinchilla.sbatch") || fail "sbatch of the elastic job"
  out="$work/out/el-$job.out"
  log0="$work/run-el/logs/train-$job-0.log"
  log1="$work/run-el/logs/train-$job-1.log"
  wait_state "$job" 60 RUNNING || fail "the elastic job did not start"
  for _ in $(seq 600); do [ -f "$work/run-el/checkpoints/step-00000040/manifest.txt" ] && break; sleep 0.05; done
  [ -f "$work/run-el/checkpoints/step-00000040/manifest.txt" ] ||
    fail "the elastic job did not save step 40: $(tail -n 3 "$log0" 2>/dev/null)"
  grep -q "job $job (restart 0) on 2 node(s): PP 2 x DP 2" "$out" ||
    fail "the elastic job did not start as PP 2 x DP 2 on 2 nodes: $(grep -h 'restart 0\|error' "$out")"
  ip link set "$(host_if node2)" down
  t0=$SECONDS
  for pid in $(ip netns pids "$(ns_of node2)"); do kill -9 "$pid" 2>/dev/null; done
  # The newest complete checkpoint now; none can complete without node2's ranks.
  newest=$(ls -d "$work"/run-el/checkpoints/step-*/manifest.txt | sort | tail -n 1 | sed -E 's|.*/step-0*([0-9]+)/manifest.txt|\1|')
  say "node2 lost; the newest complete checkpoint is step $newest"
  # The survivors' last words: a wait on a rank of node2, past --comm-timeout.
  line=""
  while [ $((SECONDS - t0)) -le 60 ]; do
    line=$(grep -E "^rank [0-9]+ \(host node1\): .* timed out after 10 s" "$log0" 2>/dev/null |
             grep -m1 -E "host node2\)|on node2\)")
    [ -n "$line" ] && break
    sleep 0.2
  done
  waited=$((SECONDS - t0))
  [ -n "$line" ] || fail "no survivor on node1 named a rank on node2 within 60 s: $(grep -E '^rank|srun' "$log0" "$out" | tail -n 5)"
  say "ok: ${waited} s after the loss: $line"
  for _ in $(seq 600); do grep -q "job $job (restart 1)" "$out" && break; sleep 0.2; done
  wait_state "$job" 60 COMPLETED FAILED CANCELLED TIMEOUT || fail "the requeued job did not finish"
  [ "$(scontrol show job "$job" | sed -n 's/.*Restarts=\([0-9]*\).*/\1/p')" = 1 ] ||
    fail "the job did not count one restart: $(scontrol show job "$job" | grep -o 'Restarts=[0-9]*')"
  [ "$(job_state "$job")" = COMPLETED ] || fail "the requeued job ended $(job_state "$job"): $(tail -n 5 "$out")"
  grep -q "job $job (restart 1) on 1 node(s): PP 2 x DP 1" "$out" ||
    fail "the requeued job did not run as PP 2 x DP 1 on 1 node: $(grep -h 'restart 1' "$out")"
  k=$(sed -nE 's|^resume: .*/step-0*([0-9]+) at step [0-9]+ .*|\1|p' "$log1")
  [ "$k" = "$newest" ] || fail "the requeued job did not resume from step $newest: $(grep -h '^resume' "$log1")"
  grep -qE "^step +$esteps/$esteps" "$log1" || fail "the requeued job did not reach step $esteps"
  say "ok: requeued, restarted on node1 alone as PP 2 x DP 1, resumed from step $k: $(grep -h '^resume' "$log1" | cut -c 1-120)"

  # The same checkpoint converted by hand, on node1, then trained to the end there.
  local rjob ckpt
  ckpt="$work/run-el/checkpoints/step-$(printf %08d "$k")"
  rjob=$(env "${common[@]}" RUN_DIR="$work/run-ref" CHECKPOINT="$ckpt" RESHARD_OUT="$work/ref-pp2-dp1" \
           TO_PP=2 TO_DP=1 TO_ZERO=1 sbatch --parsable "${cpu[@]}" --nodes=1 --ntasks=1 \
           --output="$work/out/reshard-%j.out" "$root/jobs/reshard.sbatch") || fail "sbatch of the reshard job"
  wait_state "$rjob" 60 COMPLETED FAILED CANCELLED TIMEOUT && [ "$(job_state "$rjob")" = COMPLETED ] ||
    fail "the reshard job ended $(job_state "$rjob"): $(tail -n 3 "$work/out/reshard-$rjob.out")"
  env "${common[@]}" srun --nodes=1 --ntasks=2 --cpus-per-task=1 --mpi=pmix --chdir="$root" \
    "$build/tools/wiola-train/wiola-train" --config "$root/jobs/configs/test-tiny.ini" --pp 2 --dp 1 \
    --train-data "$build/data/fortunes-train.h5" --steps $esteps --save-interval 0 \
    --resume "$work/ref-pp2-dp1" >"$work/log/elastic-reference.log" 2>&1 ||
    fail "the reference run failed: $(tail -n 3 "$work/log/elastic-reference.log")"
  el_loss=$(grep -E "^step +$esteps/$esteps \|" "$log1" | sed 's/.*| loss \([0-9.]*\) |.*/\1/')
  ref_loss=$(grep -E "^step +$esteps/$esteps \|" "$work/log/elastic-reference.log" | sed 's/.*| loss \([0-9.]*\) |.*/\1/')
  [ -n "$el_loss" ] && [ -n "$ref_loss" ] || fail "a final loss is missing ('$el_loss', '$ref_loss')"
  awk -v a="$el_loss" -v b="$ref_loss" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= 1e-5 * b) }' ||
    fail "final loss $el_loss after the elastic resume differs from $ref_loss resharded by hand"
  say "ok: final loss $el_loss after the elastic resume = $ref_loss from step $k resharded by hand to PP 2 x DP 1 (within 1e-5)"
}
elastic
say "PASS"
