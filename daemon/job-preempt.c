/* SPDX-License-Identifier: GPL-2.0-or-later */
/* A pass's preemption decisions applied: a victim is recorded SUSPENDED (by the
 * scheduler) at once, so that the next pass sees its CPUs handed over, and frozen through
 * the executor; with ReclaimSuspended= its memory is then pushed out. A job to resume is
 * recorded RUNNING on its new allocation at once, moved there (AllowedCPUs=,
 * AllowedMemoryNodes=) while still frozen, and thawed. */

#include <errno.h>
#include <inttypes.h>
#include <string.h>
#include <time.h>

#include "log.h"
#include "manager.h"

static void on_reclaimed(Executor *e, uint64_t id, int error, const char *message, void *userdata) {
        Manager *m = userdata;
        Job *j = manager_find_job(m, id);
        uint64_t cur;

        if (!j || j->state != JOB_SUSPENDED || !j->suspended_by_sched)
                return;
        j->reclaimed = true; /* its swap was allowed, whatever came of it */
        if (error == -EOPNOTSUPP) {
                log_debug("Job %" PRIu64 ": %s; its memory stays resident.", id, message);
                return;
        }
        if (error < 0)
                log_debug("Job %" PRIu64 ": reclaim: %s", id, strna(message));
        if (executor_job_memory_current(e, id, j->project, &cur) >= 0) {
                j->resident_memory = cur;
                log_info("Job %" PRIu64 " suspended: %" PRIu64 " bytes of it stay resident.", id, cur);
                m->sched_needed = true;
        }
}

static void on_preempt_frozen(Executor *e, uint64_t id, int error, const char *message, void *userdata) {
        Manager *m = userdata;
        Job *j = manager_find_job(m, id);
        int r;

        if (!j || j->state != JOB_SUSPENDED || !j->suspended_by_sched)
                return;
        if (error == -ESRCH) /* ended meanwhile: its outcome settles it */
                return;
        if (error < 0) {
                /* It runs on beside its preemptor until it ends or a later pass retries. */
                log_warning_errno(error, "Cannot suspend job %" PRIu64 " for job %" PRIu64 ": %s", id,
                                  j->preempted_by, strna(message));
                (void) manager_job_transition(m, j, JOB_EVENT_RESUME, JOB_RUNNING, NULL);
                m->sched_needed = true;
                return;
        }
        if (!m->config->reclaim_suspended)
                return;
        r = executor_reclaim(e, id, j->project, on_reclaimed, m);
        if (r == -EOPNOTSUPP)
                log_debug("Job %" PRIu64 ": no memory.reclaim in its scope (a kernel before 5.19): not reclaimed.", id);
        else if (r < 0)
                log_warning_errno(r, "Cannot reclaim the memory of job %" PRIu64 ": %m", id);
}

void manager_preempt_suspend(Manager *m, Job *j, const SchedDecision *d) {
        int r;

        if (j->state != JOB_RUNNING || j->launching || j->cancel_requested)
                return;
        j->suspended_by_sched = true;
        j->preempted_by = d->by_job_id;
        j->resident_memory = 0;
        if (manager_job_transition(m, j, JOB_EVENT_SUSPEND, JOB_SUSPENDED, "Preempted") < 0) {
                j->suspended_by_sched = false;
                return;
        }
        log_info("Job %" PRIu64 " suspended to let job %" PRIu64 " start (suspension score %.3f).", j->id,
                 d->by_job_id, d->score);
        r = executor_freeze(m->executor, j->id, j->project, true, on_preempt_frozen, m);
        if (r < 0)
                on_preempt_frozen(m->executor, j->id, r, "cannot ask systemd to freeze it", m);
}

static void on_preempt_thawed(Executor *e, uint64_t id, int error, const char *message, void *userdata) {
        if (error < 0 && error != -ESRCH)
                log_error_errno(error, "Cannot resume job %" PRIu64 ": %s", id, strna(message));
}

void manager_preempt_resume(Manager *m, Job *j, const SchedDecision *d) {
        CpuSet mems = {};
        bool moved, swap_off;
        int r;

        if (j->state != JOB_SUSPENDED || !j->suspended_by_sched || !j->alloc)
                return;
        moved = !cpu_set_equal(&j->alloc->cpus, &d->alloc.cpus) || j->alloc->node_mask != d->alloc.node_mask;
        for (unsigned k = 0; k < m->machine.n_nodes; k++)
                if (d->alloc.node_mask & (UINT32_C(1) << k))
                        cpu_set_add(&mems, m->numa_ids[k]);
        *j->alloc = d->alloc;
        j->last_resume = (uint64_t) time(NULL);
        swap_off = j->reclaimed && j->req.memory > 0; /* launched with MemorySwapMax=0 */
        j->reclaimed = false;
        j->resident_memory = 0;
        if (manager_job_transition(m, j, JOB_EVENT_RESUME, JOB_RUNNING, NULL) < 0)
                return;
        log_info("Job %" PRIu64 " resumed%s.", j->id, moved ? " on other CPUs" : "");
        r = executor_thaw_onto(m->executor, j->id, j->project, moved ? &d->alloc.cpus : NULL, moved ? &mems : NULL,
                               swap_off, on_preempt_thawed, m);
        if (r < 0)
                on_preempt_thawed(m->executor, j->id, r, "cannot ask systemd to thaw it", m);
}
