# A CPU budget for a group of processes: a cgroup with a CPU quota, cgroup v1's cpu
# hierarchy (cpu.cfs_quota_us over cpu.cfs_period_us) where it is mounted, else v2's
# cpu.max. Sourced (not run) by scripts/netns_cluster.sh (one budget per emulated host) and
# profiling/bench_stop.sh (a slow host). A process joins a budget by writing its pid into
# BUDGET/cgroup.procs; its children inherit it.

# The hierarchy budgets are made in, or nothing where this machine has no cpu controller.
cpu_budget_root() {
  if [ -d /sys/fs/cgroup/cpu ] && [ -f /sys/fs/cgroup/cpu/cgroup.procs ]; then echo /sys/fs/cgroup/cpu
  elif [ -f /sys/fs/cgroup/cgroup.controllers ]; then echo /sys/fs/cgroup
  else echo ""; fi
}

# cpu_budget_make NAME CPUS PERIOD_US: creates (or resets) the budget NAME of CPUS cores per
# PERIOD_US microseconds and prints its path; status 1 where there is no cpu controller.
cpu_budget_make() {
  local name=$1 cpus=$2 period=$3 root cg quota
  root=$(cpu_budget_root)
  [ -n "$root" ] || return 1
  cg=$root/$name
  quota=$(awk -v c="$cpus" -v p="$period" 'BEGIN { printf "%d", c * p }')
  mkdir -p "$cg" || return 1
  if [ "$root" = /sys/fs/cgroup/cpu ]; then
    echo "$period" >"$cg/cpu.cfs_period_us" && echo "$quota" >"$cg/cpu.cfs_quota_us" || return 1
  else
    grep -qw cpu "$root/cgroup.subtree_control" || echo +cpu >"$root/cgroup.subtree_control" || return 1
    echo "$quota $period" >"$cg/cpu.max" || return 1
  fi
  echo "$cg"
}

# cpu_budget_make_idle NAME: creates (or resets) a group NAME that gets only the CPU no other
# group wants (the least weight, and cgroup.idle where the kernel has it: the group as a
# whole is of the idle scheduling class) and prints its path; status 1 where there is no
# cpu controller. (A SCHED_IDLE task outside it is not enough: beside a budget's group it
# took half a core from that group's busy rank.)
cpu_budget_make_idle() {
  local name=$1 root cg
  root=$(cpu_budget_root)
  [ -n "$root" ] || return 1
  cg=$root/$name
  mkdir -p "$cg" || return 1
  if [ "$root" = /sys/fs/cgroup/cpu ]; then
    echo 2 >"$cg/cpu.shares" || return 1
  else
    grep -qw cpu "$root/cgroup.subtree_control" || echo +cpu >"$root/cgroup.subtree_control" || return 1
    echo 1 >"$cg/cpu.weight" || return 1
  fi
  [ ! -f "$cg/cpu.idle" ] || echo 1 >"$cg/cpu.idle" || return 1
  echo "$cg"
}

# cpu_budget_remove BUDGET: its processes go back to the parent, then it is removed.
cpu_budget_remove() {
  local cg=$1 pid
  for pid in $(cat "$cg/cgroup.procs" 2>/dev/null); do echo "$pid" >"$(dirname "$cg")/cgroup.procs" 2>/dev/null || true; done
  rmdir "$cg" 2>/dev/null || true
}
