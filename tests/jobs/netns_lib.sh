# Sourced by the emulated-cluster tests: netns_test_setup WORK skips (77) where network
# namespaces cannot be made, starts WORK afresh and enters it, points the harness's state
# into it ($cluster runs scripts/netns_cluster.sh) and takes the cluster down on every exit.
netns_test_setup() {
  work=$1
  cluster="bash $src/scripts/netns_cluster.sh"
  export HPDL_NETNS_STATE=$work/state
  [ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root for network namespaces"; exit 77; }
  if ! ip netns add hpdl-probe 2>/dev/null; then echo "SKIP: cannot create network namespaces here"; exit 77; fi
  ip netns del hpdl-probe
  rm -rf "$work" && mkdir -p "$work" && cd "$work"
  trap '$cluster down >/dev/null 2>&1 || true' EXIT
}
