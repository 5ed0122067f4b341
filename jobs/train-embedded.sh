#!/usr/bin/env bash
# The main job: installs what is missing, builds, and trains wiola-mini on the
# embedded dataset with 4 MPI ranks on this machine (pp 2 x dp 2, 1F1B,
# ZeRO-1). Extra arguments go to wiola-train (e.g. --steps 50).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${WIOLA_BUILD_DIR:-$root/build}
"$root/tools/install-deps.sh"
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DWIOLA_BUILD_TESTS=OFF >/dev/null
cmake --build "$build" -j "$(nproc)" --target wiola-train wiola_embedded_data
# OpenMPI refuses root unless told; this machine is a single box, so ranks may
# outnumber cores.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# mpirun runs in the background: USR1 or TERM to this script reaches the ranks
# as USR1 (jobs/lib/signals.sh), so with --save they checkpoint and this script
# exits 75, as the run itself would.
source "$root/jobs/lib/signals.sh"
rc=0
wiola_launch mpirun --oversubscribe --bind-to none -np 4 \
  -x OMP_NUM_THREADS=1 -x OPENBLAS_NUM_THREADS=1 \
  "$build/tools/wiola-train/wiola-train" --config "$root/jobs/configs/embedded.ini" "$@" || rc=$?
exit "$rc"
