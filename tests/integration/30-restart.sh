#!/bin/bash
# Restart safety: jobs keep running through `systemctl restart corrald` and `kill -9`,
# are re-adopted and recorded when they end; queued jobs are neither lost nor started
# twice. A machine that went down (a different boot id, the scopes gone) leaves
# rerunnable jobs requeued and the others NODE_FAIL.
# timeout: 400
. "$CORRAL_TEST_LIB"
sock=/run/corral/io.corral.Manager
client=$(dirname "$0")/proto-client.py
db=/var/lib/corral/corral.db
systemctl start corrald.socket
q() { sqlite3 "$db" "$1"; }
submit() { # USER JSON-PARAMS -> id
    as_user "$1" python3 "$client" "$sock" <<<"{\"method\":\"io.corral.Manager.Submit\",\"parameters\":$2}" \
        | jq -r .parameters.job_id
}
state_is() { [ "$(q "select state from jobs where id=$1")" = "$2" ]; }
# What a job that does not start waits for, and what holds the CPUs.
why_not() {
    echo "$(q "select state, reason, exit_code, submit_time, start_time, end_time from jobs where id=$1") (now $(date +%s)); running: $(q "select group_concat(id || ' ' || state || ' on ' || coalesce(alloc_cpus, '?'), ', ') from jobs where state in ('RUNNING','SUSPENDED')"); $(corral why "$1" 2>&1 | head -n 5 | tr '\n' ' '); corrald: $(journalctl -b -q -u corrald -o cat | grep -w "$1" | tail -n 3 | tr '\n' ' ')"
}

# Two 1-CPU jobs fill the 2 CPUs; a third waits in the queue. The two end when the test
# lets them (each waits to read its FIFO), not after a time: a machine that stalls for
# longer than a sleep (the emulated guest's host has stalled it for 25 s) would have them
# end before the test looks.
gates=$(mktemp -d)
chmod 755 "$gates"
mkfifo -m 666 "$gates/a" "$gates/b"
a= b=
# A test that fails leaves no job waiting for a release that will not come.
cleanup() {
    for j in $a $b; do corral cancel "$j" >/dev/null 2>&1 || true; done
    rm -rf "$gates"
}
trap cleanup EXIT
release() { timeout 30 sh -c "echo go > $gates/$1" || fail "job $2 was not waiting to be released: $(why_not "$2")"; }
t0=$(date +%s%N)
a=$(submit "$USER_A" "{\"argv\":[\"sh\",\"-c\",\"read go < $gates/a; exit 3\"],\"workdir\":\"/tmp\",\"cpus\":1}")
b=$(submit "$USER_B" "{\"argv\":[\"sh\",\"-c\",\"read go < $gates/b\"],\"workdir\":\"/tmp\",\"cpus\":1}")
c=$(submit "$USER_A" '{"argv":["sh","-c","echo third"],"workdir":"/tmp","cpus":2}')
log "three submits took $(( ($(date +%s%N) - t0) / 1000000 )) ms"
wait_for 60 state_is "$a" RUNNING || fail "job $a not running: $(why_not "$a")"
wait_for 60 state_is "$b" RUNNING || fail "job $b not running: $(why_not "$b")"
state_is "$c" PENDING || fail "job $c should wait for resources, is $(q "select state from jobs where id=$c")"

log "systemctl restart corrald while $a and $b run"
systemctl restart corrald
systemctl is-active -q "corral-job-$a.scope" || fail "job $a's scope died with the daemon"
log "kill -9 corrald"
kill -9 "$(systemctl show -P MainPID corrald)"
sleep 1
systemctl is-active -q "corral-job-$b.scope" || fail "job $b's scope died with the daemon"
# Socket activation brings it back at the next request (and Restart=on-failure anyway).
as_user "$USER_A" python3 "$client" "$sock" <<<'{"method":"io.corral.Manager.GetInfo","parameters":{}}' >/dev/null
release a "$a"
release b "$b"
wait_for 60 state_is "$a" FAILED || fail "job $a's end not recorded: $(q "select state, reason from jobs where id=$a")"
assert_eq "$(q "select exit_code from jobs where id=$a")" 3 "exit code of job $a recorded after two daemon deaths"
wait_for 90 state_is "$c" COMPLETED || fail "queued job $c lost: $(q "select state, reason from jobs where id=$c")"
assert_eq "$(journalctl -b -q -o cat CORRAL_JOB_ID="$c" | grep -c third)" 1 "job $c ran exactly once"
wait_for 90 state_is "$b" COMPLETED || fail "job $b not recorded"

log "machine failure: a different boot id and no scopes left"
r=$(submit "$USER_A" '{"argv":["sleep","300"],"workdir":"/tmp","cpus":1,"rerunnable":true}')
n=$(submit "$USER_B" '{"argv":["sleep","300"],"workdir":"/tmp","cpus":1,"rerunnable":false}')
wait_for 60 state_is "$r" RUNNING || fail "job $r not running: $(why_not "$r")"
wait_for 60 state_is "$n" RUNNING || fail "job $n not running: $(why_not "$n")"
systemctl stop corrald.socket corrald.service
# As after a power cut: the jobs' processes and /run are gone, the database remains.
systemctl kill -s KILL "corral-job-$r.scope" "corral-job-$n.scope"
wait_for 30 sh -c "! systemctl is-active -q corral-job-$r.scope && ! systemctl is-active -q corral-job-$n.scope"
rm -rf /run/corral
q "update meta set value='00000000-dead-beef-0000-000000000000' where key='boot_id'"
systemctl start corrald.socket corrald.service
wait_for 30 state_is "$n" NODE_FAIL || fail "non-rerunnable job $n: $(q "select state, reason from jobs where id=$n")"
journalctl -b -q -u corrald -o cat | grep -q "Job $r was running when the machine went down: requeued" \
    || fail "no log line about requeueing job $r"
assert_eq "$(q "select requeue_count from jobs where id=$r")" 1 "requeue count of job $r"
wait_for 60 state_is "$r" RUNNING || fail "requeued job $r did not run again: $(q "select state, reason from jobs where id=$r")"
# Leave the machine as we found it for the tests that follow.
as_user "$USER_A" corral cancel "$r"
wait_for 60 sh -c "! systemctl is-active -q corral-job-$r.scope"
