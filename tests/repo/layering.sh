#!/usr/bin/env bash
# The layering, checked on the sources: every #include "hpdl/<sub>/..." of a subsystem must
# name itself or a subsystem it may use (its DEPS in CMakeLists.txt, the one table); toml++ and the config parser (config/config.hpp,
# config/table_reader.hpp) appear only in config, builder, train and run (the others take
# plain settings from config/settings.hpp and config/kernel_choices.hpp); MPI functions are called only in comm/ (the
# one Comm wrapper, watchdog, progress board), net/ (the network calibration, which
# measures MPI itself) and dist/param_shards.cpp (RMA); main.cpp
# only calls run/. One line per violation, exit 1 on any.
#   layering.sh SOURCE_DIR          check a source tree
#   layering.sh --self-test SRC     copy SRC, put a forbidden include into nn, an MPI call
#                                   into optim, and require the check to find both
set -u
if [ "${1:-}" = "--self-test" ]; then
  src=$2 tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  cp -r "$src/include" "$src/src" "$src/CMakeLists.txt" "$tmp/"
  sed -i '0,/#include "hpdl\/nn\/model.hpp"/s//#include "hpdl\/nn\/model.hpp"\n#include "hpdl\/config\/config.hpp"/' "$tmp/src/nn/model.cpp"
  echo 'static int probe() { return MPI_Barrier(MPI_COMM_WORLD); }' >>"$tmp/src/optim/optimizer.cpp"
  out=$(bash "$0" "$tmp"); rc=$?
  printf '%s\n' "$out"
  [ $rc -ne 0 ] || { echo "FAIL: the check passed a tree with forbidden includes"; exit 1; }
  grep -q "src/nn/model.cpp: nn may not include config/config.hpp" <<<"$out" || { echo "FAIL: nn -> config not found"; exit 1; }
  grep -q "src/optim/optimizer.cpp: calls MPI" <<<"$out" || { echo "FAIL: MPI in optim not found"; exit 1; }
  echo "PASS: both violations found"
  exit 0
fi
root=$1
# The layering table is CMake's: each hpdl_subsystem(NAME DEPS hpdl_X ... SOURCES ...) in
# CMakeLists.txt names the subsystems NAME may include (and links), and nothing else does.
declare -A may=()
while read -r sub deps; do
  may[$sub]=$deps
done < <(tr '\n' ' ' <"$root/CMakeLists.txt" | grep -o 'hpdl_subsystem([a-z]* DEPS[^)]*SOURCES' |
         sed -E 's/hpdl_subsystem\(([a-z]+) DEPS(.*)SOURCES/\1 \2/; s/ [^ ]*::[^ ]*//g; s/\$\{[^}]*\}//g; s/hpdl_//g')
[ ${#may[@]} -ge 10 ] || { echo "layering: no hpdl_subsystem table found in $root/CMakeLists.txt"; exit 1; }
parser_ok=" config builder train run predict "
bad=0
say() { echo "$1"; bad=1; }
for sub in "${!may[@]}"; do
  for f in "$root"/include/hpdl/"$sub"/*.hpp "$root"/src/"$sub"/*.cpp "$root"/src/"$sub"/*.hpp \
           "$root"/src/"$sub"/*/*.{cpp,hpp,cu,cuh}; do  # subfolders: kernels/cuda/
    [ -f "$f" ] || continue
    rel=${f#"$root"/}
    while IFS= read -r inc; do
      [[ "$inc" == */* ]] || continue  # generated headers (hpdl/version.hpp) belong to none
      dep=${inc%%/*}
      [ "$dep" = "$sub" ] && continue
      if [[ " ${may[$sub]} " != *" $dep "* ]]; then
        say "$rel: $sub may not include $inc (it may use: ${may[$sub]:-nothing})"
      elif [ "$dep" = config ] && [[ "$parser_ok" != *" $sub "* ]] && [ "$inc" != config/settings.hpp ] &&
           [ "$inc" != config/kernel_choices.hpp ]; then
        say "$rel: $sub may not include $inc (the config parser; take config/settings.hpp)"
      fi
    done < <(sed -n 's/^#include "hpdl\/\([^"]*\)".*/\1/p' "$f")
    if [[ "$parser_ok" != *" $sub "* ]] && grep -q '^#include <toml++' "$f"; then
      say "$rel: $sub may not include toml++"
    fi
    if [ "$sub" != comm ] && [ "$sub" != net ] && [ "$rel" != src/dist/param_shards.cpp ] && [ "$rel" != include/hpdl/dist/param_shards.hpp ] &&
       grep -Eq '\bMPI_[A-Z][a-z_]*\(' "$f"; then
      say "$rel: calls MPI ($(grep -Eo '\bMPI_[A-Z][a-z_]*\(' "$f" | sort -u | tr -d '(' | tr '\n' ' ')); only comm/ and the RMA shards may"
    fi
  done
done
if grep -o '#include "hpdl/[a-z_]*/' "$root/src/main.cpp" | grep -qv 'hpdl/run/'; then
  say "src/main.cpp: includes more than run/"
fi
[ $bad -eq 0 ] && echo "layering: every include and MPI call within its subsystem's rules"
exit $bad
