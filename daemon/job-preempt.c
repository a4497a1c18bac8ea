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

#include "job-preempt.h"
#include "job-table.h"
#include "job-transition.h"
#include "log.h"
#include "manager.h"

static void on_reclaimed(Executor *e, uint64_t id, int error, const char *message, void *userdata) {
        Manager *m = userdata;
        Job *j = manager_find_job(m, id);
        uint64_t cur;

        /* Suspended by a pass: it has its run (JOB_EVENT_SUSPEND made sure). */
        if (!j || j->state != JOB_SUSPENDED || !j->suspended_by_sched || !j->run)
                return;
        j->run->reclaimed = true; /* its swap was allowed, whatever came of it */
        if (error == -EOPNOTSUPP) {
                log_debug("Job %" PRIu64 ": %s; its memory stays resident.", id, message);
                return;
        }
        if (error < 0)
                log_debug("Job %" PRIu64 ": reclaim: %s", id, strna(message));
        if (executor_job_memory_current(e, id, job_project(j), &cur) >= 0) {
                j->run->resident_memory = cur;
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
                                  job_run(j)->preempted_by, strna(message));
                (void) manager_job_transition(m, j, JOB_EVENT_RESUME, JOB_RUNNING, NULL);
                m->sched_needed = true;
                return;
        }
        if (!m->config->reclaim_suspended)
                return;
        r = executor_reclaim(e, id, job_project(j), on_reclaimed, m);
        if (r == -EOPNOTSUPP)
                log_debug("Job %" PRIu64 ": no memory.reclaim in its scope (a kernel before 5.19): not reclaimed.", id);
        else if (r < 0)
                log_warning_errno(r, "Cannot reclaim the memory of job %" PRIu64 ": %m", id);
}

/* As a start is launched: only once the pass that decided it is committed. */
static int act_after_commit(Manager *m, Job *j, int act) {
        JobRun *run = job_run_ensure(j); /* there already: the transition made sure */

        if (!run || !GREEDY_REALLOC(m->to_launch, m->allocated_to_launch, m->n_to_launch + 1))
                return log_oom();
        run->preempt_act = act;
        m->to_launch[m->n_to_launch++] = j->id;
        return 0;
}

void manager_preempt_suspend(Manager *m, Job *j, const SchedDecision *d) {
        JobRun *run;

        if (j->state != JOB_RUNNING || j->launching || j->cancel_requested)
                return;
        run = job_run_ensure(j);
        if (!run) {
                log_oom();
                return;
        }
        run->preempted_by = d->by_job_id;
        run->resident_memory = 0;
        if (manager_job_transition_by(m, j, JOB_EVENT_SUSPEND, JOB_SUSPENDED, "Preempted", JOB_BY_SCHED) < 0)
                return;
        log_info("Job %" PRIu64 " suspended to let job %" PRIu64 " start (suspension score %.3f).", j->id,
                 d->by_job_id, d->score);
        (void) act_after_commit(m, j, PREEMPT_ACT_FREEZE);
}

static void on_preempt_thawed(Executor *e, uint64_t id, int error, const char *message, void *userdata) {
        if (error < 0 && error != -ESRCH)
                log_error_errno(error, "Cannot resume job %" PRIu64 ": %s", id, strna(message));
}

void manager_preempt_resume(Manager *m, Job *j, const SchedDecision *d) {
        SchedAllocation old;
        JobRun *run;

        /* A person holds it suspended too: sched/ does not resume it (SchedJob.held). */
        if (j->state != JOB_SUSPENDED || !j->suspended_by_sched || j->suspended_by_person || !job_alloc(j))
                return;
        run = job_run_ensure(j);
        if (!run) {
                log_oom();
                return;
        }
        old = *job_alloc(j);
        *job_alloc(j) = d->alloc;
        if (manager_job_transition_by(m, j, JOB_EVENT_RESUME, JOB_RUNNING, NULL, JOB_BY_SCHED) < 0) {
                *job_alloc(j) = old;
                return;
        }
        run->preempt_moved = !cpu_set_equal(&old.cpus, &d->alloc.cpus) || old.node_mask != d->alloc.node_mask;
        run->preempt_swap_off = run->reclaimed && job_shared(j)->memory > 0; /* launched with MemorySwapMax=0 */
        run->last_resume = (uint64_t) time(NULL);
        run->reclaimed = false;
        run->resident_memory = 0;
        log_info("Job %" PRIu64 " resumed%s.", j->id, run->preempt_moved ? " on other CPUs" : "");
        (void) act_after_commit(m, j, PREEMPT_ACT_THAW);
}

void manager_preempt_act(Manager *m, Job *j) {
        JobRun *run = j->run;
        CpuSet mems = {};
        int act, r;

        if (!run)
                return;
        act = run->preempt_act;
        run->preempt_act = PREEMPT_ACT_NONE;
        if (act == PREEMPT_ACT_FREEZE) {
                if (j->state != JOB_SUSPENDED || !j->suspended_by_sched)
                        return;
                r = executor_freeze(m->executor, j->id, job_project(j), true, on_preempt_frozen, m);
                if (r < 0)
                        on_preempt_frozen(m->executor, j->id, r, "cannot ask systemd to freeze it", m);
                return;
        }
        if (act != PREEMPT_ACT_THAW || j->state != JOB_RUNNING || !job_alloc(j))
                return;
        for (unsigned k = 0; k < m->machine.n_nodes; k++)
                if (job_alloc(j)->node_mask & (UINT64_C(1) << k))
                        cpu_set_add(&mems, m->numa_ids[k]);
        r = executor_thaw_onto(m->executor, j->id, job_project(j), run->preempt_moved ? &job_alloc(j)->cpus : NULL,
                               run->preempt_moved ? &mems : NULL, run->preempt_swap_off, on_preempt_thawed, m);
        if (r < 0)
                on_preempt_thawed(m->executor, j->id, r, "cannot ask systemd to thaw it", m);
}
