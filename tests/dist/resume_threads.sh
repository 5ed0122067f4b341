#!/usr/bin/env bash
# resume_threads.sh WIOLA_TRAIN WIOLA_RESHARD MPIRUN...: a run stopped and
# resumed on other CPUs with another thread count ends where the uninterrupted
# run ends, to the bit.
#   - the reference: PP 2, 10 steps, 3 threads per rank on the whole machine;
#   - the interrupted run: the same until step 7 with --threads 0 (OpenMP's
#     and OpenBLAS's default: one thread per CPU of the affinity mask) under
#     `taskset -c 0` (one CPU), checkpointing and stopping there, then resumed
#     with --threads 0 under `taskset -c 0,1` (two threads a rank where the
#     machine has two CPUs; under Slurm or mpirun binding, the mask a task gets
#     decides this count the same way);
#   - the log prints every 4 steps, so the restart (at step 7) falls inside
#     a log window (steps 5-8): the loss printed at step 8 is the mean over
#     steps 5-8, two of them run before the stop (the checkpoint carries
#     them). The records both runs print (steps 8 and 10: the window's mean
#     loss, the step's own loss and gradient norm, 17 digits), the printed
#     log lines' losses and the final checkpoints (`wiola-reshard compare`:
#     every parameter and optimizer state) must be identical. (The Slurm job
#     test once diverged only here: a resumed run restarted the window.)
# wiola-mini's products at micro-batch 4 (the head's 256 x 2048 x 64, the
# FFN's) are cut into BLAS calls (src/ops/gemm.cpp); a cut that followed the
# thread count would change their bits under some BLAS kernels
# (OPENBLAS_CORETYPE=Haswell on an AVX-512 CPU), which tests/run-all.sh runs
# this under.
set -u
train=$1 reshard=$2
shift 2
mpirun=("$@")
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; tail -n 20 "$dir"/*.log; exit 1; }
# The thread counts come from the command line and the CPU set alone.
unset OMP_NUM_THREADS OPENBLAS_NUM_THREADS
run() {  # run CPUS LOG ARGS...
  local cpus=$1 log=$2
  shift 2
  taskset -c "$cpus" "${mpirun[@]}" 2 "$train" --preset wiola-mini --pp 2 --micro-batch 4 \
    --global-batch 8 --steps 10 --log-interval 4 --eval-interval 0 --comm-timeout 120 "$@" \
    >"$dir/$log" 2>&1
}
last_cpu=$(($(nproc --all) - 1))
run "0-$last_cpu" ref.log --threads 3 --save "$dir/ref" --save-interval 10 \
  --metrics "$dir/ref.jsonl" || fail "the uninterrupted run"
run 0 first.log --threads 0 --save "$dir/run" --save-interval 10 --exit-after-step 6 \
  --metrics "$dir/run.jsonl" || fail "the first part"
[ -f "$dir/run/step-00000006/manifest.txt" ] || fail "no checkpoint at step 6"
run "0-$((last_cpu < 1 ? 0 : 1))" second.log --threads 0 --save "$dir/run" --save-interval 10 \
  --resume auto --metrics "$dir/run.jsonl" || fail "the resumed part"
grep -q "resume: .*step-00000006 at step 6" "$dir/second.log" || fail "the restart did not resume at step 6"

# The step records both runs print after the restart (8 and 10), reduced to
# step, window mean loss, step_loss and grad_norm.
steps_after() {
  grep '"type":"step"' "$1" |
    sed -E 's/.*"grad_norm":([^,}]*).*"loss":([^,}]*).*"step":([0-9]+),"step_loss":([^,}]*).*/\3 \2 \4 \1/' |
    awk '$1 == 8 || $1 == 10'
}
got=$(steps_after "$dir/run.jsonl")
want=$(steps_after "$dir/ref.jsonl")
[ "$(echo "$want" | wc -l)" -eq 2 ] || fail "the reference has no step records 8 and 10: $want"
[ "$got" = "$want" ] || fail "steps after the restart differ (step, window loss, step loss, grad-norm):
resumed:
$got
uninterrupted:
$want"
"$reshard" compare "$dir/run/step-00000010" "$dir/ref/step-00000010" >"$dir/compare.log" 2>&1 ||
  fail "final parameters or optimizer state differ: $(cat "$dir/compare.log")"
printed() { grep -E '^step +(8|10)/10 \|' "$1" | sed 's/ | tok\/s.*//; s/ | lr.*| loss / loss /'; }
[ "$(printed "$dir/second.log")" = "$(printed "$dir/ref.log")" ] ||
  fail "the printed losses at steps 8 and 10 differ:
resumed:
$(printed "$dir/second.log")
uninterrupted:
$(printed "$dir/ref.log")"
echo "ok: 3 threads uninterrupted = stopped at step 6 on CPU 0 (--threads 0), resumed on CPUs 0-1:"
echo "$got" | sed 's/^/  step (window loss, loss, grad-norm) /'
printed "$dir/second.log" | sed 's/^/  /'
echo "  final checkpoints identical"
