#!/bin/bash
# The executor on its own (corral-exec-run stands in for corrald): every limit enforced,
# not just set; identity and stdio as the user; freeze/thaw/kill; outcomes that survive
# the driver's SIGKILL.
# timeout: 600
. "$CORRAL_TEST_LIB"
run=/usr/libexec/corral/corral-exec-run
[ -x "$run" ] || run=/usr/local/libexec/corral/corral-exec-run
[ -x "$run" ] || fail "corral-exec-run is not installed"
field() { jq -r ".$2" <<<"$1"; }
scope_gone() { ! systemctl is-active -q "corral-job-$1.scope" && [ -z "$(find /sys/fs/cgroup/corral.slice -name "corral-job-$1.scope" 2>/dev/null)" ]; }

log "CPU confinement: a job on CPU 0 never runs on CPU 1"
out=$($run --id 101 --user "$USER_A" --project "$PROJECT_A" --cpus 0 -- python3 -c '
import time
seen = set(); end = time.time() + 2
while time.time() < end:
    seen.add(int(open("/proc/self/stat").read().rsplit(")", 1)[1].split()[36]))
print(open("/proc/self/status").read().split("Cpus_allowed_list:")[1].split()[0], sorted(seen))')
assert_eq "$(field "$out" exit_code)" 0 "exit code of the CPU job"
line=$(journalctl -b -q -o cat CORRAL_JOB_ID=101 | tail -n1)
assert_eq "$line" "0 [0]" "allowed CPUs and CPUs seen by the busy loop"
journalctl -b -q -u corral-job-101.scope -o cat | grep -qx "0 \[0\]" || fail "output not in journalctl -u corral-job-101.scope"
wait_for 10 scope_gone 101 || fail "scope of job 101 left behind"

log "memory nodes: the job is bound to its CPU's node, and its start moves no page between nodes"
# Each run from a scope with a cpuset of its own, as corrald's service is on a machine where
# cpuset is on: the kernel then takes that cgroup's nodes as where the supervisor's pages may
# be. With the job's scope bound (AllowedMemoryNodes=) rather than its leaf, the supervisor's
# joining it moved its pages, its libraries' shared ones included, to the job's node: about
# 400 pages a job in this guest, back and forth between the nodes.
m0=$(awk '$1 == "pgmigrate_success" {print $2}' /proc/vmstat)
for i in 0 1 2 3; do
    c=$((i % 2)) id=$((130 + i))
    n=$(basename /sys/devices/system/cpu/cpu$c/node*); n=${n#node}
    out=$(systemd-run --quiet --scope -p AllowedCPUs=0-1 -- $run --id $id --user "$USER_A" --project "$PROJECT_A" \
        --cpus $c --mem-nodes "$n" -- sh -c 'grep ^Mems_allowed_list /proc/self/status | tr -d "\t";')
    assert_eq "$(field "$out" exit_code)" 0 "exit code of job $id"
    assert_eq "$(journalctl -b -q -o cat CORRAL_JOB_ID=$id | tail -n1)" "Mems_allowed_list:$n" "the memory nodes job $id may use"
done
moved=$(( $(awk '$1 == "pgmigrate_success" {print $2}' /proc/vmstat) - m0 ))
log "pages moved between nodes by four job starts: $moved"
[ "$moved" -lt 200 ] || fail "four job starts moved $moved pages between NUMA nodes"

log "memory: beyond MemoryMax is an OOM kill, recorded; the supervisor survives to say so"
out=$($run --id 102 --user "$USER_A" --project "$PROJECT_A" --mem 64M -- python3 -c '
b = []
while True: b.append(bytearray(8 << 20))') || true
assert_eq "$(field "$out" oom_killed)" true "oom_killed of the job beyond MemoryMax"
assert_eq "$(field "$out" signal)" 9 "the job's terminating signal"
mp=$(field "$out" memory_peak)
[ "$mp" -le $((70 << 20)) ] || fail "memory peak $mp beyond the 64M limit"
systemctl is-system-running -q || [ "$(systemctl is-system-running)" = degraded ] || true
wait_for 10 scope_gone 102 || fail "scope of job 102 left behind"

log "identity: files are the user's, root-only files stay closed"
as_user "$USER_A" rm -f /home/$USER_A/out.txt
out=$($run --id 103 --user "$USER_A" --project "$PROJECT_A" --output /home/$USER_A/out.txt -- sh -c 'id -un; id -gn; grep ^CapEff /proc/self/status; grep ^NoNewPrivs /proc/self/status; echo "$CORRAL_JOB_ID $CORRAL_PROJECT $CORRAL_CPUS"')
assert_eq "$(stat -c %U:%G /home/$USER_A/out.txt)" "$USER_A:$PROJECT_A" "owner of the output file"
assert_eq "$(sed -n 1,2p /home/$USER_A/out.txt | tr '\n' ' ')" "$USER_A $PROJECT_A " "the job's user and group"
grep -qx 'CapEff:.0000000000000000' /home/$USER_A/out.txt || fail "capabilities left: $(cat /home/$USER_A/out.txt)"
grep -qx 'NoNewPrivs:.1' /home/$USER_A/out.txt || fail "no_new_privs not set"
grep -qx '103 physics 0' /home/$USER_A/out.txt || fail "CORRAL_* variables wrong: $(cat /home/$USER_A/out.txt)"
out=$($run --id 104 --user "$USER_A" --input /etc/shadow -- cat) || true
assert_match "$(field "$out" launch_detail)" 'cannot open the input file /etc/shadow: Permission denied' "reading /etc/shadow via stdin"
assert_eq "$(field "$out" launch_error)" 'cannot open the input file: Permission denied' "the public launch error, without the path"
ln -sf /etc/shadow /home/$USER_A/evil
out=$($run --id 105 --user "$USER_A" --output /home/$USER_A/evil -- echo pwned) || true
assert_match "$(field "$out" launch_error)" 'Permission denied' "clobbering /etc/shadow via a symlink"
grep -q pwned /etc/shadow && fail "/etc/shadow was written"

log "freeze: a frozen job's usage_usec does not advance, and it finishes after thaw"
rm -f /tmp/stop-106
$run --id 106 --user "$USER_B" --project "$PROJECT_B" --cpus 1 --freeze-at 4 --thaw-at 10 -- \
    sh -c 'n=0; while [ ! -e /tmp/stop-106 ]; do n=$((n+1)); done; echo finished' > /tmp/106.json &
drv=$!
cg=/sys/fs/cgroup/corral.slice/corral-biology.slice/corral-job-106.scope
wait_for 30 grep -qx 'frozen 1' "$cg/cgroup.events" 2>/dev/null || fail "job 106 never frozen"
assert_eq "$(systemctl show -P FreezerState corral-job-106.scope)" frozen "systemd's FreezerState"
u1=$(sed -n 's/^usage_usec //p' "$cg/cpu.stat"); sleep 2; u2=$(sed -n 's/^usage_usec //p' "$cg/cpu.stat")
assert_eq "$u2" "$u1" "usage_usec while frozen"
wait_for 30 grep -qx 'frozen 0' "$cg/cgroup.events" || fail "job 106 never thawed"
u3=$(sed -n 's/^usage_usec //p' "$cg/cpu.stat"); sleep 1; u4=$(sed -n 's/^usage_usec //p' "$cg/cpu.stat")
[ "$u4" -gt "$u3" ] || fail "usage_usec does not advance after thaw ($u3 -> $u4)"
touch /tmp/stop-106
wait $drv || fail "job 106 failed after thaw: $(cat /tmp/106.json)"
journalctl -b -q -o cat CORRAL_JOB_ID=106 | grep -qx 'finished' || fail "job 106 did not finish its work"
[ "$(jq -r .suspended_usec /tmp/106.json)" -ge 4000000 ] || fail "suspended time not seen by the supervisor: $(cat /tmp/106.json)"

log "kill: a frozen job can be cancelled; its unit and cgroup go away"
out=$($run --id 107 --user "$USER_B" --project "$PROJECT_B" --kill-wait 5 --freeze-at 2 --cancel-at 5 -- sleep 300) || true
assert_eq "$(field "$out" cancelled)" true "cancelled flag of job 107"
assert_eq "$(field "$out" signal)" 15 "signal of the cancelled job"
wait_for 20 scope_gone 107 || fail "scope of job 107 left behind"

log "walltime: the supervisor kills the job at its limit"
out=$($run --id 108 --user "$USER_B" --walltime 2 --kill-wait 2 -- sleep 60) || true
assert_eq "$(field "$out" timed_out)" true "timed_out of job 108"

log "supervision survives the driver's SIGKILL"
rm -f /run/corral-exec-run/results/109.json
$run --id 109 --user "$USER_A" -- sh -c 'sleep 4; exit 7' > /dev/null &
drv=$!
wait_for 30 systemctl is-active -q corral-job-109.scope || fail "job 109 did not start"
kill -9 $drv
wait_for 40 test -f /run/corral-exec-run/results/109.json || fail "no outcome for job 109 after the driver died"
assert_eq "$(jq -r .exit_code /run/corral-exec-run/results/109.json)" 7 "exit code recorded without a driver"
wait_for 10 scope_gone 109 || fail "scope of job 109 left behind"

log "io: an io.max write limit throttles direct I/O (ratio to an unthrottled run)"
chmod 0666 /dev/vdb
t0=$(date +%s%N)
$run --id 110 --user "$USER_A" -- dd if=/dev/zero of=/dev/vdb bs=1M count=16 oflag=direct status=none >/dev/null
t1=$(date +%s%N)
$run --id 111 --user "$USER_A" --io-write-bps /dev/vdb=2M -- dd if=/dev/zero of=/dev/vdb bs=1M count=16 oflag=direct status=none >/dev/null
t2=$(date +%s%N)
free_ms=$(( (t1 - t0) / 1000000 )); thr_ms=$(( (t2 - t1) / 1000000 ))
log "16 MiB direct write: ${free_ms} ms unthrottled, ${thr_ms} ms at 2 MiB/s"
[ "$thr_ms" -ge 6000 ] || fail "throttled write took ${thr_ms} ms, expected >= 6 s at 2 MiB/s"
[ "$thr_ms" -ge $((free_ms * 2)) ] || fail "throttled run not measurably slower (${thr_ms} vs ${free_ms} ms)"

log "a stale failed unit of the same name is reset, and the job starts"
systemd-run --quiet --scope --unit=corral-job-120 -p RuntimeMaxSec=1 sleep 30 || true
wait_for 20 sh -c '[ "$(systemctl show -P ActiveState corral-job-120.scope)" = failed ]' \
    || fail "could not make a failed corral-job-120.scope: $(systemctl show -P ActiveState corral-job-120.scope)"
out=$($run --id 120 --user "$USER_A" -- echo recovered)
assert_eq "$(field "$out" exit_code)" 0 "job 120 after its name was taken by a failed unit"
journalctl -b -q -o cat CORRAL_JOB_ID=120 | grep -qx recovered || fail "job 120 did not run"
