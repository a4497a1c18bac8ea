#!/bin/bash
# A reboot of the machine with jobs running: rerunnable jobs are requeued (and run
# again), non-rerunnable ones end as NODE_FAIL; queued jobs survive untouched.
# timeout: 300
. "$CORRAL_TEST_LIB"
db=/var/lib/corral/corral.db
ids=/var/lib/corral-test-reboot.ids
q() { sqlite3 "$db" "$1"; }
state_is() { [ "$(q "select state from jobs where id=$1")" = "$2" ]; }

if [ "${CORRAL_TEST_PHASE:-}" != after-reboot ]; then
    systemctl enable --now corrald.socket  # as an admin would: it comes back after the reboot
    busy=$(corral queue --json -t RUNNING,SUSPENDED | jq -r '.jobs[].id')
    [ -z "$busy" ] || fail "jobs left running by an earlier test: $busy"
    r=$(as_user "$USER_A" corral submit --parsable --rerunnable -n 1 -- sleep 600)
    n=$(as_user "$USER_B" corral submit --parsable --no-rerunnable -n 1 -- sleep 600)
    p=$(as_user "$USER_A" corral submit --parsable --hold -- true)
    wait_for 60 state_is "$r" RUNNING || fail "job $r not running"
    wait_for 60 state_is "$n" RUNNING || fail "job $n not running"
    echo "$r $n $p" > "$ids"
    reboot_and_continue
fi

read -r r n p < "$ids"
log "after the reboot: jobs $r (rerunnable), $n (not), $p (held)"
# corrald starts on the first request through its socket.
corral info >/dev/null
wait_for 60 state_is "$n" NODE_FAIL || fail "job $n: $(q "select state, reason from jobs where id=$n")"
assert_eq "$(q "select reason from jobs where id=$n")" NodeFail "reason of the failed job"
assert_eq "$(q "select requeue_count from jobs where id=$r")" 1 "requeue count of job $r"
wait_for 60 state_is "$r" RUNNING || fail "requeued job $r did not run again: $(q "select state, reason from jobs where id=$r")"
state_is "$p" HELD || fail "held job $p changed: $(q "select state from jobs where id=$p")"
as_user "$USER_A" corral cancel "$r" "$p"
