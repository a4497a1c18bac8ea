#!/bin/bash
# bench/submit in the guest (tests/vm/run --build-dir build bench-submit): issue 23's
# targets 1, 2 and 5, each against its anchor measured in this same run.
#  1. latency: `corral submit --wait -- /bin/true` p50 vs `systemd-run --scope /bin/true`
#     (CORRAL_BENCH_N runs each, 20 by default);
#  2. throughput: CORRAL_BENCH_E (150) jobs submitted one by one, first submit to the end
#     of `corral wait` on all their ids, vs as many sequential `systemd-run --scope
#     /bin/true`; the same wait once they have ended; CORRAL_BENCH_A (1,000) tasks as one
#     array under `submit --wait`, vs the same anchor;
#  5. durable submits: one and eight clients vs the raw single-row commit rate of the same
#     store settings on the same disk, in five rounds of CORRAL_BENCH_Q / 5 (2,000 in
#     all, as bench/daemon), each a palindrome: raw, one client, eight, one, raw.
# With CORRAL_BENCH_PROFILE=1, then where one submit's time goes (corrald's debug log,
# an ftrace of one job, strace when the build directory holds one under prof/).
# Prints figures; never fails on time.
# timeout: 2400
. "$CORRAL_TEST_LIB"
. "$(dirname "$0")/bench-lib.sh"
N=${CORRAL_BENCH_N:-20}
E=${CORRAL_BENCH_E:-150}
A=${CORRAL_BENCH_A:-1000}
Q=${CORRAL_BENCH_Q:-2000}
! bench_quick || { A=${CORRAL_BENCH_A:-300}; Q=${CORRAL_BENCH_Q:-1000}; }
db=/var/lib/corral/corral.db
systemctl start corrald.socket
corral info >/dev/null
ms() { awk -v ns="$1" 'BEGIN {printf "%.1f", ns / 1e6}'; }
p50() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", a / b}'; }

# The job really is in its own scope, with its cpuset and memory.max, as its user.
# (The job runs in the scope's leaf "job"; its limits are the scope's.)
as_user "$USER_A" corral submit --parsable --wait --mem 64M -- sh -c 'cg=$(cut -d: -f3 /proc/self/cgroup); cg=${cg%/job}; echo "$cg $(cat /sys/fs/cgroup$cg/cpuset.cpus) $(cat /sys/fs/cgroup$cg/memory.max) $(id -un)" > /tmp/bench-where' >/dev/null || true
log "a job's own place: $(cat /tmp/bench-where)"
assert_match "$(cat /tmp/bench-where)" "corral-job-[0-9]+\.scope [0-9].* [0-9]+ $USER_A\$"

# 1. Latency. Each side is timed in its own shell, as one types it there: root's for
# systemd-run (only root may start scopes of the system manager), the user's for corral,
# entered once per block, not through a setpriv per run (whose exec and NSS lookups took a
# fifth of what the earlier harness charged to corral). Blocks of 5 alternate so that both
# see the same guest.
time_runs() { # N CMD...: each run's nanoseconds, one per line
    local n=$1 t0 t1; shift
    # bash's own clock (µs): a `date` around each run would add its fork and exec to
    # every figure, on both sides, tens of ms under emulation.
    for _ in $(seq "$n"); do t0=${EPOCHREALTIME/[.,]/}; "$@" >/dev/null; t1=${EPOCHREALTIME/[.,]/}; echo $(((t1 - t0) * 1000)); done
}
bare=() ours=()
for _ in $(seq $(((N + 4) / 5))); do
    bare+=($(time_runs 5 systemd-run --quiet --scope /bin/true))
    ours+=($(as_user "$USER_A" bash -c "$(declare -f time_runs); time_runs 5 corral submit --parsable --wait --mem 64M -- /bin/true"))
done
b=$(printf '%s\n' "${bare[@]}" | p50) o=$(printf '%s\n' "${ours[@]}" | p50)
echo "target 1, launch latency p50 of ${#ours[@]}: corral submit --wait $(ms "$o") ms, systemd-run --scope $(ms "$b") ms, ratio $(ratio "$o" "$b") (target <= 1.05)"
figure "submit --wait /bin/true p50, ms (anchor: systemd-run --scope)" "$(ms "$o")" "$(ms "$b")" "$(ratio "$o" "$b")"
# What the earlier harness added to each corral run: a setpriv into the user.
w=() ; for _ in $(seq 10); do t0=${EPOCHREALTIME/[.,]/}; as_user "$USER_A" /bin/true; t1=${EPOCHREALTIME/[.,]/}; w+=($(((t1 - t0) * 1000))); done
echo "  (setpriv --reuid --init-groups into the user, which the earlier harness ran per corral run: p50 $(ms "$(printf '%s\n' "${w[@]}" | p50)") ms)"

# 2. Throughput, one submit at a time (from the user's shell, entered once), first submit
# to last end as a user sees it: `corral wait` on every id the submits printed. Then the
# same wait again once every job has ended (what the wait itself costs, apart from the
# passes while the submits stream in), and A trivial jobs as one array under
# `submit --wait`. Each beside E sequential `systemd-run --scope` of this run.
c0=$(cpu_snap)
t0=$(date +%s%N)
for i in $(seq "$E"); do systemd-run --quiet --scope /bin/true; done
t1=$(date +%s%N)
echo "  systemd-run --scope, $(cpu_split "$c0" "$(cpu_snap)" "$E")"
c0=$(cpu_snap)
read -r tsub tend first ids < <(as_user "$USER_A" bash -c "ids=()
    for i in \$(seq $E); do ids+=(\$(corral submit --parsable --mem 64M -- /bin/true)); done
    t=\${EPOCHREALTIME/[.,]/}; corral wait \${ids[*]} 2>/dev/null
    echo \$t \${EPOCHREALTIME/[.,]/} \${ids[0]} \${ids[*]}")
t2=$((tend * 1000))
last=$((first + E - 1))
br=$(awk -v n="$E" -v ns=$((t1 - t0)) 'BEGIN {printf "%.2f", n / (ns / 1e9)}')
or=$(awk -v n="$E" -v ns=$((t2 - t1)) 'BEGIN {printf "%.2f", n / (ns / 1e9)}')
echo "target 2, $E jobs submitted one by one, then corral wait on all: corral $or jobs/s, systemd-run --scope $br jobs/s, ratio $(ratio "$or" "$br") (target >= 1.2)"
echo "  (the submits took $(ms $(((tsub * 1000) - t1))) ms, the wait after the last submit $(ms $(((tend - tsub) * 1000))) ms)"
echo "  corral, $(cpu_split "$c0" "$(cpu_snap)" "$E")"
figure "$E jobs one by one + corral wait, jobs/s (anchor: systemd-run --scope)" "$or" "$br" "$(ratio "$or" "$br")"
failed=$(sqlite3 $db "select count(*) from jobs where id between $first and $last and state != 'COMPLETED'")
assert_eq "$failed" 0 "jobs of the throughput run that did not complete"
w=$(as_user "$USER_A" bash -c "t=\${EPOCHREALTIME/[.,]/}; corral wait $ids 2>/dev/null; echo \$((\${EPOCHREALTIME/[.,]/} - t))")
echo "  corral wait on the $E ended jobs again: $(ms $((w * 1000))) ms"
figure "corral wait on $E ended jobs, ms" "$(ms $((w * 1000)))"
c0=$(cpu_snap)
t3=$(date +%s%N)
af=$(as_user "$USER_A" corral submit --parsable --wait --mem 64M --array 1-"$A" -- /bin/true 2>/dev/null)
t4=$(date +%s%N)
echo "  the array, $(cpu_split "$c0" "$(cpu_snap)" "$A")"
ar=$(awk -v n="$A" -v ns=$((t4 - t3)) 'BEGIN {printf "%.2f", n / (ns / 1e9)}')
echo "target 2, an array of $A tasks under submit --wait: corral $ar jobs/s, systemd-run --scope $br jobs/s, ratio $(ratio "$ar" "$br") (target >= 2)"
figure "array of $A under submit --wait, jobs/s (anchor: systemd-run --scope)" "$ar" "$br" "$(ratio "$ar" "$br")"
failed=$(sqlite3 $db "select count(*) from jobs where array_job_id = $af and state != 'COMPLETED'")
assert_eq "$failed" 0 "array tasks that did not complete"

# 5. Durable submits against the raw floor (as bench/daemon measures them): five rounds
# of Q/5, each a palindrome of raw commits, one client's, eight clients' and one client's
# submits and raw commits again.
mapfile -t rates < <(python3 "$(dirname "$0")/bench-daemon.py" rate $((Q / 5)) "$(systemctl show -P MainPID corrald)" 5 | sed 's/.*: //')
echo "target 5, durable submits/s (medians of 5 rounds): raw single-row commits ${rates[0]}; 1 client ${rates[1]} (${rates[3]}x raw, target >= 0.90); 8 clients ${rates[2]} (${rates[4]}x one client, target >= 3)"
figure "durable submits/s, 1 client (anchor: raw commits)" "${rates[1]}" "${rates[0]}" "${rates[3]}"
figure "durable submits/s, 8 clients (anchor: 1 client)" "${rates[2]}" "${rates[1]}" "${rates[4]}"
corral cancel --user root >/dev/null 2>&1 || true

[ "${CORRAL_BENCH_PROFILE:-0}" = 1 ] || exit 0
# (Every job above with --mem, so that its scope has a memory.max, as the issue asks.)
# Where the time goes: one submit --wait under corrald's debug log, then under strace.
prof=$CORRAL_TEST_OUT/logs
mkdir -p "$prof"
mkdir -p /run/systemd/system/corrald.service.d
printf '[Service]\nEnvironment=CORRAL_LOG_LEVEL=debug\n' > /run/systemd/system/corrald.service.d/debug.conf
systemctl daemon-reload; systemctl restart corrald.service; corral info >/dev/null
since=$(date '+%Y-%m-%d %H:%M:%S')
for i in 1 2 3; do
    t0=$(date +%s%N); as_user "$USER_A" corral submit --parsable --wait -- /bin/true; t1=$(date +%s%N)
    echo "debug-log run $i: $(ms $((t1 - t0))) ms"
done
journalctl --no-pager -o short-precise --since "$since" > "$prof/prof-journal.txt"
rm -r /run/systemd/system/corrald.service.d; systemctl daemon-reload; systemctl restart corrald.service; corral info >/dev/null
# The kernel's view of one submit --wait and one systemd-run --scope: exec, fork and exit,
# cgroup mkdir and attach, fdatasync, the sockets' sends (tracefs events: next to no
# overhead, where strace multiplies every syscall's cost under emulation). It showed
# the controllers toggled per job, the job's migration and the reply before the commit.
T=/sys/kernel/tracing
if [ -d $T/events ] || mount -t tracefs nodev $T 2>/dev/null; then
    echo 0 > $T/tracing_on; echo > $T/trace; echo 8192 > $T/buffer_size_kb
    for e in sched/sched_process_exec sched/sched_process_fork sched/sched_process_exit cgroup/cgroup_mkdir \
             cgroup/cgroup_rmdir cgroup/cgroup_attach_task syscalls/sys_enter_fdatasync syscalls/sys_exit_fdatasync \
             syscalls/sys_enter_sendto syscalls/sys_enter_sendmsg syscalls/sys_enter_clone3 syscalls/sys_enter_connect; do
        echo 1 > $T/events/$e/enable 2>/dev/null || echo "no trace event $e"
    done
    as_user "$USER_A" corral submit --parsable --wait --mem 64M -- /bin/true >/dev/null
    echo 1 > $T/tracing_on
    # As target 1 times them: three in a row in the user's shell (its exec and exit in
    # the trace; the setpriv before the first is not counted), then three systemd-run.
    echo "corral submit --wait --mem 64M, three in one shell (through setpriv)" > $T/trace_marker
    as_user "$USER_A" bash -c 'for i in 1 2 3; do corral submit --parsable --wait --mem 64M -- /bin/true; done' >/dev/null
    echo "systemd-run --scope, three" > $T/trace_marker
    for i in 1 2 3; do systemd-run --quiet --scope /bin/true; done
    echo 0 > $T/tracing_on
    cp $T/trace "$prof/prof-ftrace.txt"
    echo 0 > $T/events/enable
else
    echo "no tracefs: no prof-ftrace.txt"
fi
st=$CORRAL_BUILDDIR/prof/strace
if [ -x "$st" ]; then
    export LD_LIBRARY_PATH=$CORRAL_BUILDDIR/prof
    pid=$(systemctl show -P MainPID corrald)
    "$st" -f -ttt -T -s 120 -o "$prof/prof-strace-corrald.txt" -p "$pid" & sp=$!
    sleep 2
    t0=$(date +%s%N)
    "$st" -f -ttt -T -s 80 -o "$prof/prof-strace-cli.txt" setpriv --reuid="$USER_A" --regid="$(id -g "$USER_A")" --init-groups --reset-env -- corral submit --parsable --wait -- /bin/true >/dev/null
    t1=$(date +%s%N)
    sleep 1; kill "$sp"; wait "$sp" || true
    echo "under strace: $(ms $((t1 - t0))) ms"
    "$st" -f -c -o "$prof/prof-strace-c-corrald.txt" -p "$(systemctl show -P MainPID corrald)" & sp=$!
    sleep 2
    for i in $(seq 10); do as_user "$USER_A" corral submit --parsable --wait -- /bin/true; done
    sleep 1; kill -INT "$sp"; wait "$sp" || true
    "$st" -f -c -o "$prof/prof-strace-c-cli.txt" setpriv --reuid="$USER_A" --regid="$(id -g "$USER_A")" --init-groups --reset-env -- corral submit --parsable --wait -- /bin/true >/dev/null
    "$st" -f -c -o "$prof/prof-strace-c-sdrun.txt" systemd-run --quiet --scope /bin/true
    unset LD_LIBRARY_PATH
fi
# Where an array's CPU goes, by process and function: perf (the host's, with its libraries,
# in the build directory's prof/, as strace) over the whole guest while an array of A runs.
# Read it on the host with the unstripped build: `perf report -i prof-perf.data --sort
# comm,dso,sym --symfs DIR`, DIR holding build/'s binaries at their installed paths.
pf=$CORRAL_BUILDDIR/prof/perf
if [ -x "$pf" ]; then
    LD_LIBRARY_PATH=$CORRAL_BUILDDIR/prof "$pf" record -a -g -F 499 -o /tmp/prof-perf.data >/dev/null 2>"$prof/prof-perf.err" & pp=$!
    sleep 2
    c0=$(cpu_snap)
    as_user "$USER_A" corral submit --parsable --wait --mem 64M --array 1-"$A" -- /bin/true >/dev/null 2>&1 || true
    echo "  under perf, the array, $(cpu_split "$c0" "$(cpu_snap)" "$A")"
    kill -INT "$pp"; wait "$pp" || true
    cp /tmp/prof-perf.data "$prof/prof-perf.data"
    LD_LIBRARY_PATH=$CORRAL_BUILDDIR/prof "$pf" report -i /tmp/prof-perf.data --sort comm,dso --stdio 2>/dev/null | head -60 > "$prof/prof-perf-dso.txt" || true
    LD_LIBRARY_PATH=$CORRAL_BUILDDIR/prof "$pf" report -i /tmp/prof-perf.data --no-children --sort comm,sym --stdio -g caller,0.5,callee --percent-limit 1 2>/dev/null | head -400 > "$prof/prof-perf-sym.txt" || true
fi
