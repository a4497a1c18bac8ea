#!/bin/bash
# A real client of the Slurm commands: Debian 12's Snakemake (7.21) with its Slurm
# executor, `snakemake --slurm`, as a user of a project. Every rule runs as a Corral job
# under that user and project with the rule's threads as CPUs and mem_mb as memory (srun
# inside the job binds the rule to them), a rule that fails is retried, sacct shows the
# jobs as Snakemake reads them; and interrupting Snakemake cancels its running jobs. Each
# job runs Snakemake itself again (its job step, under srun): mem_mb leaves room for it.
# timeout: 1200
. "$CORRAL_TEST_LIB"
systemctl start corrald.socket
command -v sbatch >/dev/null || skip "the Slurm commands are not installed (corral-slurm-compat)"
command -v snakemake >/dev/null || skip "snakemake is not installed in the guest (tests/vm/image/packages-slow: CORRAL_TEST_SLOW=1)"
A() { as_user "$USER_A" "$@"; }
cpus=$(nproc --all)
[ "$cpus" -ge 2 ] || skip "the workflow's 2-thread rule needs 2 CPUs, the guest has $cpus"

dir=/tmp/snakemake-$USER_A
rm -rf "$dir"; mkdir -p "$dir"; chown "$USER_A:" "$dir"
cat > "$dir/Snakefile" <<'SMK'
rule all:
    input: "c.txt", "flaky.txt"

rule a:
    output: "a.txt"
    threads: 2
    resources: mem_mb=500, runtime=10
    shell: "echo \"$SLURM_JOB_ID $SLURM_CPUS_PER_TASK $SLURM_JOB_ACCOUNT $(id -un)\" > {output}; grep ^Cpus_allowed_list /proc/self/status >> {output}; grep -o 'corral-job-[0-9]*.scope' /proc/self/cgroup >> {output}"

rule b:
    input: "a.txt"
    output: "b.txt"
    threads: 1
    resources: mem_mb=400
    shell: "cat {input} > {output}; echo \"b $SLURM_JOB_ID\" >> {output}"

rule c:
    input: "b.txt"
    output: "c.txt"
    resources: mem_mb=400
    shell: "cp {input} {output}"

rule flaky:
    output: "flaky.txt"
    resources: mem_mb=400
    shell: "if [ ! -e flaky.attempt ]; then touch flaky.attempt; exit 1; fi; echo \"$SLURM_JOB_ID\" > {output}"
SMK
chown "$USER_A:" "$dir/Snakefile"

log "snakemake --slurm -j 4 as $USER_A in project $PROJECT_A"
start=$(date +%s)
A sh -c "cd $dir && snakemake --slurm -j 4 --default-resources slurm_account=$PROJECT_A --retries 1 \
        --latency-wait 10 >$dir/snakemake.log 2>&1" || { tail -n 60 "$dir/snakemake.log"; fail "snakemake failed"; }
log "the workflow took $(( $(date +%s) - start )) s"
[ -s "$dir/c.txt" ] && [ -s "$dir/flaky.txt" ] || { tail -n 40 "$dir/snakemake.log"; fail "the workflow's outputs are missing"; }

read -r aid acpus aaccount auser < "$dir/a.txt"
assert_eq "$acpus $aaccount $auser" "2 $PROJECT_A $USER_A" "rule a's CPUs per task, account and user"
grep -Eq '^Cpus_allowed_list:\s+[0-9]+[-,][0-9]+$' "$dir/a.txt" || fail "rule a is not bound to its 2 CPUs: $(cat "$dir/a.txt")"
grep -qx "corral-job-$aid.scope" "$dir/a.txt" || fail "rule a did not run in its job's scope: $(cat "$dir/a.txt")"
assert_eq "$(A sacct -P -n -X -o User,Account,AllocCPUS,ReqMem,State -j "$aid")" "$USER_A|$PROJECT_A|2|500M|COMPLETED" \
    "rule a in sacct"

# Every job of the run: a, b, c and flaky twice (the first attempt fails).
# Snakemake 7.21's Slurm executor names its jobs snakejob_RULE_N.
jobs=$(A sacct -P -n -X -o JobIDRaw,JobName,User,Account,State | grep '|snakejob_' || true)
assert_eq "$(grep -c "|$USER_A|$PROJECT_A|COMPLETED$" <<<"$jobs")" 4 "completed jobs: $jobs"
assert_eq "$(grep -c "|snakejob_flaky_.*|$USER_A|$PROJECT_A|FAILED$" <<<"$jobs")" 1 \
    "failed jobs (the flaky rule's first attempt): $jobs"
grep -q "Submitted batch job\|has been submitted with SLURM jobid" "$dir/snakemake.log" || fail "snakemake did not report its submissions"

log "interrupting snakemake cancels its running jobs"
dir2=$dir/cancel
mkdir -p "$dir2"; chown "$USER_A:" "$dir2"
printf 'rule long:\n    output: "never.txt"\n    resources: mem_mb=400\n    shell: "sleep 600; touch {output}"\n' > "$dir2/Snakefile"
A sh -c "cd $dir2 && exec snakemake --slurm -j 1 --default-resources slurm_account=$PROJECT_A >$dir2/snakemake.log 2>&1" &
smk=$!
wait_for 300 sh -c "squeue -h -u $USER_A -t R -o %i | grep -q ." || { kill -INT $smk; fail "the long rule never ran: $(cat "$dir2/snakemake.log")"; }
jid=$(squeue -h -u "$USER_A" -t R -o %i | head -n1)
kill -INT "$smk"
wait "$smk" || true
wait_for 120 sh -c "! squeue -h -u $USER_A -o %i | grep -q ." || fail "snakemake left jobs behind: $(squeue -u "$USER_A")"
assert_eq "$(A sacct -P -n -o State -j "$jid")" CANCELLED "the interrupted rule's job"
log "ok"
