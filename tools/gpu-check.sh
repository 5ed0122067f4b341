#!/usr/bin/env bash
# The GPU check: one script, run in a single call on a machine with an NVIDIA
# GPU (about 7 minutes on one H200 with 16 cores). It
#   1. configures and builds the CUDA backend for the local GPU (build-gpu/),
#   2. runs the CUDA op tests on the device (the same tests CI runs on the
#      emulated execution model),
#   3. profiles wiola-1.5b shapes on one GPU (a few full-width layers at
#      T = 2048) and prints tokens/s, MFU against the device's dense bf16
#      peak (datasheet, named in the output), peak memory and the time per op
#      family,
#   4. trains wiola-mini for 20 steps on the GPU with 1, 2 and 4 ranks
#      (pp 2, pp 2 x dp 2 with ZeRO-1 and ZeRO-2, fp32 and bf16; on one GPU
#      the ranks share it) and compares every step's loss and gradient norm
#      with the same run on the CPU backend (tools/gpu-check-train.sh),
#   5. checks the NCCL communicator (tests/comm/nccl_check_main.cpp) under
#      mpirun: the device-buffer collectives with 2 and 4 ranks (on one GPU
#      every group must fall back to MPI with host staging and say so; with a
#      GPU per rank they run over NCCL, checked against expected values),
#      one-rank NCCL communicators on any GPU count, a rank that exits in the
#      middle of an all-reduce and an NCCL wait that stalls (every rank must
#      end within the timeout, with one line naming the call),
#   6. prints a short table of it all.
# Logs go to one folder: $OUT when set (the device tool), else gpu-check-out/.
# Usage: tools/gpu-check.sh [--layers N] [--micro-batch B] [--only-nccl]
# (--only-nccl: build the NCCL check alone and run step 5 only, ~2 minutes.)
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${OUT:-$root/gpu-check-out}
mkdir -p "$out"
layers=4
micro_batch=4
only_nccl=0
while [ $# -gt 0 ]; do
  case "$1" in
    --layers) layers=$2; shift 2 ;;
    --micro-batch) micro_batch=$2; shift 2 ;;
    --only-nccl) only_nccl=1; shift ;;
    *) echo "gpu-check: unknown argument $1"; exit 2 ;;
  esac
done
jobs=$(nproc)
build=${WIOLA_GPU_BUILD_DIR:-$root/build-gpu}
summary=$out/summary.txt
: >"$summary"
note() { echo "$*" | tee -a "$summary"; }
stamp() { date +%s; }
t_start=$(stamp)

note "== gpu-check $(date -u +%FT%TZ) on $(hostname)"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | tee -a "$summary"

# Dependencies: Debian's packages where apt can install them; otherwise the
# machine must already have them (CMake says what is missing).
if command -v apt-get >/dev/null 2>&1 && apt-get -s install cmake >/dev/null 2>&1; then
  "$root/tools/install-deps.sh" >"$out/install-deps.log" 2>&1 || note "install-deps failed (see install-deps.log)"
fi

# 1. Build for the local GPU only (fast), warnings as errors.
t0=$(stamp)
targets=(wiola_test_cuda_device_ops wiola-bench wiola-train)
[ $only_nccl -eq 1 ] && targets=(wiola_comm_nccl)
if cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DWIOLA_CUDA=ON -DWIOLA_WERROR=ON \
     -DCMAKE_CUDA_ARCHITECTURES=native >"$out/configure.log" 2>&1 &&
   cmake --build "$build" -j "$jobs" --target "${targets[@]}" \
     >"$out/build.log" 2>&1; then
  build_status="ok ($(( $(stamp) - t0 )) s)"
else
  build_status="FAILED (configure.log, build.log)"
  tail -n 30 "$out/build.log" 2>/dev/null || tail -n 30 "$out/configure.log"
  note "build: $build_status"
  exit 1
fi
note "build: $build_status"

ops_rc=0
prof_rc=0
train_rc=0
ops_line="skipped (--only-nccl) "
if [ $only_nccl -eq 0 ]; then
# 2. The op tests on the device.
t0=$(stamp)
"$build/tests/cuda/wiola_test_cuda_device_ops" >"$out/op-tests.log" 2>&1
ops_rc=$?
ops_line=$(grep -E "^\[  (PASSED|FAILED)  \]" "$out/op-tests.log" | tr '\n' ' ')
skipped=$(grep -c "^\[  SKIPPED \]" "$out/op-tests.log")
note "op tests: exit $ops_rc, $ops_line(skipped $skipped, $(( $(stamp) - t0 )) s)"
grep -E "^\[device" "$out/op-tests.log" | sort -t'(' -k2 -r | head -n 12 >"$out/op-errors-worst.txt"

# 3. wiola-1.5b shapes on one GPU.
t0=$(stamp)
"$build/tools/wiola-bench/wiola-bench" layers --preset wiola-1.5b --layers "$layers" \
  --seq-len 2048 --micro-batch "$micro_batch" --device cuda --steps 10 --warmup 3 \
  >"$out/profile-1.5b.log" 2>&1
prof_rc=$?
cat "$out/profile-1.5b.log"
note "profile: exit $prof_rc ($(( $(stamp) - t0 )) s)"

# 4. Training on the GPU against the CPU backend.
t0=$(stamp)
bash "$root/tools/gpu-check-train.sh" "$build/tools/wiola-train/wiola-train" "$out/train" \
  >"$out/train.log" 2>&1
train_rc=$?
cat "$out/train.log"
note "training vs CPU: $( [ $train_rc -eq 0 ] && echo ok || echo FAILED ), exit $train_rc ($(( $(stamp) - t0 )) s)"
fi

# 5. The NCCL communicator under mpirun.
t0=$(stamp)
gpus=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | wc -l)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
nccl_check=$build/tests/comm/wiola_nccl_check
nccl_rows=()
nccl_ok=1
if cmake --build "$build" -j "$jobs" --target wiola_nccl_check >"$out/nccl-build.log" 2>&1; then
  for np in 2 4; do
    log=$out/nccl-np$np.log
    timeout 300 mpirun --oversubscribe --bind-to none -np "$np" "$nccl_check" collectives \
      >"$log" 2>&1
    rc=$?
    choice=$(grep -m1 "^comm: device buffers" "$log")
    result=$(grep -m1 "^nccl-check:" "$log")
    # More ranks than GPUs: the world must fall back to MPI; else NCCL carries it.
    if [ "$np" -gt "$gpus" ]; then want="MPI with host staging on world"; else want="NCCL .* on world"; fi
    if [ $rc -eq 0 ] && grep -q "all passed" <<<"$result" && grep -Eq "$want" <<<"$choice"; then
      status=ok
    else
      status=FAILED
      nccl_ok=0
      tail -n 20 "$log"
    fi
    note "nccl collectives, $np ranks on $gpus GPU(s): $status, exit $rc: $result"
    note "  $choice"
    nccl_rows+=("| NCCL collectives, $np ranks on $gpus GPU(s) | $status: $result |")
  done
  # Failure scenarios: expect_abort.sh passes when the whole mpirun exits
  # non-zero within the limit with the line, and nothing carried on. mpirun
  # is told not to end the job itself when a rank exits, so the survivors'
  # watchdog must.
  host_re='\(host [^)]+\)'
  scenario() {  # name np limit regex mode
    local name=$1 np=$2 limit=$3 regex=$4 mode=$5
    OMPI_MCA_orte_abort_on_non_zero_status=0 bash "$root/tests/comm/expect_abort.sh" "$limit" \
      "$regex" --absent "all-reduce completed" \
      mpirun --oversubscribe --bind-to none -np "$np" "$nccl_check" "$mode" >"$out/nccl-$name.log" 2>&1
    local rc=$?
    local line
    line=$(grep -m1 -E "$regex" "$out/nccl-$name.log")
    [ $rc -eq 0 ] && status=ok || { status=FAILED; nccl_ok=0; tail -n 20 "$out/nccl-$name.log"; }
    note "nccl $name: $status ($(grep -m1 -- '--- exit status' "$out/nccl-$name.log")): $line"
    nccl_rows+=("| NCCL $name | $status: $line |")
  }
  scenario killed-rank 2 40 \
    "rank 0 $host_re: (ncclAllReduce|MPI_Iallreduce) of 4 fp32 \(sum\) on 'world' (timed out after 5 s|failed)" kill
  scenario stalled-wait 2 40 \
    "rank 0 $host_re: ncclAllReduce of 4 fp32 \(sum\) on 'self' timed out after 2 s" stall
else
  nccl_ok=0
  tail -n 30 "$out/nccl-build.log"
  nccl_rows+=("| NCCL communicator | build FAILED (nccl-build.log) |")
  note "nccl: build FAILED (nccl-build.log)"
fi
note "nccl: $( [ $nccl_ok -eq 1 ] && echo ok || echo FAILED ) ($(( $(stamp) - t0 )) s)"

# 6. The table.
{
  echo
  echo "| what | result |"
  echo "|------|--------|"
  echo "| GPU | $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n 1) |"
  echo "| build (CUDA backend, local arch) | $build_status |"
  echo "| CUDA op tests on the device | exit $ops_rc: $ops_line |"
  grep -E "tokens/s" "$out/profile-1.5b.log" 2>/dev/null | sed 's/^ */| wiola-1.5b x '"$layers"' layers, T 2048, B '"$micro_batch"' | /; s/$/ |/'
  grep -E "^  MFU" "$out/profile-1.5b.log" 2>/dev/null | sed 's/^  /| /; s/$/ |/'
  grep -E "peak memory" "$out/profile-1.5b.log" 2>/dev/null | sed 's/^  /| /; s/$/ |/'
  grep -E "^\| (cpu|cuda) " "$out/train.log" 2>/dev/null
  printf '%s\n' "${nccl_rows[@]}"
  echo "| total time | $(( $(stamp) - t_start )) s |"
} | tee -a "$summary"
[ $ops_rc -eq 0 ] && [ $prof_rc -eq 0 ] && [ $train_rc -eq 0 ] && [ $nccl_ok -eq 1 ]
