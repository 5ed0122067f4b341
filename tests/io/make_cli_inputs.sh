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
# Little-endian binary with the shell alone (no Python: nothing installs it).
u16() { local v; for v; do printf "\\x$(printf %02x $((v & 255)))\\x$(printf %02x $((v >> 8 & 255)))"; done; }
u32() { local v; for v; do u16 $((v & 65535)) $((v >> 16 & 65535)); done; }
# A GPT-2-style .bin header (256 int32: magic 20240520, version 1, token
# count, zeros) announcing 10 tokens and holding 3, then a complete one of 4.
{ u32 20240520 1 10; head -c $((253 * 4)) /dev/zero; u16 1 2 3; } > truncated.bin
{ u32 20240520 1 4; head -c $((253 * 4)) /dev/zero; u16 50256 7 8 9; } > good.bin
u16 1 60000 2 > big-id.u16
# Tokenizer files that are not: empty, and binary bytes with terminal escapes.
: > empty.bpe
printf '\x7fELF\x02\x01\x01\x00\x1b[2J\x00\x07\n' > binary.bpe
printf 'not an HDF5 file\n' > fake.h5
