#!/bin/bash
# The Slurm front ends (corral-slurm(7)) as workflow managers call them, as two users:
# sbatch --wrap and scripts, squeue -u/-o, scancel -n, sacct -P, sinfo -o %P,
# scontrol show jobid -dd, show config, partition and hostnames, sacctmgr list user,
# Open OnDemand's sinfo and sacctmgr queries, scancel --signal and -M; the
# SLURM_* job environment; srun outside a job (submit and follow) and inside one (a step
# in the job's scope, bound to -c CPUs).
# timeout: 600
. "$CORRAL_TEST_LIB"
systemctl start corrald.socket
command -v sbatch >/dev/null || skip "the Slurm commands are not installed (corral-slurm-compat)"
cd /tmp
A() { as_user "$USER_A" "$@"; }
B() { as_user "$USER_B" "$@"; }
sacct_state() { A sacct -P -n --format=JobIdRaw,State -j "$1"; }

log "sbatch --wrap, the Slurm environment, sacct -P as Snakemake reads it"
out=$(A sbatch -J envjob -c 1 --mem 64 -t 5 -o '/tmp/slurm-env-%j.out' \
        --wrap 'env | grep -E "^(SLURM_|SLURMD_)" | sort; exit 3')
assert_match "$out" '^Submitted batch job [0-9]+$' "sbatch's message"
id=${out##* }
A corral wait "$id" >/dev/null || true
envout=$(cat "/tmp/slurm-env-$id.out")
for v in "SLURM_JOB_ID=$id" "SLURM_JOB_NAME=envjob" SLURM_CPUS_ON_NODE=1 SLURM_CPUS_PER_TASK=1 SLURM_NTASKS=1 \
         SLURM_MEM_PER_NODE=64 "SLURM_SUBMIT_DIR=/tmp" "SLURMD_NODENAME=$(hostname)" "SLURM_JOB_ACCOUNT=$PROJECT_A"; do
    grep -qxF "$v" <<<"$envout" || fail "the job's environment lacks $v: $envout"
done
assert_eq "$(sacct_state "$id")" "$id|FAILED" "sacct -P -n --format=JobIdRaw,State"
assert_eq "$(A sacct -P -n -o JobID,JobName,User,Account,State,ExitCode,AllocCPUS -j "$id")" \
    "$id|envjob|$USER_A|$PROJECT_A|FAILED|3:0|1" "sacct -P fields"
A sacct -j "$id" | head -2 | grep -q '^JobID           JobName  Partition' || fail "sacct's default header: $(A sacct -j "$id")"

log "squeue -u and -o, scontrol show jobid -dd, as both users"
id=$(A sbatch --parsable -J slurmtest -t 5 -o /dev/null --wrap 'sleep 300')
assert_match "$id" '^[0-9]+$' "sbatch --parsable"
bid=$(B sbatch --parsable -J slurmtest -t 5 -o /dev/null --wrap 'sleep 300')
wait_for 60 sh -c "squeue -h -j $id -o %T | grep -qx RUNNING" || fail "job $id does not run: $(squeue)"
line=$(B squeue -u "$USER_A" -h -o '%i|%j|%u|%a|%D')
assert_eq "$line" "$id|slurmtest|$USER_A|$PROJECT_A|1" "squeue -u $USER_A as $USER_B"
A squeue | head -1 | grep -qx '             JOBID PARTITION     NAME     USER ST       TIME  NODES NODELIST(REASON)' \
    || fail "squeue's default header: $(A squeue | head -1)"
A squeue -u "$USER_A" | grep -Eq "^ +$id +[^ ]+ +slurmtes +$USER_A +R " || fail "squeue's default line: $(A squeue)"
# -i N: the listing again every N seconds, each under the date (-l too), until interrupted.
date_re='^[A-Z][a-z]{2} [A-Z][a-z]{2} [0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2} [0-9]{4}$'
out=$(A timeout 4 squeue -i 1 -u "$USER_A" || true) # ended by timeout: until interrupted
[ "$(grep -cE "$date_re" <<<"$out")" -ge 2 ] && [ "$(grep -c '^ *JOBID PARTITION' <<<"$out")" -ge 2 ] \
    || fail "squeue -i 1 did not list twice, dated: $out"
assert_match "$(A squeue -l | head -1)" "$date_re" "squeue -l's first line, the date"
A scontrol show jobid -dd "$id" | grep -q "JobState=RUNNING" || fail "scontrol show jobid: $(A scontrol show jobid -dd "$id")"

log "scancel -n cancels only one's own jobs"
A scancel -n slurmtest
wait_for 60 sh -c "[ \"\$(setpriv --reuid=$USER_A --regid=\$(id -g $USER_A) --init-groups --reset-env sacct -P -n --format=JobIdRaw,State -j $id)\" = '$id|CANCELLED' ]" \
    || fail "scancel -n: $(sacct_state "$id")"
assert_match "$(B squeue -h -j "$bid" -o %T)" '^(RUNNING|PENDING)$' "$USER_B's job of the same name"
out=$(A scancel "$bid" 2>&1) && fail "$USER_A cancelled $USER_B's job"
assert_match "$out" '^scancel: ' "scancel's error"
B scancel "$bid"
wait_for 60 sh -c "! squeue -h -o %i | grep -qx $bid" || fail "job $bid still queued: $(squeue)"

log "sacct over the whole history: job $id ended five days ago"
systemctl stop corrald.service
sqlite3 /var/lib/corral/corral.db "update jobs set submit_time = submit_time - 432000,
    start_time = max(start_time - 432000, 0), end_time = end_time - 432000 where id = $id"
systemctl start corrald.service
# corrald forgets finished jobs a day old at its next sweep (half a minute): corral queue
# -a no longer lists it, sacct still does when it is named or the window reaches it.
wait_for 90 sh -c "! corral queue -a 2>/dev/null | grep -Eq '^ +$id '" || fail "job $id still in corrald's memory"
assert_eq "$(sacct_state "$id")" "$id|CANCELLED" "sacct -j of a job that ended five days ago"
A sacct -P -n --format=JobIdRaw | grep -qx "$id" && fail "sacct without -S listed a job that ended before midnight"
A sacct -P -n --format=JobIdRaw -S now-7days | grep -qx "$id" || fail "sacct -S now-7days does not list job $id"
A sacct -P -n --format=JobIdRaw -S "$(date -d '7 days ago' +%m/%d/%y)" | grep -qx "$id" \
    || fail "sacct -S MM/DD/YY does not list job $id"
A sacct -S yesterday-ish >/dev/null 2>&1 && rc=0 || rc=$?
assert_eq "$rc" 1 "sacct's exit status on a bad time"

log "sinfo, scontrol show config and partition, sacctmgr, refusals"
sinfo -h -o %P | grep -q '\*$' || fail "sinfo -o %P marks no default partition: $(sinfo -o %P)"
# Snakemake's executor plugin (snakemake-executor-plugin-slurm, __init__.py and utils.py)
# reads these two with r"MinJobAge\s*=\s*(\d+)\s*(sec|s|h)?" and r"MaxArraySize\s*=?\s*(\d+)".
conf=$(A scontrol show config) || fail "scontrol show config failed: $conf"
[[ $conf =~ MinJobAge[[:space:]]*=[[:space:]]*([0-9]+)[[:space:]]*(sec|s|h)? ]] || fail "no MinJobAge: $conf"
assert_eq "${BASH_REMATCH[1]}" 86400 "scontrol show config's MinJobAge"
[[ $conf =~ MaxArraySize[[:space:]]*=?[[:space:]]*([0-9]+) ]] || fail "no MaxArraySize: $conf"
assert_match "$conf" '^Configuration data as of [0-9]{4}-[0-9]{2}-[0-9]{2}T' "scontrol show config's first line"
def=$(sinfo -h -o %P | sed -n 's/\*$//p')
A scontrol show partition | grep -qx "PartitionName=$def" || fail "scontrol show partition: $(A scontrol show partition)"
A scontrol -o show partition "$def" | grep -Eq "^PartitionName=$def .* Default=YES .* TotalNodes=1 " \
    || fail "scontrol -o show partition $def: $(A scontrol -o show partition "$def")"
out=$(A scontrol show partition no-such-queue) && fail "scontrol show partition no-such-queue succeeded"
assert_eq "$out" "Partition no-such-queue not found" "scontrol show partition of an unknown name"
A sacctmgr -n -s list user "$USER_A" format=account%20 | grep -qw "$PROJECT_A" \
    || fail "sacctmgr: $(A sacctmgr -n -s list user "$USER_A" format=account%20 2>&1)"
out=$(A sbatch --gres=mps:1 --wrap true 2>&1) && fail "sbatch --gres=mps was accepted"
assert_match "$out" "^sbatch: error: --gres=mps:1: generic resource 'mps' is not available here" "sbatch --gres=mps"
if ! corral info | grep -q 'GPUs: [1-9]'; then
    out=$(A sbatch --gres=gpu:1 --wrap true 2>&1) && fail "sbatch --gres=gpu:1 was accepted without GPUs"
    assert_match "$out" 'this machine has no GPUs' "sbatch --gres=gpu:1"
    out=$(A sbatch --test-only --gpus=2 --wrap true 2>&1) && fail "sbatch --test-only --gpus=2 was accepted"
    assert_match "$out" 'this machine has no GPUs' "sbatch --test-only --gpus=2"
fi
out=$(A sbatch -N 2 --wrap true 2>&1) && fail "sbatch -N 2 was accepted"
assert_match "$out" 'not supported on a single machine' "sbatch -N 2"

log "Open OnDemand's, Parsl's and Snakemake's cluster queries"
assert_match "$(sinfo -aho %F/%C)" '^[01]/[01]/0/1/[0-9]+/[0-9]+/0/[0-9]+$' "sinfo -aho %F/%C"
assert_eq "$(sinfo -aho %F/%C | wc -l)" 1 "sinfo -aho %F/%C's lines"
assert_match "$(sinfo -ahNO nodehost:100,gres:512,gresused:512,statelong)" "^$(hostname) +[^ ]+ +[^ ]+ +(idle|mixed|allocated) *$" \
    "sinfo -ahNO nodehost:100,gres:512,gresused:512,statelong"
assert_match "$(sinfo -ho $'\x1E%c\x1F%n\x1F%f')" "^"$'\x1E'"[0-9]+"$'\x1F'"$(hostname)"$'\x1F'"\(null\)$" \
    "sinfo -ho \\x1E%c\\x1F%n\\x1F%f"
A scontrol show part -o | grep -q "^PartitionName=$def " || fail "scontrol show part -o: $(A scontrol show part -o 2>&1)"
A scontrol show part -o -M "$(hostname)" | grep -q "^PartitionName=$def " \
    || fail "scontrol show part -o -M $(hostname): $(A scontrol show part -o -M "$(hostname)" 2>&1)"
assert_eq "$(sinfo -M all -o %P | head -1)" "CLUSTER: $(hostname)" "sinfo -M all's first line"
assert_eq "$(A scontrol show hostname 'node[1-2,5]' | tr '\n' ' ')" "node1 node2 node5 " "scontrol show hostname"
out=$(A scontrol show job 999999 2>&1) && fail "scontrol show job of an unknown job succeeded"
assert_eq "$out" "slurm_load_jobs error: Invalid job id specified" "scontrol show job of an unknown job"
out=$(A scontrol hold 999999 2>&1) && fail "scontrol hold of an unknown job succeeded"
assert_eq "$out" "Invalid job id specified for job 999999" "scontrol hold of an unknown job"
assert_eq "$(A sacctmgr -nP show users withassoc format=account,qos where user="$USER_A" cluster=anything)" \
    "$PROJECT_A|normal" "sacctmgr show users withassoc format=account,qos"
assert_eq "$(A sacctmgr -n -s list user "$USER_A" format=account%256 | head -1 | tr -d ' ')" "$PROJECT_A" \
    "sacctmgr -n -s list user format=account%256"

log "scancel --signal: the job traps it and runs on; not another user's; not a pending job"
id=$(A sbatch --parsable -t 5 -o '/tmp/slurm-sig-%j.out' --wrap \
        'trap "echo got >>/tmp/slurm-sig-\$SLURM_JOB_ID.trap" USR1; echo started; while :; do sleep 1; done')
wait_for 90 grep -qs started "/tmp/slurm-sig-$id.out" || fail "the job to signal did not start: $(squeue)"
out=$(B scancel --signal=USR1 "$id" 2>&1) && fail "$USER_B signalled $USER_A's job"
assert_eq "$out" "scancel: error: Kill job error on job id $id: Access/permission denied" "scancel --signal as another user"
[ ! -e "/tmp/slurm-sig-$id.trap" ] || fail "$USER_B's signal reached the job"
A scancel --signal=USR1 "$id" || fail "scancel --signal=USR1 failed"
wait_for 30 test -s "/tmp/slurm-sig-$id.trap" || fail "the job did not get USR1: $(cat "/tmp/slurm-sig-$id.out")"
A scancel -b -s SIGUSR1 "$id" || fail "scancel -b -s SIGUSR1 failed"
wait_for 30 sh -c "[ \$(wc -l <'/tmp/slurm-sig-$id.trap') = 2 ]" || fail "the batch script did not get -b's USR1"
B corral signal USR1 "$id" 2>/dev/null && fail "$USER_B signalled $USER_A's job with corral signal"
A corral signal USR1 "$id" || fail "corral signal USR1 failed"
wait_for 30 sh -c "[ \$(wc -l <'/tmp/slurm-sig-$id.trap') = 3 ]" || fail "the job did not get corral signal's USR1"
sleep 2
assert_eq "$(A squeue -h -j "$id" -o %T)" RUNNING "the job after its signals"
hid=$(A sbatch --parsable -H --wrap true)
out=$(A scancel -s USR1 "$hid" 2>&1) && fail "scancel --signal of a pending job succeeded"
assert_eq "$out" "scancel: error: Kill job error on job id $hid: Job can not be altered now, try again later" \
    "scancel --signal of a pending job"
out=$(A scancel -M no-such-cluster "$hid" 2>&1) && fail "scancel -M no-such-cluster succeeded"
assert_match "$out" "not supported on a single machine" "scancel -M of another cluster"
A scancel --clusters=all "$id" "$hid" || fail "scancel --clusters=all failed"
wait_for 60 sh -c "[ \"\$(setpriv --reuid=$USER_A --regid=\$(id -g $USER_A) --init-groups --reset-env sacct -P -n --format=State -j $id)\" = CANCELLED ]" \
    || fail "scancel --clusters=all: $(sacct_state "$id")"

log "srun outside a job: submit, follow the output, its exit status"
out=$(A srun -c 1 --mem 64 -t 5 sh -c 'echo "out $SLURM_JOB_ID"; echo err >&2; exit 5' 2>/tmp/srun-err) && rc=0 || rc=$?
assert_eq "$rc" 5 "srun's exit status"
assert_match "$out" '^out [0-9]+$' "srun's standard output"
grep -qx err /tmp/srun-err || fail "srun's standard error: $(cat /tmp/srun-err)"

log "srun inside a job: a step in the job's scope, bound to -c CPUs"
cpus=$(nproc --all)
[ "$cpus" -ge 2 ] || skip "srun inside a job needs 2 CPUs, the guest has $cpus"
id=$(A sbatch --parsable -c 2 --mem 128 -t 5 -o '/tmp/slurm-step-%j.out' --wrap \
        'srun -n1 -c1 --cpu-bind=q sh -c "echo step \$SLURM_PROCID; grep ^Cpus_allowed_list /proc/self/status; grep corral-job /proc/self/cgroup"
         srun -n2 -c1 sh -c "echo task \$SLURM_PROCID"
         srun -n3 -c1 true; echo "too many: $?"')
A corral wait "$id" >/dev/null || true
step=$(cat "/tmp/slurm-step-$id.out")
grep -qx "step 0" <<<"$step" || fail "the step did not run: $step"
grep -Eq "^Cpus_allowed_list:\s+[0-9]+$" <<<"$step" || fail "the step is not bound to one CPU: $step"
grep -q "/corral-job-$id.scope" <<<"$step" || fail "the step is not in the job's scope: $step"
[ "$(grep -c '^task [01]$' <<<"$step")" = 2 ] || fail "srun -n2 did not run two tasks: $step"
grep -qx "too many: 1" <<<"$step" || fail "srun -n3 -c1 in a 2-CPU job was not refused: $step"
grep -q "More processors requested than permitted" <<<"$step" || fail "srun's refusal: $step"
log "ok"
