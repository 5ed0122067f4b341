#!/usr/bin/env bash
# expect_failure.sh SECONDS REGEX COMMAND...: passes when COMMAND exits
# non-zero within SECONDS and its output matches REGEX (a job that hangs or
# succeeds fails the test).
limit=$1 regex=$2
shift 2
start=$(date +%s)
out=$(timeout --kill-after=5 "$limit" "$@" 2>&1)
rc=$?
took=$(( $(date +%s) - start ))
echo "$out" | tail -n 20
# 124/137 are timeout's, or (137) mpirun reporting a rank killed by SIGKILL:
# the elapsed time tells them apart.
if { [ $rc -eq 124 ] || [ $rc -eq 137 ]; } && [ "$took" -ge "$limit" ]; then
  echo "FAIL: still running after ${limit}s"; exit 1
fi
if [ $rc -eq 0 ]; then echo "FAIL: exited 0"; exit 1; fi
if ! grep -Eq -- "$regex" <<<"$out"; then echo "FAIL: output does not match /$regex/"; exit 1; fi
echo "PASS: exit status $rc after ${took}s"
