#!/usr/bin/env bash
# Runs wiola's libFuzzer targets (tests/fuzz; docs/testing.md, "Fuzzing").
#   tools/fuzz.sh [--seconds N | --runs N] [--build DIR] [--jobs N] [TARGET...]
# Builds them with clang, AddressSanitizer and UndefinedBehaviorSanitizer in
# DIR (default build-fuzz/), then runs each TARGET (default: all) for N
# seconds (default 60) or N executions, starting from its seed corpus and
# regression inputs. New inputs go to DIR/corpus/TARGET; a crash, leak,
# out-of-memory or hang is written to DIR/artifacts/TARGET/TIME/; replay it
# with DIR/tests/fuzz/wiola_fuzz_TARGET FILE, or add it to
# tests/fuzz/regressions/TARGET/ once fixed. The last line reads
#   fuzz: T targets, E executions, C crashes, H hangs
# and the exit status is non-zero when C or H is.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
seconds=60 runs="" build=$root/build-fuzz jobs=$(nproc)
targets=()
while [ $# -gt 0 ]; do
  case $1 in
    --seconds) seconds=$2; runs=""; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    --jobs) jobs=$2; shift 2 ;;
    -h|--help) sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "fuzz.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
    *) targets+=("$1"); shift ;;
  esac
done
for n in "$seconds" ${runs:+"$runs"} "$jobs"; do
  [[ $n =~ ^[1-9][0-9]*$ ]] || { echo "fuzz.sh: '$n' is not a positive whole number" >&2; exit 2; }
done
command -v clang++ >/dev/null || {
  echo "fuzz.sh: clang++ is missing (tools/install-deps.sh --fuzz installs clang and libFuzzer)" >&2; exit 2; }

cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DWIOLA_FUZZ=ON -DWIOLA_CUDA=OFF \
  -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ >/dev/null
known=$(sed -n 's/^WIOLA_FUZZ_TARGET_NAMES:INTERNAL=//p' "$build/CMakeCache.txt" | tr ';' ' ')
[ ${#targets[@]} -gt 0 ] || read -r -a targets <<< "$known"
build_targets=()
for t in "${targets[@]}"; do
  [[ " $known " == *" $t "* ]] || { echo "fuzz.sh: no fuzz target '$t' (known: $known)" >&2; exit 2; }
  build_targets+=("wiola_fuzz_$t")
done
echo "fuzz: building ${#build_targets[@]} targets with clang in $build"
cmake --build "$build" -j "$jobs" --target "${build_targets[@]}" > "$build/fuzz-build.log" 2>&1 || {
  tail -n 40 "$build/fuzz-build.log" >&2
  echo "fuzz.sh: the build failed (whole log: $build/fuzz-build.log)" >&2
  exit 1
}

# The targets write each input to a scratch file: memory, not disk, when possible.
[ -z "${TMPDIR:-}" ] && [ -d /dev/shm ] && [ -w /dev/shm ] && export TMPDIR=/dev/shm
total_exec=0 crashes=0 hangs=0
for t in "${targets[@]}"; do
  work=$build/corpus/$t art=$build/artifacts/$t/$(date +%Y%m%d-%H%M%S)
  mkdir -p "$work" "$art"
  inputs=("$work" "$root/tests/fuzz/corpus/$t")
  [ -d "$root/tests/fuzz/regressions/$t" ] && inputs+=("$root/tests/fuzz/regressions/$t")
  limit=(-max_total_time="$seconds")
  [ -n "$runs" ] && limit=(-runs="$runs")
  log=$build/fuzz-$t.log
  # -timeout: one input taking 10 s is a hang; -rss/-malloc_limit_mb: a reader
  # that allocates what a file's numbers ask, unchecked, is caught as an
  # out-of-memory; nothing is sized by the input beyond a few hundred MB.
  rc=0
  ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=0 UBSAN_OPTIONS=print_stacktrace=1 \
    "$build/tests/fuzz/wiola_fuzz_$t" "${limit[@]}" -timeout=10 -rss_limit_mb=2048 \
    -malloc_limit_mb=1024 -print_final_stats=1 -artifact_prefix="$art/" "${inputs[@]}" \
    > "$log" 2>&1 || rc=$?
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
  execs=${execs:-0}
  new_crash=$(ls "$art" | grep -c '^\(crash\|leak\|oom\)-' || true)
  new_hang=$(ls "$art" | grep -c '^timeout-' || true)
  found=$(ls "$art" | wc -l)
  if [ "$rc" -ne 0 ] && [ "$found" -eq 0 ]; then
    # libFuzzer failed without leaving an input (a crash in start-up, say).
    new_crash=$((new_crash + 1))
    echo "fuzz: $t exited $rc without an artifact; see $log" >&2
  fi
  if [ "$found" -gt 0 ] || [ "$rc" -ne 0 ]; then
    # The report itself, for a run whose build folder is not kept (CI).
    grep -v '^#\|^INFO:\|^ *NEW_FUNC' "$log" | tail -n 40 >&2
  fi
  printf 'fuzz: %-20s %12s executions  %s\n' "$t" "$execs" "$([ "$found" -gt 0 ] || [ "$rc" -ne 0 ] && echo "FOUND: see $log and $art" || echo "clean")"
  total_exec=$((total_exec + execs))
  if [ "$found" -gt 0 ] || [ "$rc" -ne 0 ]; then
    crashes=$((crashes + new_crash)) hangs=$((hangs + new_hang))
  fi
done
echo "fuzz: ${#targets[@]} targets, $total_exec executions, $crashes crashes, $hangs hangs"
[ "$crashes" -eq 0 ] && [ "$hangs" -eq 0 ]
