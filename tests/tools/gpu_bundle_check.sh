#!/usr/bin/env bash
# The GPU bundle (tools/gpu-bundle.sh) on a machine that has none of wiola's
# dependencies: a minimal Debian 12 made here with debootstrap (minbase, plus
# xz-utils to unpack the archive), entered with chroot in a private mount
# namespace. Inside it:
#  - the archive unpacks to wiola-gpu/ and env.sh names each CUDA library it
#    could not find and the missing driver, and checks glibc's version (a
#    too-old one is named);
#  - ldd finds every library of every program and library in the bundle,
#    but the CUDA ones the GPU machine provides (cuBLAS, cuBLASLt, NCCL);
#  - the main job's model (jobs/configs/embedded.ini: 4 ranks, pp 2 x dp 2,
#    1F1B, ZeRO-1) trains on the CPU through the bundle's own mpirun, its
#    loss falling, every logged loss equal to the same run of this build's
#    programs on this machine;
#  - --device cuda stops at once naming the missing CUDA library, and the
#    GPU check (the bundle's gpu-check.sh) says there is no GPU and exits
#    non-zero within seconds.
# The archive must be at most 40 MiB.
#   gpu_bundle_check.sh SOURCE_DIR BUILD_DIR ARCHIVE_DIR WORK_DIR
# (ARCHIVE_DIR: where tools/gpu-bundle.sh wrote the archive of BUILD_DIR)
# Exit 77 (skipped) where a chroot cannot be made (not root, no debootstrap,
# no Debian mirror); with WIOLA_REQUIRE_ALL_TESTS=1 (CI) that fails instead.
set -uo pipefail
src=$(cd "$1" && pwd) build=$(cd "$2" && pwd) bundles=$3 work=$4
say() { echo "[gpu-bundle-test $(date +%T)] $*"; }
fail() { say "FAIL: $*"; exit 1; }
skip() {
  say "SKIPPED: $*"
  [ "${WIOLA_REQUIRE_ALL_TESTS:-0}" = 1 ] && fail "WIOLA_REQUIRE_ALL_TESTS=1 (CI): this test must run here"
  exit 77
}
[ "$(id -u)" -eq 0 ] || skip "chroot and mount namespaces need root"
command -v debootstrap >/dev/null || skip "no debootstrap (tools/install-deps.sh installs it)"
command -v unshare >/dev/null || skip "no unshare (util-linux)"

rm -rf --one-file-system "$work"
mkdir -p "$work"
root=$work/debian

archive=$(find "$bundles" -maxdepth 1 -name 'wiola-gpu-*.tar.xz' | head -n 1)
[ -f "$archive" ] || fail "no wiola-gpu-*.tar.xz in $bundles (tools.gpu_bundle_archive makes it)"
bytes=$(stat -c %s "$archive")
[ "$bytes" -le $((40 * 1024 * 1024)) ] || fail "the archive is $bytes bytes, over 40 MiB"
say "the archive: $(basename "$archive"), $((bytes / 1024 / 1024)) MiB"

say "a minimal Debian 12 (debootstrap --variant=minbase)"
mirror=${WIOLA_DEBIAN_MIRROR:-http://deb.debian.org/debian}
if ! debootstrap --variant=minbase --include=xz-utils bookworm "$root" "$mirror" >"$work/debootstrap.log" 2>&1; then
  tail -n 5 "$work/debootstrap.log"
  skip "debootstrap from $mirror failed (no network?)"
fi
for lib in libmpi.so.40 libhdf5_serial.so.103 libopenblas.so.0 libboost_program_options.so.1.74.0 \
           libicuuc.so.72 libgomp.so.1 libgfortran.so.5; do
  [ -z "$(find "$root/usr" "$root/lib" -name "$lib" 2>/dev/null | head -n 1)" ] ||
    fail "the minimal Debian already has $lib: it proves nothing"
done
cp "$archive" "$root/opt/"

# Runs a bash script inside the chroot, with /proc, /sys and /dev/shm (MPI's
# shared memory) mounted in a mount namespace of its own: they go with it.
in_chroot() {  # SCRIPT (text)
  printf '%s\n' "$1" >"$root/opt/step.sh"
  unshare --mount --fork sh -c "mount -t proc proc '$root/proc' && mount --rbind /sys '$root/sys' &&
    mount -t tmpfs tmpfs '$root/dev/shm' && exec chroot '$root' /bin/bash /opt/step.sh"
}

say "unpacked and env.sh sourced inside it"
in_chroot "set -e; cd /opt; tar -xJf $(basename "$archive"); . wiola-gpu/env.sh" >"$work/env.log" 2>&1 ||
  { cat "$work/env.log"; fail "unpacking the archive or sourcing env.sh failed"; }
cat "$work/env.log"
while read -r soname; do
  grep -q "env.sh: $soname NOT FOUND" "$work/env.log" || fail "env.sh does not say $soname is missing"
done <"$root/opt/wiola-gpu/lib/cuda/NEEDED"
grep -q 'libcuda.so.1 is NOT installed' "$work/env.log" || fail "env.sh does not say the CUDA driver is missing"
grep -q "^env.sh: glibc 2\.[0-9]* (the bundle needs $(cat "$root/opt/wiola-gpu/lib/GLIBC_NEEDED") or newer)" "$work/env.log" ||
  fail "env.sh does not check glibc against lib/GLIBC_NEEDED"
# A bundle that needs a newer glibc than the machine's is named as such.
cp "$root/opt/wiola-gpu/lib/GLIBC_NEEDED" "$work/glibc-needed"
echo 9.99 >"$root/opt/wiola-gpu/lib/GLIBC_NEEDED"
in_chroot ". /opt/wiola-gpu/env.sh" >"$work/env-old.log" 2>&1
cp "$work/glibc-needed" "$root/opt/wiola-gpu/lib/GLIBC_NEEDED"
grep -q '^env.sh: glibc 2\.[0-9]* is too old: the bundle.s programs need 9.99 or newer' "$work/env-old.log" ||
  { cat "$work/env-old.log"; fail "env.sh does not say the machine's glibc is too old"; }

say "ldd of every program and library"
in_chroot 'cd /opt/wiola-gpu
for f in $(find bin lib -type f); do
  head -c 4 "$f" | grep -q ELF || continue
  ldd "$f" | sed -n "s|^[[:space:]]*\([^ ]*\) => not found|$f \1|p"
done' >"$work/ldd.log" 2>&1 || { cat "$work/ldd.log"; fail "ldd failed inside the chroot"; }
if grep -vE ' lib(cublas|cublasLt|nccl)\.so\.[0-9]+$' "$work/ldd.log"; then
  fail "the bundle lacks the libraries above (only cuBLAS, cuBLASLt and NCCL may be missing)"
fi
grep -q 'libwiola_cuda.so libcublasLt' "$work/ldd.log" || fail "ldd shows no CUDA library missing for the plugin: is it the CUDA backend?"
say "ok: every library found but $(awk '{print $2}' "$work/ldd.log" | sort -u | tr '\n' ' ')"

say "the main job's model, 4 ranks through the bundle's mpirun"
train_args="--config wiola-gpu/configs/embedded.ini --train-data wiola-gpu/data/fortunes-train.h5"
train_args+=" --val-data wiola-gpu/data/fortunes-val.h5 --steps 20 --log-interval 5 --eval-interval 0"
in_chroot "cd /opt; . wiola-gpu/env.sh >/dev/null 2>&1
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  exec mpirun --oversubscribe -n 4 wiola-train $train_args" >"$work/train.log" 2>&1 ||
  { tail -n 30 "$work/train.log"; fail "training in the chroot failed"; }
mkdir -p "$work/host/wiola-gpu"
ln -sfn "$src/jobs/configs" "$work/host/wiola-gpu/configs"
ln -sfn "$build/data" "$work/host/wiola-gpu/data"
# shellcheck disable=SC2086  # the arguments are words
(cd "$work/host" && mpirun --oversubscribe -n 4 "$build/tools/wiola-train/wiola-train" $train_args) \
  >"$work/host.log" 2>&1 || { tail -n 30 "$work/host.log"; fail "the same run on this machine failed"; }
losses() { sed -n 's/^step *\([0-9]*\)\/.*| loss \([0-9.]*\) .*/\1 \2/p' "$1"; }
losses "$work/train.log" >"$work/train.losses"
losses "$work/host.log" >"$work/host.losses"
[ "$(wc -l <"$work/train.losses")" -ge 4 ] || { tail -n 20 "$work/train.log"; fail "the chroot run logged too few losses"; }
cmp -s "$work/train.losses" "$work/host.losses" ||
  { paste "$work/train.losses" "$work/host.losses"; fail "the bundle's losses differ from this build's"; }
read -r _ first < <(head -n 1 "$work/train.losses")
read -r _ last < <(tail -n 1 "$work/train.losses")
awk -v a="$first" -v b="$last" 'BEGIN { exit !(b < a - 0.5) }' || fail "the loss did not fall: $first -> $last"
say "ok: loss $first -> $last over 20 steps, every logged loss equal to this build's"

say "--device cuda and the GPU check, without CUDA"
in_chroot "cd /opt; . wiola-gpu/env.sh >/dev/null 2>&1
  timeout 20 wiola-train --preset wiola-tiny --steps 1 --device cuda \
    --train-data wiola-gpu/data/fortunes-train.h5 --val-data wiola-gpu/data/fortunes-val.h5" >"$work/cuda.log" 2>&1 &&
  fail "--device cuda trained without CUDA"
cat "$work/cuda.log"
grep -q 'libwiola_cuda.so: lib\(cublasLt\|cublas\|nccl\)\.so\.[0-9]*: cannot open shared object file' "$work/cuda.log" ||
  fail "--device cuda does not name the missing CUDA library"
start=$(date +%s)
in_chroot "cd /opt; mkdir -p /tmp/out; OUT=/tmp/out timeout 60 wiola-gpu/gpu-check.sh --call 1" >"$work/check.log" 2>&1 &&
  fail "gpu-check.sh passed without a GPU"
seconds=$(($(date +%s) - start))
tail -n 4 "$work/check.log"
grep -q '^| GPU | FAILED: no nvidia-smi' "$work/check.log" || fail "gpu-check.sh does not say there is no GPU"
[ "$seconds" -le 20 ] || fail "gpu-check.sh took $seconds s to see there is no GPU"
say "ok: the GPU bundle"
rm -rf --one-file-system "$work"
