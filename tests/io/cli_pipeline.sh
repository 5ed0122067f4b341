#!/usr/bin/env bash
# The wiola-data tools end to end: train a tokenizer, encode text and JSON
# lines with it, import a .bin shard, inspect the results.
set -euo pipefail
tool=$1
dir=$2
cd "$dir"
"$tool" train-tokenizer good.txt --split separator --separator % --vocab 300 --min-frequency 1 \
    --out tok.bpe --quiet
grep -q '^wiola-bpe 1$' tok.bpe
"$tool" encode good.txt --split separator --separator % --tokenizer tok.bpe --out good.h5 --quiet \
    | grep -q 'encoded 3 documents'
"$tool" encode missing-field.jsonl --skip-invalid --tokenizer tok.bpe --out j.h5 --quiet \
    | grep -q 'skipped 1 documents without the field'
"$tool" inspect good.h5 | grep -q 'embedded in the file'
"$tool" inspect good.h5 | grep -q '^The first document.'
"$tool" import good.bin --vocab 50257 --eod 50256 --tokenizer-name gpt2 --out bin.h5 --quiet \
    | grep -q '2 documents, 5 tokens'
"$tool" inspect bin.h5 | grep -q 'cannot decode'
echo "wiola-data pipeline: ok"
