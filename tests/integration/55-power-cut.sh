#!/bin/bash
# A power cut with jobs running and submissions in flight: the host kills the guest's
# qemu (no shutdown; what the guest had not flushed is lost) and boots the same disk.
# Afterwards the store passes PRAGMA integrity_check, every submission and cancellation
# a client saw acknowledged is there, and of the jobs the store had as running the
# rerunnable ones are requeued (and run again) and the others are NODE_FAIL.
# What the test itself must remember lives on the host's disk (durable_dir).
# timeout: 300
. "$CORRAL_TEST_LIB"
db=/var/lib/corral/corral.db
q() { sqlite3 -cmd ".timeout 5000" "$db" "$1"; }
state_is() { [ "$(q "select state from jobs where id=$1")" = "$2" ]; }
keep=$(durable_dir)

if [ "${CORRAL_TEST_PHASE:-}" != after-power-cut ]; then
    # Asked before any job is started, which a skip would leave behind.
    [ "${CORRAL_TEST_IN_GUEST:-0}" = 1 ] || skip "a power cut is for the test guest only, not a native host"
    systemctl enable --now corrald.socket  # as an admin would: it comes back after the boot
    busy=$(corral queue --json -t RUNNING,SUSPENDED | jq -r '.jobs[].id')
    [ -z "$busy" ] || fail "jobs left running by an earlier test: $busy"
    rm -rf "${keep:?}"/*
    # The package also enables corrald.service, which then starts at boot; this boot it
    # must not, so that the store can be looked at as the power cut left it.
    systemctl is-enabled -q corrald.service && touch "$keep/service-was-enabled"
    # (Disabling the service disables its Also=corrald.socket too: the socket goes back on.)
    systemctl disable -q corrald.service
    systemctl enable -q corrald.socket
    q "select coalesce(max(id), 0) from jobs" > "$keep/base"
    r=$(as_user "$USER_A" corral submit --parsable --rerunnable -J pc-run-r -- sleep 600)
    n=$(as_user "$USER_B" corral submit --parsable --no-rerunnable -J pc-run-n -- sleep 600)
    h=$(as_user "$USER_A" corral submit --parsable --hold -J pc-held -- true)
    wait_for 60 state_is "$r" RUNNING || fail "job $r not running"
    wait_for 60 state_is "$n" RUNNING || fail "job $n not running"
    echo "$r $n $h" > "$keep/fixed"
    # Only the enablement above must be on the disk for sure; the rest is the test.
    sync

    # Clients that keep submitting (singles, rerunnable or not, and small arrays) and
    # cancelling some of what they submitted, each noting what was acknowledged.
    client() { # NAME USER
        local c=$1 u=$2 i=0 out n opts
        while :; do
            i=$((i + 1))
            case $((i % 5)) in
                0) opts=(--array 1-4); n=4 ;;
                1) opts=(--no-rerunnable); n=1 ;;
                *) opts=(--rerunnable); n=1 ;;
            esac
            out=$(as_user "$u" corral submit --parsable -J "pc-$c-$i" "${opts[@]}" -- true 2>/dev/null) || continue
            echo "pc-$c-$i $out $n" >> "$keep/acked.$c"
            if [ $n = 1 ] && [ $((i % 3)) = 0 ] && as_user "$u" corral cancel "$out" >/dev/null 2>&1; then
                echo "$out" >> "$keep/cancelled.$c"
            fi
        done
    }
    client a "$USER_A" &
    client b "$USER_B" &
    enough() { [ "$(cat "$keep"/acked.* 2>/dev/null | wc -l)" -ge 10 ]; }
    wait_for 120 enough || fail "the clients got fewer than 10 submissions through"
    log "jobs $r (rerunnable) and $n (not) running, $h held, clients submitting"
    power_cut_and_continue
fi

read -r base < "$keep/base"
read -r r n h < "$keep/fixed"
# Whatever happens below, the jobs of this test do not outlive it: the next tests expect
# the CPUs free.
cleanup() {
    [ ! -e "$keep/service-was-enabled" ] || systemctl enable -q corrald.service
    systemctl start corrald.socket
    as_user "$USER_A" corral cancel --me >/dev/null 2>&1 || true
    as_user "$USER_B" corral cancel --me >/dev/null 2>&1 || true
}
trap cleanup EXIT
log "after the power cut (it came $(cat "$CORRAL_TEST_OUT/power-cut-delay" 2>/dev/null || echo '?')s after the request)"
# Look at the store as the power cut left it, before corrald opens it: on a copy, so
# that corrald's own recovery of the WAL is what the rest of the test sees.
systemctl is-active -q corrald.service && fail "corrald started before the test could look at the store"
ls -l /var/lib/corral/ | sed 's/^/# /'
copy=$(mktemp -d)
cp /var/lib/corral/corral.db* "$copy/"
rm -f "$copy"/corral.db-shm
integrity=$(sqlite3 "$copy/corral.db" "PRAGMA integrity_check" 2>&1) || true
assert_eq "$integrity" ok "integrity of the store after the power cut"
sqlite3 "$copy/corral.db" "select id, state, rerunnable, requeue_count, array_job_id from jobs where id > $base" \
    | tr '|' ' ' > "$keep/as-cut"
rm -rf "$copy"
[ ! -e "$keep/service-was-enabled" ] || systemctl enable -q corrald.service
awk '$2 == "RUNNING" || $2 == "SUSPENDED"' "$keep/as-cut" > "$keep/running-at-cut"

# Every acknowledged submission and cancellation is in the store.
cat "$keep"/acked.* > "$keep/acked"
cat "$keep"/cancelled.* > "$keep/cancelled" 2>/dev/null || : > "$keep/cancelled"
lost=0 acked_jobs=0
while read -r name first tasks; do
    if [ "$tasks" = 1 ]; then
        found=$(awk -v i="$first" '$1 == i' "$keep/as-cut" | wc -l)
    else
        found=$(awk -v i="$first" '$5 == i' "$keep/as-cut" | wc -l)
    fi
    acked_jobs=$((acked_jobs + tasks))
    [ "$found" = "$tasks" ] || { log "lost: $name (job $first, $found of $tasks jobs in the store)"; lost=$((lost + 1)); }
done < "$keep/acked"
not_cancelled=0
while read -r id; do
    s=$(awk -v i="$id" '$1 == i {print $2}' "$keep/as-cut")
    [ "$s" = CANCELLED ] || { log "cancellation of job $id lost: it is ${s:-missing}"; not_cancelled=$((not_cancelled + 1)); }
done < "$keep/cancelled"
in_store=$(wc -l < "$keep/as-cut")
log "acknowledged: $(wc -l < "$keep/acked") submissions ($acked_jobs jobs) and $(wc -l < "$keep/cancelled") cancellations"
log "in the store after the cut: $in_store jobs, $((in_store - acked_jobs - 3)) of them from submissions not acknowledged before the cut"
log "lost: $lost submissions, $not_cancelled cancellations"
[ $lost = 0 ] && [ $not_cancelled = 0 ] || fail "acknowledged changes lost in the power cut"
grep -q "^$r RUNNING" "$keep/running-at-cut" || fail "job $r was running long before the cut but the store says otherwise"
grep -q "^$n RUNNING" "$keep/running-at-cut" || fail "job $n was running long before the cut but the store says otherwise"

# corrald starts on the first request through its socket and settles the running jobs.
corral info >/dev/null
integrity=$(q "PRAGMA integrity_check")
assert_eq "$integrity" ok "integrity of the store once corrald has opened it"
requeued=0 node_fail=0
while read -r id _ rerun count _; do
    if [ "$rerun" = 1 ]; then
        [ "$(q "select requeue_count from jobs where id=$id")" = $((count + 1)) ] \
            || fail "rerunnable job $id was not requeued: $(q "select state, reason, requeue_count from jobs where id=$id")"
        requeued=$((requeued + 1))
    else
        wait_for 30 state_is "$id" NODE_FAIL || fail "job $id: $(q "select state, reason from jobs where id=$id")"
        assert_eq "$(q "select reason from jobs where id=$id")" NodeFail "reason of job $id"
        node_fail=$((node_fail + 1))
    fi
done < "$keep/running-at-cut"
log "running at the cut: $requeued rerunnable requeued, $node_fail NODE_FAIL"
journalctl -b -q -u corrald -o cat | grep -q "Job $r was running when the machine went down: requeued" \
    || fail "no log line about requeueing job $r"
wait_for 120 state_is "$r" RUNNING || fail "requeued job $r did not run again: $(q "select state, reason from jobs where id=$r")"
state_is "$h" HELD || fail "held job $h changed: $(q "select state from jobs where id=$h")"

# The queue goes on: the pending jobs of the cut run, a new one runs.
as_user "$USER_A" corral cancel "$r" "$h"
t=$(as_user "$USER_B" corral submit --parsable -- true)
wait_for 180 state_is "$t" COMPLETED || fail "a job submitted after the power cut did not complete: $(q "select state, reason from jobs where id=$t")"
open=$(q "select count(*) from jobs where id > $base and state in ('PENDING','RUNNING','SUSPENDED')")
log "after the boot: $open of the test's jobs still open, cancelling them"
as_user "$USER_A" corral cancel --me >/dev/null 2>&1 || true
as_user "$USER_B" corral cancel --me >/dev/null 2>&1 || true
wait_for 60 sh -c "[ -z \"\$(corral queue --json -t RUNNING,SUSPENDED | jq -r '.jobs[].id')\" ]" \
    || fail "jobs still running at the end"
