#!/bin/bash
# Slurm's commands exit 1 on any error (scripts test `$? -eq 1`), where corral exits 2 for a
# usage error and 3 when corrald cannot be reached: the Slurm-named commands must say 1 for
# both. corrald is not needed: the socket is one nobody listens on.
set -uo pipefail
build=${CORRAL_BUILDDIR:?}/slurm
export CORRAL_SOCKET=/nonexistent/corral-test.sock
unset SLURM_JOB_ID SLURM_JOBID
cd "$(mktemp -d)" || exit 1
trap 'rm -rf "$PWD"' EXIT
fail=0
check() { # WANT CMD ARGS...
    local want=$1; shift
    timeout 20 "$build/$1" "${@:2}" >/dev/null 2>&1 </dev/null
    local rc=$?
    if [ "$rc" != "$want" ]; then
        echo "FAIL: $* exited $rc, expected $want" >&2
        fail=1
    else
        echo "ok: $* -> $rc"
    fi
}
# Usage errors (corral: 2).
check 1 sbatch --cpus-per-task=x --wrap true
check 1 sbatch --no-such-option --wrap true
check 1 srun --no-such-option true
check 1 squeue --no-such-option
check 1 scancel --no-such-option 1
check 1 scancel --signal=NOSUCHSIG 1
check 1 scancel -s 65 1
check 1 sacct --no-such-option
check 1 sacct -S not-a-time
check 1 sinfo --no-such-option
check 1 sinfo -O nosuchfield
check 1 scontrol no-such-command
check 1 scontrol show no-such-entity
check 1 scontrol show
check 1 sacctmgr no-such-command
check 1 seff --no-such-option 1
check 1 seff
check 1 seff 1 2
check 1 seff not-a-job
# corrald unreachable (corral: 3).
check 1 sbatch --wrap true
check 1 srun -n 1 true
check 1 squeue
check 1 scancel 1
check 1 scancel -s USR1 1
check 1 scancel -M all 1
check 1 sacct
check 1 sinfo
check 1 scontrol show job 1
check 1 scontrol show config
check 1 scontrol -o show partition
check 1 scontrol show node
check 1 seff 1
check 1 seff 4_2
# Two options after show, -o first: once looped for ever (timeout's 124 here).
check 1 scontrol show -o -d job 1
check 1 scontrol show part -o -M somewhere
# Help is no error.
check 0 squeue --help
check 0 sbatch --help
check 0 scontrol --help
check 0 seff -h
# No corrald needed: a host list is expanded here.
check 0 scontrol show hostnames 'node[1-3]'
check 0 scontrol show hostn 'node[1-'
# squeue's options without effect here are taken, never read as another's value (--all once
# fell into --iterate's parsing: Open OnDemand's squeue lines failed); a bad -i is refused.
for o in --all -a -r --array; do
    err=$(timeout 20 "$build/squeue" "$o" 2>&1 >/dev/null </dev/null)
    case "$err" in
        *iterate*|*nvalid*|*unrecognized*) echo "FAIL: squeue $o: $err" >&2; fail=1 ;;
        *) echo "ok: squeue $o taken" ;;
    esac
done
for v in 0 x; do
    err=$(timeout 20 "$build/squeue" -i "$v" 2>&1 >/dev/null </dev/null)
    case "$err" in
        *"--iterate=$v"*) echo "ok: squeue -i $v refused" ;;
        *) echo "FAIL: squeue -i $v: $err" >&2; fail=1 ;;
    esac
done
exit $fail
