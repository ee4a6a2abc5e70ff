#!/usr/bin/env bash
# The formatting, checked on the sources: every C++/CUDA source and header under include/,
# src/, tests/, profiling/ and fuzz/ is as clang-format (the repository's .clang-format)
# writes it. One clang-format diagnostic per drift, exit 1 on any.
#   format.sh SOURCE_DIR          check a source tree
#   format.sh --self-test SRC     copy SRC, un-format one file, and require the check to find it
set -u
if [ "${1:-}" = "--self-test" ]; then
  src=$2 tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  cp -r "$src/.clang-format" "$src/include" "$tmp/"
  sed -i 's/^namespace hpdl {$/namespace   hpdl   {/' "$tmp/include/hpdl/core/error.hpp"
  out=$(bash "$0" "$tmp" 2>&1); rc=$?
  [ $rc -ne 0 ] || { echo "FAIL: the check passed a tree with an un-formatted file"; exit 1; }
  grep -q "include/hpdl/core/error.hpp" <<<"$out" || { echo "FAIL: the un-formatted file was not named"; exit 1; }
  echo "PASS: the un-formatted file was found"
  exit 0
fi
root=$1
command -v clang-format >/dev/null || { echo "format: clang-format not found (scripts/setup.sh installs it)"; exit 1; }
mapfile -t files < <(cd "$root" && find include src tests profiling fuzz -type f \
  \( -name '*.cpp' -o -name '*.hpp' -o -name '*.cu' -o -name '*.cuh' -o -name '*.h' \) 2>/dev/null | sort)
[ ${#files[@]} -gt 0 ] || { echo "format: no sources under $root"; exit 1; }
cd "$root" && clang-format --dry-run --Werror "${files[@]}" || exit 1
echo "format: ${#files[@]} files as clang-format writes them"
