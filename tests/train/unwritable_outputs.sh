#!/usr/bin/env bash
# unwritable_outputs.sh WIOLA_TRAIN MPIRUN...: every output location is
# checked before the first step. --save and --export-weights that cannot be
# written (under a regular file, in /proc, a missing folder, a folder given as
# a file name, a read-only folder, a read-only mount) are refused at once with
# the path and the reason, a non-zero exit and no training step taken, on one
# process and on two ranks.
set -u
train=$1
shift
mpirun=("$@")
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; cat "$dir/out" "$dir/err"; exit 1; }
echo "a regular file" >"$dir/file"
mkdir -p "$dir/ro"

# refused REGEX COMMAND...: exits non-zero (not by a signal), stderr matches,
# and no training step was logged.
refused() {
  local regex=$1
  shift
  "$@" >"$dir/out" 2>"$dir/err"
  local rc=$?
  [ "$rc" -ne 0 ] || fail "exited 0: $*"
  [ "$rc" -lt 128 ] || fail "killed by a signal ($rc): $*"
  grep -Eq -- "$regex" "$dir/err" || fail "stderr does not match /$regex/: $*"
  grep -q '^step ' "$dir/out" && fail "a step ran before the refusal: $*"
  echo "ok (exit $rc): $(grep -E -m1 -- "$regex" "$dir/err")"
}
one=("$train" --preset wiola-tiny --steps 3 --eval-interval 0)
two=("${mpirun[@]}" 2 "$train" --preset wiola-tiny --pp 2 --steps 3 --eval-interval 0 --comm-timeout 60)

refused "--save $dir/file/ck: cannot create the folder: Not a directory \($dir/file is a file, not a folder\)" \
  "${one[@]}" --save "$dir/file/ck"
refused "--save /proc/wiola-ck: cannot create the folder" "${one[@]}" --save /proc/wiola-ck
refused "--export-weights $dir/missing/w.h5: the folder $dir/missing does not exist" \
  "${one[@]}" --export-weights "$dir/missing/w.h5"
refused "--export-weights /proc/w.h5: cannot create files in /proc" "${one[@]}" --export-weights /proc/w.h5
refused "--export-weights $dir: is a folder, not a file name" "${one[@]}" --export-weights "$dir"
refused "--export-weights $dir/file/w.h5: $dir/file is a file, not a folder" \
  "${one[@]}" --export-weights "$dir/file/w.h5"
refused "--save $dir/file/ck: cannot create the folder" "${two[@]}" --save "$dir/file/ck"
[ "$(grep -c -- "--save $dir/file/ck" "$dir/err")" -eq 1 ] || fail "two ranks: the refusal is not printed once"
refused "--export-weights /proc/w.h5: cannot create files in /proc" "${two[@]}" --export-weights /proc/w.h5

# A read-only mount, in a private mount namespace (skipped where that is not allowed).
if unshare -rm sh -c "mount -t tmpfs -o ro tmpfs '$dir/ro'" 2>/dev/null; then
  refused "--save $dir/ro/ck: cannot create the folder: Read-only file system" \
    unshare -rm sh -c "mount -t tmpfs -o ro tmpfs '$dir/ro' && exec \"\$@\"" sh "${one[@]}" --save "$dir/ro/ck"
  refused "--export-weights $dir/ro/w.h5: cannot create files in $dir/ro: Read-only file system" \
    unshare -rm sh -c "mount -t tmpfs -o ro tmpfs '$dir/ro' && exec \"\$@\"" sh "${one[@]}" --export-weights "$dir/ro/w.h5"
else
  echo "note: no private mount namespace here (unshare -rm); the read-only mount case was not run"
fi

# A read-only folder (mode 555), as a user the permissions apply to (root
# bypasses them: the test drops to nobody when it runs as root).
mkdir -p "$dir/ro555"
chmod 755 "$dir"
chmod 555 "$dir/ro555"
as_user=()
[ "$(id -u)" -eq 0 ] && as_user=(setpriv --reuid=nobody --regid=nogroup --clear-groups)
if "${as_user[@]}" "$train" --help >/dev/null 2>&1; then
  refused "--save $dir/ro555/ck: cannot create the folder: Permission denied" \
    "${as_user[@]}" "${one[@]}" --save "$dir/ro555/ck"
  refused "--save $dir/ro555: cannot create files in it: Permission denied" \
    "${as_user[@]}" "${one[@]}" --save "$dir/ro555"
  refused "--export-weights $dir/ro555/w.h5: cannot create files in $dir/ro555: Permission denied" \
    "${as_user[@]}" "${one[@]}" --export-weights "$dir/ro555/w.h5"
else
  echo "note: cannot run as an unprivileged user here; the read-only folder case was not run"
fi
chmod 755 "$dir/ro555"

# The good case still trains, and --save creates its folder.
"${one[@]}" --save "$dir/new/ck" --export-weights "$dir/w.h5" >"$dir/out" 2>"$dir/err" || fail "a writable run failed"
[ -f "$dir/new/ck/step-00000003/manifest.txt" ] && [ -f "$dir/w.h5" ] || fail "the writable run wrote nothing"
ls -A "$dir/new/ck" | grep -q wiola-write-test && fail "a probe file was left behind"
echo PASS
