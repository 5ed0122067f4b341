#!/usr/bin/env bash
# reshard_roundtrip.sh WIOLA_TRAIN WIOLA_RESHARD MPIRUN...: a checkpoint taken
# at pp 2 x dp 2 (ZeRO-1) converts to pp 4 x dp 1, consolidates to one file,
# exports to safetensors and imports back with every tensor identical; the
# converted checkpoints load at their layouts; bad input is refused by name and
# the input is never modified.
set -u
train=$1 reshard=$2
shift 2
mpirun=("$@")
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; [ -f "$dir/log" ] && tail -n 20 "$dir/log"; exit 1; }
tiny=(--preset wiola-tiny --log-interval 1 --eval-interval 0 --comm-timeout 30)
ck=step-00000003

"${mpirun[@]}" 4 "$train" "${tiny[@]}" --pp 2 --dp 2 --zero 1 --steps 3 --save "$dir/a" >"$dir/log" 2>&1 ||
  fail "training at pp 2 x dp 2"
before=$(cd "$dir/a" && find . -type f | sort | xargs md5sum)

"$reshard" convert "$dir/a/$ck" --out "$dir/b" --pp 4 --dp 1 --zero 0 || fail "convert"
"$reshard" compare "$dir/a/$ck" "$dir/b/$ck" || fail "pp4 x dp1 differs from the original"
"$reshard" consolidate "$dir/b/$ck" --out "$dir/c" || fail "consolidate"
[ "$(ls "$dir/c/$ck"/rank-*.h5 | wc -l)" -eq 1 ] || fail "consolidated checkpoint is not one file"
"$reshard" compare "$dir/a/$ck" "$dir/c/$ck" || fail "consolidated differs from the original"
"$reshard" export-safetensors "$dir/c/$ck" --out "$dir/hf" || fail "export"
grep -q '"model_type": "wiola"' "$dir/hf/config.json" || fail "config.json lacks model_type wiola"
"$reshard" import-safetensors "$dir/hf" --out "$dir/w.h5" || fail "import"
"$reshard" compare "$dir/a/$ck" "$dir/w.h5" || fail "safetensors round trip differs"
echo "ok: pp2xdp2 -> pp4xdp1 -> consolidated -> safetensors -> back: identical"

"${mpirun[@]}" 4 "$train" "${tiny[@]}" --pp 4 --steps 4 --resume "$dir/b" >"$dir/log" 2>&1 ||
  fail "the pp 4 checkpoint does not load at pp 4 (named by its save folder)"
grep -q "resume: $dir/b/$ck at step 3" "$dir/log" || fail "--resume SAVE_FOLDER did not take its latest step: $(grep resume: "$dir/log")"
"${mpirun[@]}" 1 "$train" "${tiny[@]}" --steps 4 --resume "$dir/c/$ck" >"$dir/log" 2>&1 ||
  fail "the consolidated checkpoint does not load on one process"
"${mpirun[@]}" 1 "$train" "${tiny[@]}" --steps 2 --init-weights "$dir/w.h5" >"$dir/log" 2>&1 ||
  fail "the imported weights do not start a run"
echo "ok: converted checkpoints load at pp 4 and on one process; imported weights start a run"

# One way to name a checkpoint: a save folder means its latest complete step,
# for every command (it was refused by export-safetensors).
"$reshard" export-safetensors "$dir/a" --out "$dir/hf-save" >/dev/null || fail "export-safetensors SAVE_FOLDER"
"$reshard" export-safetensors "$dir/a/$ck" --out "$dir/hf-step" >/dev/null || fail "export-safetensors STEP_FOLDER"
cmp -s "$dir/hf-save/model.safetensors" "$dir/hf-step/model.safetensors" ||
  fail "exporting the save folder and its step folder differ"
"$reshard" verify "$dir/b" >/dev/null || fail "verify SAVE_FOLDER"
"$reshard" compare "$dir/a" "$dir/hf" >/dev/null || fail "compare SAVE_FOLDER EXPORT"
echo "ok: a save folder names its latest step (export, verify, compare, --resume)"

expect() {  # expect REGEX COMMAND...: non-zero exit with REGEX in its output
  local re=$1
  shift
  out=$("$@" 2>&1) && fail "succeeded: $*"
  grep -Eq -- "$re" <<<"$out" || fail "expected /$re/ from $*, got: $out"
  echo "ok: refused: $(grep -Em1 -- "$re" <<<"$out")"
}
# (Not every rank writes a file: the last stage's first shard may hold only its
# copy of the tied embedding, which the first stage writes.)
files=($(cd "$dir/a/$ck" && ls rank-*.h5))
cp -r "$dir/a/$ck" "$dir/missing" && rm "$dir/missing/${files[0]}"
expect "${files[0]}: missing" "$reshard" verify "$dir/missing"
cp -r "$dir/a/$ck" "$dir/corrupt"
f="$dir/corrupt/${files[-1]}"
printf 'WIOLA-CORRUPTED!' | dd of="$f" bs=1 seek=$(($(stat -c %s "$f") / 2)) conv=notrunc status=none
expect "${files[-1]}: checksum mismatch" "$reshard" convert "$dir/corrupt" --out "$dir/x" --pp 1 --dp 1
[ -e "$dir/x/$ck" ] && fail "a corrupt input produced output"
cp -r "$dir/a/$ck" "$dir/notensor" && sed -i '/^piece layers.3.ffn.fuse.weight /d' "$dir/notensor/manifest.txt"
expect "tensor 'layers.3.ffn.fuse.weight' \(param\) is missing from the manifest" "$reshard" verify "$dir/notensor"
expect "--pp 9 is larger than the 5 layers" "$reshard" convert "$dir/a/$ck" --out "$dir/y" --pp 9 --dp 1
expect "already exists" "$reshard" convert "$dir/a/$ck" --out "$dir/b" --pp 4 --dp 1
mkdir "$dir/empty"
expect "empty: not a checkpoint, nor a save folder with a complete one: name a step folder" \
  "$reshard" verify "$dir/empty"
expect "hf: a safetensors export holds the weights only; this needs a training checkpoint" \
  "$reshard" convert "$dir/hf" --out "$dir/z" --pp 1 --dp 1

after=$(cd "$dir/a" && find . -type f | sort | xargs md5sum)
[ "$before" = "$after" ] || fail "the input checkpoint was modified"
echo "ok: the input checkpoint is unchanged"
echo PASS
