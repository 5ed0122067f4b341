#!/bin/sh
# cli_test.sh ok|fail REGEX COMMAND...: runs COMMAND, passes when its exit
# status is as expected (0 / non-zero) and its output matches REGEX.
want="$1"; regex="$2"; shift 2
out=$("$@" 2>&1); status=$?
printf '%s\n' "$out"
if [ "$want" = ok ] && [ "$status" -ne 0 ]; then echo "FAIL: exit status $status"; exit 1; fi
if [ "$want" = fail ] && [ "$status" -eq 0 ]; then echo "FAIL: expected a non-zero exit"; exit 1; fi
if ! printf '%s\n' "$out" | grep -Eq -- "$regex"; then echo "FAIL: output does not match: $regex"; exit 1; fi
exit 0
