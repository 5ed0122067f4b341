#!/usr/bin/env bash
# eval_cli.sh WIOLA_TRAIN WIOLA_EVAL DATA_DIR MPIRUN...: a tiny model trained
# here at pp 2 (printing --sample-every samples and the validation perplexity);
# wiola-eval gives the same numbers on 1 rank, pp 2, dp 2 and pp 2 x dp 2, and
# from the exported W.h5; text files are encoded on the fly; bad input is
# refused by name.
set -u
train=$1 eval=$2 data=$3
shift 3
mpirun=("$@")
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; [ -f "$dir/log" ] && tail -n 20 "$dir/log"; exit 1; }
val="$data/fortunes-val.h5"

"$eval" --help | grep -q "wiola-eval MODEL" || fail "--help"
"$eval" --version | grep -q "^wiola-eval: wiola " || fail "--version"
"${mpirun[@]}" 2 "$train" --preset wiola-tiny --pp 2 --steps 6 --log-interval 100 --eval-interval 3 \
  --eval-batches 2 --sample-every 3 --sample-prompt "Q: Why" --threads 1 --comm-timeout 60 \
  --train-data "$data/fortunes-train.h5" --val-data "$val" --save "$dir/run" \
  --export-weights "$dir/w.h5" >"$dir/log" 2>&1 || fail "training at pp 2"
grep -Eq "^step +6 \| validation loss [0-9.]+ \| perplexity [0-9.]+$" "$dir/log" ||
  fail "no perplexity beside the validation loss"
grep -q "^step 3 | sample: Q: Why" "$dir/log" || fail "no sample at step 3"
grep -q "^step 6 | sample: Q: Why" "$dir/log" || fail "no sample at step 6"
grep "sample:" "$dir/log"

ev() {  # ev NP ARGS...: the result line of wiola-eval on NP ranks
  local np=$1
  shift
  "${mpirun[@]}" "$np" "$eval" "$dir/run" --data "$val" --max-windows 37 --threads 1 \
    --comm-timeout 60 "$@" >"$dir/log" 2>&1 || fail "wiola-eval on $np rank(s) $*"
  tail -n 1 "$dir/log"
}
one=$(ev 1)
grep -Eq "^loss [0-9.]+ nats/token \| perplexity [0-9.]+ \| bits/byte [0-9.]+ \([0-9,]+ bytes\) \| 592 tokens$" \
  <<<"$one" || fail "unexpected result line: $one"
echo "1 rank:      $one"
for layout in "2 --pp 2" "2 --dp 2" "4 --pp 2 --dp 2" "3 --pp 3 --stage-layers 1,3,1"; do
  got=$(ev $layout)
  [ "$got" == "$one" ] || fail "np $layout gives '$got', one rank '$one'"
  echo "np $layout: identical"
done
w=$("${mpirun[@]}" 1 "$eval" "$dir/w.h5" --data "$val" --max-windows 37 --threads 1 2>&1 | tail -n 1)
[ "$w" == "$one" ] || fail "W.h5 gives '$w'"
echo "W.h5: identical"

printf 'The quick brown fox jumps over the lazy dog. %.0s' $(seq 1 40) >"$dir/a.txt"
"${mpirun[@]}" 1 "$eval" "$dir/run" --text "$dir/a.txt" --threads 1 >"$dir/log" 2>&1 || fail "--text"
grep -Eq "^loss .* bits/byte [0-9.]+ \(" "$dir/log" || fail "--text gives no bits per byte"
tail -n 1 "$dir/log"

# expect REGEX COMMAND...: a non-zero exit with REGEX in its stderr.
expect() { "$(dirname "$0")/../train/expect_error.sh" "$@" || fail "no clean refusal from: ${*:2}"; }
printf 'x' >"$dir/short.txt"
expect "fewer than one window" "$eval" "$dir/run" --text "$dir/short.txt"
expect "--micro-batch must be positive" "$eval" "$dir/run" --data "$val" --micro-batch 0
expect "does not record its tokenizer" "$eval" "$dir/w.h5" --text "$dir/a.txt"
expect "--pp 8 is larger than the 5 layers|larger than the" "${mpirun[@]}" 8 "$eval" "$dir/run" --data "$val" --pp 8
