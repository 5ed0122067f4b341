#!/usr/bin/env bash
# wiola-data's BPE against SentencePiece's (Debian's `sentencepiece`), side by
# side in one run on the same text, one core each: the time to train a
# tokenizer of the same vocabulary on the same sample, then encoding
# throughput (MB/s of input), peak RSS and bytes per token over the whole text.
# Figures only: nothing here passes or fails on speed (docs/performance.md,
# "Data path").
#
#   tools/bench-tokenizer.sh [--text FILE] [--mb N] [--sample-mb S] [--vocab V] [--build DIR]
#                            [--baseline DIR] [--split line|file]
#     --text FILE    UTF-8 text to encode (default: Debian's documentation under
#                    /usr/share/doc, plain and gzipped, repeated up to --mb)
#     --mb N         megabytes of it to encode (default 100)
#     --sample-mb S  the first S MB train both tokenizers (default 10)
#     --vocab V      vocabulary size of both (default 8192)
#     --build DIR    the build holding tools/wiola-data (default build-tests/)
#     --baseline DIR another build (e.g. of the commit before a change): its
#                    encode runs too, with the same tokenizer, and is compared
#     --split S      how wiola-data cuts documents (default line); `file`
#                    reads the whole text as one document
# SentencePiece reads the text one line per sentence.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
text="" mb=100 sample_mb=10 vocab=8192 build=$root/build-tests baseline="" split=line
die() { echo "bench-tokenizer: $*" >&2; exit 1; }
while [ $# -gt 0 ]; do
  case $1 in
    --text) text=${2:?--text needs a file}; shift 2 ;;
    --mb) mb=${2:?--mb needs a number}; shift 2 ;;
    --sample-mb) sample_mb=${2:?--sample-mb needs a number}; shift 2 ;;
    --vocab) vocab=${2:?--vocab needs a number}; shift 2 ;;
    --build) build=${2:?--build needs a folder}; shift 2 ;;
    --baseline) baseline=${2:?--baseline needs a folder}; shift 2 ;;
    --split) split=${2:?--split needs line or file}; shift 2 ;;
    -h|--help) sed -n '2,/^set -e/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown argument '$1' (see --help)" ;;
  esac
done
data=$build/tools/wiola-data/wiola-data
[ -x "$data" ] || die "no $data: build the project first (or pass --build)"
base_data=${baseline:+$baseline/tools/wiola-data/wiola-data}
[ -z "$base_data" ] || [ -x "$base_data" ] || die "no $base_data (--baseline)"
command -v spm_train >/dev/null && command -v spm_encode >/dev/null ||
  die "SentencePiece's spm_train/spm_encode are missing (apt-get install sentencepiece)"
[ -x /usr/bin/time ] || die "/usr/bin/time is missing (apt-get install time)"

work=$(mktemp -d /tmp/wiola-bench-tok.XXXXXX)
trap 'rm -rf "$work"' EXIT
if [ -z "$text" ]; then
  text=$work/docs.txt
  python3 - "$work/all.txt" <<'PY'
import glob, gzip, os, sys
with open(sys.argv[1], "w", encoding="utf-8") as out:
    for f in sorted(glob.glob("/usr/share/doc/**/*", recursive=True)):
        if not os.path.isfile(f) or os.path.islink(f):
            continue
        try:
            raw = gzip.open(f).read() if f.endswith(".gz") else open(f, "rb").read()
            out.write(raw.decode("utf-8") + "\n")
        except (OSError, UnicodeDecodeError, EOFError):
            pass  # binary or not UTF-8: not text for this benchmark
PY
  [ -s "$work/all.txt" ] || die "no text found under /usr/share/doc"
  while [ "$(stat -c %s "$work/all.txt")" -lt $((mb * 1024 * 1024)) ]; do
    cat "$work/all.txt" "$work/all.txt" >"$work/twice.txt" && mv "$work/twice.txt" "$work/all.txt"
  done
  # Cut at a line end so the text stays valid UTF-8.
  head -c $((mb * 1024 * 1024)) "$work/all.txt" | sed '$d' >"$text"
  rm -f "$work/all.txt"
fi
[ -s "$text" ] || die "$text is empty or missing"
head -c $((sample_mb * 1024 * 1024)) "$text" | sed '$d' >"$work/sample.txt"
bytes=$(stat -c %s "$text")

measure() {  # NAME COMMAND...: "seconds peak_kb" of the command into $work/NAME.time
  local name=$1
  shift
  /usr/bin/time -f '%e %M' -o "$work/$name.time" "$@" >"$work/$name.out" 2>"$work/$name.err" ||
    { tail -n 5 "$work/$name.err"; die "$name failed"; }
}

echo "bench-tokenizer: $(basename "$text"), $((bytes / 1024 / 1024)) MB; training on $sample_mb MB; vocab $vocab; one core each"
measure wiola-train "$data" train-tokenizer --out "$work/wiola.bpe" --vocab "$vocab" --split line \
  --threads 1 "$work/sample.txt"
measure spm-train spm_train --input="$work/sample.txt" --model_prefix="$work/spm" --vocab_size="$vocab" \
  --model_type=bpe --num_threads=1 --byte_fallback=true --character_coverage=1.0 \
  --max_sentence_length=65536 --minloglevel=2
measure wiola-encode "$data" encode --tokenizer "$work/wiola.bpe" --split "$split" --threads 1 --quiet \
  --out "$work/wiola.h5" "$text"
measure spm-encode sh -c 'spm_encode --model="$1" --output_format=id <"$2" >"$3"' _ "$work/spm.model" \
  "$text" "$work/spm.ids"

# wiola's count without its end-of-document ids (one per non-empty line).
wiola_docs=$(sed -n 's/^encoded \([0-9]*\) documents, .*/\1/p' "$work/wiola-encode.out")
wiola_tokens=$(sed -n 's/^encoded [0-9]* documents, \([0-9]*\) tokens.*/\1/p' "$work/wiola-encode.out")
wiola_tokens=$((wiola_tokens - wiola_docs))
spm_tokens=$(wc -w <"$work/spm.ids")
read -r wt_s wt_kb <"$work/wiola-train.time"
read -r st_s st_kb <"$work/spm-train.time"
read -r we_s we_kb <"$work/wiola-encode.time"
read -r se_s se_kb <"$work/spm-encode.time"
awk -v b="$bytes" -v wt="$wt_s" -v st="$st_s" -v we="$we_s" -v se="$se_s" -v wtk="$wt_kb" -v stk="$st_kb" \
    -v wek="$we_kb" -v sek="$se_kb" -v wn="$wiola_tokens" -v sn="$spm_tokens" 'BEGIN {
  mb = b / 1e6
  printf "| | wiola-data | SentencePiece (spm_*) | wiola / SentencePiece |\n|---|---|---|---|\n"
  printf "| train the tokenizer (s) | %.2f | %.2f | %.2fx the time |\n", wt, st, wt / st
  printf "| train: peak RSS (MB) | %.0f | %.0f | |\n", wtk / 1024, stk / 1024
  printf "| encode (s) | %.2f | %.2f | |\n", we, se
  printf "| encode throughput (MB/s) | %.1f | %.1f | %.1fx |\n", mb / we, mb / se, se / we
  printf "| encode: peak RSS (MB) | %.0f | %.0f | |\n", wek / 1024, sek / 1024
  printf "| tokens (without end-of-document ids) | %d | %d | |\n", wn, sn
  printf "| bytes per token | %.2f | %.2f | |\n", b / wn, b / sn
}'
if [ -n "$base_data" ]; then
  measure base-encode "$base_data" encode --tokenizer "$work/wiola.bpe" --split "$split" --threads 1 \
    --quiet --out "$work/base.h5" "$text"
  read -r be_s be_kb <"$work/base-encode.time"
  base_tokens=$(sed -n 's/^encoded [0-9]* documents, \([0-9]*\) tokens.*/\1/p' "$work/base-encode.out")
  new_tokens=$(sed -n 's/^encoded [0-9]* documents, \([0-9]*\) tokens.*/\1/p' "$work/wiola-encode.out")
  awk -v b="$bytes" -v we="$we_s" -v be="$be_s" -v wek="$we_kb" -v bek="$be_kb" -v how="$split" 'BEGIN {
    mb = b / 1e6
    printf "\nwiola-data encode --split %s, this build against --baseline, one run:\n", how
    printf "| | this build | baseline | this / baseline |\n|---|---|---|---|\n"
    printf "| encode throughput (MB/s) | %.1f | %.1f | %.2fx |\n", mb / we, mb / be, be / we
    printf "| encode: peak RSS (MB) | %.0f | %.0f | %.2fx |\n", wek / 1024, bek / 1024, wek / bek
  }'
  [ "$base_tokens" = "$new_tokens" ] && echo "same token count: $new_tokens" ||
    echo "token counts differ: $new_tokens here, $base_tokens in the baseline"
fi
