# Source it from bash: . wiola-gpu/env.sh
# Puts the bundle's bin/ first on PATH, relocates its OpenMPI to this folder,
# and links the machine's CUDA libraries that the CUDA plugin needs
# (lib/cuda/NEEDED: cuBLASLt, cuBLAS, NCCL) into lib/cuda/, where the plugin
# looks for them first. It sets no LD_LIBRARY_PATH: the bundle's programs find
# their libraries by RUNPATH, and other programs (Python, PyTorch) keep theirs.
#
# Where the CUDA libraries are looked for, in order: the folders in
# WIOLA_CUDA_LIBS (colon-separated), $CUDA_HOME and $CUDA_PATH, /usr/local/cuda*,
# the folders of the NVIDIA wheels of every Python on PATH (nvidia/*/lib, as
# PyTorch brings them), then the dynamic linker's cache. The driver
# (libcuda.so.1) is the machine's own and is only reported, and so is glibc,
# whose version is checked against the newest the bundle uses (lib/GLIBC_NEEDED).
WIOLA_GPU=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export WIOLA_GPU
. "$WIOLA_GPU/etc/relocate.sh"
case ":$PATH:" in *":$WIOLA_GPU/bin:"*) ;; *) export PATH="$WIOLA_GPU/bin:$PATH" ;; esac

wiola_gpu_roots() {
  local IFS=: d py
  for d in ${WIOLA_CUDA_LIBS:-}; do [ -n "$d" ] && echo "$d"; done
  for d in "${CUDA_HOME:-}" "${CUDA_PATH:-}" /usr/local/cuda /usr/local/cuda-*; do
    [ -n "$d" ] && [ -d "$d" ] && { echo "$d/lib64"; echo "$d/lib"; echo "$d/targets/x86_64-linux/lib"; }
  done
  for py in python3 python; do
    command -v "$py" >/dev/null 2>&1 || continue
    "$py" - <<'PY' 2>/dev/null
import glob, os, site, sys
roots = list(getattr(site, "getsitepackages", lambda: [])()) + [site.getusersitepackages()] + sys.path
for r in roots:
    for d in sorted(glob.glob(os.path.join(r, "nvidia", "*", "lib")) + glob.glob(os.path.join(r, "nvidia", "*", "*", "lib"))):
        print(d)
PY
  done
}

wiola_gpu_link_cuda() {
  local soname dir found roots
  roots=$(wiola_gpu_roots | awk 'NF && !seen[$0]++')
  rm -f "$WIOLA_GPU"/lib/cuda/lib*
  while read -r soname; do
    [ -n "$soname" ] || continue
    found=""
    while read -r dir; do
      if [ -n "$dir" ] && [ -e "$dir/$soname" ]; then found=$dir/$soname; break; fi
    done <<<"$roots"
    [ -n "$found" ] || found=$(/sbin/ldconfig -p 2>/dev/null | awk -v n="$soname" '$1 == n {print $NF; exit}')
    if [ -n "$found" ]; then
      ln -s "$found" "$WIOLA_GPU/lib/cuda/$soname"
      echo "env.sh: $soname from $found"
    else
      echo "env.sh: $soname NOT FOUND (set WIOLA_CUDA_LIBS to its folder); --device cuda will not start" >&2
    fi
  done <"$WIOLA_GPU/lib/cuda/NEEDED"
  if /sbin/ldconfig -p 2>/dev/null | grep -q 'libcuda\.so\.1 '; then
    echo "env.sh: the CUDA driver libcuda.so.1 is installed"
  else
    echo "env.sh: the CUDA driver libcuda.so.1 is NOT installed here: only --device cpu runs" >&2
  fi
}
# glibc is the machine's: it must be as new as the newest the bundle uses.
wiola_gpu_check_glibc() {
  local need have
  need=$(cat "$WIOLA_GPU/lib/GLIBC_NEEDED")
  have=$(getconf GNU_LIBC_VERSION 2>/dev/null | awk '{print $2}')
  if [ -z "$have" ]; then
    echo "env.sh: glibc's version is unknown here (the bundle needs $need or newer)" >&2
  elif [ "$(printf '%s\n%s\n' "$need" "$have" | sort -V | head -n 1)" != "$need" ]; then
    echo "env.sh: glibc $have is too old: the bundle's programs need $need or newer and will not start" >&2
  else
    echo "env.sh: glibc $have (the bundle needs $need or newer)"
  fi
}
wiola_gpu_check_glibc
wiola_gpu_link_cuda
unset -f wiola_gpu_check_glibc wiola_gpu_roots wiola_gpu_link_cuda
