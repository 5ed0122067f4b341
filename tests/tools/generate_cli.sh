#!/usr/bin/env bash
# generate_cli.sh WIOLA_TRAIN WIOLA_GENERATE WIOLA_RESHARD DATA_DIR: a tiny
# model trained here; wiola-generate's greedy text is deterministic and the
# same from the checkpoint, the save folder, the exported W.h5, the safetensors
# export and with the cache off; sampling repeats with its seed; --chat; the
# sequence-summary fallback says so; a Wiola 13M model decodes with its own
# cache to the same text as recomputing; bad input is refused by name.
set -u
train=$1 gen=$2 reshard=$3 data=$4
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; [ -f "$dir/err" ] && tail -n 20 "$dir/err"; exit 1; }
tiny=(--preset wiola-tiny --log-interval 100 --eval-interval 0 --threads 1
      --train-data "$data/fortunes-train.h5" --val-data "$data/fortunes-val.h5")
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1

"$gen" --help | grep -q "^Usage: wiola-generate MODEL" || fail "--help"
"$gen" --version | grep -q "^wiola-generate: wiola " || fail "--version"
"$train" "${tiny[@]}" --steps 30 --lr 0.01 --save "$dir/run" --export-weights "$dir/w.h5" \
  >"$dir/err" 2>&1 || fail "training the tiny model"
ck="$dir/run/step-00000030"
# 40 tokens from a T = 16 model: the window moves on the way.
g() { "$gen" "$@" --prompt "You will be" --greedy --max-new-tokens 40 --ignore-eod 2>"$dir/err"; }

a=$(g "$ck") || fail "generate from the checkpoint"
[ -n "$a" ] || fail "no output"
grep -q "tokens/s (cached)" "$dir/err" || fail "no tokens/s line"
grep -q "filled up" "$dir/err" || fail "the window never moved"
[ "$(g "$ck")" == "$a" ] || fail "greedy output differs between two runs"
[ "$(g "$dir/run")" == "$a" ] || fail "the save folder gives other text than its latest checkpoint"
[ "$(g "$ck" --no-cache)" == "$a" ] || fail "--no-cache gives other text than the cache"
grep -q "tokens/s (full recompute)" "$dir/err" || fail "--no-cache does not say it recomputes"
[ "$(g "$dir/w.h5" --tokenizer "$data/fortunes.bpe")" == "$a" ] || fail "W.h5 gives other text"
"$reshard" export-safetensors "$ck" --out "$dir/hf" >/dev/null || fail "export-safetensors"
[ "$(g "$dir/hf" --tokenizer "$data/fortunes-val.h5")" == "$a" ] ||
  fail "the safetensors export gives other text"
[ "$(g "$dir/hf/model.safetensors" --tokenizer "$data/fortunes.bpe")" == "$a" ] ||
  fail "model.safetensors gives other text"
echo "ok: greedy text identical from checkpoint, save folder, --no-cache, W.h5 and safetensors"
printf '%s\n' "$a" | head -n 3

s() { "$gen" "$ck" --prompt "Q:" --max-new-tokens 30 --temperature 0.9 --top-k 50 --top-p 0.9 "$@" 2>"$dir/err"; }
[ "$(s --seed 5)" == "$(s --seed 5)" ] || fail "sampling does not repeat with its seed"
"$gen" "$ck" --prompt "Tell me a joke" --chat --max-new-tokens 8 >/dev/null 2>"$dir/err" ||
  fail "--chat with the BPE tokenizer"
echo "ok: seeded sampling repeats; --chat runs"

"$train" --preset wiola-tiny --summary sequence --steps 2 --threads 1 --eval-interval 0 \
  --train-data "$data/fortunes-train.h5" --save "$dir/seq" >"$dir/err" 2>&1 || fail "training a sequence-summary model"
b=$(g "$dir/seq") || fail "generate with sequence summaries"
grep -q "summary = sequence: .*no cache can be exact" "$dir/err" || fail "the fallback is not announced"
[ "$(g "$dir/seq" --no-cache)" == "$b" ] || fail "the fallback differs from --no-cache"
echo "ok: sequence summaries fall back to full recompute and say so"

# Wiola 13M decodes through its own cache (the running query mean): the same
# text as recomputing the window, which moves on the way (T = 16).
"$train" --arch wiola13m --preset wiola13m-tiny --steps 30 --lr 0.01 --threads 1 --eval-interval 0 \
  --log-interval 100 --train-data "$data/fortunes-train.h5" --save "$dir/w13m" >"$dir/err" 2>&1 ||
  fail "training a Wiola 13M model"
c=$(g "$dir/w13m") || fail "generate from a Wiola 13M checkpoint"
[ -n "$c" ] || fail "no Wiola 13M output"
grep -q "tokens/s (cached)" "$dir/err" || fail "Wiola 13M does not decode with its cache"
[ "$(g "$dir/w13m" --no-cache)" == "$c" ] || fail "Wiola 13M: the cache differs from --no-cache"
echo "ok: Wiola 13M generates with its cache, identical to recomputing"

# expect REGEX COMMAND...: a non-zero exit with REGEX in its stderr.
expect() { "$(dirname "$0")/../train/expect_error.sh" "$@" || fail "no clean refusal from: ${*:2}"; }
printf 'ab\xff\xfe' >"$dir/bad.txt"
expect "the prompt cannot be encoded: .*not valid UTF-8" "$gen" "$ck" --prompt-file "$dir/bad.txt"
expect "--prompt-file: cannot read|no-such-file" "$gen" "$ck" --prompt-file "$dir/no-such-file"
expect "--chat needs a tokenizer with the chat tokens" "$gen" "$ck" --prompt hi --chat --tokenizer byte
expect "does not record its tokenizer: give --tokenizer" "$gen" "$dir/w.h5" --prompt hi
mkdir -p "$dir/corrupt" && cp -r "$ck" "$dir/corrupt/" && \
  printf 'x' >>"$(ls "$dir/corrupt/step-00000030"/rank-*.h5 | head -n 1)"
expect "missing or corrupt" "$gen" "$dir/corrupt/step-00000030" --prompt hi
echo "ok: bad input refused"
