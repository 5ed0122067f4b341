#!/usr/bin/env bash
# The GPU check: one script, run in a single call on a machine with an NVIDIA
# GPU (about 5 minutes on one H200 with 16 cores). It
#   1. configures and builds the CUDA backend for the local GPU (build-gpu/),
#   2. runs the CUDA op tests on the device (the same tests CI runs on the
#      emulated execution model),
#   3. profiles wiola-1.5b shapes on one GPU (a few full-width layers at
#      T = 2048) and prints tokens/s, MFU against the device's dense bf16
#      peak (datasheet, named in the output), peak memory and the time per op
#      family,
#   4. prints a short table of it all.
# Logs go to one folder: $OUT when set (the device tool), else gpu-check-out/.
# Usage: tools/gpu-check.sh [--layers N] [--micro-batch B]
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${OUT:-$root/gpu-check-out}
mkdir -p "$out"
layers=4
micro_batch=4
while [ $# -gt 0 ]; do
  case "$1" in
    --layers) layers=$2; shift 2 ;;
    --micro-batch) micro_batch=$2; shift 2 ;;
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
if cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DWIOLA_CUDA=ON -DWIOLA_WERROR=ON \
     -DCMAKE_CUDA_ARCHITECTURES=native >"$out/configure.log" 2>&1 &&
   cmake --build "$build" -j "$jobs" --target wiola_test_cuda_device_ops wiola-bench wiola-train \
     >"$out/build.log" 2>&1; then
  build_status="ok ($(( $(stamp) - t0 )) s)"
else
  build_status="FAILED (configure.log, build.log)"
  tail -n 30 "$out/build.log" 2>/dev/null || tail -n 30 "$out/configure.log"
  note "build: $build_status"
  exit 1
fi
note "build: $build_status"

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

# 4. The table.
{
  echo
  echo "| what | result |"
  echo "|------|--------|"
  echo "| GPU | $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n 1) |"
  echo "| build (CUDA backend, local arch) | $build_status |"
  echo "| CUDA op tests on the device | exit $ops_rc: $ops_line |"
  grep -E "tokens/s" "$out/profile-1.5b.log" | sed 's/^ */| wiola-1.5b x '"$layers"' layers, T 2048, B '"$micro_batch"' | /; s/$/ |/'
  grep -E "^  MFU" "$out/profile-1.5b.log" | sed 's/^  /| /; s/$/ |/'
  grep -E "peak memory" "$out/profile-1.5b.log" | sed 's/^  /| /; s/$/ |/'
  echo "| total time | $(( $(stamp) - t_start )) s |"
} | tee -a "$summary"
[ $ops_rc -eq 0 ] && [ $prof_rc -eq 0 ]
