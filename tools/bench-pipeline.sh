#!/usr/bin/env bash
# Pipeline throughput and bubble for PP in {1, 2, 4} x micro-batches in
# {1, 4, 8, 16} (wiola-bench pipeline under mpirun). Usage:
#   tools/bench-pipeline.sh [BUILD_DIR] [extra wiola-bench options]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
shift || true
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
for p in 1 2 4; do
  mpirun --oversubscribe --bind-to none -np "$p" -x OMP_NUM_THREADS=1 -x OPENBLAS_NUM_THREADS=1 \
    "$build/tools/wiola-bench/wiola-bench" pipeline "$@"
done
