# Sourced by the benchmarks (tests/integration/bench-*.sh) after lib.sh: how a figure is
# printed so that bench-all can collect it. One line per figure, tab-separated:
#   FIGURE <what> <value> <anchor> <ratio>
# (anchor and ratio "-" where a figure has none). The human-readable lines stay as they were.
figure() {
    printf 'FIGURE\t%s\t%s\t%s\t%s\n' "$1" "$2" "${3:--}" "${4:--}"
}
# CORRAL_BENCH_QUICK=1 (bench/all's default): each benchmark's smaller sizes, so that the
# whole set fits one guest boot under TCG. A size set in the environment wins.
bench_quick() { [ "${CORRAL_BENCH_QUICK:-0}" = 1 ]; }
# Where the machine's CPU went between two snapshots: `a=$(cpu_snap)`, the work,
# `cpu_split "$a" "$(cpu_snap)" N` prints each part's CPU per item of N in ms, and the
# share of the CPUs left idle. Parts: PID 1, corrald, the jobs' slice (their supervisors
# included), the journal, the bus, the rest of system.slice, user.slice (the shells and
# clients), and what no cgroup below the root holds (the kernel's own threads, interrupts).
cpu_snap() {
    local c=/sys/fs/cgroup k p
    for p in init.scope system.slice/corrald.service corral.slice \
             system.slice/systemd-journald.service system.slice/dbus.service system.slice user.slice; do
        k=${p##*/}
        [ -r "$c/$p/cpu.stat" ] && awk -v k="$k" '$1 == "usage_usec" {print k, $2}' "$c/$p/cpu.stat" || echo "$k 0"
    done
    # Pages the kernel moved between NUMA nodes (a cpuset's memory_migrate on attach).
    awk '$1 == "pgmigrate_success" {print "migrated", $2}' /proc/vmstat
    # /proc/stat in USER_HZ ticks -> µs; all CPUs' busy and idle time.
    awk -v hz="$(getconf CLK_TCK)" '$1 == "cpu" {
        busy = $2 + $3 + $4 + $7 + $8 + $9; idle = $5 + $6
        printf "busy %d\nidle %d\n", busy * 1e6 / hz, idle * 1e6 / hz }' /proc/stat
}
cpu_split() { # BEFORE AFTER N
    awk -v n="$3" 'NR == FNR {a[$1] = $2; next} {d[$1] = $2 - a[$1]}
        END {
            sys = d["system.slice"] - d["corrald.service"] - d["systemd-journald.service"] - d["dbus.service"]
            cg = d["init.scope"] + d["system.slice"] + d["corral.slice"] + d["user.slice"]
            printf "CPU per item in ms: PID 1 %.1f, corrald %.1f, jobs %.1f, journald %.1f, dbus %.1f, other services %.1f, user.slice %.1f, outside cgroups %.1f; all %.1f; idle %.0f %%; pages migrated between nodes %.1f\n",
                d["init.scope"] / n / 1e3, d["corrald.service"] / n / 1e3, d["corral.slice"] / n / 1e3,
                d["systemd-journald.service"] / n / 1e3, d["dbus.service"] / n / 1e3, sys / n / 1e3,
                d["user.slice"] / n / 1e3, (d["busy"] - cg) / n / 1e3, d["busy"] / n / 1e3,
                100 * d["idle"] / (d["idle"] + d["busy"]), d["migrated"] / n
        }' <(printf '%s\n' "$1") <(printf '%s\n' "$2")
}
