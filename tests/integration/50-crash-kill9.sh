#!/bin/bash
# Crash safety under load: corrald is killed with SIGKILL every 3–5 s while 300 jobs
# ($CORRAL_FI_JOBS; slow-crash-kill9 runs this test with the full 1,000) are submitted by
# five concurrent clients (alice and bob; half the jobs single, half in arrays of 50), run
# and end. The kills, not the jobs, set the pace (about 13 jobs end per kill): 300 jobs
# take about 2 minutes and 25 kills, 1,000 about 6.5 minutes and 80. systemd brings the
# daemon back each time (Restart=on-failure; the socket stays open meanwhile). Afterwards
# every acknowledged job is in the store and ended exactly once with the exit code it
# exited with: each job creates a file named by its id with O_EXCL (set -C), so a second
# run cannot go unseen. A submission whose client got an error is retried; the daemon may
# have stored the first attempt before it died, so such jobs are counted apart
# (unacknowledged) but held to the same rules.
# timeout: 600
. "$CORRAL_TEST_LIB"
total=${CORRAL_FI_JOBS:-300}
array_size=50
db=/var/lib/corral/corral.db
dir=/var/tmp/corral-fi
# Seconds from the start with kills, and by which every job must have ended (the runner's
# limit is above, leaving time for the checks).
budget=${CORRAL_FI_BUDGET:-420}
hard_limit=$((budget + 110))
q() { sqlite3 -cmd ".timeout 5000" "$db" "$1"; }
finals="'COMPLETED','FAILED','CANCELLED','TIMEOUT','OUT_OF_MEMORY','NODE_FAIL'"

systemctl start corrald.socket
busy=$(corral queue --json -t RUNNING,SUSPENDED | jq -r '.jobs[].id')
[ -z "$busy" ] || fail "jobs left running by an earlier test: $busy"
base=$(q "select coalesce(max(id), 0) from jobs")

rm -rf "$dir"
mkdir -p -m 0755 "$dir/clients"
for u in "$USER_A" "$USER_B"; do
    install -d -o "$u" -m 0700 "$dir/$u"
done
chmod 0755 "$dir"
# $1: the marker directory of the job's user. The exit code is the job id modulo 7.
cat > "$dir/job.sh" <<'EOF'
#!/bin/sh
id=$CORRAL_JOB_ID
code=$((id % 7))
set -C
echo "$code" > "$1/$id" 2>/dev/null || echo "$id" >> "$1/doubles"
exit "$code"
EOF
chmod 0755 "$dir/job.sh"

# A client, run as its user from start to end so that a submission costs the guest one
# corral process and not also a setpriv and an id (under TCG each exec is ~60 ms of CPU,
# and the clients' helpers took a third of the machine): NAME COUNT ARRAY_SIZE MARKERS
# submits COUNT jobs (or arrays of ARRAY_SIZE, 0 for single jobs) named NAME-i, retrying a
# submission whose client failed; records "name first-id tasks" in clients/NAME/acked once
# acknowledged.
cat > "$dir/client.sh" <<'EOF'
#!/bin/bash
c=$1 n=$2 size=$3 markers=$4
dir=${0%/*}
out_dir=$dir/clients/$c
arr=()
[ "$size" = 0 ] || arr=(--array "1-$size")
for ((i = 1; i <= n; i++)); do
    [ ! -e "$dir/stop-clients" ] || exit 0
    tries=0
    while :; do
        if corral submit --parsable -J "fi-$c-$i" -D "$dir" "${arr[@]}" -- "$dir/job.sh" "$markers" \
               > "$out_dir/out" 2>>"$out_dir/err" && read -r out < "$out_dir/out" && [[ $out =~ ^[0-9]+$ ]]; then
            echo "fi-$c-$i $out $((size > 0 ? size : 1))" >> "$out_dir/acked"
            break
        fi
        echo "fi-$c-$i" >> "$out_dir/retries"
        tries=$((tries + 1))
        [ ! -e "$dir/stop-clients" ] || exit 0
        if [ $tries -ge 30 ]; then
            echo "fi-$c-$i" >> "$out_dir/gaveup"
            break
        fi
        sleep "0.$((RANDOM % 5 + 1))"
    done
done
EOF
chmod 0755 "$dir/client.sh"
# NAME USER COUNT [ARRAY_SIZE]
client() {
    install -d -o "$2" -m 0700 "$dir/clients/$1"
    as_user "$2" "$dir/client.sh" "$1" "$3" "${4:-0}" "$dir/$2"
}

killer() {
    local n=0
    : > "$dir/kills"
    while [ ! -e "$dir/stop-killing" ]; do
        sleep "$((3 + RANDOM % 2)).$((RANDOM % 10))"
        [ ! -e "$dir/stop-killing" ] || break
        if kill_corrald; then
            n=$((n + 1))
            echo "$n" > "$dir/kills"
        fi
    done
}
kills() { cat "$dir/kills" 2>/dev/null || echo 0; }
ours_open() { q "select count(*) from jobs where id > $base and state not in ($finals)"; }
ours_done() { q "select count(*) from jobs where id > $base and state in ($finals)"; }
all_ended() { [ "$(ours_open)" = 0 ]; }
kill_corrald() {
    local pid
    pid=$(systemctl show -P MainPID corrald)
    [ "${pid:-0}" != 0 ] && kill -9 "$pid" 2>/dev/null
}
acked_jobs() { cat "$dir"/clients/*/acked 2>/dev/null | awk '{n += $3} END {print n + 0}'; }

# Half the jobs come in arrays: under TCG each client process costs about as much guest
# CPU as a job, and the full size's 1,000 jobs must fit in the budget.
n_arrays=$((total / 2 / array_size))
singles=$((total - n_arrays * array_size))
per=$((singles / 3))
log "$total jobs: $singles single (3 clients), $n_arrays arrays of $array_size (2 clients); corrald killed every 3-5 s"
start=$(date +%s)
killer &
killer_pid=$!
client s1 "$USER_A" $((singles - 2 * per)) & c1=$!
client s2 "$USER_B" "$per" & c2=$!
client s3 "$USER_A" "$per" & c3=$!
client a1 "$USER_A" $((n_arrays / 2)) "$array_size" & c4=$!
client a2 "$USER_B" $((n_arrays - n_arrays / 2)) "$array_size" & c5=$!
clients="$c1 $c2 $c3 $c4 $c5"

# Progress every 30 s; stop at the budget, or when no job has ended for 90 s. One query
# every 4 s: each sqlite3 is ~0.14 s of the guest's CPU.
submitted_at='' last=0 done_before=-1 moved=0
while :; do
    now=$(( $(date +%s) - start ))
    IFS='|' read -r done_now open_now < <(q "select coalesce(sum(state in ($finals)), 0),
                                                 coalesce(sum(state not in ($finals)), 0) from jobs where id > $base")
    if [ "$done_now" != "$done_before" ]; then
        done_before=$done_now moved=$now
    elif [ -n "$submitted_at" ] && [ $((now - moved)) -ge 90 ]; then
        log "no job has ended for 90 s with $(ours_open) open: stalled"
        break
    fi
    if [ -z "$submitted_at" ]; then
        running=0
        for p in $clients; do kill -0 "$p" 2>/dev/null && running=1; done
        [ $running = 1 ] || submitted_at=$now
    fi
    if [ -n "$submitted_at" ] && [ "$open_now" = 0 ]; then
        break
    fi
    if [ $now -ge "$budget" ]; then
        log "budget of ${budget}s spent: stopping the load"
        break
    fi
    if [ $((now - last)) -ge 30 ]; then
        last=$now
        log "${now}s: $(acked_jobs) jobs acknowledged, $done_now ended, $(kills) kills"
    fi
    sleep 4
done
touch "$dir/stop-clients"
wait $clients 2>/dev/null || true
touch "$dir/stop-killing"
wait "$killer_pid" || true
end=$(( $(date +%s) - start ))
n_kills=$(kills)
log "load over after ${end}s (submissions done after ${submitted_at:-?}s), $n_kills kills of corrald"

# Without kills now: what is still open (on a slow machine) may finish while jobs keep
# ending, up to the hard limit; a stuck job is told from a slow one by 40 s without any.
corral info >/dev/null
if ! all_ended; then
    log "$(ours_open) jobs still open after the load; going on without kills while jobs end"
    done_before=$(ours_done) moved=$(date +%s)
    until all_ended || [ $(( $(date +%s) - moved )) -ge 40 ] || [ $(( $(date +%s) - start )) -ge "$hard_limit" ]; do
        sleep 2
        d=$(ours_done)
        [ "$d" = "$done_before" ] || { done_before=$d; moved=$(date +%s); }
    done
    log "$(( $(date +%s) - start ))s: $(ours_open) still open"
fi
# A job that never ends: what is left of it, for the report.
diagnose_open() {
for id in $(q "select id from jobs where id > $base and state not in ($finals) order by state != 'RUNNING', id limit 5"); do
    unit=corral-job-$id.scope
    log "open job $id: $(q "select state, reason, requeue_count from jobs where id=$id"), $unit $(systemctl is-active "$unit")"
    ls /run/corral/results /run/corral/jobs 2>/dev/null | grep -w "$id" | sed 's/^/#   run dir: /' || true
    [ -n "$(systemctl show -P ControlGroup "$unit")" ] || continue
    cg=$(unit_cgroup "$unit")
    sed 's/^/#   cgroup.events: /' "$cg/cgroup.events"
    for p in $(cat "$cg"/cgroup.procs "$cg"/*/cgroup.procs 2>/dev/null); do
        log "  pid $p: $(tr '\0' ' ' < "/proc/$p/cmdline"), wchan $(cat "/proc/$p/wchan"), state $(awk '/^State/ {print $2}' "/proc/$p/status")"
        for fd in /proc/"$p"/fd/*; do
            t=$(readlink "$fd") || continue
            # Who else holds this pipe (the supervisor waits on one for its go-ahead)?
            holders=
            case "$t" in pipe:*) holders=$(find /proc/[0-9]*/fd -lname "$t" 2>/dev/null | cut -d/ -f3 | sort -u | tr '\n' ' ') ;; esac
            log "    fd ${fd##*/} -> $t${holders:+ (held by pids $holders)}"
        done
    done
done
}
diagnose_open || true

# The record, as users see it (corral queue), plus the requeue counts from the store.
corral queue --json -t all | jq -r --argjson base "$base" \
    '.jobs[] | select(.id > $base) | "\(.id) \(.name) \(.user) \(.state) \(.exit_code // -1) \(.array_job_id // 0)"' \
    | sort -n > "$dir/record"
q "select id, requeue_count from jobs where id > $base order by id" | tr '|' ' ' > "$dir/requeues"
journalctl -b -q -u corrald -o cat | sed -n 's/^Job \([0-9]*\) ended: .*/\1/p' | sort -n | uniq -c \
    | awk '$1 > 1 {print $2}' > "$dir/ended-logged-twice"
cat "$dir"/clients/*/acked > "$dir/acked" 2>/dev/null || : > "$dir/acked"
cat "$dir"/*/doubles 2>/dev/null | sort -n > "$dir/doubles" || true

# One more kill with everything ended: the record must not change.
kill_corrald || fail "corrald is not running at the end"
corral queue --json -t all | jq -r --argjson base "$base" \
    '.jobs[] | select(.id > $base) | "\(.id) \(.name) \(.user) \(.state) \(.exit_code // -1) \(.array_job_id // 0)"' \
    | sort -n > "$dir/record-after"

# Start-ups that failed by themselves (not killed): counted, and the reasons shown.
journalctl -b -q -u corrald -o cat | grep -B3 "Failed with result 'exit-code'" | grep -v "^--$" \
    | grep -v "corrald.service:" > "$dir/start-failures" || true
n_start_failed=$(journalctl -b -q -u corrald -o cat | grep -c "Failed with result 'exit-code'" || true)
log "corrald start-ups that failed by themselves: $n_start_failed"
sort "$dir/start-failures" | uniq -c | head -n 5 | sed 's/^/#   /'

rc=0
python3 - "$dir" "$n_kills" "$end" <<'PY' || rc=$?
import os, sys
d, kills, secs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
def lines(name):
    try:
        return [l.split() for l in open(os.path.join(d, name)) if l.strip()]
    except FileNotFoundError:
        return []
def count(kind):
    return sum(len(lines(os.path.join("clients", c, kind))) for c in os.listdir(os.path.join(d, "clients")))

record = {int(r[0]): dict(name=r[1], user=r[2], state=r[3], code=int(r[4]), array=int(r[5])) for r in lines("record")}
after = {int(r[0]): tuple(r[1:]) for r in lines("record-after")}
requeued = sum(1 for r in lines("requeues") if int(r[1]) > 0)
acked = lines("acked")
problems = []

# Acknowledged ids: a single job's own id, or every task of an acknowledged array.
acked_ids, acked_names = set(), set()
for name, first, n in acked:
    first, n = int(first), int(n)
    acked_names.add(name)
    if n == 1:
        acked_ids.add(first)
        continue
    tasks = [i for i, j in record.items() if j["array"] == first]
    if len(tasks) != n:
        problems.append(f"array {name} ({first}): {len(tasks)} tasks in the record, {n} acknowledged")
    acked_ids.update(tasks if tasks else [first])
lost = sorted(i for i in acked_ids if i not in record)
unacked = sorted(i for i in record if i not in acked_ids)

# Every job in the record, acknowledged or not: ended, ran once, its exit code recorded.
states, ran, exit_ok, not_run, code_bad, open_jobs = {}, 0, 0, [], [], []
for i, j in record.items():
    states[j["state"]] = states.get(j["state"], 0) + 1
    marker = os.path.join(d, j["user"], str(i))
    if j["state"] not in ("COMPLETED", "FAILED"):
        open_jobs.append(f"{i}:{j['state']}")
        continue
    if not os.path.exists(marker):
        not_run.append(i)
        continue
    ran += 1
    code = int(open(marker).read().strip() or -1)
    if code == i % 7 and j["code"] == code and j["state"] == ("COMPLETED" if code == 0 else "FAILED"):
        exit_ok += 1
    else:
        code_bad.append(f"{i}: exited {code}, recorded {j['state']} {j['code']}")
markers = {int(f) for u in ("alice", "bob") for f in os.listdir(os.path.join(d, u)) if f.isdigit()}
unknown = sorted(markers - set(record))
doubles = sorted({int(r[0]) for r in lines("doubles")})
changed = sorted(i for i in record if after.get(i) != (record[i]["name"], record[i]["user"], record[i]["state"],
                                                        str(record[i]["code"]), str(record[i]["array"])))
logged_twice = len(lines("ended-logged-twice"))

print(f"# kills of corrald: {kills} in {secs} s")
print(f"# submissions acknowledged: {len(acked)} ({len(acked_ids)} jobs); retried after a client error: "
      f"{count('retries')}; given up: {count('gaveup')}")
print(f"# jobs in the record: {len(record)} = {len(acked_ids) - len(lost)} acknowledged + {len(unacked)} "
      f"stored from unacknowledged attempts")
print(f"# final states: " + ", ".join(f"{k} {v}" for k, v in sorted(states.items())))
print(f"# acknowledged jobs lost: {len(lost)}; jobs not ended: {len(open_jobs)}; ended without running: "
      f"{len(not_run)}; run twice: {len(doubles)}; markers of unknown jobs: {len(unknown)}")
print(f"# exit codes recorded as exited: {exit_ok} of {ran} jobs that ran; requeued after a lost launch: "
      f"{requeued}; 'ended' logged twice (re-read after a kill): {logged_twice}")
print(f"# records changed by a kill after all had ended: {len(changed)}")
ended = sum(v for k, v in states.items() if k in ("COMPLETED", "FAILED"))
print(f"# end to end: {ended / max(secs, 1):.1f} jobs/s with the kills")
if lost: problems.append(f"acknowledged jobs lost: {lost[:20]}")
if open_jobs: problems.append(f"jobs not ended (or not as COMPLETED/FAILED): {open_jobs[:20]}")
if not_run: problems.append(f"jobs recorded as ended that never ran: {not_run[:20]}")
if doubles: problems.append(f"jobs that ran twice: {doubles[:20]}")
if unknown: problems.append(f"jobs that ran but are not in the record: {unknown[:20]}")
if code_bad: problems.append(f"exit codes wrong: {code_bad[:20]}")
if changed: problems.append(f"records changed after all had ended: {changed[:20]}")
if count('gaveup'): problems.append(f"{count('gaveup')} submissions given up after 30 attempts")
if kills < 5: problems.append(f"only {kills} kills: the test did not test much")
for p in problems:
    print("FAILED: " + p, file=sys.stderr)
sys.exit(1 if problems else 0)
PY
if [ $rc != 0 ]; then
    journalctl -b -q -u corrald -o short-monotonic > "$dir/corrald.log"
    tail -n 60 "$dir/corrald.log" | sed 's/^/# corrald: /'
    evidence=$(durable_dir)
    cp -r "$dir" "$evidence/"
    # Leave the machine free for the tests that follow: stop what still runs, let a new
    # corrald find it gone, and cancel the rest.
    for id in $(q "select id from jobs where id > $base and state in ('RUNNING','SUSPENDED')"); do
        systemctl stop "corral-job-$id.scope" 2>/dev/null || true
    done
    systemctl restart corrald || true
    corral cancel -u "$USER_A" >/dev/null 2>&1 || true
    corral cancel -u "$USER_B" >/dev/null 2>&1 || true
    wait_for 60 sh -c "[ -z \"\$(corral queue --json -t RUNNING,SUSPENDED | jq -r '.jobs[].id')\" ]" || true
    fail "see above; the evidence (markers, records, corrald's log) is in $evidence"
fi
[ "$(wc -l < "$dir/acked")" -gt 0 ] || fail "nothing was submitted"
[ "$(acked_jobs)" -ge "$total" ] || fail "only $(acked_jobs) of $total jobs were acknowledged within ${budget}s"
rm -rf "$dir"
