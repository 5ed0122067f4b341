#!/usr/bin/env bash
# cmake --install into a scratch prefix, then use what was installed.
#   install_check.sh CMAKE BUILD_DIR PREFIX
set -euo pipefail
cmake=$1 build=$2 prefix=$3
fail() { echo "FAIL: $*" >&2; exit 1; }
rm -rf "$prefix"
"$cmake" --install "$build" --prefix "$prefix" > /dev/null
for f in bin/wiola-train bin/wiola-dump bin/wiola-data bin/wiola-reshard bin/wiola-profile \
         bin/wiola-bench bin/wiola-plot share/wiola/hf/modeling_wiola.py \
         share/doc/wiola/LICENSE share/doc/wiola/README.md; do
  [ -e "$prefix/$f" ] || fail "$f was not installed"
done
[ -x "$prefix/bin/wiola-plot" ] || fail "wiola-plot is not executable"
"$prefix/bin/wiola-reshard" --version | grep -q "^wiola-reshard: wiola " || fail "installed wiola-reshard --version"
# The installed wiola-reshard copies the installed modeling_wiola.py.
cd "$prefix"
"$prefix/bin/wiola-train" --preset wiola-tiny --steps 1 --eval-interval 0 --save ck > train.log
"$prefix/bin/wiola-reshard" export-safetensors ck/step-00000001 --out hf > export.log
cmp -s hf/modeling_wiola.py share/wiola/hf/modeling_wiola.py || fail "the export's modeling_wiola.py differs"
echo "ok: installed into $prefix"
