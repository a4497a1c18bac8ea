#!/bin/bash
# A forwarding queue (corrald(8), FORWARDING TO SLURM) against a real Slurm: Debian 12's
# slurmctld, slurmd and munge on the guest as a one-node cluster (the Slurm tier's image,
# CORRAL_TEST_SLURM=1, with Debian's client diverted to /usr/lib/corral/slurm-client/bin),
# a `cluster` queue declared with the keys as corrald(8) writes them. As two users: jobs
# run under Slurm as their user, a failure, a cancel, a requeue, corral logs, an array, a dependency, a
# comment that makes up a line of squeue's, slurmctld
# stopped with a job waiting (nothing lost, nothing doubled), corrald killed and started
# again with a job on the cluster (its link kept), and a full local queue overflowing to
# the cluster.
# timeout: 1200
. "$CORRAL_TEST_LIB"
real=/usr/lib/corral/slurm-client/bin
[ -x "$real/sbatch" ] || skip "no Slurm client in $real (the Slurm tier's image: CORRAL_TEST_SLURM=1)"
host=$(hostname)

systemctl start munge.service slurmctld.service slurmd.service
wait_for 180 sh -c "$real/sinfo -h -o %T 2>/dev/null | grep -Eq '^(idle|mixed|allocated)'" ||
    fail "the Slurm node is not up: $($real/sinfo -h 2>&1); $(journalctl -u slurmctld -u slurmd --no-pager | tail -n 20)"

mkdir -p /etc/corral/corral.conf.d
cat > /etc/corral/corral.conf.d/50-cluster.conf <<'EOF'
[Manager]
SlurmPollSec=5s

[Queue]
Name=cluster
Backend=slurm
SlurmPartition=debug
MaxForwarded=10

[Queue]
Name=normal
OverflowTo=cluster
OverflowAfterSec=5s
EOF
cleanup() {
    rm -f /etc/corral/corral.conf.d/50-cluster.conf
    systemctl start slurmctld.service 2>/dev/null || true
    "$real/scancel" --user="$USER_A" 2>/dev/null || true
    "$real/scancel" --user="$USER_B" 2>/dev/null || true
    systemctl try-reload-or-restart corrald.service 2>/dev/null || true
}
trap cleanup EXIT
systemctl start corrald.socket
systemctl try-reload-or-restart corrald.service
check=$(corral config check 2>&1)
assert_match "$check" "cluster .*Backend=slurm SlurmPartition=debug MaxForwarded=10.* client=$real" "config check"

S() { corral show --json "$1" | jq -r .job.state; }
R() { corral show --json "$1" | jq -r '.job.reason // ""'; }
wait_state() { # ID STATE SEC
    wait_for "$3" sh -c "[ \"\$(corral show --json $1 | jq -r .job.state)\" = $2 ]" ||
        fail "job $1 is $(S "$1") ($(R "$1")), expected $2; $(journalctl -u corrald --no-pager | tail -n 15)"
}
slurm_id() { R "$1" | sed -n 's/^Slurm job \([0-9]*\).*/\1/p'; }
count_key() { "$real/squeue" -h -t all -o %k | grep -cx "corral:$host:$1" || true; }
t0=$(date +%s)

log "two users' jobs run under Slurm as themselves"
a=$(as_user "$USER_A" corral submit --parsable -q cluster -D "/home/$USER_A" -o "/home/$USER_A/fwd-%j.out" \
    -- sh -c 'echo "$(id -un) $SLURM_JOB_ID $SLURM_JOB_PARTITION $SLURM_JOB_ACCOUNT"')
b=$(as_user "$USER_B" corral submit --parsable -q cluster -D "/home/$USER_B" -o "/home/$USER_B/fwd-%j.out" \
    -- sh -c 'echo "$(id -un) $SLURM_JOB_ID $SLURM_JOB_PARTITION $SLURM_JOB_ACCOUNT"')
wait_state "$a" COMPLETED 180
wait_state "$b" COMPLETED 180
for x in "$USER_A:$a:$PROJECT_A" "$USER_B:$b:$PROJECT_B"; do
    u=${x%%:*} id=${x#*:}; id=${id%%:*} p=${x##*:}
    f=/home/$u/fwd-$id.out
    [ -s "$f" ] || fail "no output $f"
    assert_eq "$(stat -c %U "$f")" "$u" "owner of $f"
    read -r who sid part acct < "$f"
    assert_eq "$who" "$u" "the user the job ran as"
    assert_eq "$part" debug "partition"
    assert_eq "$acct" "$p" "account (the project)"
    rec=$("$real/scontrol" --oneliner show job "$sid")
    assert_match "$rec" "UserId=$u\(" "Slurm's user"
    assert_match "$rec" "Comment=corral:$host:$id( |$)" "the idempotence key"
    assert_eq "$(count_key "$id")" 1 "Slurm jobs of Corral job $id"
done

log "a failure"
f=$(as_user "$USER_B" corral submit --parsable -q cluster -D "/home/$USER_B" -o /dev/null -- sh -c 'exit 3')
wait_state "$f" FAILED 180
assert_eq "$(corral show --json "$f" | jq -r .job.exit_code)" 3 "exit code"

log "cancel passes through"
c=$(as_user "$USER_A" corral submit --parsable -q cluster -D "/home/$USER_A" -o /dev/null -- sleep 600)
wait_state "$c" RUNNING 180
sid=$(slurm_id "$c")
[ -n "$sid" ] || fail "job $c shows no Slurm job: $(R "$c")"
as_user "$USER_A" corral cancel "$c"
wait_state "$c" CANCELLED 60
wait_for 60 sh -c "$real/squeue -h -t all -j $sid -o %T | grep -qx CANCELLED" ||
    fail "Slurm job $sid is $($real/squeue -h -t all -j "$sid" -o %T)"

log "requeue passes through (the same Slurm job back in Slurm's queue, and here); corral logs reads its slurm-%j.out"
q=$(as_user "$USER_A" corral submit --parsable -q cluster -D "/home/$USER_A" -- sh -c 'echo "out of $SLURM_JOB_ID"; sleep 600')
wait_state "$q" RUNNING 180
qsid=$(slurm_id "$q")
wait_for 60 sh -c "grep -q 'out of' /home/$USER_A/slurm-$qsid.out" || fail "no /home/$USER_A/slurm-$qsid.out"
assert_eq "$(as_user "$USER_A" corral logs "$q")" "out of $qsid" "corral logs of a forwarded job without --output"
as_user "$USER_A" corral requeue "$q"
wait_state "$q" PENDING 120
assert_eq "$(slurm_id "$q")" "$qsid" "the Slurm job after the requeue"
assert_eq "$("$real/squeue" -h -j "$qsid" -o %T)" PENDING "Slurm's state after the requeue"
as_user "$USER_A" corral cancel "$q"
wait_state "$q" CANCELLED 60

log "an array"
arr=$(as_user "$USER_A" corral submit --parsable -q cluster -D "/home/$USER_A" -a 1-3 \
      -o "/home/$USER_A/arr-%A_%a.out" -- sh -c 'echo "$SLURM_ARRAY_TASK_ID"')
arr=${arr%%_*}
for k in 0 1 2; do wait_state $((arr + k)) COMPLETED 240; done
for k in 1 2 3; do assert_eq "$(cat "/home/$USER_A/arr-${arr}_$k.out")" "$k" "array task $k's output"; done
assert_eq "$(count_key "$arr")" 3 "Slurm tasks of the array"

log "a dependency"
d1=$(as_user "$USER_B" corral submit --parsable -q cluster -D "/home/$USER_B" -o /dev/null -- sleep 10)
d2=$(as_user "$USER_B" corral submit --parsable -q cluster -D "/home/$USER_B" -o /dev/null -d "afterok:$d1" -- true)
wait_state "$d1" RUNNING 180
wait_for 60 sh -c "corral show --json $d2 | jq -r .job.reason | grep -q Dependency" || fail "job $d2: $(R "$d2")"
assert_eq "$(S "$d2")" PENDING "the dependent job while its dependency runs"
wait_state "$d2" COMPLETED 240
end1=$(corral show --json "$d1" | jq -r .job.end_time)
start2=$(corral show --json "$d2" | jq -r .job.start_time)
assert_le "$end1" "$start2" "the dependent job started after its dependency ended"

log "a comment holding a newline and a made-up line: a forwarded job still ends when Slurm's does"
e=$(as_user "$USER_A" corral submit --parsable -q cluster -D "/home/$USER_A" -o /dev/null -- sleep 15)
wait_state "$e" RUNNING 180
esid=$(slurm_id "$e")
h=$(as_user "$USER_A" "$real/sbatch" --parsable --hold -p debug -A "$PROJECT_A" -o /dev/null --wrap true)
h=${h%%;*}
# The line corrald's squeue printed (%k last) before it asked for no user's text.
as_user "$USER_A" "$real/scontrol" update "JobId=$h" "Comment=x
$esid|$esid|N/A|RUNNING|None|0:01|$USER_A|corral:$host:$e" || true
[ "$("$real/squeue" -h -j "$h" -o %k | wc -l)" -ge 2 ] ||
    log "this Slurm keeps no newline in a comment: only the end is checked"
wait_state "$e" COMPLETED 240
"$real/scancel" "$h"

log "slurmctld stopped with a job waiting: kept, then run once"
systemctl stop slurmctld.service
w=$(as_user "$USER_A" corral submit --parsable -q cluster -D "/home/$USER_A" -o /dev/null -- true)
wait_for 120 sh -c "corral show --json $w | jq -r .job.reason | grep -qx SlurmUnreachable" ||
    fail "job $w: $(S "$w") $(R "$w")"
assert_eq "$(S "$w")" PENDING "a job waiting for an unreachable cluster"
systemctl start slurmctld.service
wait_state "$w" COMPLETED 240
assert_eq "$(count_key "$w")" 1 "Slurm jobs of Corral job $w"

log "corrald killed with a job on the cluster: the link survives"
k=$(as_user "$USER_B" corral submit --parsable -q cluster -D "/home/$USER_B" -o /dev/null -- sleep 20)
wait_state "$k" RUNNING 180
sid=$(slurm_id "$k")
systemctl kill -s KILL corrald.service
wait_for 30 sh -c '! systemctl is-active --quiet corrald.service' || true
systemctl start corrald.service
assert_eq "$(S "$k")" RUNNING "the forwarded job after the restart"
assert_eq "$(slurm_id "$k")" "$sid" "its Slurm job after the restart"
wait_state "$k" COMPLETED 240
assert_eq "$(count_key "$k")" 1 "Slurm jobs of Corral job $k"
log "a full local queue overflows to the cluster"
fill=$(as_user "$USER_A" corral submit --parsable -D "/home/$USER_A" -n "$(nproc)" -t 5:00 -- sleep 120)
wait_state "$fill" RUNNING 60
o=$(as_user "$USER_B" corral submit --parsable -D "/home/$USER_B" -o /dev/null -- true)
assert_eq "$(corral show --json "$o" | jq -r .job.queue)" normal "the job's queue at first"
wait_for 120 sh -c "corral show --json $o | jq -r .job.queue | grep -qx cluster" ||
    fail "job $o did not overflow: $(S "$o") $(R "$o")"
wait_state "$o" COMPLETED 240
assert_eq "$(count_key "$o")" 1 "Slurm jobs of Corral job $o"
corral cancel "$fill"
wait_state "$fill" CANCELLED 60
log "took $(( $(date +%s) - t0 )) s"
