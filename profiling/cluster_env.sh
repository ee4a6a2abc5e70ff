# Sourced by the emulated-cluster benchmarks (validate_predict.sh, bench_scaling.sh), run
# from the repository root: builds hpdl if needed, makes a scratch folder $work (argument:
# its name prefix) holding the cluster harness's state, sets $cluster
# (scripts/netns_cluster.sh) and takes the cluster down and the folder away on every exit.
[ -x build/hpdl ] || bash scripts/setup.sh >/dev/null
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
work=$(mktemp -d "/tmp/$1.XXXXXX")
export HPDL_NETNS_STATE=$work/state
cluster="bash scripts/netns_cluster.sh"
trap '$cluster down >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
