#!/usr/bin/env bash
# Rewrites the seed corpora under corpus/ from the suite's own valid files:
# the configs in jobs/configs and tests/, the wiola-data test inputs, the
# checkpoint fixture, and a wiola-tiny run of 1 step exported to Hugging Face
# form (config.json, tokenizer.json, the tokenizer file, the safetensors
# header; the safetensors file itself cut down to a few values per tensor, so
# that a seed stays small). Needs a built tree:
#   tests/fuzz/make_seeds.sh BUILD_DIR
set -euo pipefail
build=$(cd "$1" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
corpus=$here/corpus
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1

rm -rf "$corpus"
for t in safetensors_file safetensors_header hf_config bpe_model hf_tokenizer manifest \
         text_documents raw_tokens token_file train_ini wire_header; do
  mkdir -p "$corpus/$t"
done

# A checkpoint and its Hugging Face export.
(cd "$work" &&
  "$build/tools/wiola-train/wiola-train" --preset wiola-tiny --steps 1 --eval-interval 0 \
    --save ck --threads 1 > train.log &&
  "$build/tools/wiola-reshard/wiola-reshard" export-safetensors ck/step-00000001 --out hf > export.log)
cp "$work/ck/step-00000001/manifest.txt" "$corpus/manifest/tiny-run.txt"
cp "$root/tests/dist/fixtures/pre-alignment/step-00000002/manifest.txt" "$corpus/manifest/pre-alignment.txt"
cp "$work/hf/config.json" "$corpus/hf_config/wiola-tiny.json"
cp "$work/hf/tokenizer.json" "$corpus/hf_tokenizer/wiola-tiny.json"
"$build/tools/wiola-reshard/wiola-reshard" import-safetensors "$work/hf" --out "$work/back.h5" > /dev/null
cp "$work/back.bpe" "$corpus/bpe_model/wiola-tiny.bpe"
python3 - "$work/hf/model.safetensors" "$corpus" <<'PY'
import json, struct, sys
src, corpus = sys.argv[1], sys.argv[2]
blob = open(src, "rb").read()
n = struct.unpack("<Q", blob[:8])[0]
header = blob[8:8 + n]
data_size = len(blob) - 8 - n
# safetensors_header: the data size (4 bytes, little-endian), then the header.
open(f"{corpus}/safetensors_header/wiola-tiny", "wb").write(struct.pack("<I", data_size % (1 << 20)) + header)
# safetensors_file: the same names, dtypes and metadata, each tensor cut to
# at most 4 values of its data (shape [k]), offsets tiling the data again.
h = json.loads(header)
out, data, at = {"__metadata__": h.get("__metadata__", {})}, b"", 0
names = [k for k in h if k != "__metadata__"][:6]
for k in names:
    t = h[k]
    size = {"F32": 4, "F64": 8, "BF16": 2, "F16": 2}[t["dtype"]]
    b, e = t["data_offsets"]
    k_vals = min(4, (e - b) // size)
    chunk = blob[8 + n + b: 8 + n + b + k_vals * size]
    out[k] = {"dtype": t["dtype"], "shape": [k_vals], "data_offsets": [at, at + len(chunk)]}
    data += chunk
    at += len(chunk)
text = json.dumps(out, separators=(",", ":")).encode()
text += b" " * ((8 - len(text) % 8) % 8)
open(f"{corpus}/safetensors_file/wiola-tiny-cut.safetensors", "wb").write(struct.pack("<Q", len(text)) + text + data)
PY

# Configs, as wiola-train --config reads them.
for f in "$root"/jobs/configs/*.ini "$root/tests/profile/tiny.ini"; do
  cp "$f" "$corpus/train_ini/$(basename "$(dirname "$f")")-$(basename "$f")"
done

# The wiola-data inputs; text_documents' first byte picks the format and split
# (0 jsonl, 1 file, 2 line, 3 paragraph, 4 separator '%'); raw_tokens' last
# byte picks the reader (0 auto, 1 bin, 2 npy, 3 raw u16, 4 raw u32).
"$root/tests/io/make_cli_inputs.sh" "$work/cli"
for mode in 1 2 3 4; do
  { printf "\\x0$mode"; cat "$work/cli/good.txt"; } > "$corpus/text_documents/good-mode$mode.txt"
done
{ printf '\x00'; cat "$work/cli/missing-field.jsonl"; } > "$corpus/text_documents/missing-field.jsonl"
{ printf '\x00'; printf '{"text": "caf\\u00e9 \\ud83d\\ude00"}\n\n{"text": 3}\n[1]\n'; } > "$corpus/text_documents/kinds.jsonl"
{ cat "$work/cli/good.bin"; printf '\x00'; } > "$corpus/raw_tokens/good-auto.bin"
{ cat "$work/cli/good.bin"; printf '\x01'; } > "$corpus/raw_tokens/good-bin.bin"
{ cat "$work/cli/big-id.u16"; printf '\x03'; } > "$corpus/raw_tokens/ids-u16"
python3 - "$corpus/raw_tokens" <<'PY'
import struct, sys
d = sys.argv[1]
def npy(descr, values, fmt):
    head = "{'descr': '%s', 'fortran_order': False, 'shape': (%d,), }" % (descr, len(values))
    head += " " * ((64 - (10 + len(head) + 1) % 64) % 64) + "\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(head)) + head.encode() + struct.pack(fmt % len(values), *values)
open(f"{d}/u2.npy", "wb").write(npy("<u2", [1, 2, 3, 50256], "<%dH") + b"\x02")
open(f"{d}/i4-big.npy", "wb").write(npy(">i4", [7, 8, 9], ">%di") + b"\x00")
open(f"{d}/ids-u32", "wb").write(struct.pack("<3I", 1, 70000, 2) + b"\x04")
PY

# token_file's input describes a file (fuzz_token_file.cpp): zero bytes give
# a valid one; the others vary the vocabulary, lengths, types and values.
python3 - "$corpus/token_file" <<'PY'
import sys
d = sys.argv[1]
open(f"{d}/valid", "wb").write(bytes(16))
open(f"{d}/large-vocab", "wb").write(bytes([1]) + bytes(15))
open(f"{d}/ramp", "wb").write(bytes(range(256)))
PY

# Stage wire headers as check_header expects them in the target: step 3,
# micro-batch 1, B=2 T=8 d=16 fp32 with two causal summaries (X, then two
# tensors of B*T rows), as an activation and as a gradient.
python3 - "$corpus/wire_header" <<'PY'
import struct, sys
d = sys.argv[1]
for kind, name in ((0, "activation"), (1, "gradient")):
    rows = [16, 16, 16]
    head = struct.pack("<IBBHiiiiii", 0x31414C57, kind, 0, len(rows), 3, 1, 2, 8, 16, 0)
    open(f"{d}/{name}", "wb").write(head + struct.pack("<%dq" % len(rows), *rows))
PY
du -sh "$corpus"
