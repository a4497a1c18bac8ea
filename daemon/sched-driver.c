/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The adapter to sched/: the jobs as the scheduler sees them (queue priorities and
 * walltime limits, dependencies' status, array throttles), a pass, and its decisions
 * applied (starts recorded for backend-local.c to launch after the commit); expensive
 * passes are spaced out. */

#include <errno.h>
#include <inttypes.h>
#include <malloc.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "job-backend.h"
#include "job-preempt.h"
#include "job-table.h"
#include "job-transition.h"
#include "log.h"
#include "manager.h"
#include "gpu-jobs.h"
#include "sched-driver.h"
#include "time-util.h"
#include "usage.h"


static const QueueConfig *job_queue_config(Manager *m, const Job *j) {
        return config_find_queue(m->config, job_queue(j));
}

uint32_t manager_project_id(Manager *m, const Job *j) {
        for (size_t i = 0; i < m->n_projects; i++)
                if (m->project_names[i] == job_project(j))
                        return (uint32_t) i + 1;
        return 0;
}

/* Dependencies cross from proto's enum to sched's by value. */
_Static_assert((int) SCHED_DEP_AFTER == (int) DEPENDENCY_AFTER, "dependency types");
_Static_assert((int) SCHED_DEP_AFTERANY == (int) DEPENDENCY_AFTERANY, "dependency types");
_Static_assert((int) SCHED_DEP_AFTEROK == (int) DEPENDENCY_AFTEROK, "dependency types");
_Static_assert((int) SCHED_DEP_AFTERNOTOK == (int) DEPENDENCY_AFTERNOTOK, "dependency types");
_Static_assert((int) _SCHED_DEP_TYPE_MAX == (int) _DEPENDENCY_TYPE_MAX, "dependency types");

static SchedDepStatus dep_status(Manager *m, uint64_t id) {
        Job *d = manager_find_job(m, id);

        if (!d)
                return SCHED_DEP_FINISHED_FAILED; /* purged long ago: it can no longer be waited for */
        if (job_state_is_active(d->state))
                return SCHED_DEP_STARTED;
        if (d->state == JOB_COMPLETED)
                return SCHED_DEP_FINISHED_OK;
        if (job_state_is_final(d->state))
                return SCHED_DEP_FINISHED_FAILED;
        return SCHED_DEP_UNKNOWN;
}

/* The machine's GPUs a job may be given: those whose name, features or model its
 * --gres=gpu:TYPE names and whose features satisfy its --constraint. 0 means any to
 * sched/, so a request nothing matches gets only bits past the machine's GPUs: it waits
 * (and Submit refuses what can never run). */
static uint64_t job_gpu_allowed(Manager *m, const Job *j) {
        uint64_t mask = 0;
        size_t n;

        if ((j->req.gpus == 0 && j->req_shards == 0) || !m->devices || (isempty(job_str(j, JOB_GPU_TYPE)) && isempty(job_str(j, JOB_CONSTRAINT))))
                return 0;
        n = m->devices->n_devices;
        for (size_t g = 0; g < n; g++)
                if (device_is_schedulable(&m->devices->devices[g]) &&
                    device_matches(&m->devices->devices[g], job_str(j, JOB_GPU_TYPE), job_str(j, JOB_CONSTRAINT)))
                        mask |= UINT64_C(1) << g;
        if (mask == 0)
                mask = n < 64 ? ~UINT64_C(0) << n : 0;
        return mask;
}

/* j as sched/ takes it, in its queue q (NULL: one removed from the configuration), at now. */
static void sched_job_fill(Manager *m, Job *j, const QueueConfig *q, uint64_t now, SchedJob *ret) {
        const JobRun *run = job_run(j);
        uint64_t suspended = run->suspended_usec / USEC_PER_SEC;

        if (j->state == JOB_SUSPENDED && run->suspend_start && now > run->suspend_start)
                suspended += now - run->suspend_start; /* the suspension under way */
        *ret = (SchedJob) {
                .id = j->id,
                .state = j->state == JOB_RUNNING     ? SCHED_JOB_RUNNING
                         : j->state == JOB_SUSPENDED ? SCHED_JOB_SUSPENDED
                                                     : SCHED_JOB_PENDING,
                .blocked = j->state == JOB_BLOCKED,
                .project_id = manager_project_id(m, j),
                /* A queue removed from the configuration since is charged as normal (usage.c). */
                .charged = !q || q->charge_factor != 0.0,
                .queue_priority = q ? q->priority : 0,
                .nice = job_shared(j)->nice,
                .submit_time = j->submit_time,
                .eligible_time = j->eligible_time,
                .begin_time = job_shared(j)->begin_time,
                .cpus = j->req.cpus ?: 1,
                .memory = job_shared(j)->memory,
                /* K shards come from one GPU: sched/ plans it as that GPU. */
                .gpus = j->req_shards ? 1 : j->req.gpus,
                .shards = j->req_shards,
                .gpu_allowed = job_gpu_allowed(m, j),
                .gpu_binding = j->req.gpu_binding,
                .walltime = job_shared(j)->walltime_sec == CORRAL_WALLTIME_INFINITY ? 0 : job_shared(j)->walltime_sec,
                .default_walltime = q ? q->default_walltime : 0,
                .max_walltime = q ? q->max_walltime : 0,
                .array_id = j->array_job_id,
                .array_max_running = j->array_job_id ? job_shared(j)->array.max_concurrent : 0,
                .exclusive = j->req.exclusive,
                .user_id = j->uid,
                .bypass_count = j->bypass_count,
                .queue_id = q ? (uint32_t) (q - m->config->queues) : UINT32_MAX,
                .target_queue_time = q ? q->target_queue_time : 0,
                .fairshare = accounting_job_fairshare(m->acct, j),
                .start_time = j->start_time,
                .preempts = q ? q->preempts_mask : 0,
                .parallel_run = q && q->parallel_run,
                /* Not while its launch, a cancel or a person's freeze is under way; never
                 * an interactive job: a person sits at its terminal. */
                .preemptable = (!q || q->preemptable) && !j->launching && !j->cancel_requested &&
                               !j->req.interactive,
                .suspended_time = suspended,
                .preempted = j->state == JOB_SUSPENDED && j->suspended_by_sched,
                /* Preempted, and suspended by a person too: not resumed until they resume it. */
                .held = j->state == JOB_SUSPENDED && j->suspended_by_sched && j->suspended_by_person,
                .resident_memory = run->reclaimed ? run->resident_memory : UINT64_MAX,
                .last_resume_time = run->last_resume,
                .alloc = job_state_is_active(j->state) ? job_alloc(j) : NULL,
        };
}

void manager_sched_job(Manager *m, Job *j, SchedJob *ret) {
        sched_job_fill(m, j, job_queue_config(m, j), (uint64_t) time(NULL), ret);
}

/* The job as a pass at now sees it, its dependencies' status included. */
static int sched_job_for_pass(Manager *m, Job *j, const QueueConfig *q, uint64_t now, SchedJob *s) {
        SchedAllocation *a = job_alloc(j);

        sched_job_fill(m, j, q, now, s);
        /* A shard job read back after a restart: its share is of its GPU's shards now (the
         * pass's own starts record them). */
        if (_unlikely_(s->alloc && a->shards > 0 && a->shards_of == 0 && a->gpu_mask)) {
                size_t g = (size_t) __builtin_ctzll(a->gpu_mask);
                if (g < m->machine.n_gpus)
                        a->shards_of = m->machine.gpus[g].shards;
        }
        if (j->req.n_dependencies > 0 && j->state == JOB_QUEUED) {
                SchedDep *d = j->req.dependencies; /* kept as a pass takes them */
                for (size_t k = 0; k < j->req.n_dependencies; k++)
                        d[k].status = dep_status(m, d[k].job_id);
                s->deps = d;
                s->n_deps = j->req.n_dependencies;
        }
        return 0;
}

/* Between passes a queue of 100,000 jobs holds some 50 MB that only a pass reads: the
 * SchedJob array and the pass's scratch, kept so that passes in quick succession do not
 * allocate and fault them in each time. Once passes have stopped for this long, an idle
 * daemon gives them back. */
#define SCHED_TRIM_DELAY_USEC (10 * USEC_PER_SEC)

void manager_sched_trim(Manager *m) {
        m->sched_jobs = mfree(m->sched_jobs);
        m->allocated_sched_jobs = 0;
        sched_context_trim(m->sched);
        /* free() keeps what lies below the heap's top for reuse: hand it back too. */
        (void) malloc_trim(0);
}

static int on_sched_trim(sd_event_source *s, uint64_t usec, void *userdata) {
        manager_sched_trim(userdata);
        return 0;
}

static void sched_trim_later(Manager *m) {
        uint64_t when = now_usec(CLOCK_MONOTONIC) + SCHED_TRIM_DELAY_USEC;

        if (!m->event)
                return;
        if (!m->sched_trim)
                (void) sd_event_add_time(m->event, &m->sched_trim, CLOCK_MONOTONIC, when, USEC_PER_SEC,
                                         on_sched_trim, m);
        else {
                (void) sd_event_source_set_time(m->sched_trim, when);
                (void) sd_event_source_set_enabled(m->sched_trim, SD_EVENT_ONESHOT);
        }
}

/* The queue as a pass at now takes it, into m->sched_jobs, with room for extra more. */
static int sched_jobs_build(Manager *m, size_t extra, uint64_t now, size_t *ret_n) {
        size_t n = 0;
        int r;

        sched_trim_later(m);

        if (!GREEDY_REALLOC(m->sched_jobs, m->allocated_sched_jobs, m->n_jobs + extra + 1))
                return -ENOMEM;
        for (size_t i = 0; i < m->n_jobs; i++) {
                Job *j = m->jobs[i];
                const QueueConfig *q;

                if (j->state != JOB_QUEUED && j->state != JOB_BLOCKED && !job_state_is_active(j->state))
                        continue;
                q = job_queue_config(m, j);
                if (!manager_queue_backend(m, q)->scheduled_here) /* a cluster's to schedule */
                        continue;
                r = sched_job_for_pass(m, j, q, now, &m->sched_jobs[n++]);
                if (r < 0)
                        return r;
        }
        *ret_n = n;
        return 0;
}

/* A spent grant's numbers reach sched/ and the reason (job.c) in hundredths of a service unit. */
static uint64_t grant_scaled(double su) {
        double v = su * JOB_GRANT_SCALE + 0.5;
        return v <= 0 ? 0 : v >= (double) UINT64_MAX ? UINT64_MAX : (uint64_t) v;
}

/* Grants, before a pass, after the refresh that counted the running jobs: each project's
 * state for sched/ (which reads no usage itself), and the waiting jobs of a project whose
 * grant is spent that sit in a charging queue go to the bonus queue where OnGrantSpent=bonus
 * and it takes them, as a submission would; the rest the pass holds back, blocked with the
 * reason Grant. Submit checks the grant too, but jobs also come back after it ran out,
 * released from a hold or requeued: this is where they all meet it. */
static void grants_before_pass(Manager *m, uint64_t now) {
        size_t moved = 0;
        bool any = false;

        for (size_t i = 0; i < m->n_projects && m->sched_projects; i++) {
                const ProjectConfig *pc = &m->config->projects[i];
                SchedProject *sp = &m->sched_projects[i];
                double used = 0.0;

                sp->grant_spent = accounting_project_grant_spent(m->acct, pc, now, &used);
                sp->grant = sp->grant_spent ? grant_scaled((double) pc->grant) : 0;
                sp->grant_used = sp->grant_spent ? grant_scaled(used) : 0;
                any = any || sp->grant_spent;
        }
        if (!any)
                return;
        for (size_t i = 0; i < m->n_jobs; i++) {
                Job *j = m->jobs[i];
                const QueueConfig *q, *bonus;
                const char *why;
                uint32_t id;

                if (j->state != JOB_QUEUED && j->state != JOB_BLOCKED)
                        continue;
                id = manager_project_id(m, j);
                if (id == 0 || !m->sched_projects[id - 1].grant_spent)
                        continue;
                q = job_queue_config(m, j);
                if (q && q->charge_factor == 0.0)
                        continue;
                bonus = accounting_grant_bonus_queue(m->acct, j, &why);
                if (!bonus)
                        continue; /* blocked by the pass; corral why says what is spent */
                log_debug("Job %" PRIu64 " goes to queue %s: project %s has spent its grant.", j->id,
                          bonus->name, job_project(j));
                j->queue = intern_id(bonus->name);
                (void) manager_job_save(m, j);
                moved++;
        }
        /* Once, not per job: a queue of thousands moves at once when a grant runs out. */
        if (moved > 0)
                log_info("%zu waiting job%s moved to the bonus queue: %s project's grant is spent "
                         "(OnGrantSpent=bonus).",
                         moved, moved == 1 ? "" : "s", moved == 1 ? "its" : "their");
}

int manager_schedule(Manager *m) {
        SchedResult res;
        uint64_t now = (uint64_t) time(NULL), begin = now_usec(CLOCK_MONOTONIC);
        size_t n = 0;
        int r;

        accounting_refresh(m->acct, m->jobs, m->n_jobs, now); /* each project's usage, running jobs included */
        grants_before_pass(m, now);
        r = sched_jobs_build(m, 0, now, &n);
        if (r < 0)
                return r;

        /* UnmanagedGPU=avoid: a GPU running work outside Corral is nobody's this pass. */
        m->machine.gpus_busy = (m->config->unmanaged_gpu_avoid ? manager_gpu_jobs_unmanaged(m) : 0) |
                               manager_gpu_jobs_mig(m) | manager_gpu_jobs_mig_unsettled(m);
        uint64_t t0 = now_usec(CLOCK_MONOTONIC);
        r = sched_pass(m->sched, &m->sched_config, &m->machine, m->sched_jobs, n, now, &res);
        if (r < 0)
                return r;
        m->last_pass_usec = now_usec(CLOCK_MONOTONIC) - t0;
        m->last_pass_jobs = n;

        for (size_t i = 0; i < res.n_waiting; i++) {
                const SchedWait *w = &res.waiting[i];
                Job *j = manager_find_job(m, w->job_id);
                if (!j)
                        continue;
                j->est_start = w->est_start;
                j->priority = w->priority;
                if (w->bypassed)
                        j->bypass_count++;
                if (w->reason == SCHED_REASON_DEPENDENCY_NEVER_SATISFIED) {
                        log_info("Job %" PRIu64 " cancelled: its dependency can never be satisfied.", j->id);
                        (void) manager_job_transition(m, j, JOB_EVENT_CANCEL, JOB_CANCELLED,
                                                      "DependencyNeverSatisfied");
                        continue;
                }
                /* A limit holds it back: the blocked part of the queue, with the limit's
                 * numbers for the reason shown (not stored: they change as jobs run). */
                if (sched_reason_is_limit(w->reason)) {
                        j->limit_value = w->limit;
                        j->limit_wanted = w->wanted;
                        if (j->state == JOB_QUEUED)
                                (void) manager_job_transition(m, j, JOB_EVENT_BLOCK, JOB_BLOCKED,
                                                              sched_reason_to_string(w->reason));
                        else
                                (void) job_set_reason(j, sched_reason_to_string(w->reason));
                        continue;
                }
                j->limit_value = j->limit_wanted = 0;
                if (j->state == JOB_BLOCKED)
                        (void) manager_job_transition(m, j, JOB_EVENT_UNBLOCK, JOB_QUEUED,
                                                      sched_reason_to_string(w->reason));
                else
                        (void) job_set_reason(j, sched_reason_to_string(w->reason));
        }
        for (size_t i = 0; i < res.n_decisions; i++) {
                const SchedDecision *d = &res.decisions[i];
                Job *j = manager_find_job(m, d->job_id);
                JobRun *run;

                if (j && d->type == SCHED_DECISION_SUSPEND)
                        manager_preempt_suspend(m, j, d);
                else if (j && d->type == SCHED_DECISION_RESUME)
                        manager_preempt_resume(m, j, d);
                if (d->type != SCHED_DECISION_START || !j || (j->state != JOB_QUEUED && j->state != JOB_BLOCKED))
                        continue;
                /* Blocked in the last pass, promoted and started in this one. */
                if (j->state == JOB_BLOCKED && manager_job_transition(m, j, JOB_EVENT_UNBLOCK, JOB_QUEUED, NULL) < 0)
                        continue;
                j->limit_value = j->limit_wanted = 0;
                run = job_run_ensure(j); /* the transition would make it: its allocation is in it */
                if (!run || (!run->alloc && !(run->alloc = new(SchedAllocation, 1))))
                        return -ENOMEM;
                *run->alloc = d->alloc;
                /* Launched only after the commit that records it as running (backend-local.c):
                 * its place in the list first, so that no job runs that is never launched. */
                if (!GREEDY_REALLOC(m->to_launch, m->allocated_to_launch, m->n_to_launch + 1))
                        return -ENOMEM;
                if (manager_job_transition(m, j, JOB_EVENT_START, JOB_RUNNING, NULL) < 0)
                        continue;
                m->to_launch[m->n_to_launch++] = j->id;
        }
        m->last_pass_end = now_usec(CLOCK_MONOTONIC);
        m->last_schedule_usec = m->last_pass_end - begin;
        return 0;
}

static int on_sched_defer(sd_event_source *s, uint64_t usec, void *userdata) {
        /* Nothing to do here: the post source that follows this dispatch runs the pass. */
        return 0;
}

/* Passes are coalesced within a loop iteration, and when a pass is expensive (a queue of
 * 100,000 jobs) also spaced out, so that scheduling takes at most about a fifth of the
 * daemon's time whatever the submission rate (Slurm's sched_min_interval, made
 * adaptive). What is spaced is the whole of it, the queue built for sched/ and the
 * pass's results applied too: with every job waiting for a begin time those took more
 * than the pass. Returns true when the pass has to wait; a timer brings it back. */
#define SCHED_SPACING_FACTOR 4
#define SCHED_SPACING_MAX_USEC (2 * UINT64_C(1000000))
bool manager_sched_deferred(Manager *m) {
        uint64_t now, earliest;

        if (m->last_schedule_usec < 1000)
                return false; /* cheap passes run every iteration */
        now = now_usec(CLOCK_MONOTONIC);
        earliest = m->last_pass_end + MIN(m->last_schedule_usec * SCHED_SPACING_FACTOR, SCHED_SPACING_MAX_USEC);
        if (now >= earliest)
                return false;
        if (!m->sched_defer)
                (void) sd_event_add_time(m->event, &m->sched_defer, CLOCK_MONOTONIC, earliest, 0, on_sched_defer, m);
        else {
                (void) sd_event_source_set_time(m->sched_defer, earliest);
                (void) sd_event_source_set_enabled(m->sched_defer, SD_EVENT_ONESHOT);
        }
        return true;
}


/* A what-if pass for TestSubmit: the queue as it is plus the probe, in a context of its
 * own (conservative's remembered reservations stay as they are), its decisions dropped.
 * As costly as a pass, so spaced out as passes are: a second one too soon gets -EBUSY. */
int manager_estimate_start(Manager *m, Job *probe, uint64_t *ret_est, const char **ret_reason) {
        _cleanup_(sched_context_freep) SchedContext *ctx = NULL;
        uint64_t now = (uint64_t) time(NULL), mono = now_usec(CLOCK_MONOTONIC), t0;
        SchedResult res;
        size_t n;
        int r;

        if (m->last_estimate_end &&
            mono < m->last_estimate_end + MIN(MAX(m->last_schedule_usec, m->last_estimate_usec) * SCHED_SPACING_FACTOR,
                                              SCHED_SPACING_MAX_USEC))
                return -EBUSY;
        ctx = sched_context_new();
        if (!ctx)
                return -ENOMEM;
        r = sched_jobs_build(m, 1, now, &n);
        if (r < 0)
                return r;
        r = sched_job_for_pass(m, probe, job_queue_config(m, probe), now, &m->sched_jobs[n++]);
        if (r < 0)
                return r;
        m->machine.gpus_busy = (m->config->unmanaged_gpu_avoid ? manager_gpu_jobs_unmanaged(m) : 0) |
                               manager_gpu_jobs_mig(m) | manager_gpu_jobs_mig_unsettled(m);
        t0 = now_usec(CLOCK_MONOTONIC);
        r = sched_pass(ctx, &m->sched_config, &m->machine, m->sched_jobs, n, now, &res);
        m->last_estimate_end = now_usec(CLOCK_MONOTONIC);
        m->last_estimate_usec = m->last_estimate_end - t0;
        if (r < 0)
                return r;
        for (size_t i = 0; i < res.n_decisions; i++)
                if (res.decisions[i].job_id == probe->id && res.decisions[i].type == SCHED_DECISION_START) {
                        *ret_est = now;
                        *ret_reason = NULL;
                        return 0;
                }
        for (size_t i = 0; i < res.n_waiting; i++)
                if (res.waiting[i].job_id == probe->id) {
                        *ret_est = res.waiting[i].est_start;
                        *ret_reason = sched_reason_to_string(res.waiting[i].reason);
                        return 0;
                }
        *ret_est = SCHED_TIME_INFINITY;
        *ret_reason = NULL;
        return 0;
}
