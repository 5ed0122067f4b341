#!/usr/bin/env bash
# check_layers.sh SOURCE_DIR: fails when an #include runs upward against the
# layer order written in docs/architecture.md (the table after the line
# "<!-- layer order -->"): a folder may include headers of its own folder and
# of folders in lower layers only, whether the include names its folder
# ("core/tensor.hpp") or only a file found through an include path
# ("cuda_emu.hpp"). Prints every offending include.
set -euo pipefail
src=${1:?usage: check_layers.sh SOURCE_DIR}
doc="$src/docs/architecture.md"
[ -f "$doc" ] || { echo "check_layers: $doc is missing"; exit 1; }

# "| 3 | src/model |" rows after the marker, until the table ends.
declare -A layer_of
while IFS='|' read -r _ num folders _; do
  num=${num//[[:space:]]/}
  [[ $num =~ ^[0-9]+$ ]] || continue
  for f in ${folders//,/ }; do layer_of[$f]=$num; done
done < <(awk '/<!-- layer order -->/ {on = 1; next} on && /^\|/ {print; next} on && NF == 0 && seen {exit} on {seen = 1}' "$doc")
[ ${#layer_of[@]} -gt 0 ] || { echo "check_layers: no layer table in $doc"; exit 1; }

# An include "X/..." names folder X: src/X when that exists, else X at the top.
folder_of_include() {
  local top=${1%%/*}
  if [ -d "$src/src/$top" ]; then echo "src/$top"; elif [ -d "$src/$top" ]; then echo "$top"; fi
}

# A bare "name.hpp" not beside its includer: the folder (as in the layer
# table, or the top-level folder) of the first file of that name in the tree.
folder_of_bare_include() {
  local hit rel
  hit=$(find "$src" \( -path "$src/build*" -o -path "$src/.git" \) -prune -o -type f -name "$1" -print |
        head -n 1)
  [ -n "$hit" ] || return 0
  rel=${hit#"$src"/}
  if [[ $rel == src/* ]]; then rel=${rel#src/}; echo "src/${rel%%/*}"; else echo "${rel%%/*}"; fi
}

status=0
checked=0
for folder in "${!layer_of[@]}"; do
  [ -d "$src/$folder" ] || { echo "check_layers: $folder (in the layer table) does not exist"; status=1; continue; }
  mine=${layer_of[$folder]}
  while IFS= read -r hit; do
    file=${hit%%:*}
    rest=${hit#*:}
    line=${rest%%:*}
    inc=$(sed -E 's/.*#include "([^"]+)".*/\1/' <<<"${rest#*:}")
    if [[ $inc == */* ]]; then
      target=$(folder_of_include "$inc")
    else
      # Beside the including file: its own folder. Else it comes through an
      # include path: the folder of the file of that name in the tree.
      [ -f "$(dirname "$file")/$inc" ] && continue
      target=$(folder_of_bare_include "$inc")
    fi
    [ -n "$target" ] || continue
    checked=$((checked + 1))
    [ "$target" = "$folder" ] && continue
    theirs=${layer_of[$target]:-}
    if [ -z "$theirs" ]; then
      echo "${file#$src/}:$line: includes \"$inc\" from $target, which is not in the layer table"
      status=1
    elif [ "$theirs" -ge "$mine" ]; then
      echo "${file#$src/}:$line: $folder (layer $mine) includes \"$inc\" from $target (layer $theirs)"
      status=1
    fi
  done < <(grep -rnE '^[[:space:]]*#[[:space:]]*include[[:space:]]+"' "$src/$folder" \
             --include='*.hpp' --include='*.cpp' --include='*.h' --include='*.cu' --include='*.cuh' || true)
done
if [ $status -eq 0 ]; then
  echo "check_layers: $checked includes in ${#layer_of[@]} folders follow the layer order"
fi
exit $status
