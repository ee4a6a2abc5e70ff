# Sourced by setup.sh, fuzz.sh and sanitize.sh: a configure or build whose failure stops the
# script with the tool's own error lines (the full log stays in the build folder).
#   cmake_configure NAME DIR [cmake arguments...]
#   cmake_compile NAME DIR [cmake --build arguments...]
cmake_configure() {
  local name=$1 dir=$2
  shift 2
  mkdir -p "$dir"
  if ! cmake "$@" >"$dir/configure.log" 2>&1; then
    cat "$dir/configure.log" >&2
    echo "$name: cmake configure failed (log: $dir/configure.log)" >&2
    exit 1
  fi
}
cmake_compile() {
  local name=$1 dir=$2
  shift 2
  if ! cmake --build "$dir" -j2 "$@" >"$dir/build.log" 2>&1; then
    grep -E -A4 "error|Error [0-9]+|undefined reference|CMake Error" "$dir/build.log" | head -80 >&2
    echo "$name: the build failed (full log: $dir/build.log)" >&2
    exit 1
  fi
}
