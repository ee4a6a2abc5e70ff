#!/usr/bin/env bash
# The config reference cannot drift from the parser: every key that the config reader
# (src/config/read_sections.cpp) or the model builder (src/builder/builder.cpp) asks a TOML table
# for must be named in docs/configuration.md's key block, and every [section] it reads must
# head a line there. And the other way: every key the block documents must be one the parser
# reads or a layer type the builder knows, so a renamed or removed key cannot linger. In the
# block a documented key is a snake_case word or a word followed by " (" (its default), so
# prose there avoids "word (". With --self-test, a key planted in a copy of the parser must be
# found undocumented, and a key planted in a copy of the reference must be found unknown.
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
parsers=("$src/src/config/read_sections.cpp" "$src/src/builder/builder.cpp")
# The keys a reference documents (DOC): snake_case words and words before " (", outside
# quoted values and page paths.
documented() {
  sed -n '/^```toml/,/^```/p' "$1" | sed -E 's/"[^"]*"//g; s#[A-Za-z_./]+\.md##g' |
    grep -oE '\b[a-z][a-z0-9]*_[a-z0-9_]*\b|\b[a-z][a-z0-9_]* \(' | sed 's/ ($//' | sort -u
}
layer_types() { grep -oE '^\s*\{"[a-z_0-9]+",' "$src/src/builder/builder.cpp" | grep -oE '[a-z_0-9]+'; }
unknown() {  # DOC -> prints the documented keys that neither the parser nor the builder knows
  comm -23 <(documented "$1") <( (keys "${parsers[@]}"; layer_types) | sort -u)
}
if [ "${2:-}" = --self-test ]; then
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  cp "${parsers[0]}" "$tmp/config.cpp"
  echo 'void planted(TableReader& r) { r.get_int("planted_key_xyz", 0, 0, 1); }' >>"$tmp/config.cpp"
  missing=$(check "$tmp/config.cpp" "${parsers[1]}")
  printf '%s\n' "$missing" | grep -qx planted_key_xyz ||
    { echo "self-test: the planted key was not found missing ($missing)"; exit 1; }
  echo "self-test: a key the parser reads and the reference does not name is found"
  cp "$doc" "$tmp/configuration.md"
  sed -i 's/^\[checkpoint\]   # every_steps/[checkpoint]   # every_epochs_planted (0), every_steps/' "$tmp/configuration.md"
  extra=$(unknown "$tmp/configuration.md")
  printf '%s\n' "$extra" | grep -qx every_epochs_planted ||
    { echo "self-test: the planted documented key was not found unknown ($extra)"; exit 1; }
  echo "self-test: a key the reference documents and the parser does not read is found"
  exit 0
fi
missing=$(check "${parsers[@]}")
if [ -n "$missing" ]; then
  echo "docs/configuration.md does not name these keys the parser reads:" $missing
  exit 1
fi
extra=$(unknown "$doc")
if [ -n "$extra" ]; then
  echo "docs/configuration.md documents keys that the parser does not read:" $extra
  exit 1
fi
echo "every one of the $(keys "${parsers[@]}" | wc -l) keys the parser reads is in docs/configuration.md, and each of its $(documented "$doc" | wc -l) documented keys is read"

