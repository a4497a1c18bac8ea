#!/bin/bash
# The corral CLI as users type it, against the installed, socket-activated corrald:
# submit (command line and #SBATCH/#PBS scripts), queue, show, hold/release,
# suspend/resume, cancel, requeue, wait, logs; a second user can neither see the details
# of nor touch the first one's jobs; the job is a unit systemctl and journalctl know.
# timeout: 500
. "$CORRAL_TEST_LIB"
systemctl start corrald.socket
A() { as_user "$USER_A" "$@"; }
B() { as_user "$USER_B" "$@"; }
jstate() { corral show --json "$1" | jq -r .job.state; }
state_is() { [ "$(jstate "$1")" = "$2" ]; }

log "submit a command and --wait for it"
out=$(A corral submit --wait -n 1 --mem 64M --time 5:00 --name hello -- sh -c 'echo "hello from $CORRAL_JOB_ID on $CORRAL_CPUS"; exit 4') && rc=0 || rc=$?
assert_eq "$rc" 4 "corral submit --wait exit code"

log "failures say why at once: a directory the user cannot enter is refused at submission"
out=$(cd /root && A corral submit -- true 2>&1) && fail "a job in /root was accepted from $USER_A"
assert_match "$out" 'cannot change to the working directory /root: Permission denied' "the refusal says why"
log "a launch that fails: wait prints the reason"
mkdir -p /tmp/outdir && chmod 777 /tmp/outdir
id=$(A corral submit --parsable --hold -o /tmp/outdir/out -- true)
chmod 755 /tmp/outdir
A corral release "$id"
out=$(A corral wait "$id" 2>&1) && fail "the job without a writable output file succeeded"
assert_match "$out" "job $id: FAILED \\(LaunchFailed: cannot open the output file /tmp/outdir/out" \
    "corral wait says why the launch failed"
rmdir /tmp/outdir

log "--test-only: checked, printed and estimated; nothing queued"
n_before=$(corral queue --json 2>/dev/null | jq '[.jobs[]?] | length')
out=$(A corral submit --test-only -n 1 --time 1:00 -- true) || fail "--test-only refused a good job: $out"
assert_match "$out" 'Accepted: +yes' "--test-only: accepted"
assert_match "$out" 'Would start: +now' "--test-only on an idle machine: starts now"
out=$(A corral submit --test-only -n 64 -- true) && fail "--test-only accepted 64 CPUs on a small guest"
assert_match "$out" 'Would not be accepted' "--test-only: the refusal"
assert_eq "$(corral queue --json 2>/dev/null | jq '[.jobs[]?] | length')" "$n_before" "--test-only queued nothing"

log "--signal=B:USR1@55: the script's shell is told before its time limit, and can end cleanly"
cat > /tmp/sig.sbatch <<'S'
#!/bin/bash
#SBATCH --time=1
#SBATCH --signal=B:USR1@55
#SBATCH --output=/tmp/sig-%j.out
trap 'echo "got USR1"; kill $pid; exit 0' USR1
sleep 100 & pid=$!
wait $pid
echo "not told"
S
chmod 644 /tmp/sig.sbatch
id=$(A corral submit --parsable /tmp/sig.sbatch)
A corral wait "$id" >/dev/null 2>&1 || fail "the job that trapped its signal did not complete: $(corral show "$id")"
assert_eq "$(cat /tmp/sig-$id.out)" "got USR1" "the script got USR1 before its limit"

log "a Slurm script with directives"
cat > /tmp/job.sbatch <<'S'
#!/bin/sh
#SBATCH --job-name=slurmish
#SBATCH --cpus-per-task=1
#SBATCH --mem=32M
#SBATCH --time=00:05:00
#SBATCH --output=/tmp/slurmish-%j.out
echo "script $CORRAL_JOB_NAME $(id -un)"
S
chmod 644 /tmp/job.sbatch
id=$(A corral submit --parsable /tmp/job.sbatch)
A corral wait "$id" >/dev/null
assert_eq "$(cat /tmp/slurmish-$id.out)" "script slurmish $USER_A" "output of the #SBATCH job"
assert_eq "$(stat -c %U /tmp/slurmish-$id.out)" "$USER_A" "owner of the output file"
printf '#!/bin/sh\n#SBATCH --gres=mps:1\ntrue\n' > /tmp/bad.sbatch
out=$(A corral submit /tmp/bad.sbatch 2>&1) && fail "a script with --gres=mps was accepted"
assert_match "$out" 'bad.sbatch:2:' "the unsupported directive is reported with its line"
# A GPU request parses; a machine without GPUs refuses it with its numbers.
if ! corral info | grep -q 'GPUs: [1-9]'; then
    printf '#!/bin/sh\n#SBATCH --gres=gpu:1\ntrue\n' > /tmp/gpu.sbatch
    out=$(A corral submit /tmp/gpu.sbatch 2>&1) && fail "a GPU job was accepted on a machine without GPUs"
    assert_match "$out" 'this machine has no GPUs' "the GPU refusal"
fi

log "an administrator's hold stands: alice's own hold of the job changes nothing, her release is refused"
id=$(A corral submit --parsable --begin now+1h -- true)
corral hold "$id"
A corral hold "$id" 2>/dev/null && fail "alice held again a job an administrator held"
out=$(A corral release "$id" 2>&1) && fail "alice released a job an administrator held (after her own hold)"
assert_match "$out" 'only an administrator can release' "the refusal says why"
state_is "$id" HELD || fail "the administrator's hold did not stand: $(jstate "$id")"
corral release "$id"
A corral cancel "$id"

log "hold, release, queue, show; the other user is kept out"
id=$(A corral submit --parsable --hold -- sleep 60)
state_is "$id" HELD || fail "held job is $(jstate "$id")"
A corral queue | grep -q "^ *$id " || fail "corral queue does not list job $id: $(A corral queue)"
B corral show --json "$id" | jq -e '.job.argv' >/dev/null && fail "bob sees alice's argv"
B corral cancel "$id" 2>/dev/null && fail "bob cancelled alice's job"
B corral hold "$id" 2>/dev/null && fail "bob held alice's job"
B corral suspend "$id" 2>/dev/null && fail "bob suspended alice's job"
A corral release "$id"
wait_for 60 state_is "$id" RUNNING || fail "released job not running: $(jstate "$id")"

log "the job is a unit: systemctl status and journalctl"
systemctl status "corral-job-$id.scope" | grep -q "corral-physics.slice" || fail "systemctl status does not show the scope in its project slice"
A corral suspend "$id" 2>/dev/null && fail "alice may not suspend (UsersMaySuspend=no)"
corral suspend "$id"
state_is "$id" SUSPENDED || fail "job not suspended: $(jstate "$id")"
assert_eq "$(systemctl show -P FreezerState "corral-job-$id.scope")" frozen "FreezerState of the suspended job"
corral resume "$id"
state_is "$id" RUNNING || fail "job not resumed"
A corral cancel "$id"
wait_for 60 state_is "$id" CANCELLED || fail "cancelled job is $(jstate "$id")"
wait_for 20 sh -c "! systemctl is-active -q corral-job-$id.scope" || fail "scope left after cancel"
# With no job left in the project, its slice keeps the controllers a job's scope needs
# (corral-physics-controllers.slice holds them): turning them on again at each job's start
# cost more than 100 ms of a short job's latency here.
assert_eq "$(systemctl show -P ActiveState corral-physics-controllers.slice)" active "the project's controller hold"
for c in cpuset cpu io memory pids; do
    grep -qw "$c" /sys/fs/cgroup/corral.slice/corral-physics.slice/cgroup.subtree_control \
        || fail "controller $c off in corral-physics.slice with no job: $(cat /sys/fs/cgroup/corral.slice/corral-physics.slice/cgroup.subtree_control)"
done

log "waiting jobs: the top one's reservation, an estimate for the one behind it"
big=$(A corral submit --parsable -n 2 --time 2:00 -- sleep 100)
wait_for 60 state_is "$big" RUNNING || fail "job $big not running: $(jstate "$big")"
# Both alice's: fair-share (IT4I's, on by default) would put bob's light project first.
top=$(A corral submit --parsable -n 2 --time 1:00 -- true)
next=$(A corral submit --parsable -n 1 --time 1:00 -- true)
started=$(corral show --json "$big" | jq .job.start_time)
corral show --json "$top" | jq -e '.job.reason == "Resources"' >/dev/null || fail "top job: $(corral show --json "$top")"
corral show --json "$next" | jq -e '.job.reason == "Priority"' >/dev/null || fail "next job: $(corral show --json "$next")"
assert_eq "$(( $(corral show --json "$top" | jq .job.est_start) - started ))" 120 "top job reserved for when the running job's 2 minutes are up"
assert_eq "$(( $(corral show --json "$next" | jq .job.est_start) - started ))" 180 "the next job estimated after the top one's minute"
A corral queue | grep -E "^ *$next " | grep -q "$(date -d "@$((started + 180))" +%H:%M)" || fail "corral queue does not show the estimate: $(A corral queue)"
corral cancel "$big" "$top" "$next"

log "logs of a journal job"
id=$(A corral submit --parsable -- sh -c 'echo line-one; echo line-two >&2')
A corral wait "$id" >/dev/null
A corral logs "$id" | grep -q line-one || fail "corral logs misses stdout: $(A corral logs "$id" 2>&1)"
journalctl -q -u "corral-job-$id.scope" -o cat | grep -q line-two || fail "journalctl -u misses stderr"

log "an array of 4 tasks, at most 2 at a time"
first=$(A corral submit --parsable --array 1-4%2 -- sh -c 'echo "task $CORRAL_ARRAY_TASK_ID of $CORRAL_ARRAY_JOB_ID"; sleep 3')
peak=0
for i in $(seq 150); do
    n=$(corral queue --json -t RUNNING | jq "[.jobs[] | select(.array_job_id == $first)] | length")
    [ "$n" -le "$peak" ] || peak=$n
    done_n=$(corral queue --json -t COMPLETED | jq "[.jobs[] | select(.array_job_id == $first)] | length")
    [ "$done_n" = 4 ] && break
    sleep 0.2
done
assert_eq "$done_n" 4 "array tasks completed"
assert_le "$peak" 2 "array tasks running at once"
journalctl -q -o cat CORRAL_JOB_ID=$((first + 3)) | grep -qx "task 4 of $first" || fail "CORRAL_ARRAY_TASK_ID of the last task"

log "requeue a finished job; bad input gets clear errors"
A corral requeue "$id"
wait_for 60 state_is "$id" COMPLETED || fail "requeued job did not complete again"
out=$(A corral submit --mem 4X -- true 2>&1) && fail "--mem 4X accepted"
assert_match "$out" 'mem' "error names the option"
out=$(A corral submit -n 999 -- true 2>&1) && fail "999 CPUs accepted"
assert_match "$out" 'cpus' "error names cpus"
out=$(A corral show 999999 2>&1) && fail "show of a missing job succeeded"
assert_match "$out" '999999' "error names the job"

log "configuration: a bad file is refused with file:line and the old one kept; OperatorGroup"
mkdir -p /etc/corral
printf '[Manager]\nOperatorGroup=%s\nKillWaitSec=soon\n' "$PROJECT_B" > /etc/corral/corral.conf
out=$(corral reload 2>&1) && fail "a bad configuration was accepted"
assert_match "$out" 'corral.conf:3' "the reload error names file and line"
out=$(A corral reload 2>&1) && fail "alice reloaded the configuration"
printf '[Manager]\nOperatorGroup=%s\n' "$PROJECT_B" > /etc/corral/corral.conf
corral reload   # synchronous, unlike SIGHUP through systemctl reload
id=$(A corral submit --parsable --hold -- true)
B corral cancel "$id" || fail "an operator (group $PROJECT_B) could not cancel alice's job"
state_is "$id" CANCELLED || fail "job $id not cancelled by the operator"
rm -f /etc/corral/corral.conf
systemctl reload corrald   # and the SIGHUP path: check that the daemon answers afterwards
wait_for 10 sh -c "corral info >/dev/null" || fail "corrald does not answer after SIGHUP"
