#!/usr/bin/env bash
# The whole test suite: installs what is missing, builds in build-tests/
# (Release, warnings as errors) and runs every test with CTest, the op, model
# and distributed tests again under OpenBLAS's Haswell and SkylakeX kernels
# (whichever the first pass did not run under), then builds
# the core, op, model and io suites (the io suite with the fuzz targets'
# replay of their corpora), the CUDA emulation's and the emulated CUDA ops'
# with AddressSanitizer + UndefinedBehaviorSanitizer in build-asan/ and runs
# them again there (the emulated kernels' device memory is host memory, so a
# kernel reading past an allocation is caught).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
jobs=$(nproc)
# Each phase's wall time, printed as it ends and again at the end (the suite
# has a time budget: README "Tests").
phases=""
phase_start=$SECONDS
phase_done() {
  local took=$((SECONDS - phase_start))
  phases+="  $1: ${took} s"$'\n'
  echo "run-all: $1 took ${took} s"
  phase_start=$SECONDS
}
"$root/tools/install-deps.sh"
phase_done "dependencies"

build=${WIOLA_TEST_BUILD_DIR:-$root/build-tests}
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DWIOLA_WERROR=ON >/dev/null
cmake --build "$build" -j "$jobs"
phase_done "build (Release, CUDA where found)"
# Skipped tests are shown loudly (a skip passes in CTest's count); with
# WIOLA_REQUIRE_ALL_TESTS=1 (CI) the tests that would skip fail instead.
log=$(mktemp)
trap 'rm -f "$log"' EXIT
rc=0
ctest --test-dir "$build" --output-on-failure -j "$jobs" | tee "$log" || rc=$?
if grep -q '\*\*\*Skipped\|Not Run' "$log"; then
  echo "======================================================================"
  echo "run-all: SKIPPED TESTS (they did not run here; see their output above):"
  grep '\*\*\*Skipped\|Not Run' "$log" | sed 's/^/  /'
  echo "======================================================================"
fi
[ "$rc" -eq 0 ] || exit "$rc"
phase_done "tests"

# The op, model and distributed tests again under other OpenBLAS kernels:
# Haswell's (AVX2; some sites force it with OPENBLAS_CORETYPE) and SkylakeX's
# (AVX-512), leaving out the one the pass above ran under. Every kernel this
# CPU can run: tools/test-blas-kernels.sh with no names.
"$root/tools/test-blas-kernels.sh" --build "$build" --skip-detected Haswell SkylakeX
phase_done "tests under the other OpenBLAS kernel"

asan=${WIOLA_ASAN_BUILD_DIR:-$root/build-asan}
cmake -S "$root" -B "$asan" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DWIOLA_SANITIZE=ON -DWIOLA_WERROR=ON >/dev/null
cmake --build "$asan" -j "$jobs" --target wiola_test_core wiola_test_ops wiola_test_model wiola_test_io \
  wiola_fuzz_replay wiola_test_cuda_emu wiola_test_cuda_emu_ops
phase_done "sanitizer build"
ctest --test-dir "$asan" --output-on-failure -j "$jobs" -R '^(core|ops|model|io|cuda_emu|cuda_emu_ops)\.'
phase_done "sanitizer tests"
printf 'run-all: passed in %d s\n%s' "$SECONDS" "$phases"
