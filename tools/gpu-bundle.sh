#!/usr/bin/env bash
# The GPU bundle: one archive that runs wiola on a machine with an NVIDIA GPU
# and nothing of wiola's dependencies but the CUDA libraries (the device tool's
# GPU machine has no MPI, HDF5, Boost, OpenBLAS or ICU, and no package
# registry). It unpacks to one folder, wiola-gpu/:
#   bin/         the tools, the GPU check's test programs, orted, and mpirun (a script
#                that relocates the bundled OpenMPI to this folder)
#   lib/         every shared library they load but the C library and the CUDA
#                ones (driver, cuBLAS/cuBLASLt, NCCL), each finding the others
#                by RUNPATH ($ORIGIN), so no LD_LIBRARY_PATH is set;
#                lib/wiola/libwiola_cuda.so (the CUDA plugin, loaded at
#                --device cuda), lib/openmpi/ and lib/pmix/ (MPI's components)
#   share/       OpenMPI's and PMIx's help texts and settings, modeling_wiola.py
#   env.sh       sourced: PATH, OpenMPI's relocation, and the CUDA libraries of
#                the machine linked into lib/cuda/ (where the plugin looks);
#                it says which it found and which it did not
#   data/, configs/   the embedded dataset and the job configs the check uses
#   gpu-check.sh and its helpers at the top (tools/gpu-check.sh)
#
#   tools/gpu-bundle.sh [--build DIR] [--no-build] [--out DIR]
#     --build DIR  the CMake build to take the programs from (default
#                  build-gpu-bundle/ at the top of the source tree; configured
#                  Release for sm_90 and sm_80 when it has no cache yet)
#     --no-build   package what DIR holds, building nothing (the suite's test)
#     --out DIR    where the archive goes (default: the build folder)
# The archive's path is the last line printed. It is refused over 40 MiB (a
# device call carries 64 MiB of working tree in all).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$root/build-gpu-bundle build_it=1 out=""
die() { echo "gpu-bundle: $*" >&2; exit 1; }
trap 'echo "gpu-bundle: failed at line $LINENO: $BASH_COMMAND" >&2' ERR
while [ $# -gt 0 ]; do
  case $1 in
    --build) [ $# -ge 2 ] || die "--build needs a folder"; build=$2; shift 2 ;;
    --no-build) build_it=0; shift ;;
    --out) [ $# -ge 2 ] || die "--out needs a folder"; out=$2; shift 2 ;;
    -h|--help) sed -n '2,/^set -e/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown argument '$1' (see --help)" ;;
  esac
done
out=${out:-$build}
command -v patchelf >/dev/null || die "patchelf is missing (tools/install-deps.sh installs it)"

tools=(wiola-train wiola-bench wiola-profile wiola-dump wiola-reshard wiola-eval wiola-generate wiola-data)
tests=(wiola_test_cuda_device_ops wiola_nccl_check)
if [ $build_it -eq 1 ]; then
  if [ ! -f "$build/CMakeCache.txt" ]; then
    cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release "-DCMAKE_CUDA_ARCHITECTURES=90;80" >/dev/null
  fi
  cmake --build "$build" -j "$(nproc)" --target "${tools[@]}" "${tests[@]}" wiola_cuda wiola_embedded_data
fi

# The built files, checked before anything is copied.
find_built() {  # NAME: the one regular file of that name under the build
  local f
  f=$(find "$build/tools" "$build/tests" -maxdepth 2 -name "$1" -type f 2>/dev/null | head -n 1)
  [ -n "$f" ] || die "$build has no $1: build it, or run without --no-build"
  echo "$f"
}
plugin=$build/lib/libwiola_cuda.so
[ -f "$plugin" ] || die "$build has no lib/libwiola_cuda.so: is it a CUDA build (CUDA and NCCL found at configure)?"
for f in fortunes-train.h5 fortunes-val.h5 fortunes.bpe; do
  [ -f "$build/data/$f" ] || die "$build/data has no $f (the embedded dataset: build wiola_embedded_data)"
done
orterun=$(readlink -f "$(command -v mpirun)") || die "no mpirun on this machine (OpenMPI)"
ompi_pkglib=$(ompi_info --path pkglibdir --parsable | sed -n 's/^path:pkglibdir://p')
ompi_data=$(ompi_info --path pkgdatadir --parsable | sed -n 's/^path:pkgdatadir://p')
ompi_etc=$(ompi_info --path sysconfdir --parsable | sed -n 's/^path:sysconfdir://p')
pmix_lib=$(dirname "$(ldconfig -p | awk '/libpmix\.so\.2 /{print $NF; exit}')")
pmix_home=$(find /usr/lib -maxdepth 4 -type d -path '*/pmix2/lib/pmix' 2>/dev/null | head -n 1)
[ -n "$pmix_home" ] || die "PMIx's components (…/pmix2/lib/pmix) were not found"
pmix_home=${pmix_home%/lib/pmix}

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
b=$stage/wiola-gpu
mkdir -p "$b"/{bin,lib/wiola,lib/cuda,lib/openmpi,lib/pmix,share/openmpi,share/pmix,share/wiola/hf,etc,data,configs}

for t in "${tools[@]}" "${tests[@]}"; do cp "$(find_built "$t")" "$b/bin/$t"; done
cp "$orterun" "$b/bin/orterun"
# orted: a program started without mpirun (an MPI singleton) forks it.
cp "$(dirname "$orterun")/orted" "$b/bin/orted"
cp "$plugin" "$b/lib/wiola/"
# MPI's components whose libraries come along; the others (InfiniBand, UCX,
# libfabric, PSM, OpenSHMEM) need hardware libraries a single GPU machine
# lacks, and the site's settings already switch most of them off.
for c in "$ompi_pkglib"/*.so; do
  case $(basename "$c") in
    mca_*_ucx.so|mca_*_ofi.so|mca_btl_openib.so|mca_mtl_psm*.so|mca_atomic_*|mca_memheap_*|mca_scoll_*|mca_spml_*|mca_sshmem_*|mca_reachable_netlink.so) ;;
    *) cp "$c" "$b/lib/openmpi/" ;;
  esac
done
cp "$pmix_home"/lib/pmix/*.so "$b/lib/pmix/"
cp -r "$ompi_data"/. "$b/share/openmpi/"
cp -r "$pmix_home"/share/pmix/. "$b/share/pmix/"
cp "$ompi_etc"/openmpi-mca-params.conf "$b/etc/"

# Every library these load, by ldd (which lists the whole closure), but the C
# library's own and the CUDA ones that the GPU machine provides.
system_lib() {
  case $1 in
    linux-vdso.so.*|ld-linux*|libc.so.*|libm.so.*|libdl.so.*|libpthread.so.*|librt.so.*|libresolv.so.*|libutil.so.*) return 0 ;;
    libcuda.so.*|libcublas.so.*|libcublasLt.so.*|libnccl.so.*|libcudart.so.*) return 0 ;;
  esac
  return 1
}
collect() {  # FILE...: copy what they need into lib/
  local f name path
  for f in "$@"; do
    while read -r name path; do
      system_lib "$name" && continue
      [ -e "$b/lib/$name" ] && continue
      [ -n "$path" ] && [ -f "$path" ] || die "$(basename "$f") needs $name, which this machine does not have"
      cp -L "$path" "$b/lib/$name"
    done < <(ldd "$f" | awk '/=>/ {print $1, ($3 == "not" ? "" : $3)}')
  done
}
collect "$b"/bin/* "$b"/lib/openmpi/*.so "$b"/lib/pmix/*.so

# Each file finds its libraries in the bundle, wherever it is unpacked.
for f in "$b"/bin/*; do patchelf --set-rpath '$ORIGIN/../lib' "$f"; done
for f in "$b"/lib/*.so*; do patchelf --set-rpath '$ORIGIN' "$f"; done
for f in "$b"/lib/openmpi/*.so "$b"/lib/pmix/*.so; do patchelf --set-rpath '$ORIGIN/..' "$f"; done
# The plugin: the machine's CUDA libraries as env.sh links them, then ours.
patchelf --set-rpath '$ORIGIN/../cuda:$ORIGIN/..' "$b/lib/wiola/libwiola_cuda.so"
strip --strip-unneeded "$b"/lib/*.so* "$b"/lib/openmpi/*.so "$b"/lib/pmix/*.so 2>/dev/null || true
strip --strip-debug "$b"/bin/* "$b/lib/wiola/libwiola_cuda.so"

cp "$root/tools/gpu-bundle/mpirun" "$b/bin/"
cp "$root/tools/gpu-bundle/env.sh" "$b/"
cp "$root/tools/gpu-bundle/relocate.sh" "$b/etc/"
patchelf --print-needed "$b/lib/wiola/libwiola_cuda.so" | grep -E '^lib(cublas|cublasLt|nccl|cudart)\.so' >"$b/lib/cuda/NEEDED" ||
  die "the plugin needs no CUDA library: is $plugin the CUDA backend?"
cp "$build"/data/fortunes-train.h5 "$build"/data/fortunes-val.h5 "$build"/data/fortunes.bpe "$b/data/"
cp "$root"/jobs/configs/*.ini "$b/configs/"
cp "$root/tools/hf/modeling_wiola.py" "$b/share/wiola/hf/"
cp "$root/tools/gpu-check.sh" "$root/tools/gpu-check-train.sh" "$root/tools/bench/torch_wiola.py" \
   "$root/tools/hf/check_export.py" "$root/tests/comm/expect_abort.sh" "$b/"
# The newest glibc symbol version any of it uses: the machine's glibc must be
# at least that (env.sh checks; glibc itself is the machine's, never bundled).
find "$b/bin" "$b/lib" -type f | while read -r f; do
  if head -c 4 "$f" | grep -q ELF; then objdump -T "$f" | grep -o 'GLIBC_[0-9.]*[0-9]' || true; fi
done | sed 's/GLIBC_//' | sort -u -V | tail -n 1 >"$b/lib/GLIBC_NEEDED"
[ -s "$b/lib/GLIBC_NEEDED" ] || die "no glibc symbol version found in the bundle's programs"
git -C "$root" describe --always --dirty >"$b/VERSION" 2>/dev/null || echo unknown >"$b/VERSION"

mkdir -p "$out"
# xz: the libraries alone are 51 MiB under gzip -9, about 30 under xz -6
# (OpenBLAS's kernels for every CPU and ICU's data are a third of it each).
archive=$(cd "$out" && pwd)/wiola-gpu-$(cat "$b/VERSION").tar.xz
tar -C "$stage" -cf - wiola-gpu | xz -6 -T0 >"$archive"
bytes=$(stat -c %s "$archive")
limit=$((40 * 1024 * 1024))
echo "gpu-bundle: $(du -sh "$b" | cut -f1) in wiola-gpu/ ($(ls "$b/lib" | wc -l) libraries), archive $((bytes / 1024 / 1024)) MiB"
[ "$bytes" -le $limit ] || die "the archive is $bytes bytes, over the 40 MiB a device call can spare"
echo "$archive"
