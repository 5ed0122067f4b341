#!/usr/bin/env bash
# The dry run of tools/gpu-check.sh (both calls, WIOLA_CHECK_DEVICE=cpu), from
# the GPU bundle itself: the archive of tools/gpu-bundle.sh unpacked here, its
# own copy of the check run, as a GPU session runs it (docs/performance.md).
# Passes when each call exits 0 within its budget, prints its table last,
# says "dry run", has the rows each call must have, and leaves at most 8
# files, no deeper than 2 folders, under its $OUT.
#   gpu_check_dry_run.sh ARCHIVE_DIR WORK_DIR
set -uo pipefail
bundles=$1 work=$2
fail() { echo "FAIL: $*" >&2; exit 1; }
/usr/bin/python3 -c 'import torch' 2>/dev/null || {
  echo "SKIP: /usr/bin/python3 has no torch (tools/install-deps.sh installs python3-torch)"; exit 77; }

rm -rf "$work"
mkdir -p "$work"
archive=$(find "$bundles" -maxdepth 1 -name 'wiola-gpu-*.tar.xz' | head -n 1)
[ -f "$archive" ] || fail "no wiola-gpu-*.tar.xz in $bundles (tools.gpu_bundle_archive makes it)"
tar -C "$work" -xJf "$archive" || fail "unpacking $archive failed"
bundle=$work/wiola-gpu

for call in 1 2; do
  out=$work/out$call
  start=$(date +%s)
  OUT=$out WIOLA_CHECK_DEVICE=cpu "$bundle/gpu-check.sh" --call $call >"$work/call$call.log" 2>&1
  rc=$?
  seconds=$(($(date +%s) - start))
  cat "$work/call$call.log"
  echo "--- call $call: exit $rc after $seconds s"
  [ $rc -eq 0 ] || fail "call $call exited $rc"
  [ $seconds -le 360 ] || fail "call $call took $seconds s, over the 360 s a call may take"
  tail -n 1 "$work/call$call.log" | grep -q '^| total time | .*dry run' ||
    fail "call $call: the table is not the last thing printed, or it does not say dry run"
  grep -q '^DRY RUN on the CPU' "$work/call$call.log" || fail "call $call does not say it is a dry run"
  files=$(find "$out" -type f | wc -l)
  if [ "$files" -lt 2 ] || [ "$files" -gt 8 ]; then fail "call $call left $files files under \$OUT (2 to 8 allowed)"; fi
  [ -z "$(find "$out" -mindepth 3 -type f)" ] || fail "call $call left files more than 2 folders down"
  tar -tzf "$out/logs-call$call.tar.gz" >"$work/call$call.list" || fail "call $call: a broken log archive"
  grep -q "logs-call$call/summary-call$call.txt" "$work/call$call.list" ||
    fail "call $call: the log archive lacks the table"
  if grep -q '| FAILED' "$work/call$call.log"; then fail "call $call: a row FAILED"; fi
done

# The rows each call must have, passing.
need() {  # CALL REGEX
  grep -Eq "$2" "$work/call$1.log" || fail "call $1 has no row matching: $2"
}
need 1 '^\| GPU \| none: dry run'
need 1 '^\| bundle .* \| ok: wiola-train'
need 1 "^\| CUDA op tests on the device .* \| ok: [0-9]+ ran, 0 passed, [0-9]+ skipped"
need 1 '^\| ceiling: bf16 matrix product.* \| [0-9.e-]+ TFLOP/s'
need 1 '^\| wiola: wiola-mini cut to 3 layers.* \| ok: [0-9.]+ ms, [0-9.]+ tokens/s'
need 1 '^\| wiola MFU \| [0-9.]+% of the measured .*; [0-9.]+% of 989'
need 1 '^\| wiola time per op family .* \| [a-z].* [0-9.]+ \([0-9.]+%\); .*outside the ops'
need 1 '^\| PyTorch eager: .* \| ok: step [0-9.]+ ms, .* wiola / PyTorch step time [0-9.]+'
need 1 '^\| PyTorch compile: '
# Every layout in fp32 (the CPU has no bf16: that row says it did not run).
for layout in '1 ranks' '1 ranks .*--cuda-graphs off' '2 ranks \(--pp 2 --dp 1\)' '4 ranks \(--zero 1\)' '4 ranks \(--zero 2\)' \
              '2 ranks .*--schedule interleaved' '4 ranks \(--zero 2 --schedule zb-h2\)'; do
  need 2 "^\| training: cpu fp32, $layout.* \| ok: 12 steps, loss 7\.[0-9]+ -> [0-9.]+, max"
done
need 2 '^\| training: cpu bf16, every layout .* \| not run: the CPU computes in fp32'
need 2 '^\| HF export: .* \| ok: modeling_wiola.load .* relative difference [0-9.e+-]+ \(tolerance 1e-04\)'
need 2 '^\| NCCL communicator .*needs a GPU.* \| starts under the bundle'"'"'s mpirun and stops'
echo "ok: both calls of the dry run"
