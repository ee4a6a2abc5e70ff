# Sourced by the emulated-cluster benchmarks (bench_scaling.sh, validate_predict.sh,
# validate_recommend.sh, reforecast_grid.sh, validate_grid.sh) before they touch anything:
# each numeric knob they read from the environment is checked, so a typo
# (MIN_S=2s, HOSTS="1 2 x") ends the script with one line naming the knob and exit 2, where
# awk or python would have read it as 0 or failed minutes later inside the cluster.
knob_fail() { echo "$(basename "$0"): $1=\"$2\" $3" >&2; exit 2; }
knob_number() {  # NAME VALUE: a decimal number >= 0
  [[ $2 =~ ^([0-9]+(\.[0-9]*)?|\.[0-9]+)$ ]] || knob_fail "$1" "$2" "is not a number >= 0"
}
knob_positive() {  # NAME VALUE: a decimal number > 0
  knob_number "$1" "$2"
  awk -v v="$2" 'BEGIN { exit !(v > 0) }' || knob_fail "$1" "$2" "is not a number > 0"
}
knob_switch() {  # NAME VALUE: 0 (off) or 1 (on)
  [[ $2 =~ ^[01]$ ]] || knob_fail "$1" "$2" "is not 0 or 1"
}
knob_counts() {  # NAME VALUE: one or more whole numbers >= 1, separated by spaces
  [[ $2 =~ ^[[:space:]]*[1-9][0-9]*([[:space:]]+[1-9][0-9]*)*[[:space:]]*$ ]] ||
    knob_fail "$1" "$2" "is not whole numbers >= 1 separated by spaces"
}
knob_count() {  # NAME VALUE: one whole number >= 1
  [[ $2 =~ ^[1-9][0-9]*$ ]] || knob_fail "$1" "$2" "is not a whole number >= 1"
}
