#!/bin/bash
# A job runs through its queue's backend (daemon/job-backend.h): methods, mail, why and the
# manager act on it through the backend's table and never ask which backend it has. This
# fails when a daemon source outside the backends (backend-*.c), the table's lookup
# (job-backend.c) and the composition root that picks the tables (manager.c) names a
# backend: a queue's Backend= value, the Slurm backend's own functions or state, or a
# backend's table by name.
#
# It first proves on planted sources that it can fail.
set -euo pipefail
src=${CORRAL_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}

names='QUEUE_BACKEND_[A-Z]+|->backend[^s]|manager_job_forwarded|manager_job_slurm_id|manager_forward_[a-z_]+|m->forward\b|job_backend_(local|slurm)\b'

# Prints the offending lines of DIR/daemon/*.[ch]; succeeds when there are none.
check() {
        local bad
        bad=$(grep -nE "$names" "$1"/daemon/*.c "$1"/daemon/*.h |
              grep -vE '^[^:]*/daemon/(backend-[a-z]+|job-backend|manager)\.[ch]:' |
              grep -vE '^[^:]*:[0-9]+:[[:space:]]*(/\*|\*)' || true)
        [ -z "$bad" ] && return 0
        echo "a backend named outside daemon/backend-*.c, job-backend.c and manager.c:"
        echo "$bad"
        return 1
}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/daemon"
cat >"$tmp/daemon/ok.c" <<'C'
static void ok(Manager *m, Job *j) { manager_job_backend(m, j)->cancel(m, j, JOB_BY_PERSON); }
/* A comment may say manager_forward_poll() and QUEUE_BACKEND_SLURM. */
C
printf "#pragma once\n" >"$tmp/daemon/ok.h"
check "$tmp" >/dev/null || { echo "self-test: a call through the table was taken for a backend's name" >&2; exit 1; }
for planted in 'if (q->backend == QUEUE_BACKEND_SLURM) return;' 'if (manager_job_forwarded(m, j)) return;' \
               'manager_forward_hold(m, j, true);' 'if (m->forward) x();' 'b = &job_backend_slurm;' \
               'uint64_t s = manager_job_slurm_id(m, j);' 'if (c->q->backend != 0) return;'; do
        printf 'static void f(void) { %s }\n' "$planted" >"$tmp/daemon/bad.c"
        if check "$tmp" >/dev/null; then
                echo "self-test: '$planted' was not found" >&2
                exit 1
        fi
done

check "$src"
echo "ok: no daemon source outside the backends, their lookup and manager.c names a backend"
