#!/usr/bin/env bash
# The CUDA backend as a plugin (src/backend/select/cuda_plugin.hpp), checked
# on a machine with the CUDA libraries but no GPU:
#  - no program links a CUDA library (ldd names none of cudart, cuBLAS, NCCL);
#  - the plugin loads in every program that may load it (every reference it
#    has to wiola_core and wiola_comm binds to the program: a missing one
#    would fail dlopen with "undefined symbol"), and --device cuda then stops
#    at the missing device, naming it;
#  - a plugin that is not there, or not a plugin, is refused by name;
#  - --device auto falls back to the CPU and trains.
#   cuda_plugin_check.sh DATA_DIR PLUGIN PROGRAM...
set -uo pipefail
data=$1 plugin=$2
shift 2
fail() { echo "FAIL: $*" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

[ -f "$plugin" ] || fail "no plugin at $plugin"
for program in "$@"; do
  if ldd "$program" | grep -E 'lib(cudart|cublas|cublasLt|nccl)\.so'; then
    fail "$(basename "$program") links a CUDA library"
  fi
done
# Read whole first: with pipefail, grep -q leaving early can fail ldd (SIGPIPE).
plugin_libs=$(ldd "$plugin") || fail "ldd $plugin"
grep -q 'libcublasLt\.so' <<<"$plugin_libs" || fail "the plugin does not link cuBLASLt: is it the CUDA backend?"
echo "ok: no program links a CUDA library; the plugin does"

train=$1
run() { "$train" --preset wiola-tiny --steps 2 --eval-interval 0 --threads 1 \
          --train-data "$data/fortunes-train.h5" --val-data "$data/fortunes-val.h5" "$@"; }

# The plugin loads (every symbol found) and reports the missing device.
run --device cuda >"$work/cuda.log" 2>&1 && fail "--device cuda trained on a machine without a GPU"
cat "$work/cuda.log"
grep -q 'undefined symbol' "$work/cuda.log" && fail "the plugin does not load: a symbol is missing"
grep -q -- '--device cuda: no CUDA device is usable on ' "$work/cuda.log" ||
  fail "--device cuda does not name the missing device"
grep -q 'cannot load\|was not found' "$work/cuda.log" && fail "the plugin was not loaded"

# Every program that may load it exports every wiola symbol the plugin needs.
nm -D --undefined-only "$plugin" | awk '{print $NF}' | grep '5wiola' | sort -u >"$work/needs"
[ -s "$work/needs" ] || fail "the plugin needs no wiola symbol: does it hold its own copy of wiola_core?"
for program in "$@"; do
  nm -D --defined-only "$program" | awk '{print $NF}' | sort -u >"$work/has"
  missing=$(comm -23 "$work/needs" "$work/has")
  [ -z "$missing" ] || fail "$(basename "$program") does not export what the plugin needs: $(echo "$missing" | head -n 3 | c++filt | tr '\n' ' ')"
done
echo "ok: each of $# programs exports the $(wc -l <"$work/needs") wiola symbols the plugin needs"

# No plugin where WIOLA_CUDA_PLUGIN says: the file is named.
WIOLA_CUDA_PLUGIN=$work/none.so run --device cuda >"$work/none.log" 2>&1 && fail "trained without a plugin"
grep -q "libwiola_cuda.so was not found (looked at $work/none.so" "$work/none.log" ||
  { cat "$work/none.log"; fail "a missing plugin is not named"; }
# Not a shared library: dlopen's reason is passed on with the file's name.
echo "not a library" >"$work/bad.so"
WIOLA_CUDA_PLUGIN=$work/bad.so run --device cuda >"$work/bad.log" 2>&1 && fail "trained with a broken plugin"
grep -q "cannot load the CUDA backend $work/bad.so: " "$work/bad.log" ||
  { cat "$work/bad.log"; fail "a broken plugin is not named with dlopen's reason"; }
echo "ok: a missing or broken plugin is refused by name"

# --device auto without a usable plugin: the CPU, saying why.
WIOLA_CUDA_PLUGIN=$work/none.so run --device auto >"$work/auto.log" 2>&1 ||
  { cat "$work/auto.log"; fail "--device auto did not fall back to the CPU"; }
grep -q "cpu (no CUDA device: the CUDA backend libwiola_cuda.so was not found" "$work/auto.log" ||
  { grep -i cpu "$work/auto.log"; fail "--device auto does not say why it chose the CPU"; }
echo "ok: the CUDA plugin"
