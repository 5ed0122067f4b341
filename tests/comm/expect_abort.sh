#!/usr/bin/env bash
# expect_abort.sh <max seconds> <regex> [--absent <regex>] <command...>
# Runs the command (an mpirun) and passes when it exits non-zero, within
# <max seconds>, with output (stdout and stderr) matching the extended <regex>
# and, with --absent, not matching the second one.
set -u
max=$1
regex=$2
shift 2
absent=""
if [ "${1:-}" = "--absent" ]; then
  absent=$2
  shift 2
fi
out=$(mktemp)
trap 'rm -f "$out"' EXIT

start=$(date +%s%N)
timeout -k 5 $((max + 10)) "$@" >"$out" 2>&1
rc=$?
elapsed_ms=$((($(date +%s%N) - start) / 1000000))

cat "$out"
echo "--- exit status $rc after ${elapsed_ms} ms (limit ${max} s)"
status=0
if [ "$rc" -eq 0 ]; then
  echo "FAIL: the run exited 0; expected all ranks to be ended with a non-zero status"
  status=1
fi
if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
  echo "FAIL: the run hung and was killed by timeout"
  status=1
fi
if [ "$elapsed_ms" -gt $((max * 1000)) ]; then
  echo "FAIL: took ${elapsed_ms} ms, more than ${max} s"
  status=1
fi
if ! grep -Eq -- "$regex" "$out"; then
  echo "FAIL: no output line matches: $regex"
  status=1
fi
if [ -n "$absent" ] && grep -Eq -- "$absent" "$out"; then
  echo "FAIL: the output matches what must not happen: $absent"
  status=1
fi
exit $status
