#!/usr/bin/env bash
# expect_error.sh REGEX COMMAND...: passes when COMMAND exits non-zero (but was
# not killed by a signal), its stderr matches REGEX and holds no raw control
# bytes (file contents quoted in a message must be escaped).
regex=$1
shift
err=$("$@" 2>&1 >/dev/null)
rc=$?
if [ $rc -eq 0 ]; then
  echo "expected a non-zero exit, got 0; stderr:"; echo "$err"; exit 1
fi
if [ $rc -ge 128 ]; then
  echo "killed by signal $((rc - 128)); stderr:"; echo "$err"; exit 1
fi
if ! grep -Eq -- "$regex" <<<"$err"; then
  echo "stderr does not match /$regex/:"; echo "$err"; exit 1
fi
if tr -d '\n\t' <<<"$err" | LC_ALL=C grep -q '[[:cntrl:]]'; then
  echo "stderr holds raw control bytes:"; LC_ALL=C od -c <<<"$err" | head -n 20; exit 1
fi
echo "exit $rc: $(head -n 1 <<<"$err")"
