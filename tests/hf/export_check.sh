#!/usr/bin/env bash
# A Hugging Face export loaded by Python: train a few steps of a small model,
# export the checkpoint (fp32 and bf16), load it with Debian's python3-torch
# through the export's own modeling_wiola.py and compare the logits with
# wiola-dump's on the same tokens (fp32: <= 1e-4 relative). Then import the
# export back and check the weights and the tokenizer came back unchanged.
#   export_check.sh WIOLA_TRAIN WIOLA_RESHARD WIOLA_DUMP WORK_DIR [wiola-train options...]
set -euo pipefail
train=$1 reshard=$2 dump=$3 work=$4
shift 4
here=$(cd "$(dirname "$0")" && pwd)
fail() { echo "FAIL: $*" >&2; exit 1; }
/usr/bin/python3 -c "import torch" 2>/dev/null || {
  echo "SKIP: /usr/bin/python3 has no torch (tools/install-deps.sh installs python3-torch)"; exit 77; }
command -v h5import >/dev/null && command -v h5dump >/dev/null || {
  echo "SKIP: h5import/h5dump missing (hdf5-tools)"; exit 77; }

rm -rf "$work" && mkdir -p "$work" && cd "$work"
"$train" --preset wiola-tiny --steps 3 --eval-interval 0 --lr 3e-2 --save ck \
  --export-weights w.h5 --threads 1 "$@" > train.log
T=$(sed -n 's/.* T=\([0-9]*\) .*/\1/p' train.log | head -n 1)
V=$(sed -n 's/.* V=\([0-9]*\) .*/\1/p' train.log | head -n 1)
B=3
"$reshard" export-safetensors ck/step-00000003 --out hf > export.log
"$reshard" export-safetensors ck/step-00000003 --out hf-bf16 --dtype bf16 >> export.log
for f in model.safetensors config.json modeling_wiola.py tokenizer.json tokenizer_config.json; do
  [ -s "hf/$f" ] || fail "the export lacks $f"
done

# B rows of T+1 token ids, spread over the vocabulary, as wiola-dump's input.
/usr/bin/python3 - "$B" "$T" "$V" > tokens.txt <<'PY'
import sys
B, T, V = map(int, sys.argv[1:])
for b in range(B):
    print(" ".join(str((7919 * (b * (T + 1) + t) + 13 * b + 1) % V) for t in range(T + 1)))
PY
cat > tokens.cfg <<CFG
PATH tokens
INPUT-CLASS TEXTIN
RANK 2
DIMENSION-SIZES $B $((T + 1))
OUTPUT-CLASS IN
OUTPUT-SIZE 32
OUTPUT-ARCHITECTURE NATIVE
OUTPUT-BYTE-ORDER LE
CFG
h5import tokens.txt -c tokens.cfg -o tokens.h5
"$dump" --weights w.h5 --tokens tokens.h5 --out dump.h5 > dump.log
h5dump -d /logits -b LE -o logits.bin dump.h5 > /dev/null
# The same model named as a save folder and as the export: the same bytes.
"$dump" --model ck --tokens tokens.h5 --out dump-ck.h5 > /dev/null
"$dump" --model hf --tokens tokens.h5 --out dump-hf.h5 > /dev/null
cmp -s dump.h5 dump-ck.h5 || fail "wiola-dump of the save folder differs from the weights file's"
cmp -s dump.h5 dump-hf.h5 || fail "wiola-dump of the safetensors export differs from the weights file's"

/usr/bin/python3 "$here/../../tools/hf/check_export.py" hf tokens.txt logits.bin "$B" "$T" --label fp32
# bf16 weights: rounding of every weight to 8 bits of mantissa, so only close.
/usr/bin/python3 "$here/../../tools/hf/check_export.py" hf-bf16 tokens.txt logits.bin "$B" "$T" --label bf16 --tolerance 0.05

# Back to wiola: the same weights, the same tokenizer.
"$reshard" import-safetensors hf --out back.h5 > import.log
"$reshard" compare w.h5 back.h5 || fail "import-safetensors changed the weights"
[ -s back.bpe ] || fail "import-safetensors wrote no tokenizer"
grep -q "^hash " back.bpe || fail "back.bpe is not a tokenizer file"
echo "ok: export, Python logits and import agree"
