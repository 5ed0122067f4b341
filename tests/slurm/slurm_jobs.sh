#!/usr/bin/env bash
# slurm_jobs.sh SOURCE_DIR BUILD_DIR
#
# Runs the batch scripts of jobs/ under a real Slurm: installs Slurm and MUNGE
# from Debian's packages if missing, starts a private one-node cluster on
# localhost (its own munged, slurmctld and slurmd, on free ports, state under a
# temporary directory; stopped by their PIDs at the end and on failure), and
# submits the same sbatch files a lab would, with the tiny preset and the CPU
# backend through environment overrides:
#   1. the training job runs 4 ranks with srun (PP 2 x DP 2, ZeRO-1), is sent
#      the time-limit warning (USR1 to the batch shell) mid-run, checkpoints,
#      requeues itself, resumes from its checkpoint and finishes with the same
#      final loss (the log's mean over the last 10 steps, which the signal's step
#      may split between the two jobs) and checkpoint as an uninterrupted run
#      with another thread count (2 a rank, where the job runs 1; OpenMP's
#      threads sleep when idle, as 8 threads share 2 CPUs here);
#   1b. the same job preempted with SIGTERM to its ranks (scancel
#      --signal=TERM): the ranks checkpoint and exit 75, the batch script
#      requeues, the restart resumes from that checkpoint;
#   1c. the same job requeued by Slurm (scontrol requeue: TERM to the batch
#      shell and the ranks, KillWait, as a preemption): the ranks checkpoint
#      within KillWait, Slurm requeues, the restart resumes from it;
#   2. the profiling job writes its table, CSV, JSON and trace;
#   3. the reshard job converts the training checkpoint to PP 4 x DP 1, and
#      the result loads and trains at that layout;
#   4. a job whose allocation does not match its layout refuses to start;
#   5. a rank killed with SIGKILL under srun: the survivors end themselves
#      (status 72, not Slurm's KillWait SIGKILL), naming the dead rank;
#   6. the data preparation job (a tokenizer trained on a sample, then the
#      files encoded across the tasks): 3 tasks and 1 task write the same
#      bytes, the manifest trains; a bad input fails its task naming file and
#      line, leaves no manifest, and the job submitted again encodes only that
#      task's share.
# Exit 0: all passed. Exit 77 (CTest: skipped): Slurm cannot run here; the
# reason is printed (with WIOLA_REQUIRE_ALL_TESTS=1, as in CI, that is exit 1:
# failed). Anything else: failed.
set -u
root=$(cd "$1" && pwd)
build=$(cd "$2" && pwd)
work=$(mktemp -d /tmp/wiola-slurm.XXXXXX)
chmod 755 "$work"
pids=()
test_name=slurm-test
source "$(dirname "$0")/slurm_lib.sh"
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null; done
  sleep 1
  for pid in "${pids[@]}"; do kill -9 "$pid" 2>/dev/null; done
  rm -rf "$work"
}
trap cleanup EXIT

# ---- Slurm and MUNGE ---------------------------------------------------------
install_slurm
[ "$(id -u)" -eq 0 ] || skip "the test cluster runs its daemons as root (SlurmUser=root)"

mkdir -p "$work"/{state,spool,log,out,run}
start_munged
read -r -d '' ctld_port slurmd_port < <(free_ports 2)
host=$(hostname -s)
cat >"$work/slurm.conf" <<CONF
ClusterName=wiolatest
SlurmctldHost=$host
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
SlurmdSpoolDir=$work/spool
SlurmctldPidFile=$work/slurmctld.pid
SlurmdPidFile=$work/slurmd.pid
SlurmctldLogFile=$work/log/slurmctld.log
SlurmdLogFile=$work/log/slurmd.log
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SlurmdParameters=config_overrides
KillWait=30
JobRequeue=1
NodeName=$host CPUs=8 RealMemory=4000 State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
CONF
export SLURM_CONF="$work/slurm.conf"
slurmctld -D -f "$SLURM_CONF" >"$work/log/slurmctld.out" 2>&1 &
pids+=($!)
slurmd -D -f "$SLURM_CONF" >"$work/log/slurmd.out" 2>&1 &
pids+=($!)
for _ in $(seq 100); do [ "$(sinfo -h -o %T 2>/dev/null)" = idle ] && break; sleep 0.2; done
[ "$(sinfo -h -o %T 2>/dev/null)" = idle ] ||
  skip "the one-node cluster did not come up: $(tail -n 3 "$work/log/slurmctld.log" "$work/log/slurmd.log" 2>/dev/null)"
say "cluster up: $(sinfo -h -o '%P %D %T %c CPUs')"

restarts() { scontrol show job "$1" 2>/dev/null | sed -n 's/.*Restarts=\([0-9]*\).*/\1/p'; }
wait_restart() {  # wait_restart JOB SECONDS: until Slurm has requeued it once
  for _ in $(seq $(($2 * 5))); do
    [ "$(restarts "$1")" -ge 1 ] 2>/dev/null && return 0
    sleep 0.2
  done
  return 1
}

common=(WIOLA_ROOT="$root" WIOLA_BUILD="$build" WIOLA_CONFIG="$root/jobs/configs/test-tiny.ini"
        TRAIN_DATA="$build/data/fortunes-train.h5" GPUS_PER_TASK=0 RUN_DIR="$work/run"
        OMPI_MCA_rmaps_base_oversubscribe=1)
cpu=(--nodes=1 --gpus-per-node=0 --cpus-per-task=1 --chdir="$root")
# The training jobs run 1000 steps (the config says 300): a signal sent when
# the log shows step 50 or 100 must find the job still running, even when the
# tiny model trains 250 steps a second (it did, between two busy processes, and
# finished before the SIGTERM arrived).
steps=1000
last=step-$(printf %08d "$steps")

# ---- 1. training: preempted by the warning signal, requeued, resumed ----------
job=$(env "${common[@]}" EXTRA_ARGS="--steps $steps" PP=2 DP=2 sbatch --parsable "${cpu[@]}" --ntasks=4 \
        --output="$work/out/train-%j.out" "$root/jobs/wiola-1.5b-chinchilla.sbatch") ||
  fail "sbatch of the training job"
say "training job $job submitted"
wait_state "$job" 60 RUNNING || fail "the training job did not start (state $(job_state "$job"))"
for _ in $(seq 3000); do
  grep -qE "^step +100/$steps" "$work"/run/logs/train-"$job"-0.log 2>/dev/null && break
  sleep 0.1
done
grep -qE "^step +100/$steps" "$work"/run/logs/train-"$job"-0.log || fail "the training job made no progress"
scancel --signal=USR1 --batch "$job" || fail "scancel --signal=USR1 --batch"
say "sent the time-limit warning (USR1 to the batch shell)"
wait_restart "$job" 120
grep -q "checkpointed after a signal; requeueing" "$work"/out/train-"$job".out ||
  fail "the job did not checkpoint and requeue on the signal"
stopped=$(sed -n 's/^stopping after step \([0-9]*\) on signal 10$/\1/p' "$work/run/logs/train-$job-0.log")
[ -n "$stopped" ] || fail "no rank stopped on the signal"
say "stopped after step $stopped, requeued; waiting for the restart"
wait_state "$job" 240 COMPLETED FAILED CANCELLED TIMEOUT || fail "the requeued job did not finish"
[ "$(job_state "$job")" = COMPLETED ] || fail "the requeued job ended $(job_state "$job")"
grep -q "resume: $work/run/checkpoints/step-$(printf %08d "$stopped") at step $stopped" \
  "$work/run/logs/train-$job-1.log" || fail "the restart did not resume from step $stopped"
resumed_loss=$(final_loss "$work/run/logs/train-$job-1.log")
[ -n "$resumed_loss" ] || fail "the resumed run did not reach step $steps"

srun --ntasks=4 --cpus-per-task=1 --mpi=pmix --chdir="$root" \
  env OMPI_MCA_rmaps_base_oversubscribe=1 OMP_WAIT_POLICY=PASSIVE "$build/tools/wiola-train/wiola-train" \
  --config "$root/jobs/configs/test-tiny.ini" --pp 2 --dp 2 --train-data "$build/data/fortunes-train.h5" \
  --threads 2 --steps "$steps" --save "$work/reference" >"$work/log/reference.log" 2>&1 || fail "the uninterrupted reference run"
reference_loss=$(final_loss "$work/log/reference.log")
[ "$resumed_loss" = "$reference_loss" ] ||
  fail "final loss $resumed_loss after preemption differs from $reference_loss uninterrupted"
# Every loss line both runs print after the stop (every 25 steps): the window
# around the stop (e.g. 101-125 for a stop at 112) holds steps of both jobs.
printed_after() {  # printed_after LOG: "step loss" for the steps after $stopped on log boundaries
  sed -nE "s/^step +([0-9]+)\\/$steps \\|.*\\| loss ([0-9.]+) \\|.*/\\1 \\2/p" "$1" |
    awk -v s="$stopped" '$1 > s && $1 % 25 == 0'
}
[ "$(printed_after "$work/run/logs/train-$job-1.log")" = "$(printed_after "$work/log/reference.log")" ] ||
  fail "the losses printed after the restart differ from the uninterrupted run's:
$(paste <(printed_after "$work/run/logs/train-$job-1.log") <(printed_after "$work/log/reference.log"))"
"$build/tools/wiola-reshard/wiola-reshard" compare "$work/run/checkpoints/$last" \
  "$work/reference/$last" >"$work/log/compare.log" 2>&1 ||
  fail "final parameters or optimizer state differ: $(cat "$work/log/compare.log")"
say "ok: preempted at step $stopped, requeued, resumed; final loss $resumed_loss = uninterrupted $reference_loss, the $(printed_after "$work/log/reference.log" | wc -l) losses printed after the restart and the final checkpoints identical"

# ---- 1b, 1c. preempted with SIGTERM; requeued by Slurm ---------------------------
# preempt NAME ACTION: a training job in its own run folder gets ACTION at step
# 50; its ranks checkpoint after their step and exit, the job goes back to the
# queue, restarts and resumes from that checkpoint, and completes.
preempt() {
  local name=$1 action=$2 run="$work/run-$1" pjob stopped
  pjob=$(env "${common[@]}" EXTRA_ARGS="--steps $steps" RUN_DIR="$run" PP=2 DP=2 sbatch --parsable "${cpu[@]}" --ntasks=4 \
           --output="$work/out/$name-%j.out" "$root/jobs/wiola-1.5b-chinchilla.sbatch") ||
    fail "$name: sbatch of the training job"
  wait_state "$pjob" 120 RUNNING || fail "$name: the job did not start (state $(job_state "$pjob"))"
  for _ in $(seq 3000); do
    grep -qE "^step +50/$steps" "$run/logs/train-$pjob-0.log" 2>/dev/null && break
    sleep 0.1
  done
  grep -qE "^step +50/$steps" "$run/logs/train-$pjob-0.log" || fail "$name: no progress"
  case $action in
    term) scancel --signal=TERM "$pjob" || fail "$name: scancel --signal=TERM" ;;
    requeue) scontrol requeue "$pjob" || fail "$name: scontrol requeue" ;;
  esac
  wait_restart "$pjob" 120 || fail "$name: the job was not requeued"
  # Slurm counts the restart at once; the ranks finish their step and save.
  for _ in $(seq 600); do
    grep -qE "requeueing job|requeueing job $pjob already" "$work/out/$name-$pjob.out" && break
    sleep 0.2
  done
  stopped=$(sed -n 's/^stopping after step \([0-9]*\) on signal 1[05]$/\1/p' "$run/logs/train-$pjob-0.log")
  [ -n "$stopped" ] || fail "$name: no rank stopped on the signal (see $run/logs/train-$pjob-0.log)"
  [ -f "$run/checkpoints/step-$(printf %08d "$stopped")/manifest.txt" ] ||
    fail "$name: no checkpoint of step $stopped"
  wait_state "$pjob" 300 COMPLETED FAILED CANCELLED TIMEOUT || fail "$name: the requeued job did not finish"
  [ "$(job_state "$pjob")" = COMPLETED ] || fail "$name: the requeued job ended $(job_state "$pjob")"
  grep -q "resume: $run/checkpoints/step-$(printf %08d "$stopped") at step $stopped" \
    "$run/logs/train-$pjob-1.log" || fail "$name: the restart did not resume from step $stopped"
  grep -qE "^step +$steps/$steps" "$run/logs/train-$pjob-1.log" || fail "$name: the restart did not finish"
  say "ok: $name: stopped after step $stopped with a checkpoint, requeued, resumed at $stopped, completed"
  say "    $(grep -E 'requeueing|already' "$work/out/$name-$pjob.out" | tail -n 1)"
}
preempt sigterm term
preempt requeue requeue
grep -q "Slurm is requeueing job" "$work"/out/requeue-*.out ||
  fail "requeue: the batch script did not recognise Slurm's own requeue"

# ---- 2. profiling ---------------------------------------------------------------
pjob=$(env "${common[@]}" PP=2 DP=2 PROFILE_STEPS=4 WARMUP_STEPS=2 sbatch --parsable "${cpu[@]}" \
         --ntasks=4 --output="$work/out/profile-%j.out" "$root/jobs/profile.sbatch") ||
  fail "sbatch of the profiling job"
wait_state "$pjob" 240 COMPLETED FAILED CANCELLED TIMEOUT || fail "the profiling job did not finish"
[ "$(job_state "$pjob")" = COMPLETED ] || fail "the profiling job ended $(job_state "$pjob")"
for f in profile.csv profile.json trace.json; do
  [ -s "$work/run/profile-$pjob/$f" ] || fail "the profiling job wrote no $f"
done
say "ok: profiling job wrote profile.csv, profile.json, trace.json"

# ---- 3. resharding, and the result loads at the new layout -----------------------
rjob=$(env "${common[@]}" TO_PP=4 TO_DP=1 TO_ZERO=0 sbatch --parsable "${cpu[@]}" --ntasks=1 \
         --output="$work/out/reshard-%j.out" "$root/jobs/reshard.sbatch") || fail "sbatch of the reshard job"
wait_state "$rjob" 240 COMPLETED FAILED CANCELLED TIMEOUT || fail "the reshard job did not finish"
[ "$(job_state "$rjob")" = COMPLETED ] || fail "the reshard job ended $(job_state "$rjob")"
converted="$work/run/resharded-pp4-dp1-zero0/$last"
[ -f "$converted/manifest.txt" ] || fail "the reshard job wrote no checkpoint"
srun --ntasks=4 --cpus-per-task=1 --mpi=pmix --chdir="$root" \
  env OMPI_MCA_rmaps_base_oversubscribe=1 OMP_WAIT_POLICY=PASSIVE "$build/tools/wiola-train/wiola-train" \
  --config "$root/jobs/configs/test-tiny.ini" --pp 4 --dp 1 --zero 0 --steps $((steps + 2)) \
  --train-data "$build/data/fortunes-train.h5" --resume "$converted" \
  >"$work/log/resharded.log" 2>&1 || fail "the resharded checkpoint does not train at PP 4 x DP 1"
grep -qE "^step +$((steps + 2))/$((steps + 2))" "$work/log/resharded.log" ||
  fail "the resharded run did not reach step $((steps + 2))"
say "ok: reshard job converted step $steps to PP 4 x DP 1; it loads and trains there"

# ---- 4. an allocation that does not fit the layout --------------------------------
bjob=$(env "${common[@]}" PP=2 DP=2 sbatch --parsable "${cpu[@]}" --ntasks=3 \
         --output="$work/out/bad-%j.out" "$root/jobs/wiola-1.5b-chinchilla.sbatch") || fail "sbatch"
wait_state "$bjob" 60 COMPLETED FAILED CANCELLED || fail "the mismatched job did not end"
[ "$(job_state "$bjob")" = FAILED ] || fail "the mismatched job ended $(job_state "$bjob")"
grep -q "the allocation has 3 tasks but PP 2 x DP 2 needs 4; refusing to start" "$work/out/bad-$bjob.out" ||
  fail "no refusal message"
say "ok: a 3-task allocation for PP 2 x DP 2 was refused"

# ---- 5. a rank killed with SIGKILL under srun -------------------------------------
srun --ntasks=4 --cpus-per-task=1 --mpi=pmix --kill-on-bad-exit=1 --chdir="$root" \
  env OMPI_MCA_rmaps_base_oversubscribe=1 WIOLA_FAULT_INJECT=sigkill,rank=1,step=20 \
  "$build/tools/wiola-train/wiola-train" --config "$root/jobs/configs/test-tiny.ini" --pp 2 --dp 2 \
  --train-data "$build/data/fortunes-train.h5" >"$work/log/killed.log" 2>&1 &&
  fail "a job with a rank killed by SIGKILL exited 0"
grep -q "task 1: Killed" "$work/log/killed.log" || fail "rank 1 was not killed: $(tail -n 5 "$work/log/killed.log")"
grep -qE "cannot complete: rank 1 \(pid [0-9]+ on this host\) has died; ending every rank" "$work/log/killed.log" ||
  fail "no survivor named the dead rank: $(grep -v '^step' "$work/log/killed.log" | tail -n 8)"
grep -qE "tasks? [0-9,-]+: Exited with exit code 72" "$work/log/killed.log" ||
  fail "the survivors did not end themselves (status 72): $(grep srun "$work/log/killed.log")"
say "ok: rank 1 killed under srun; $(grep -m1 -o 'rank [0-9] (host [^)]*): .*has died' "$work/log/killed.log")"
# ---- 6. data preparation ----------------------------------------------------------
corpus=$work/corpus
mkdir -p "$corpus"
for f in "$root"/README.md "$root"/docs/*.md; do cp "$f" "$corpus/$(basename "$f")"; done
gzip -9 "$corpus/architecture.md"   # read as a stream
data_job() {  # data_job NAME TASKS [VAR=VALUE...]: runs prepare-data.sbatch, prints the job id
  local name=$1 tasks=$2
  shift 2
  env "${common[@]}" INPUTS="$corpus/*.md $corpus/*.md.gz" DATA_OUT="$work/$name" VOCAB=300 SAMPLE_MB=1 \
    SPLIT=paragraph "$@" sbatch --parsable "${cpu[@]}" --ntasks="$tasks" --ntasks-per-node="$tasks" \
    --output="$work/out/$name-%j.out" "$root/jobs/prepare-data.sbatch"
}
d3=$(data_job data3 3) || fail "sbatch of the data job"
wait_state "$d3" 240 COMPLETED FAILED CANCELLED TIMEOUT || fail "the 3-task data job did not finish"
[ "$(job_state "$d3")" = COMPLETED ] || fail "the 3-task data job ended $(job_state "$d3"): $(tail -n 5 "$work/out/data3-$d3.out")"
d1=$(data_job data1 1) || fail "sbatch of the data job"
wait_state "$d1" 240 COMPLETED FAILED CANCELLED TIMEOUT || fail "the 1-task data job did not finish"
[ "$(job_state "$d1")" = COMPLETED ] || fail "the 1-task data job ended $(job_state "$d1")"
for t in 0 1 2; do
  grep -q "^task $t of 3: " "$work/out/data3-$d3.out" || fail "task $t of 3 did not report its share"
done
diff -r "$work/data1" "$work/data3" >/dev/null || fail "3 tasks and 1 task wrote different files: $(diff -rq "$work/data1" "$work/data3" | head -n 3)"
srun --ntasks=1 --mpi=pmix --chdir="$root" "$build/tools/wiola-train/wiola-train" \
  --config "$root/jobs/configs/test-tiny.ini" --steps 4 \
  --train-data "$work/data3/dataset.manifest" >"$work/log/data-train.log" 2>&1 ||
  fail "training on the prepared manifest failed: $(tail -n 3 "$work/log/data-train.log")"
say "ok: data job: 3 tasks and 1 task wrote the same $(ls "$work/data3" | grep -c '\.h5$') parts and manifest ($(head -n 1 "$work/data3/dataset.manifest" | cut -c 22-)); it trains"

# A bad input: its task names file and line and fails, the others finish, no
# manifest; fixed and submitted again, only that task's share is encoded.
printf 'Fine text.\n\nThen a bad byte \377 on line 3.\n' >"$corpus/zz-bad.md"
db=$(data_job data-bad 3 TOKENIZER="$work/data3/tokenizer.json") || fail "sbatch of the data job"
wait_state "$db" 240 COMPLETED FAILED CANCELLED TIMEOUT || fail "the bad-input data job did not finish"
[ "$(job_state "$db")" = FAILED ] || fail "the bad-input data job ended $(job_state "$db")"
grep -q "zz-bad.md:3: not valid UTF-8" "$work/out/data-bad-$db.out" || fail "the bad input was not named: $(grep -i error "$work/out/data-bad-$db.out" | head -n 3)"
[ ! -e "$work/data-bad/dataset.manifest" ] || fail "a manifest was written with a part missing"
printf 'Fine text.\n\nNo bad byte now.\n' >"$corpus/zz-bad.md"
db2=$(data_job data-bad 3 TOKENIZER="$work/data3/tokenizer.json") || fail "sbatch of the data job"
wait_state "$db2" 240 COMPLETED FAILED CANCELLED TIMEOUT || fail "the re-submitted data job did not finish"
[ "$(job_state "$db2")" = COMPLETED ] || fail "the re-submitted data job ended $(job_state "$db2")"
redone=$(grep -c "^encoded " "$work/out/data-bad-$db2.out")
[ "$redone" -eq 1 ] || fail "the re-submitted job encoded on $redone tasks, not only the failed one"
say "ok: a bad input failed its task naming zz-bad.md:3 and left no manifest; re-submitted, one task redid its share"
say "PASS"
