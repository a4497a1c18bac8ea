#!/bin/bash
# Every change of a job's state goes through manager_job_transition() (daemon/job-transition.c),
# which checks the transition table and commits; so does every change of the flags that
# qualify a state (who holds or suspends the job, a cancel or a launch under way), set there
# by the transition or by manager_job_mark() as the caller says who acts. This fails when
# any other daemon source assigns a job's state or one of those flags; the store may set
# each once, when it loads a job.
#
# It first proves on planted sources that it can fail: a guard that passes everything is
# worse than none, since docs/ARCHITECTURE.md and job-transition.c cite it.
set -euo pipefail
src=${CORRAL_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}

members='state held_by_admin suspended_by_admin suspended_by_sched suspended_by_person cancel_requested launching'

# A member assigned (not compared), plainly or compounded (|=, &=, ...), after an
# identifier, `)` or `]`: `j->state =`, `m->jobs[i]->state=`, `job.state =`, `(*j).state =`,
# `j->held_by_admin |= x`. The `]` leads the bracket expression so that it is a member of
# the set rather than its end. A designated initializer (`{ .held_by_admin = x }`) follows
# a space or a brace, and is no write to a job.
assign_of() {
        printf '%s' "[][:alnum:]_)](->|\\.)$1[[:space:]]*(<<|>>|[-+*/%&|^])?=([^=]|\$)"
}

# Prints the offending lines of DIR/daemon/*.c; succeeds when there are none.
check() {
        local dir=$1 bad n member assign rc=0
        for member in $members; do
                assign=$(assign_of "$member")
                bad=$(grep -nE "$assign" "$dir"/daemon/*.c | grep -vE '^[^:]*/daemon/(job-transition|store)\.c:' || true)
                if [ -n "$bad" ]; then
                        echo "job $member written outside daemon/job-transition.c:"
                        echo "$bad"
                        rc=1
                fi
                # The store writes it once, when loading.
                n=$(grep -cE "$assign" "$dir"/daemon/store.c 2>/dev/null || true)
                if [ "${n:-0}" -gt 1 ]; then
                        echo "daemon/store.c assigns a job's $member $n times; only loading may"
                        rc=1
                fi
        done
        return $rc
}

# Self-test: each planted write must be found, and comparisons must not be.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/daemon"
cat >"$tmp/daemon/ok.c" <<'C'
static void ok(Job *j) { if (j->state == JOB_RUNNING || j->state != JOB_QUEUED) return; }
static bool ok2(Job *j) { return j->launching || !j->cancel_requested || j->held_by_admin == x || j->state <= y; }
static AuthzJob ok3(Job *j) { return (AuthzJob) { .held_by_admin = j->held_by_admin,
                                                  .suspended_by_admin = j->suspended_by_admin }; }
C
check "$tmp" >/dev/null || { echo "self-test: a comparison or an initializer was taken for a write" >&2; exit 1; }
for planted in 'j->state = JOB_RUNNING;' 'm->jobs[i]->state = JOB_RUNNING;' 'job.state=JOB_FAILED;' \
               '(*j).state = JOB_HELD;' 'p->job->state =' 'j->state	= s;' \
               'j->held_by_admin = by_admin;' 'j->suspended_by_person = j->suspended_by_admin = false;' \
               'x = j->suspended_by_admin = false;' 'j->suspended_by_admin |= by_admin;' \
               'job.suspended_by_sched = true;' 'j->cancel_requested=true;' 'm->jobs[i]->launching = false;'; do
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
printf 'static void a(Job *j) { j->held_by_admin = 1; }\nstatic void b(Job *j) { j->held_by_admin = 0; }\n' \
        >"$tmp/daemon/store.c"
check "$tmp" >/dev/null && { echo "self-test: two flag writes in store.c were allowed" >&2; exit 1; }

if ! out=$(check "$src"); then
        echo "$out" >&2
        exit 1
fi
echo "ok: job states and the flags that qualify them are assigned only in daemon/job-transition.c" \
     "(and loaded in daemon/store.c)"
