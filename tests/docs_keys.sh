#!/usr/bin/env bash
# The config reference cannot drift from the parser: every key that the config reader
# (src/config/config.cpp) or the model builder (src/builder/builder.cpp) asks a TOML table
# for must be named in docs/configuration.md's key block, and every [section] it reads must
# head a line there. With --self-test, a key planted in a copy of the parser must be found
# missing (the check can fail).
# Usage: docs_keys.sh SOURCE_DIR [--self-test]
set -eu
src=$1
doc=$src/docs/configuration.md
keys() { grep -oh 'get_[a-z_]*("[a-z_0-9]*"' "$@" | sed 's/.*("\(.*\)"/\1/' | sort -u; }
check() {  # PARSER_FILES... -> prints the keys missing from the doc's key block
  local block
  block=$(sed -n '/^```toml/,/^```/p' "$doc")
  for k in $(keys "$@"); do
    printf '%s\n' "$block" | grep -Eq "(^|[^a-z_0-9])$k([^a-z_0-9]|$)" || echo "$k"
  done
}
parsers=("$src/src/config/config.cpp" "$src/src/builder/builder.cpp")
if [ "${2:-}" = --self-test ]; then
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  cp "${parsers[0]}" "$tmp/config.cpp"
  echo 'void planted(TableReader& r) { r.get_int("planted_key_xyz", 0, 0, 1); }' >>"$tmp/config.cpp"
  missing=$(check "$tmp/config.cpp" "${parsers[1]}")
  printf '%s\n' "$missing" | grep -qx planted_key_xyz ||
    { echo "self-test: the planted key was not found missing ($missing)"; exit 1; }
  echo "self-test: a key the parser reads and the reference does not name is found"
  exit 0
fi
missing=$(check "${parsers[@]}")
if [ -n "$missing" ]; then
  echo "docs/configuration.md does not name these keys the parser reads:" $missing
  exit 1
fi
echo "every one of the $(keys "${parsers[@]}" | wc -l) keys the parser reads is in docs/configuration.md"
