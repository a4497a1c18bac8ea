#!/bin/bash
# What one user can make corrald hold is bounded, and a request over a bound gets a named
# error instead of a stall: array size, stored bytes, pending Waits, connections. An array
# stores its request once; any number of jobs can be listed; a user cannot raise a job's
# priority; a drop-in that sets one key of a queue keeps the others.
# timeout: 600
. "$CORRAL_TEST_LIB"
sock=/run/corral/io.corral.Manager
db=/var/lib/corral/corral.db
client=$(dirname "$0")/proto-client.py
dropin=/etc/corral/corral.conf.d
mkdir -p "$dropin"
cleanup() {
    rm -f "$dropin"/50-limits-test.conf "$dropin"/51-limits-test.conf
    corral reload >/dev/null 2>&1 || true
}
trap cleanup EXIT
systemctl start corrald.socket
work=$(as_user "$USER_A" mktemp -d /tmp/limits.XXXXXX)

# A script of ~400 KiB (the protocol takes up to 512 KiB).
script=$work/big.sh
as_user "$USER_A" sh -c "{ echo '#!/bin/sh'; for i in \$(seq 5000); do echo '# padding padding padding padding padding padding padding padding padding'; done; echo true; } > $script"
log "script: $(stat -c %s "$script") bytes"

# 1. Over MaxArraySize (10000 by default): refused at once, the setting named.
if out=$(as_user "$USER_A" corral submit --hold --array 1-10001 -D "$work" -- /bin/true 2>&1); then
    fail "an array of 10001 tasks was accepted: $out"
fi
assert_match "$out" 'MaxArraySize' "the refusal names the bound"

# 2. An array stores its request once: 300 tasks of a 400 KiB script grow the database by
# about one script, not 300 (120 MB, which the old code wrote, task by task).
sync
before=$(sqlite3 "$db" 'select coalesce(sum(length(request)),0) from jobs')
t0=$(date +%s%N)
first=$(as_user "$USER_A" corral submit --parsable --hold --array 1-300 -D "$work" "$script")
t1=$(date +%s%N)
after=$(sqlite3 "$db" 'select coalesce(sum(length(request)),0) from jobs')
grown=$((after - before))
log "array of 300 tasks with a $(stat -c %s "$script")-byte script: stored requests grew by $grown bytes, submit took $(( (t1 - t0) / 1000000 )) ms"
assert_le "$grown" $((1024 * 1024)) "stored bytes for one 300-task array"
# Every task launches with the whole script: the last one is shown with it.
last=$((first + 299))
assert_match "$(as_user "$USER_A" corral show --json "$last")" '"has_script": *true' "the last task has the script"

# 3. Any number of jobs can be listed: a List reply used to exceed the 1 MiB message limit
# near 4,500 jobs and the connection was dropped for everyone.
first2=$(as_user "$USER_A" corral submit --parsable --hold --array 1-5000 -D "$work" -- /bin/true)
t0=$(date +%s%N)
n=$(as_user "$USER_B" corral queue --json -a | jq '.jobs | length')
t1=$(date +%s%N)
log "corral queue as another user: $n jobs in $(( (t1 - t0) / 1000000 )) ms"
[ "$n" -ge 5300 ] || fail "corral queue listed $n jobs, expected at least 5300"
out=$(as_user "$USER_B" python3 "$client" "$sock" <<<'{"method":"io.corral.Manager.List","parameters":{"limit":10,"states":["all"]}}')
assert_eq "$(jq '.parameters.jobs | length' <<<"$out")" 10 "a page of 10"
jq -e '.parameters.next_after_id' <<<"$out" >/dev/null || fail "no next_after_id on a partial page: $out"

# 4. Pending Waits per connection: the 65th on one connection is refused, by name.
out=$(as_user "$USER_A" python3 - "$sock" "$first2" <<'PY'
import json, socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect(sys.argv[1])
s.settimeout(30)
req = json.dumps({"method": "io.corral.Manager.Wait", "parameters": {"job_id": int(sys.argv[2])}}).encode() + b"\0"
for _ in range(65):
    s.sendall(req)
data = b""
while b"\0" not in data:
    data += s.recv(65536)
print(data.split(b"\0")[0].decode())
PY
)
assert_match "$out" 'QuotaExceeded' "the 65th Wait on one connection"
assert_match "$out" 'MaxWaitsPerConnection' "the refusal names the bound"

# 5. Connections: one user cannot hold more than MaxConnectionsPerUser (32); the others,
# and root, are still served while that user holds all of theirs.
held=$(mktemp)
as_user "$USER_A" python3 - "$sock" >"$held" <<'PY' &
import socket, sys, time
conns, refused = [], 0
for i in range(40):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(sys.argv[1])
    s.settimeout(2)
    try:
        s.sendall(b'{"method":"io.corral.Manager.GetInfo","parameters":{}}\0')
        d = s.recv(65536)
        if b"TooManyConnections" in d:
            refused += 1
            continue
    except OSError:
        refused += 1
        continue
    conns.append(s)
print(len(conns), refused, flush=True)
time.sleep(20)
PY
holder=$!
wait_for 60 test -s "$held" || fail "the connection holder did not report"
read -r kept refused <"$held"
log "alice: $kept connections kept, $refused refused"
assert_eq "$kept" 32 "connections one user keeps"
assert_eq "$refused" 8 "connections refused to that user"
as_user "$USER_B" corral info >/dev/null || fail "bob not served while alice holds her connections"
corral info >/dev/null || fail "root not served while alice holds her connections"
# Alice's own next connection is refused by name, not by a dropped connection.
if out=$(as_user "$USER_A" corral info 2>&1); then
    fail "alice got a 33rd connection: $out"
fi
assert_match "$out" 'MaxConnectionsPerUser' "the refusal names the bound"
kill "$holder" 2>/dev/null || true
wait "$holder" 2>/dev/null || true
rm -f "$held"
# The daemon sees the holder's connections close asynchronously.
wait_for 30 sh -c "setpriv --reuid=$USER_A --regid=\$(id -g $USER_A) --init-groups corral info >/dev/null 2>&1" \
    || fail "alice not served again after closing her connections"

# 6. MaxStoredBytesPerUser: with 1M, a third 400 KiB job is refused, by name.
printf '[Manager]\nMaxStoredBytesPerUser=1M\n' >"$dropin/50-limits-test.conf"
corral reload
as_user "$USER_A" corral cancel --me >/dev/null
as_user "$USER_A" corral submit --hold -D "$work" "$script" >/dev/null
as_user "$USER_A" corral submit --hold -D "$work" "$script" >/dev/null
if out=$(as_user "$USER_A" corral submit --hold -D "$work" "$script" 2>&1); then
    fail "a third 400 KiB job was accepted under MaxStoredBytesPerUser=1M: $out"
fi
assert_match "$out" 'MaxStoredBytesPerUser' "the refusal names the bound"
as_user "$USER_B" corral submit --hold -D /tmp -- /bin/true >/dev/null || fail "bob refused for alice's bytes"

# 7. A negative nice raises priority: admins only.
if out=$(as_user "$USER_A" corral submit --hold --nice=-100 -D "$work" -- /bin/true 2>&1); then
    fail "a user raised a job's priority: $out"
fi
assert_match "$out" '[Pp]ermission|administrator' "negative nice refused"
id=$(corral submit --parsable --hold --nice=-100 -D /tmp -- /bin/true) || fail "root could not submit with a negative nice"
corral cancel "$id" >/dev/null

# 8. A drop-in naming only Priority= keeps the queue's MaxWalltime= from an earlier file.
printf '[Queue]\nName=normal\nMaxWalltime=1h\n' >"$dropin/50-limits-test.conf"
printf '[Queue]\nName=normal\nPriority=5\n' >"$dropin/51-limits-test.conf"
corral reload
if out=$(as_user "$USER_A" corral submit --hold -q normal --time 2:00:00 -D "$work" -- /bin/true 2>&1); then
    fail "a 2 h job was accepted in a queue whose 1 h limit an unrelated drop-in should have kept: $out"
fi
assert_match "$out" 'walltime' "the walltime limit survived the drop-in"

# 9. Requeueing a finished job counts against the limits as a new submission would.
printf '[Manager]\nMaxJobsPerUser=1\nUsersMaySuspend=yes\n' >"$dropin/50-limits-test.conf"
rm -f "$dropin/51-limits-test.conf"
corral reload
as_user "$USER_A" corral cancel --me >/dev/null
done_id=$(as_user "$USER_A" corral submit --parsable --hold -D "$work" -- /bin/true)
as_user "$USER_A" corral cancel "$done_id" >/dev/null
as_user "$USER_A" corral submit --hold -D "$work" -- /bin/true >/dev/null
if out=$(as_user "$USER_A" corral requeue "$done_id" 2>&1); then
    fail "requeueing a finished job went past MaxJobsPerUser=1: $out"
fi
assert_match "$out" 'MaxJobsPerUser' "requeue refused by the job limit"
as_user "$USER_A" corral cancel --me >/dev/null

# 10. An admin's suspension binds the owner, even where owners may suspend their own jobs.
run_id=$(as_user "$USER_A" corral submit --parsable -D "$work" -- /bin/sleep 120)
wait_for 120 sh -c "corral show --json $run_id | jq -e '.job.state == \"RUNNING\"' >/dev/null" \
    || fail "job $run_id did not start"
sleep 1
corral suspend "$run_id"
if out=$(as_user "$USER_A" corral resume "$run_id" 2>&1); then
    fail "the owner resumed a job an admin suspended: $out"
fi
assert_match "$out" '[Pp]ermission|administrator' "owner's resume of an admin suspension refused"
corral resume "$run_id"
as_user "$USER_A" corral suspend "$run_id" || fail "the owner could not suspend with UsersMaySuspend=yes"
as_user "$USER_A" corral resume "$run_id" || fail "the owner could not resume their own suspension"
corral cancel "$run_id" >/dev/null
wait_for 120 sh -c "corral show --json $run_id | jq -e '.job.state == \"CANCELLED\"' >/dev/null" \
    || fail "job $run_id was not cancelled"

as_user "$USER_A" corral cancel --me >/dev/null
as_user "$USER_B" corral cancel --me >/dev/null
left=$(sqlite3 "$db" "select count(*) from jobs where state in ('PENDING','HELD','RUNNING','SUSPENDED','BLOCKED')")
assert_eq "$left" 0 "jobs left unfinished"
systemctl is-active -q corrald.service || fail "corrald is not running"
log "ok"
