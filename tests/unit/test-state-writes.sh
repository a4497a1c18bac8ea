#!/bin/bash
# Every change of a job's state goes through manager_job_transition() (daemon/job-transition.c),
# which checks the transition table and commits. This fails when any other daemon source
# assigns a job's state; the store may set it when it loads a job.
set -euo pipefail
src=${CORRAL_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
bad=$(grep -nE '[[:alnum:]_)\]](->|\.)state[[:space:]]*=[^=]' "$src"/daemon/*.c \
        | grep -vE '^[^:]*/daemon/(job-transition|store)\.c:' || true)
if [ -n "$bad" ]; then
    echo "job state written outside daemon/job-transition.c:" >&2
    echo "$bad" >&2
    exit 1
fi
# The store writes it once, when loading.
n=$(grep -cE '[[:alnum:]_)\]](->|\.)state[[:space:]]*=[^=]' "$src"/daemon/store.c || true)
[ "$n" -le 1 ] || { echo "daemon/store.c assigns job states $n times; only loading may" >&2; exit 1; }
echo "ok: job states are assigned only in daemon/job-transition.c (and loaded in daemon/store.c)"
