# Sourced by the tests of the repository's scripts' refusals (gpu_scripts_refuse.sh,
# bench_knobs_refuse.sh): `expect REGEX CMD...` passes where CMD exits 2 within 30 s with
# one stderr line matching REGEX, and counts a failure in $fails otherwise.
fails=0
expect() {
  local regex=$1 err rc
  shift
  err=$(timeout 30 "$@" 2>&1 >/dev/null)
  rc=$?
  if [ $rc -ne 2 ] || [ "$(printf '%s\n' "$err" | wc -l)" -ne 1 ] || ! grep -Eq -- "$regex" <<<"$err"; then
    echo "FAIL: $* -> exit $rc: $err"
    fails=$((fails + 1))
  else
    echo "ok: $* -> $err"
  fi
}
