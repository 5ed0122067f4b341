#!/usr/bin/env bash
# tools/test-blas-kernels.sh [--build DIR] [--skip-detected] [KERNEL...]
#
# Runs the op, model and distributed tests again under each OpenBLAS kernel
# named (OPENBLAS_CORETYPE=KERNEL), default: every x86-64 kernel of Debian's
# OpenBLAS (built for all of them). wiola promises the same results under any
# kernel: equal bits wherever the same operations run in the same order
# (any thread count, an exact resume), a derived tolerance elsewhere.
#
# A kernel this CPU cannot run (its probe, one GEMM test, dies on an illegal
# instruction) is reported and left out; so is a name OpenBLAS maps to a
# kernel already run (it prints the kernel it took with OPENBLAS_VERBOSE=2).
# With WIOLA_REQUIRE_ALL_TESTS=1 (CI) a kernel named on the command line
# that cannot run here fails instead. --skip-detected leaves out the kernel
# OpenBLAS takes without a name given here (the one it detects, or the
# environment's OPENBLAS_CORETYPE): the suite's main pass ran under it.
#
# Uses the build in DIR (default build-tests/, as tests/run-all.sh leaves
# it). The last line: "blas kernels: N passed (…), F failed (…), S cannot run
# here (…)". Exit 0 when none failed.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${WIOLA_TEST_BUILD_DIR:-$root/build-tests}
skip_detected=0
kernels=()
while [ $# -gt 0 ]; do
  case $1 in
    --build) build=$2; shift 2 ;;
    --skip-detected) skip_detected=1; shift ;;
    -h|--help) sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "test-blas-kernels: unknown option '$1' (see --help)" >&2; exit 2 ;;
    *) kernels+=("$1"); shift ;;
  esac
done
named=1
if [ ${#kernels[@]} -eq 0 ]; then
  named=0
  kernels=(Prescott Core2 Penryn Dunnington Nehalem Atom Sandybridge Haswell SkylakeX Cooperlake
           Zen Opteron Barcelona Bobcat Bulldozer Piledriver Steamroller Excavator)
fi
probe=$build/tests/ops/wiola_test_ops
[ -x "$probe" ] || {
  echo "test-blas-kernels: no test build in '$build' ($probe is missing): run tests/run-all.sh," \
       "or cmake --build it first" >&2
  exit 2
}
# The tests whose arithmetic goes through OpenBLAS: ops, models, the CUDA
# emulation's comparisons against the CPU, the distributed equivalences and
# the resumes (the failure-path tests of dist/resume are left out: no math).
include='^(ops|model|dist|cuda_emu[a-z_]*)\.|^resume\.(threads_cpuset|pp[0-9]|wiola13m)'
exclude='^dist\.(rank_|world_size)'
jobs=$(nproc)
# The kernel OpenBLAS takes under a name, from its own report; empty when the
# probe died on SIGILL (this CPU lacks the kernel's ISA). A probe that fails
# any other way is a failing test under that kernel: "FAILED".
kernel_taken() {  # kernel_taken NAME|"" LOG
  env ${1:+OPENBLAS_CORETYPE=$1} OPENBLAS_VERBOSE=2 "$probe" --gtest_filter='Linear.*' >"$2" 2>&1
  local rc=$?
  if [ "$rc" -eq 132 ]; then return 0; fi
  if [ "$rc" -ne 0 ]; then echo FAILED; return 0; fi
  sed -n 's/^Core: //p' "$2" | head -n 1
}
log=$(mktemp -d)
trap 'rm -rf "$log"' EXIT
done_cores=" "
if [ "$skip_detected" = 1 ]; then
  detected=$(kernel_taken "" "$log/detected.log")
  [ -n "$detected" ] && [ "$detected" != FAILED ] || { echo "test-blas-kernels: the probe fails without OPENBLAS_CORETYPE:"; cat "$log/detected.log"; exit 1; }
  done_cores=" $detected "
  echo "blas kernels: OpenBLAS takes $detected here by default (the main pass ran under it)"
fi
passed=() failed=() cannot=()
for k in "${kernels[@]}"; do
  core=$(kernel_taken "$k" "$log/probe-$k.log")
  if [ -z "$core" ]; then
    cannot+=("$k")
    echo "blas kernels: $k cannot run on this CPU: $(grep -m1 -iE 'illegal|signal|core dumped|error' "$log/probe-$k.log" || tail -n 1 "$log/probe-$k.log")"
    continue
  fi
  if [ "$core" = FAILED ]; then
    failed+=("$k")
    echo "blas kernels: $k: FAILED: the probe (ops Linear.*) fails:"
    tail -n 20 "$log/probe-$k.log"
    continue
  fi
  case $done_cores in
    *" $core "*) echo "blas kernels: $k runs OpenBLAS's $core kernel, already run: left out"; continue ;;
  esac
  done_cores+="$core "
  t0=$(date +%s)
  if OPENBLAS_CORETYPE=$k ctest --test-dir "$build" -j "$jobs" -R "$include" -E "$exclude" \
       --output-on-failure >"$log/ctest-$k.log" 2>&1; then
    passed+=("$k")
    echo "blas kernels: $k: $(grep -E 'tests passed' "$log/ctest-$k.log") ($(($(date +%s) - t0)) s)"
  else
    failed+=("$k")
    echo "blas kernels: $k: FAILED:"
    grep -E '\*\*\*Failed|\(Failed\)|Exception|Timeout' "$log/ctest-$k.log" | sed 's/^/  /' | head -n 40
    sed -n '/The following tests FAILED/,$p' "$log/ctest-$k.log"
  fi
done
list() { [ $# -gt 0 ] && echo " ($*)" || echo ""; }
echo "blas kernels: ${#passed[@]} passed$(list "${passed[@]}"), ${#failed[@]} failed$(list "${failed[@]}"), ${#cannot[@]} cannot run here$(list "${cannot[@]}")"
[ ${#failed[@]} -eq 0 ] || exit 1
if [ "$named" = 1 ] && [ ${#cannot[@]} -gt 0 ] && [ "${WIOLA_REQUIRE_ALL_TESTS:-0}" = 1 ]; then
  echo "test-blas-kernels: WIOLA_REQUIRE_ALL_TESTS=1 and the kernels named cannot all run here"
  exit 1
fi
exit 0
