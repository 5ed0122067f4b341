#!/usr/bin/env bash
# Installs the Debian packages wiola needs that this machine lacks, and says
# which. Safe to run again: with everything present it installs nothing.
#   tools/install-deps.sh [--fuzz]   (--fuzz: also clang and libFuzzer, for tools/fuzz.sh)
set -euo pipefail

packages=(
  build-essential cmake pkg-config       # compiler and build
  openmpi-bin libopenmpi-dev             # MPI (mpirun and headers)
  libhdf5-dev hdf5-tools                 # HDF5 token datasets and weights files
  libboost-program-options-dev           # command-line and config-file options
  libgtest-dev                           # GoogleTest
  libopenblas-openmp-dev                 # CPU GEMM (OpenMP build: one thread pool with ours)
  libicu-dev                             # NFC normalisation and character classes (BPE tokenizer)
  nlohmann-json3-dev                     # JSON-lines input of wiola-data encode
  zlib1g-dev                             # CRC-32 of checkpoint files, .gz text inputs
  libzstd-dev                            # .zst text inputs
  fortunes                               # text of the embedded default dataset
  python3-matplotlib                     # tools/wiola-plot and wiola-profile's timeline picture
  python3-torch                          # the Hugging Face export test (tools/hf/modeling_wiola.py)
  patchelf xz-utils                      # tools/gpu-bundle.sh: RUNPATHs in the GPU bundle, its archive
  debootstrap                            # the bundle's test in a minimal Debian (tests/tools/gpu_bundle_check.sh)
)

case ${1:-} in
  --fuzz) packages+=(clang libclang-rt-14-dev) ;;  # libFuzzer and clang's sanitizer runtimes
  "") ;;
  *) echo "install-deps: unknown option '$1' (--fuzz is the only one)" >&2; exit 2 ;;
esac

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages are installed"
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "install-deps: done"
