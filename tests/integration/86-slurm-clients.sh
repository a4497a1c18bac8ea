#!/bin/bash
# Popular Slurm clients, unchanged: their exact command lines (Nextflow, dask-jobqueue,
# submitit, Parsl, Snakemake 8's plugin, batchspawner, Open OnDemand, Cromwell,
# HyperQueue, batchtools, Cylc) replayed by slurm-clients.py as an unprivileged user
# against the real corrald, each output read with the client's own rule; see the sources
# cited there. Also: sbatch copies the script at submission, scontrol show config as
# clients read it, an unknown job id gets Slurm's message and status.
# timeout: 900
. "$CORRAL_TEST_LIB"
systemctl start corrald.socket
command -v sbatch >/dev/null || skip "the Slurm commands are not installed (corral-slurm-compat)"
command -v python3 >/dev/null || skip "python3 is not installed"
A() { as_user "$USER_A" "$@"; }

work=/tmp/slurm-clients
rm -rf "$work"
install -d -o "$USER_A" -m 0755 "$work"
A python3 "$(dirname "$0")/slurm-clients.py" "$work" "$@"
log "an unknown job id: Slurm's message and exit status"
out=$(A squeue -j 999999 2>&1) && fail "squeue -j of an unknown job succeeded: $out"
assert_eq "$out" "slurm_load_jobs error: Invalid job id specified" "squeue -j 999999"
out=$(A scontrol show job 999999 2>&1) && fail "scontrol show job of an unknown job succeeded: $out"
assert_eq "$out" "slurm_load_jobs error: Invalid job id specified" "scontrol show job 999999"

log "ok"
