#!/bin/bash
# corral why on a job held back by another job's reservation names that job and when its
# reservation starts; on a running job and a job waiting for resources it says so with
# the free CPUs; its priority's terms add up to the priority the queue shows.
# timeout: 300
. "$CORRAL_TEST_LIB"
cleanup() { corral cancel -u "$USER_A" >/dev/null 2>&1 || true; }
trap cleanup EXIT
systemctl start corrald.socket
state() { corral show --json "$1" | jq -r .job.state; }
work=$(as_user "$USER_A" mktemp -d /tmp/why.XXXXXX)
ncpu=$(nproc)

# a holds all CPUs but one for 10 minutes; b needs every CPU, so it waits for a with a
# reservation; c would fit on the free CPU now but runs past b's reservation: not
# backfilled, and corral why says behind which job.
a=$(as_user "$USER_A" corral submit --parsable -D "$work" -n $((ncpu - 1)) -t 10:00 -- sleep 600)
wait_for 60 sh -c "[ \"\$(corral show --json $a | jq -r .job.state)\" = RUNNING ]" || fail "job $a: $(state "$a")"
b=$(as_user "$USER_A" corral submit --parsable -D "$work" -n "$ncpu" -t 5:00 -- /bin/true)
c=$(as_user "$USER_A" corral submit --parsable -D "$work" -n 1 -t 30:00 -- /bin/true)
wait_for 30 sh -c "corral show --json $c | jq -e '.job.reason != null' >/dev/null" || fail "job $c has no reason"
assert_eq "$(state "$c")" PENDING "job $c, which would delay job $b's reservation"

why_b=$(as_user "$USER_A" corral why "$b")
assert_match "$why_b" "it needs $ncpu CPUs" "corral why $b names what it needs"
assert_match "$why_b" 'free now: node 0' "corral why $b names what is free"
assert_match "$why_b" 'estimated start: ' "corral why $b gives the estimate"
why_c=$(as_user "$USER_A" corral why "$c")
assert_match "$why_c" "job $b \\(priority [0-9.]+\\) comes first and holds a reservation from [0-9-]+ [0-9:]+" \
    "corral why $c names the job whose reservation it waits behind"
log "corral why $b: $why_b"
log "corral why $c: $why_c"

# The priority's terms, in JSON, sum to the priority.
json=$(as_user "$USER_A" corral why --json "$c")
printf '%s' "$json" | jq -e '([.terms[].value] | add) as $s | (.priority - $s) | (if . < 0 then -. else . end) < 1e-6' \
    >/dev/null || fail "corral why --json $c: the terms do not add up to the priority: $json"
assert_match "$(as_user "$USER_A" corral why "$a")" 'it is running' "corral why on a running job"
