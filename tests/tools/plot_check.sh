#!/usr/bin/env bash
# tools/wiola-plot on a small metrics file: a short run writes one (with a
# resume, so the file holds a second configuration record and repeated
# steps), the script draws PNG and SVG pictures, one run and two runs.
#   plot_check.sh WIOLA_TRAIN WIOLA_PLOT WORK_DIR
set -euo pipefail
train=$1 plot=$2 work=$3
fail() { echo "FAIL: $*" >&2; exit 1; }
/usr/bin/python3 -c "import matplotlib" 2>/dev/null || {
  echo "SKIP: /usr/bin/python3 has no matplotlib (tools/install-deps.sh installs python3-matplotlib)"; exit 77; }
rm -rf "$work" && mkdir -p "$work" && cd "$work"
common=(--preset wiola-tiny --steps 8 --log-interval 1 --eval-interval 4 --eval-batches 2 --threads 1)
"$train" "${common[@]}" --save ck --save-interval 2 --exit-after-step 5 --metrics run/metrics.jsonl > a.log
"$train" "${common[@]}" --save ck --resume auto --metrics run/metrics.jsonl > b.log
"$train" "${common[@]}" --lr 1e-3 --metrics other.jsonl > c.log
"$plot" run/metrics.jsonl --out run.png
"$plot" run/metrics.jsonl other.jsonl --label "lr 3e-4" --label "lr 1e-3" --out both.svg
"$plot" run/metrics.jsonl  # default: beside the input
for f in run.png run/metrics.png; do
  [ -s "$f" ] || fail "$f is empty or missing"
  [ "$(head -c 4 "$f" | tail -c 3)" = PNG ] || fail "$f is not a PNG"
  [ "$(stat -c %s "$f")" -gt 20000 ] || fail "$f is suspiciously small"
done
grep -q "<svg" both.svg || fail "both.svg is not an SVG"
# Bad input: one clear line, a non-zero exit.
if "$plot" a.log --out x.png 2> err.txt; then fail "a log file was plotted"; fi
grep -q "a.log:1: not JSON" err.txt || { cat err.txt; fail "no clear message for a non-JSON file"; }
echo "ok: pictures written"
