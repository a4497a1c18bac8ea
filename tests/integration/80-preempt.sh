#!/bin/bash
# Preemption by suspension: an express job arrives while a normal job holds every CPU.
# The normal job's scope is frozen (cgroup.events "frozen 1", its cpu.stat usage_usec
# stops), corral resume cannot thaw it, corral why names the express job, the express job
# runs; then the scheduler thaws the normal job and it completes although its run with
# the suspension outlasted its walltime (the clock stood still), charged for its running
# time only. A suspended job whose CPU is taken resumes on another one that frees. With
# ReclaimSuspended=yes and swap (the scratch disk made swap for the test), the frozen
# job's memory.current drops. Express is not everyone's: bob is refused until the
# administrator adds him to the corral-express group, as corral.conf(5) says to.
# timeout: 600
. "$CORRAL_TEST_LIB"
dropin_dir=/etc/corral/corral.conf.d
dropin=$dropin_dir/80-preempt.conf
swapdev=
added_to_group=
mkdir -p "$dropin_dir"
cleanup() {
    corral cancel -u "$USER_A" >/dev/null 2>&1 || true
    corral cancel -u "$USER_B" >/dev/null 2>&1 || true
    wait_for 60 sh -c '[ "$(corral queue --json -t RUNNING,SUSPENDED 2>/dev/null | jq ".jobs | length")" = 0 ]' || true
    [ -z "$swapdev" ] || swapoff "$swapdev" 2>/dev/null || true
    rm -f "$dropin"
    [ -z "$added_to_group" ] || gpasswd -d "$USER_B" corral-express >/dev/null 2>&1 || true
    corral reload >/dev/null 2>&1 || true
}
trap cleanup EXIT
systemctl start corrald.socket
state() { corral show --json "$1" | jq -r .job.state; }
is_state() { [ "$(state "$1")" = "$2" ]; }
# A job's cgroup, where the kernel keeps its freezer state and cpuset. systemd's
# ControlGroup= names it; when systemd 252 reports none for a scope that was moved while
# frozen and then thawed (seen in the guest: the scope runs on, its cgroup in place), the
# path corrald gave it is read instead, and the test says so.
job_cgroup() {
    local cg
    cg=$(systemctl show -P ControlGroup "corral-job-$1.scope")
    if [ -z "$cg" ] && systemctl -q is-active "corral-job-$1.scope"; then
        cg=/corral.slice/corral-$(corral show --json "$1" | jq -r .job.project).slice/corral-job-$1.scope
        echo "# corral-job-$1.scope is active but systemd names no ControlGroup for it: reading $cg" >&2
    fi
    echo "/sys/fs/cgroup$cg"
}
frozen() { grep -qx "frozen $2" "$(job_cgroup "$1")/cgroup.events"; }
usage_usec() { awk '$1 == "usage_usec" { print $2 }' "$(job_cgroup "$1")/cpu.stat"; }
ncpu=$(nproc)

# The built-in queues (express preempts normal); a suspension may stretch the normal
# job's 40 s by the express job's 60 s: xf = (40 + 60) / 40 = 2.5.
cat >"$dropin" <<EOF
[Manager]
MaxXFactor=3
EOF
corral reload
work=$(as_user "$USER_A" mktemp -d /tmp/preempt.XXXXXX)
work_b=$(as_user "$USER_B" mktemp -d /tmp/preempt.XXXXXX)

# Express out of the box: the queue in effect says who may use it, and bob, in no such
# group, is refused by name. The package's postinst creates the group; an installation
# from the build tree (meson install) has none, so the test makes it as the postinst does.
if ! getent group corral-express >/dev/null; then
    log "no corral-express group (not installed from the package): creating it as the postinst would"
    groupadd --system corral-express
fi
assert_match "$(corral config check 2>&1)" 'express +Priority=2 ChargeFactor=3 Preempts=normal AllowGroups=corral-express \[built-in\]' \
    "corral config check shows express open to corral-express only"
if out=$(as_user "$USER_B" corral submit --parsable -D "$work_b" -q express -n 1 --time 1:00 -- true 2>&1); then
    fail "bob, in no express group, submitted to express: job $out"
fi
assert_match "$out" 'queue express is open only to members of the groups corral-express' "the refusal names queue and group"
assert_match "$out" 'gpasswd -a USER corral-express' "the refusal says how an administrator opens it"
# What an administrator does: bob joins the group (effective on his next command).
gpasswd -a "$USER_B" corral-express >/dev/null
added_to_group=1

# The normal job: 15 s of half-second sleeps (each frozen sleep costs at most its own
# half second) with a CPU burner beside them, on every CPU, walltime 40 s.
a=$(as_user "$USER_A" corral submit --parsable -D "$work" -q normal -n "$ncpu" --time 0:40 -- \
    sh -c 'yes >/dev/null & for i in $(seq 30); do sleep 0.5; done; kill $!')
wait_for 60 is_state "$a" RUNNING || fail "job $a: $(state "$a")"
wait_for 30 frozen "$a" 0 || fail "job $a has no scope"
sleep 2

b=$(as_user "$USER_B" corral submit --parsable -D "$work_b" -q express -n 1 --time 1:00 -- sleep 30)
wait_for 60 is_state "$a" SUSPENDED || fail "job $a was not suspended for express job $b: $(state "$a"), $(state "$b")"
wait_for 30 frozen "$a" 1 || fail "job $a's scope is not frozen: $(cat "$(job_cgroup "$a")/cgroup.events")"
t_frozen=$(date +%s)
wait_for 60 is_state "$b" RUNNING || fail "express job $b did not start: $(state "$b")"
assert_eq "$(corral show --json "$a" | jq -r .job.reason)" Preempted "job $a's reason"
u1=$(usage_usec "$a")
sleep 3
u2=$(usage_usec "$a")
log "job $a frozen: usage_usec $u1 then $u2 three seconds later"
assert_eq "$u2" "$u1" "a frozen job's CPU time stands still"

out=$(corral resume "$a" 2>&1) && fail "corral resume thawed the scheduler's suspension: $out"
assert_match "$out" 'scheduler suspended' "corral resume is refused, and says why"
assert_match "$(corral why "$a")" "suspended it at .* to let job $b" "corral why names the preemptor"
log "corrald restarted while job $a is preempted: the preemptor is stored"
systemctl restart corrald
assert_eq "$(state "$a")" SUSPENDED "job $a after corrald's restart"
assert_match "$(corral why "$a")" "suspended it at .* to let job $b" "corral why names the preemptor after a restart"

as_user "$USER_B" corral wait "$b" >/dev/null || fail "express job $b: $(state "$b")"
wait_for 60 is_state "$a" RUNNING || fail "job $a was not resumed after job $b: $(state "$a")"
t_thawed=$(date +%s)
wait_for 30 frozen "$a" 0 || fail "job $a's scope is still frozen"
log "job $a suspended for about $((t_thawed - t_frozen)) s"
as_user "$USER_A" corral wait "$a" >/dev/null || fail "job $a after its suspension: $(state "$a") $(corral show --json "$a" | jq -r .job.reason)"

json=$(corral show --json "$a")
start=$(jq -r .job.start_time <<<"$json")
end=$(jq -r .job.end_time <<<"$json")
run=$(jq -r '.job.charge.run_usec / 1000000 | floor' <<<"$json")
log "job $a: from start to end $((end - start)) s, charged for $run s running (walltime 40 s)"
[ $((end - start)) -gt 40 ] || fail "job $a took $((end - start)) s: the suspension did not outlast its walltime, the test proves nothing"
[ "$run" -lt 40 ] || fail "job $a was charged $run s: suspended time counted"
[ "$run" -le $((end - start - 20)) ] || fail "job $a: charged $run s of $((end - start)) s, 30 s of them suspended"

# Two normal jobs of one CPU each; an express job suspends one of them, the other ends
# while the express job still runs: the suspended job resumes at once on the CPU that
# freed, not its own (its scope's cpuset moved while frozen, then thawed).
cpus_of() { cat "$(job_cgroup "$1")/cpuset.cpus"; }
if [ "$ncpu" -ne 2 ]; then
    echo "SKIPPED PART: resuming on other CPUs (written for 2 CPUs, this machine has $ncpu)"
else
    # Each runs until the test lets it end (a file named after it in its directory): how
    # long the test's own steps take under emulation on a busy host must not decide
    # which job is still there to be looked at.
    p=$(as_user "$USER_A" corral submit --parsable -D "$work" -q normal -n 1 --time 2:00 -- \
        sh -c 'while [ ! -e "end-$CORRAL_JOB_ID" ]; do sleep 0.5; done')
    q=$(as_user "$USER_A" corral submit --parsable -D "$work" -q normal -n 1 --time 2:00 -- \
        sh -c 'while [ ! -e "end-$CORRAL_JOB_ID" ]; do sleep 0.5; done')
    wait_for 60 sh -c "[ \"\$(corral show --json $p | jq -r .job.state)\$(corral show --json $q | jq -r .job.state)\" = RUNNINGRUNNING ]" ||
        fail "jobs $p, $q: $(state "$p"), $(state "$q")"
    wait_for 30 frozen "$p" 0 && wait_for 30 frozen "$q" 0 || fail "jobs $p, $q have no scopes"
    # (Long enough to outlast job $o and the resume under emulation on a busy host: cancelled below.)
    e=$(as_user "$USER_B" corral submit --parsable -D "$work_b" -q express -n 1 --time 3:00 -- sleep 150)
    wait_for 60 sh -c "corral show --json $p | grep -q SUSPENDED || corral show --json $q | grep -q SUSPENDED" ||
        fail "neither $p nor $q was suspended for $e"
    if is_state "$p" SUSPENDED; then v=$p; o=$q; else v=$q; o=$p; fi
    before=$(cpus_of "$v")
    log "job $v suspended on CPU $before for express job $e; job $o runs on"
    touch "$work/end-$o"
    as_user "$USER_A" corral wait "$o" >/dev/null || fail "job $o: $(state "$o")"
    wait_for 60 is_state "$v" RUNNING || fail "job $v was not resumed when job $o ended: $(state "$v")"
    is_state "$e" RUNNING || fail "express job $e ended before the test could see job $v move"
    wait_for 30 frozen "$v" 0 || fail "job $v's scope is still frozen: $(systemctl show -p ActiveState,SubState,FreezerState,ControlGroup "corral-job-$v.scope" | tr '\n' ' ')"
    after=$(cpus_of "$v")
    log "job $v resumed on CPU $after (was $before), beside express job $e on $(cpus_of "$e")"
    [ "$after" != "$before" ] || fail "job $v resumed on its old CPU $before, which express job $e holds"
    [ "$after" != "$(cpus_of "$e")" ] || fail "job $v shares CPU $after with job $e"
    touch "$work/end-$v"
    as_user "$USER_A" corral wait "$v" >/dev/null || fail "job $v after its move: $(state "$v")"
    corral cancel "$e" >/dev/null
    wait_for 60 sh -c "corral show --json $e | jq -e '.job.state != \"RUNNING\"' >/dev/null" || fail "job $e did not stop"
fi

# ReclaimSuspended=yes: needs swap, and the kernel's memory.reclaim (5.19).
if [ ! -e "$(unit_cgroup init.scope)/memory.reclaim" ] && [ ! -e /sys/fs/cgroup/system.slice/memory.reclaim ]; then
    echo "SKIPPED PART: ReclaimSuspended (this kernel $(uname -r) has no memory.reclaim)"
elif ! [ -b /dev/vdb ] || ! mkswap -q /dev/vdb >/dev/null 2>&1 || ! swapon /dev/vdb 2>/dev/null; then
    echo "SKIPPED PART: ReclaimSuspended (no swap can be made on the scratch disk /dev/vdb)"
else
    swapdev=/dev/vdb
    printf '[Manager]\nReclaimSuspended=yes\n' >"$dropin"
    corral reload
    c=$(as_user "$USER_A" corral submit --parsable -D "$work" -q normal -n "$ncpu" --time 2:00 -- \
        perl -e '$x = "a" x (200 << 20); sleep 1 while 1')
    wait_for 60 is_state "$c" RUNNING || fail "job $c: $(state "$c")"
    cg=$(job_cgroup "$c")
    wait_for 60 sh -c "[ \$(cat $cg/memory.current) -gt $((150 << 20)) ]" || fail "job $c did not fill its memory"
    m1=$(cat "$cg/memory.current")
    d=$(as_user "$USER_B" corral submit --parsable -D "$work_b" -q express -n 1 --time 0:30 -- sleep 20)
    wait_for 60 frozen "$c" 1 || fail "job $c was not frozen for $d: $(state "$c")"
    wait_for 60 sh -c "[ \$(cat $cg/memory.current) -lt $((m1 / 2)) ]" ||
        fail "job $c's memory.current stayed at $(cat "$cg/memory.current") (was $m1)"
    log "job $c frozen: memory.current $m1 -> $(cat "$cg/memory.current"), swap: $(swapon --show=USED --noheadings)"
    corral cancel "$c" "$d" >/dev/null
fi
log "ok"
