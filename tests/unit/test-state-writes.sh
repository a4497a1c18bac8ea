#!/bin/bash
# Every change of a job's state goes through manager_job_transition() (daemon/job-transition.c),
# which checks the transition table and commits. This fails when any other daemon source
# assigns a job's state; the store may set it when it loads a job.
#
# It first proves on planted sources that it can fail: a guard that passes everything is
# worse than none, since HACKING and job-transition.c cite it.
set -euo pipefail
src=${CORRAL_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}

# A `state` member assigned (not compared) after an identifier, `)` or `]`: `j->state =`,
# `m->jobs[i]->state=`, `job.state =`, `(*j).state =`. The `]` leads the bracket
# expression so that it is a member of the set rather than its end.
assign='[][:alnum:]_)](->|\.)state[[:space:]]*=([^=]|$)'

# Prints the offending lines of DIR/daemon/*.c; succeeds when there are none.
check() {
        local dir=$1 bad n
        bad=$(grep -nE "$assign" "$dir"/daemon/*.c | grep -vE '^[^:]*/daemon/(job-transition|store)\.c:' || true)
        if [ -n "$bad" ]; then
                echo "job state written outside daemon/job-transition.c:"
                echo "$bad"
                return 1
        fi
        # The store writes it once, when loading.
        n=$(grep -cE "$assign" "$dir"/daemon/store.c 2>/dev/null || true)
        if [ "${n:-0}" -gt 1 ]; then
                echo "daemon/store.c assigns job states $n times; only loading may"
                return 1
        fi
}

# Self-test: each planted write must be found, and comparisons must not be.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/daemon"
printf 'static void ok(Job *j) { if (j->state == JOB_RUNNING || j->state != JOB_QUEUED) return; }\n' >"$tmp/daemon/ok.c"
check "$tmp" >/dev/null || { echo "self-test: a comparison was taken for a write" >&2; exit 1; }
for planted in 'j->state = JOB_RUNNING;' 'm->jobs[i]->state = JOB_RUNNING;' 'job.state=JOB_FAILED;' \
               '(*j).state = JOB_HELD;' 'p->job->state =' 'j->state	= s;'; do
        printf 'static void f(void) { %s }\n' "$planted" >"$tmp/daemon/planted.c"
        if check "$tmp" >/dev/null; then
                echo "self-test: the planted write '$planted' was not found" >&2
                exit 1
        fi
done
rm "$tmp/daemon/planted.c"
printf 'static void a(Job *j) { j->state = JOB_QUEUED; }\nstatic void b(Job *j) { j->state = JOB_HELD; }\n' \
        >"$tmp/daemon/store.c"
check "$tmp" >/dev/null && { echo "self-test: two writes in store.c were allowed" >&2; exit 1; }

if ! out=$(check "$src"); then
        echo "$out" >&2
        exit 1
fi
echo "ok: job states are assigned only in daemon/job-transition.c (and loaded in daemon/store.c)"
