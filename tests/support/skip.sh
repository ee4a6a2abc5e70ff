# Sourced by the shell tests: `skip REASON` ends a test that cannot run here with one line
# saying why, exit 77 (CTest's SKIP_RETURN_CODE). Under CI=true nothing may be skipped
# silently: the same call fails the test, so a missing service or file is a red CI run.
skip() {
  if [ "${CI:-}" = true ]; then
    echo "FAIL: $* (CI=true: this test must run, not skip)"
    exit 1
  fi
  echo "SKIP: $*"
  exit 77
}
