#!/usr/bin/env bash
# Writes the small inputs the wiola-data command-line tests use into DIR.
set -euo pipefail
dir=$1
mkdir -p "$dir"
cd "$dir"
printf 'The first document.\n%%\nThe second one, with more words in it.\n%%\nA third.\n' > good.txt
printf '{"text": "hello there"}\n{"body": "no text field"}\n' > missing-field.jsonl
printf 'fine line\ncaf\xe9 in Latin-1\n' > latin1.txt
: > empty.txt
# A GPT-2-style .bin header (magic 20240520, version 1) announcing 10 tokens, holding 3.
python3 - <<'PY'
import struct
hdr = [0] * 256
hdr[0], hdr[1], hdr[2] = 20240520, 1, 10
open("truncated.bin", "wb").write(struct.pack("<256i", *hdr) + struct.pack("<3H", 1, 2, 3))
hdr[2] = 4
open("good.bin", "wb").write(struct.pack("<256i", *hdr) + struct.pack("<4H", 50256, 7, 8, 9))
open("big-id.u16", "wb").write(struct.pack("<3H", 1, 60000, 2))
PY
printf 'not an HDF5 file\n' > fake.h5
