#!/usr/bin/env bash
# The GPU check: two calls of at most 6 minutes each on a machine with an
# NVIDIA GPU, run from the GPU bundle (tools/gpu-bundle.sh: a folder
# wiola-gpu/ with bin/, lib/, env.sh, data/, configs/), which needs nothing
# that machine lacks (no MPI, HDF5, Boost, OpenBLAS or GoogleTest there).
#
#   tools/gpu-check.sh --call 1|2 [--bundle DIR] [--layers N] [--micro-batch B]
#
# DIR: an unpacked wiola-gpu/ (default: this script's own folder when the
# script is the bundle's copy, else wiola-gpu/ at the top of the source tree).
# Every step runs under its own timeout inside the call's budget (360 s;
# WIOLA_CHECK_BUDGET), so a call always ends in time and prints its table
# last. Logs go to a scratch folder and are packed into at most 8 files under
# $OUT (the device tool's folder; gpu-check-out/ when unset): the table
# (summary-callN.txt), every log (logs-callN.tar.gz) and a few key logs.
#
# Call 1 (speed and kernels on the device):
#   gpu           nvidia-smi: the GPU, driver, memory and clocks as found;
#   bundle        the bundle's programs start here (env.sh, wiola-train --version);
#   op tests      wiola_test_cuda_device_ops: every CUDA op against the CPU
#                 backend on the device, random data, the real layouts' offsets;
#   ceilings      PyTorch's bf16 torch.matmul of 8192^3 on random data, a
#                 device copy, causal attention (its fused kernel, forward +
#                 backward) and tiny kernels replayed in a CUDA graph: the
#                 rates MFU and bandwidth are stated against (measured here,
#                 not wiola's: labelled as PyTorch's), and the --project-set
#                 line that prices counted work at them (docs/profiling.md);
#   wiola layers  wiola-bench layers: wiola-1.5b cut to N full-width layers
#                 (default 4) at T = 2048, micro-batch B (default 4), a whole
#                 training step (embedding, layers, head, loss, AdamW) in
#                 bf16: step time, tokens/s, MFU against the measured rate and
#                 the datasheet, peak memory, the time per op family, and
#                 the device counters of a step beside its time;
#   torch layers  the same model and shapes in PyTorch on the same GPU in the
#                 same call (tools/bench/torch_wiola.py, bf16 autocast,
#                 F.scaled_dot_product_attention), eager and torch.compile:
#                 wiola's step time over PyTorch's.
# Call 2 (training and the communicator):
#   training      the main job's model on the GPU against the CPU's losses at
#                 1, 2 and 4 ranks, the interleaved and zero-bubble schedules,
#                 fp32 and bf16 (tools/gpu-check-train.sh);
#   hf export     a checkpoint trained on the device, exported with
#                 wiola-reshard export-safetensors, loaded with transformers'
#                 AutoModelForCausalLM (trust_remote_code) on the device: its
#                 logits against wiola-dump's (tools/hf/check_export.py);
#   nccl          wiola_nccl_check under the bundle's mpirun: the device-buffer
#                 collectives with 2 and 4 ranks, a killed rank and a stalled
#                 NCCL wait (every rank ends within the limit, one line).
#
# When the bundle's programs do not start, call 1 still runs nvidia-smi and the
# PyTorch steps, and compiles the CUDA backend's kernels with the machine's
# nvcc for its GPU from the source tree the call carried (a compile check:
# nothing else of wiola builds there); every step that needs the bundle says
# "not run" and why.
#
# Dry run: WIOLA_CHECK_DEVICE=cpu runs both calls with --device cpu, tiny
# shapes, PyTorch on the CPU and no nvidia-smi, so that the script itself is
# tested without a GPU (ctest tools.gpu_check_dry_run). Exit status: 0 when
# every step that ran passed, 1 otherwise, 2 for bad arguments.
set -uo pipefail

usage() { sed -n '7s/^#  */usage: /p' "$0"; }
die() { echo "gpu-check: $*" >&2; exit 2; }

call="" bundle="" layers=4 micro_batch=4
while [ $# -gt 0 ]; do
  case $1 in
    --call) call=${2:-}; shift 2 || die "--call needs 1 or 2" ;;
    --bundle) bundle=${2:-}; shift 2 || die "--bundle needs a folder" ;;
    --layers) layers=${2:-}; shift 2 || die "--layers needs a number" ;;
    --micro-batch) micro_batch=${2:-}; shift 2 || die "--micro-batch needs a number" ;;
    -h|--help) usage; exit 0 ;;
    *) usage >&2; die "unknown argument '$1'" ;;
  esac
done
[[ $call == 1 || $call == 2 ]] || { usage >&2; die "--call must be 1 or 2, got '${call}'"; }
[[ $layers =~ ^[1-9][0-9]*$ ]] || die "--layers must be a positive number, got '$layers'"
[[ $micro_batch =~ ^[1-9][0-9]*$ ]] || die "--micro-batch must be a positive number, got '$micro_batch'"

here=$(cd "$(dirname "$0")" && pwd)
root=""  # the source tree, when this script is in one
[ -f "$here/../src/backend/cuda/cuda_backend.hpp" ] && root=$(cd "$here/.." && pwd)
if [ -z "$bundle" ]; then
  if [ -d "$here/bin" ]; then bundle=$here; else bundle=${root:-$here}/wiola-gpu; fi
fi
bundle=$(cd "$bundle" 2>/dev/null && pwd || echo "$bundle")

device=${WIOLA_CHECK_DEVICE:-cuda}
[[ $device == cuda || $device == cpu ]] || die "WIOLA_CHECK_DEVICE must be cuda or cpu, got '$device'"
dry=0
[ "$device" = cpu ] && dry=1
budget=${WIOLA_CHECK_BUDGET:-360}
[[ $budget =~ ^[0-9]+$ ]] || die "WIOLA_CHECK_BUDGET must be seconds, got '$budget'"
out=${OUT:-$PWD/gpu-check-out}
mkdir -p "$out" || die "cannot create the output folder $out"
work=$(mktemp -d "${TMPDIR:-/tmp}/gpu-check.XXXXXX") || die "cannot create a scratch folder"
logs=$work/logs-call$call
mkdir -p "$logs"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

# ---------------------------------------------------------------------------
# The table, the time budget and the steps' plumbing.

t_start=$(date +%s)
rows=()
failed=0
row() { rows+=("| $1 | $2 |"); }
bad() { row "$1" "FAILED: $2"; failed=1; }
dry_note() { [ $dry -eq 1 ] && echo " (dry run: $1)"; }
is_number() { [[ ${1:-} =~ ^[0-9]+(\.[0-9]+)?(e[-+]?[0-9]+)?$ ]]; }

# Seconds a step may run now: its own limit, cut to what the call has left
# (20 s are kept for packing and the table); 0 when nothing is left.
limit() {
  local left=$((t_start + budget - 20 - $(date +%s)))
  [ "$left" -gt "$1" ] && left=$1
  [ "$left" -lt 5 ] && left=0
  echo "$left"
}

# run_step LIMIT LOG COMMAND...: the command under its timeout, output to LOG.
# Status 124: timed out; 125: not started, the call's time is spent.
run_step() {
  local seconds log=$2
  seconds=$(limit "$1")
  shift 2
  if [ "$seconds" -eq 0 ]; then
    echo "not run: the call's $budget s are spent" >"$log"
    return 125
  fi
  echo "+ $* (limit ${seconds} s)" >"$log"
  timeout --kill-after=5 "$seconds" "$@" >>"$log" 2>&1
}

# Why a step's command failed, in a few words: its status and its last line.
why() {  # STATUS LOG
  case $1 in
    124|137) echo "timed out (limit in $(basename "$2"))" ;;
    125) echo "not run: the call's $budget s are spent" ;;
    *) echo "exit $1: $(grep -v '^+ ' "$2" | grep . | tail -n 1 | cut -c1-160)" ;;
  esac
}

# A helper file: the bundle's top-level copy, else the source tree's.
helper() {  # NAME PATH-IN-SOURCE-TREE
  if [ -f "$bundle/$1" ]; then echo "$bundle/$1"
  elif [ -f "$here/$1" ]; then echo "$here/$1"
  elif [ -n "$root" ] && [ -f "$root/$2" ]; then echo "$root/$2"
  else echo ""; fi
}

# The Python that has PyTorch: WIOLA_PYTHON, python3, then Debian's.
python=""
find_python() {
  local candidate
  for candidate in ${WIOLA_PYTHON:-} python3 /usr/bin/python3; do
    if "$candidate" -c 'import torch' >/dev/null 2>&1; then python=$candidate; return; fi
  done
}

# The model shapes of the layer benchmark, as wiola-bench and torch_wiola.py
# options (src/core/model_config.cpp; ATM causal, in layers [L/3, 2L/3)).
threads=$(nproc)
if [ $dry -eq 0 ]; then
  preset=wiola-1.5b seq_len=2048 bench_steps=10 bench_warmup=3
  torch_shape=(--d 2048 --heads 16 --kv-heads 8 --dsff-a 2048 --dsff-b 8192 --vocab 32000)
else  # tiny: wiola-mini, 3 layers (one with ATM), T = 64
  preset=wiola-mini seq_len=64 bench_steps=2 bench_warmup=1 layers=3 micro_batch=2
  threads=1  # OpenMP threads spin against each other on a shared CI machine
  torch_shape=(--d 64 --heads 4 --kv-heads 2 --dsff-a 64 --dsff-b 256 --vocab 257)
fi
torch_shape+=(--layers "$layers" --seq-len "$seq_len" --micro-batch "$micro_batch" --atm causal)

# ---------------------------------------------------------------------------
# The steps. Each adds its rows to the table.

gpu_count=0
step_gpu() {
  local log=$logs/nvidia-smi.log
  if [ $dry -eq 1 ]; then
    row "GPU" "none: dry run on the CPU ($(nproc) cores), no nvidia-smi; every step runs with --device cpu and tiny shapes"
    return 0
  fi
  if ! command -v nvidia-smi >/dev/null; then
    bad "GPU" "no nvidia-smi on PATH: no NVIDIA driver here (WIOLA_CHECK_DEVICE=cpu is the dry run)"
    return 1
  fi
  run_step 30 "$log" nvidia-smi || { bad "GPU" "nvidia-smi does not answer: $(why $? "$log")"; return 1; }
  run_step 20 "$logs/gpu.csv" nvidia-smi \
    --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm --format=csv,noheader
  gpu_count=$(grep -vc '^+ ' "$logs/gpu.csv")
  if [ "$gpu_count" -eq 0 ]; then
    bad "GPU" "nvidia-smi lists no GPU"
    return 1
  fi
  row "GPU" "$gpu_count x $(grep -v '^+ ' "$logs/gpu.csv" | head -n 1) (name, driver, memory, SM clock now, max)"
}

# The bundle's programs start: env.sh sourced in a subshell first (an env.sh
# that exits must not end this script), its environment taken over, then
# wiola-train --version.
bundle_ok=0
step_bundle() {
  local log=$logs/bundle.log
  if [ ! -x "$bundle/bin/wiola-train" ]; then
    bad "bundle $bundle" "no bin/wiola-train there (unpack the archive of tools/gpu-bundle.sh, or pass --bundle)"
    return
  fi
  local env_note="no env.sh: bin/ put first on PATH"
  if [ -f "$bundle/env.sh" ]; then
    local vars
    # shellcheck source=/dev/null
    if vars=$( (set +u; . "$bundle/env.sh" >"$logs/env.log" 2>&1 && env -0) | base64 -w0); then
      while IFS= read -r -d '' kv; do
        # shellcheck disable=SC2163  # kv is NAME=VALUE
        case ${kv%%=*} in _|SHLVL|PWD|OLDPWD) ;; *) [[ ${kv%%=*} =~ ^[A-Za-z_][A-Za-z0-9_]*$ ]] && export "$kv" ;; esac
      done < <(base64 -d <<<"$vars")
      env_note="env.sh: $(sed -n 's/^env\.sh: //p' "$logs/env.log" | paste -sd ';' | sed 's/;/; /g' | cut -c1-300)"
    else
      bad "bundle env.sh" "sourcing it failed: $(tail -n 1 "$logs/env.log")"
      return
    fi
  fi
  export PATH="$bundle/bin:$PATH"
  if run_step 30 "$log" "$bundle/bin/wiola-train" --version; then
    bundle_ok=1
    row "bundle $bundle" "ok: $(grep -v '^+ ' "$log" | head -n 1); $env_note"
  else
    bad "bundle $bundle" "its programs do not start here: $(why $? "$log"); $env_note"
  fi
}

# Needs the bundle: prints the reason for the table when a step cannot run.
needs_bundle() {  # WHAT
  [ $bundle_ok -eq 1 ] && return 0
  row "$1" "not run: the bundle's programs do not start here"
  return 1
}

step_op_tests() {
  local what="CUDA op tests on the device (random data, the real layouts' offsets)"
  needs_bundle "$what" || return
  local prog=$bundle/bin/wiola_test_cuda_device_ops log=$logs/op-tests.log
  [ -x "$prog" ] || { bad "$what" "no bin/wiola_test_cuda_device_ops in the bundle"; return; }
  run_step 120 "$log" "$prog"
  local rc=$?
  local ran passed skipped
  ran=$(sed -n 's/^\[==========\] \([0-9]*\) tests\{0,1\} from .* ran\..*/\1/p' "$log")
  passed=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' "$log")
  skipped=$(sed -n 's/^\[  SKIPPED \] \([0-9]*\) test.*/\1/p' "$log")
  grep -E '^\[device' "$log" | sort -t'(' -k2 -r | head -n 12 >"$logs/op-errors-worst.txt"
  local counts="${ran:-0} ran, ${passed:-0} passed, ${skipped:-0} skipped"
  if [ $rc -ne 0 ] || [ -z "$ran" ]; then
    bad "$what" "$counts; $(why $rc "$log")"
  elif [ $dry -eq 1 ]; then
    # Without a GPU every test must skip, saying why.
    if [ "${skipped:-0}" -eq "$ran" ]; then
      row "$what$(dry_note "no GPU, so each test skips")" "ok: $counts: $(grep -m1 -o 'no CUDA device.*' "$log" | cut -c1-100)"
    else
      bad "$what$(dry_note "no GPU")" "$counts: expected every test to skip"
    fi
  elif [ "${skipped:-0}" -ne 0 ]; then
    bad "$what" "$counts: a skip on a GPU means a test did not run (op-tests.log)"
  else
    row "$what" "ok: $counts"
  fi
}

peak_measured="" copy_measured="" attention_measured="" launch_measured=""
step_ceilings() {
  local what_gemm="ceiling: bf16 matrix product, measured by PyTorch (torch.matmul, random data)"
  local what_copy="ceiling: copy bandwidth, measured by PyTorch (copy_, bytes read + written)"
  [ -n "$python" ] || { bad "$what_gemm" "no Python with PyTorch (python3, /usr/bin/python3; WIOLA_PYTHON)"; return; }
  local script log=$logs/torch-ceilings.log
  script=$(helper torch_wiola.py tools/bench/torch_wiola.py)
  local args=(--device "$device" --ceilings --threads "$threads")
  [ $dry -eq 1 ] && args+=(--gemm-n 512 --copy-mib 64 --attn-batch 1 --attn-heads 2 --attn-seq 256 --attn-head-dim 64)
  run_step 90 "$log" "$python" "$script" "${args[@]}" || { bad "$what_gemm" "$(why $? "$log")"; return; }
  peak_measured=$(awk '/^torch ceiling bf16-matmul/ { print $5 }' "$log")
  copy_measured=$(awk '/^torch ceiling copy/ { print $5 }' "$log")
  if ! is_number "$peak_measured" || ! is_number "$copy_measured"; then
    peak_measured=""
    bad "$what_gemm" "no rates in its output (torch-ceilings.log)"
    return
  fi
  row "$what_gemm$(dry_note "CPU")" "$peak_measured TFLOP/s ($(sed -n 's/^torch ceiling bf16-matmul TFLOP\/s [^ ]* (\([^ ]*\).*/\1/p' "$log"))"
  row "$what_copy$(dry_note "CPU")" "$copy_measured GB/s"
  local attn launch
  attn=$(awk '/^torch ceiling attention TFLOP/ { print $5 }' "$log")
  launch=$(awk '/^torch ceiling launch us/ { print $5 }' "$log")
  is_number "$attn" && attention_measured=$attn
  is_number "$launch" && launch_measured=$launch
  if is_number "$attn"; then
    row "ceiling: causal bf16 attention, forward + backward, measured by PyTorch (its fused kernel)$(dry_note "CPU")" "$attn TFLOP/s"
  else
    row "ceiling: causal bf16 attention" "not measured: $(grep -m1 '^torch ceiling attention' "$log" || echo 'no line in torch-ceilings.log')"
  fi
  if is_number "$launch"; then
    row "ceiling: the gap one more kernel adds (PyTorch, tiny kernels in a CUDA graph)$(dry_note "CPU, eager ops")" "$launch us"
  else
    row "ceiling: the gap one more kernel adds" "not measured: $(grep -m1 '^torch ceiling launch' "$log" || echo 'no line in torch-ceilings.log')"
  fi
  # What wiola-profile --project needs to price the counted work
  # (tools/gpu-counts.sh --json; docs/profiling.md, "Projection from counts").
  if is_number "$attn" && is_number "$launch"; then
    row "projection from counts: wiola-profile --project SPEC --project-set times.counts=COUNTS.json and" \
        "--project-set ceilings.gemm_tflops=$peak_measured --project-set ceilings.attention_tflops=$attn --project-set ceilings.memory_GBps=$copy_measured --project-set ceilings.launch_us=$launch --project-set ceilings.source=measured-by-gpu-check"
  fi
}

wiola_step_ms=""
step_wiola_layers() {
  local what="wiola: $preset cut to $layers layers, T $seq_len, micro-batch $micro_batch, bf16"
  needs_bundle "$what" || return
  local log=$logs/wiola-layers.log
  local args=(layers --preset "$preset" --layers "$layers" --seq-len "$seq_len"
              --micro-batch "$micro_batch" --device "$device"
              --steps "$bench_steps" --warmup "$bench_warmup")
  # The CPU computes in fp32, and would measure its own fp32 GEMM for the
  # peak (seconds on 2 cores): the dry run names the datasheet figure instead.
  if [ $dry -eq 1 ]; then args+=(--dtype fp32 --peak-tflops h200); else args+=(--dtype bf16); fi
  # The counted work priced at the measured ceilings, beside the measured
  # step: the projection from counts, checked (docs/profiling.md).
  if [ -n "$peak_measured" ] && [ -n "$copy_measured" ] && [ -n "$attention_measured" ]; then
    args+=(--gemm-tflops "$peak_measured" --attention-tflops "$attention_measured"
           --memory-gbps "$copy_measured" --launch-us "${launch_measured:-0}")
  fi
  run_step 150 "$log" "$bundle/bin/wiola-bench" "${args[@]}" || { bad "$what" "$(why $? "$log")"; return; }
  local tflops
  read -r wiola_step_ms tflops < <(sed -n 's/^  step \([0-9.]*\) ms, [0-9.]* tokens\/s, \([0-9.]*\) TFLOP\/s.*/\1 \2/p' "$log")
  if ! is_number "$wiola_step_ms" || ! is_number "$tflops"; then
    wiola_step_ms=""
    bad "$what" "no step time in its output (wiola-layers.log)"
    return
  fi
  row "$what$(dry_note "fp32 on the CPU")" "ok: $(sed -n 's/^  step //p' "$log")"
  local mfu_measured="no measured rate"
  [ -n "$peak_measured" ] &&
    mfu_measured=$(awk -v f="$tflops" -v p="$peak_measured" 'BEGIN { printf "%.1f%% of the measured %s TFLOP/s", 100 * f / p, p }')
  row "wiola MFU" "$mfu_measured; $(sed -n 's/^  MFU //p' "$log")"
  row "wiola peak memory" "$(sed -n 's/^  peak memory //p' "$log")"
  grep -q '^  forward + backward: eager ' "$log" &&
    row "wiola micro-batch eager against one CUDA graph replay" "$(sed -n 's/^  forward + backward: //p' "$log")"
  # The device counters beside the measured time (none on the CPU).
  if grep -q '^  counted per step: ' "$log"; then
    row "wiola counted per step (launches, memsets, host syncs, allocations, bytes, FLOPs)" "$(sed -n 's/^  counted per step: //p' "$log")"
    row "wiola work over the step time" "$(sed -n 's/^  per step time: //p' "$log")"
    grep -q '^  counted work at the given ceilings: ' "$log" &&
      row "wiola counted work at the measured ceilings (the projection from counts) against the step" "$(sed -n 's/^  counted work at the given ceilings: //p' "$log")"
  fi
  # The op families that take the most time, and the time outside the ops.
  row "wiola time per op family (ms per step, share)" "$(awk '
    /^    family/ { on = 1; next }
    on && /^    outside the ops/ { printf "outside the ops %s (%s)", $(NF-1), $NF; exit }
    on && n < 5 { name = $1; for (i = 2; i <= NF - 5; ++i) name = name " " $i
                  printf "%s %s (%s); ", name, $(NF-1), $NF; ++n }' "$log")"
}

step_torch_layers() {  # MODE: eager | compile
  local mode=$1 what="PyTorch $1: the same model and shapes, bf16 autocast"
  [ -n "$python" ] || { bad "$what" "no Python with PyTorch"; return; }
  local script log=$logs/torch-$mode.log
  script=$(helper torch_wiola.py tools/bench/torch_wiola.py)
  local args=("${torch_shape[@]}" --device "$device" --dtype bf16 --threads "$threads"
              --steps "$bench_steps" --warmup "$bench_warmup")
  if [ "$mode" = compile ]; then
    if ! "$python" -c 'import torch, sys; sys.exit(not hasattr(torch, "compile"))'; then
      row "$what" "not run: torch $("$python" -c 'import torch; print(torch.__version__)') has no torch.compile$(dry_note "Debian's PyTorch")"
      return
    fi
    args+=(--compile --warmup 3)  # the compilation happens in the warm-up steps
  fi
  local seconds=90
  [ "$mode" = compile ] && seconds=200
  run_step $seconds "$log" "$python" "$script" "${args[@]}" || { bad "$what" "$(why $? "$log")"; return; }
  local ms tokens attention memory
  read -r tokens ms attention memory < <(awk '/^torch tokens\/s/ {
    for (i = 1; i < NF; ++i) v[$i] = $(i + 1); print v["tokens/s"], v["step_ms"], v["attention"], v["peak_mem_gib"] }' "$log")
  if ! is_number "$ms" || ! is_number "$tokens"; then
    bad "$what" "no step time in its output (torch-$mode.log)"
    return
  fi
  local ratio="wiola's step time unknown"
  [ -n "$wiola_step_ms" ] &&
    ratio=$(awk -v w="$wiola_step_ms" -v t="$ms" 'BEGIN { printf "wiola / PyTorch step time %.2f", w / t }')
  row "$what$(dry_note "CPU")" "ok: step $ms ms, $tokens tokens/s, attention $attention, peak memory $memory GiB; $ratio"
}

# Without the bundle: the CUDA kernels compiled by this machine's nvcc for its
# GPU, from the source tree the call carried (registers and spills in the log).
step_fallback_build() {
  local what="fallback: the CUDA backend's kernels compiled here by nvcc (compile only)"
  if [ -z "$root" ]; then row "$what" "not possible: no source tree beside this script"; return; fi
  command -v nvcc >/dev/null || { bad "$what" "no nvcc on PATH"; return; }
  local arch=native
  [ $dry -eq 1 ] && arch=sm_90
  mkdir -p "$work/fallback"
  local log=$logs/fallback-build.log
  # WIOLA_CHECK_FALLBACK_GLOB: which kernel files (all by default).
  # shellcheck disable=SC2016  # expanded by the inner shell
  if run_step 240 "$log" bash -c 'cd "$1"/src/backend/cuda/kernels && ls $4.cu |
      xargs -P "$(nproc)" -I{} nvcc -arch="$2" -std=c++20 -O3 -I"$1"/src -Xptxas -v -c {} -o "$3"/{}.o' \
      _ "$root" "$arch" "$work/fallback" "${WIOLA_CHECK_FALLBACK_GLOB:-*}"; then
    local objects
    objects=$(find "$work/fallback" -name '*.o' | wc -l)
    if [ "$objects" -eq 0 ]; then bad "$what" "no kernel file compiled (fallback-build.log)"; return; fi
    row "$what$(dry_note "for sm_90, no GPU here")" "ok: $objects files; $(grep -c 'spill stores' "$log") kernels, $(grep -Ec '[1-9][0-9]* bytes spill stores' "$log") of them with spills (registers in fallback-build.log)"
  else
    bad "$what" "$(why $? "$log")"
  fi
}

step_training() {
  local what="training on the device against the CPU's losses"
  needs_bundle "$what" || return
  local script
  script=$(helper gpu-check-train.sh tools/gpu-check-train.sh)
  local config=$bundle/configs/embedded.ini
  local args=("$bundle/bin/wiola-train" "$logs/train" --config "$config" --data "$bundle/data")
  [ $dry -eq 1 ] && args+=(--steps 12 --min-fall 0.2)
  WIOLA_CHECK_DEVICE=$device run_step 200 "$logs/train.log" bash "$script" "${args[@]}"
  local rc=$?
  local lines
  lines=$(grep -E '^\| (cpu|cuda) ' "$logs/train.log")
  if [ -n "$lines" ]; then
    while IFS= read -r line; do
      line=${line#| } line=${line% |}
      row "training: ${line%% | *}$(dry_note "both sides on the CPU")" "${line#* | }"
    done <<<"$lines"
  fi
  # A failed run has its row; a script that stopped early gets one here.
  if [ $rc -ne 0 ]; then
    failed=1
    grep -q '^| .* | FAILED' <<<"$lines" || bad "$what" "$(why $rc "$logs/train.log")"
  fi
}

# A checkpoint trained on the device, exported, loaded through transformers
# (or, where transformers is missing, the export's own modeling_wiola.py) on
# the device, against wiola-dump's logits (the CPU backend in fp32).
step_hf() {
  local what="HF export: AutoModelForCausalLM logits against wiola-dump's"
  needs_bundle "$what" || return
  [ -n "$python" ] || { bad "$what" "no Python with PyTorch"; return; }
  local d=$work/hf check bin=$bundle/bin
  mkdir -p "$d"
  check=$(helper check_export.py tools/hf/check_export.py)
  [ -n "$check" ] || { bad "$what" "no check_export.py in the bundle or the source tree"; return; }
  # wiola-reshard copies modeling_wiola.py into the export: beside the bundle's
  # binaries (share/wiola/hf), else from the bundle's top level or the source.
  if [ ! -f "$bundle/share/wiola/hf/modeling_wiola.py" ]; then
    local model_py
    model_py=$(helper modeling_wiola.py tools/hf/modeling_wiola.py)
    [ -n "$model_py" ] && export WIOLA_HF_DIR=${model_py%/*}
  fi
  # fp32 on the device: the checkpoint and W.h5 then hold the same weights.
  run_step 60 "$logs/hf-train.log" "$bin/wiola-train" --preset wiola-tiny --steps 3 --eval-interval 0 \
      --lr 3e-2 --threads 1 --device "$device" --dtype fp32 --train-data "$bundle/data/fortunes-train.h5" \
      --val-data "$bundle/data/fortunes-val.h5" --save "$d/ck" --export-weights "$d/w.h5" ||
    { bad "$what" "training: $(why $? "$logs/hf-train.log")"; return; }
  run_step 30 "$logs/hf-export.log" "$bin/wiola-reshard" export-safetensors "$d/ck/step-00000003" --out "$d/export" ||
    { bad "$what" "export: $(why $? "$logs/hf-export.log")"; return; }
  local B=3 T V
  T=$(sed -n 's/.* T=\([0-9]*\) .*/\1/p' "$logs/hf-train.log" | head -n 1)
  V=$(sed -n 's/.* V=\([0-9]*\) .*/\1/p' "$logs/hf-train.log" | head -n 1)
  # B rows of T+1 ids spread over the vocabulary (tests/hf/export_check.sh's).
  awk -v B=$B -v T="$T" -v V="$V" 'BEGIN { for (b = 0; b < B; ++b) { line = ""
      for (t = 0; t <= T; ++t) line = line (t ? " " : "") (7919 * (b * (T + 1) + t) + 13 * b + 1) % V
      print line } }' >"$d/tokens.txt"
  h5_tokens "$d/tokens.txt" "$d/tokens.h5" $B "$((T + 1))" >"$logs/hf-tokens.log" 2>&1 ||
    { bad "$what" "writing tokens.h5: $(tail -n 1 "$logs/hf-tokens.log")"; return; }
  run_step 60 "$logs/hf-dump.log" "$bin/wiola-dump" --weights "$d/w.h5" --tokens "$d/tokens.h5" --out "$d/dump.h5" ||
    { bad "$what" "wiola-dump: $(why $? "$logs/hf-dump.log")"; return; }
  h5_logits "$d/dump.h5" "$d/logits.bin" >>"$logs/hf-tokens.log" 2>&1 ||
    { bad "$what" "reading the logits: $(tail -n 1 "$logs/hf-tokens.log")"; return; }
  # The export is a local folder: transformers must not look for the hub.
  if HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 run_step 90 "$logs/hf-check.log" "$python" "$check" "$d/export" "$d/tokens.txt" "$d/logits.bin" $B "$T" \
       --loader auto --device "$device" --label fp32; then
    row "$what$(dry_note "transformers missing here, so the plain-PyTorch path")" \
        "ok: $(sed -n 's/^fp32: loaded through //p' "$logs/hf-check.log"); $(sed -n 's/^fp32: logits \(.*\) of the export vs wiola-dump: .*relative \(.*\)/\1: relative difference \2/p' "$logs/hf-check.log"); $(sed -n 's/^fp32: argmax/argmax/p' "$logs/hf-check.log")"
  else
    bad "$what" "$(why $? "$logs/hf-check.log")"
  fi
}

# HDF5 without the HDF5 tools where they are missing (the GPU machine has
# h5py, this one h5import and h5dump).
h5_tokens() {  # TXT H5 ROWS COLS
  if command -v h5import >/dev/null; then
    printf 'PATH tokens\nINPUT-CLASS TEXTIN\nRANK 2\nDIMENSION-SIZES %s %s\nOUTPUT-CLASS IN\nOUTPUT-SIZE 32\nOUTPUT-ARCHITECTURE NATIVE\nOUTPUT-BYTE-ORDER LE\n' \
      "$3" "$4" >"$1.cfg"
    h5import "$1" -c "$1.cfg" -o "$2"
  else
    "$python" -c 'import sys, h5py, numpy
rows = [[int(t) for t in l.split()] for l in open(sys.argv[1]) if l.strip()]
h5py.File(sys.argv[2], "w").create_dataset("tokens", data=numpy.array(rows, dtype="<i4"))' "$1" "$2"
  fi
}
h5_logits() {  # H5 BIN: the dataset logits as little-endian fp32
  if command -v h5dump >/dev/null; then
    h5dump -d /logits -b LE -o "$2" "$1" >/dev/null
  else
    "$python" -c 'import sys, h5py, numpy
numpy.asarray(h5py.File(sys.argv[1], "r")["logits"], dtype="<f4").tofile(sys.argv[2])' "$1" "$2"
  fi
}

step_nccl() {
  local what="NCCL communicator (wiola_nccl_check under mpirun)"
  needs_bundle "$what" || return
  local check=$bundle/bin/wiola_nccl_check expect
  [ -x "$check" ] || { bad "$what" "no bin/wiola_nccl_check in the bundle"; return; }
  if [ $dry -eq 1 ]; then
    # It needs a GPU: here it must start under the bundle's mpirun and stop
    # with a line naming the missing device.
    run_step 60 "$logs/nccl-dry.log" mpirun --oversubscribe --bind-to none -np 2 "$check" collectives
    local rc=$?
    if [ $rc -ne 0 ] && [ $rc -ne 124 ] && grep -qiE 'cuda|device|driver' "$logs/nccl-dry.log"; then
      row "$what$(dry_note "needs a GPU; not run")" "starts under the bundle's mpirun and stops (exit $rc): $(grep -m1 -iE 'cuda|device|driver' "$logs/nccl-dry.log" | cut -c1-120)"
    else
      bad "$what$(dry_note "needs a GPU")" "expected a clear stop without a GPU: $(why $rc "$logs/nccl-dry.log")"
    fi
    return
  fi
  local np log rc choice result want
  for np in 2 4; do
    log=$logs/nccl-np$np.log
    run_step 60 "$log" mpirun --oversubscribe --bind-to none -np "$np" "$check" collectives
    rc=$?
    choice=$(grep -m1 "^comm: device buffers" "$log")
    result=$(grep -m1 "^nccl-check:" "$log")
    # More ranks than GPUs: the world falls back to MPI; else NCCL carries it.
    if [ "$np" -gt "$gpu_count" ]; then want="MPI with host staging on world"; else want="NCCL .* on world"; fi
    if [ $rc -eq 0 ] && grep -q "all passed" <<<"$result" && grep -Eq "$want" <<<"$choice"; then
      row "NCCL collectives, $np ranks on $gpu_count GPU(s)" "ok: $result; $choice"
    else
      bad "NCCL collectives, $np ranks on $gpu_count GPU(s)" "${result:-$(why $rc "$log")}; want '$want', got '$choice'"
    fi
  done
  # Failure scenarios: expect_abort.sh passes when the whole mpirun exits
  # non-zero within the limit with the line, and nothing carried on. mpirun
  # does not end the job itself when a rank exits: the survivors' watchdog must.
  expect=$(helper expect_abort.sh tests/comm/expect_abort.sh)
  [ -n "$expect" ] || { bad "NCCL failure scenarios" "no expect_abort.sh in the bundle or the source tree"; return; }
  local host_re='\(host [^)]+\)'
  nccl_scenario killed-rank 2 40 \
    "rank 0 $host_re: (ncclAllReduce|MPI_Iallreduce) of 4 fp32 \(sum\) on 'world' (timed out after 5 s|failed)" kill
  nccl_scenario stalled-wait 2 40 \
    "rank 0 $host_re: ncclAllReduce of 4 fp32 \(sum\) on 'self' timed out after 2 s" stall
}
nccl_scenario() {  # NAME NP LIMIT REGEX MODE
  local log=$logs/nccl-$1.log
  OMPI_MCA_orte_abort_on_non_zero_status=0 run_step $(($3 + 20)) "$log" bash "$expect" "$3" "$4" \
    --absent "all-reduce completed" \
    mpirun --oversubscribe --bind-to none -np "$2" "$bundle/bin/wiola_nccl_check" "$5"
  local rc=$?
  if [ $rc -eq 0 ]; then
    row "NCCL $1" "ok ($(grep -m1 -- '--- exit status' "$log")): $(grep -m1 -E "$4" "$log")"
  else
    bad "NCCL $1" "$(why $rc "$log")"
  fi
}

# ---------------------------------------------------------------------------
# The table (printed last) and the files under $OUT (at most 8).

finish() {
  local summary=$out/summary-call$call.txt
  row "total time" "$(($(date +%s) - t_start)) s of the call's $budget s$(dry_note "WIOLA_CHECK_DEVICE=cpu")"
  {
    echo "gpu-check call $call, $(date -u +%FT%TZ) on $(hostname), bundle $bundle, device $device"
    [ $dry -eq 1 ] && echo "DRY RUN on the CPU: no GPU was used; this checks the script, not a device"
    echo
    echo "| what | result |"
    echo "|------|--------|"
    printf '%s\n' "${rows[@]}"
  } >"$summary"
  cp "$summary" "$logs/"
  tar -czf "$out/logs-call$call.tar.gz" -C "$work" "logs-call$call"
  # A few key logs beside the archive, for reading without unpacking.
  local key
  for key in op-tests.log wiola-layers.log torch-eager.log torch-compile.log train.log hf-check.log; do
    [ -f "$logs/$key" ] && cp "$logs/$key" "$out/call$call-$key"
  done
  rm -rf "$work"
  echo
  cat "$summary"
  exit $failed
}

# ---------------------------------------------------------------------------

if ! step_gpu; then finish; fi
find_python
step_bundle
if [ "$call" = 1 ]; then
  step_op_tests
  step_ceilings
  step_wiola_layers
  step_torch_layers eager
  [ $bundle_ok -eq 1 ] || step_fallback_build
  step_torch_layers compile
else
  step_training
  step_hf
  step_nccl
fi
finish
