/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The local backend: each job a transient scope of its own on this machine (executor/),
 * scheduled by this machine's passes. Its parts: the spec a job starts from
 * (job-spec-build.c), the executor's reports (job-outcome.c), preemption's freezes and
 * thaws (job-preempt.c); this file holds its table, the launches and the re-adoption of
 * running scopes after a restart.
 *
 * Launching: what a pass decided (a start, a preemption's freeze or thaw) is acted on only
 * once the store has committed it, so that a crash between the two never leaves a job
 * running that the store does not know of. The pass (sched-driver.c, job-preempt.c)
 * records the job's id in Manager.to_launch; after the commit, each start goes to the
 * executor with the spec built for it, each freeze or thaw to job-preempt.c. */

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "backend-local.h"
#include "commit.h"
#include "interactive-job.h"
#include "job-outcome.h"
#include "job-preempt.h"
#include "job-spec-build.h"
#include "job-table.h"
#include "job-transition.h"
#include "log.h"
#include "manager.h"

void manager_launch_pending(Manager *m) {
        size_t n_again = 0; /* launches to try again: their failure could not be recorded */

        for (size_t i = 0; i < m->n_to_launch; i++) {
                _cleanup_(job_spec_freep) JobSpec *spec = NULL;
                Job *j = manager_find_job(m, m->to_launch[i]);
                int r;

                if (j && job_run(j)->preempt_act) {
                        manager_preempt_act(m, j);
                        continue;
                }
                if (!j || j->state != JOB_RUNNING)
                        continue;
                Interactive *it = job_interactive(j);
                if (j->req.interactive && (!it || it->n_fds != CORRAL_RUN_FDS)) {
                        /* Its descriptors lived in the corrald that took it (interactive.h). */
                        (void) manager_job_mark(m, j, JOB_MARK_LAUNCHED, JOB_BY_CORRALD);
                        if (manager_job_launch_failed(m, j, JOB_CANCELLED,
                                                      "its terminal was lost when corrald restarted") < 0)
                                m->to_launch[n_again++] = j->id;
                        continue;
                }
                r = manager_build_spec(m, j, &spec);
                if (r >= 0)
                        r = executor_start_fds(m->executor, spec, it ? it->fds : NULL, it ? it->n_fds : 0);
                /* The supervisor has its copies: corrald's would keep the terminal open
                 * after the job has let go of it. */
                if (it)
                        interactive_close_fds(it);
                if (r < 0) {
                        (void) manager_job_mark(m, j, JOB_MARK_LAUNCHED, JOB_BY_CORRALD);
                        log_error_errno(r, "Cannot launch job %" PRIu64 ": %m", j->id);
                        /* Still running in memory and in the store, and no scope will
                         * ever report: tried again after the next pass. */
                        if (manager_job_launch_failed(m, j, JOB_FAILED, strerror(-r)) < 0)
                                m->to_launch[n_again++] = j->id;
                }
        }
        m->n_to_launch = n_again;
        if (n_again > 0)
                m->sched_needed = true;
}

static int local_committed(Manager *m) {
        int r;

        /* Started only once what starts them is on disk. */
        if (m->n_to_launch > 0 && (r = manager_sync(m)) < 0)
                return r;
        manager_launch_pending(m);
        return 0;
}

/* Whether a live job's scope has no process left at all. No cgroup (yet): systemd's word
 * that it is live stands. */
static bool scope_is_empty(Manager *m, const Job *j) {
        return executor_job_populated(m->executor, j->id, job_project(j)) == 0;
}

static bool is_local(Manager *m, const Job *j) {
        return manager_job_backend(m, j) == &job_backend_local;
}

/* Running jobs whose scopes are gone: requeued if they may run again, else NodeFail. */
static void node_fail(Manager *m, Job *j) {
        (void) manager_job_transition(m, j, JOB_EVENT_NODE_FAIL, j->rerunnable ? JOB_QUEUED : JOB_NODE_FAIL,
                                      j->rerunnable ? "NodeFail: requeued" : "NodeFail");
}

static int local_adopt(Manager *m, bool rebooted) {
        _cleanup_free_ uint64_t *live = NULL;
        size_t n_live = 0, adopted = 0, lost = 0;
        int r;

        /* Outcomes that arrived while we were away settle their jobs first. */
        r = executor_scan_outcomes(m->executor);
        if (r < 0)
                return log_error_errno(r, "Cannot read job outcomes in %s: %m", m->rundir);

        r = executor_list_running(m->executor, &live, &n_live);
        if (r < 0)
                return log_error_errno(r, "Cannot list running job scopes: %m");
        for (size_t i = 0; i < m->n_jobs; i++) {
                Job *j = m->jobs[i];
                bool is_live = false;

                if (!job_state_is_active(j->state) || !is_local(m, j))
                        continue;
                for (size_t k = 0; k < n_live; k++)
                        if (live[k] == j->id)
                                is_live = true;
                if (is_live && !rebooted && !scope_is_empty(m, j)) {
                        adopted++;
                        continue;
                }
                /* A scope systemd keeps with nothing in it: its supervisor died before it
                 * was moved in (corrald killed mid-launch), so no outcome will ever come and
                 * the job would hold its CPUs for good. Stop the scope, settle the job. */
                if (is_live && !rebooted && executor_cancel(m->executor, j->id, NULL, NULL) < 0)
                        log_warning("Cannot stop the empty scope of job %" PRIu64 ".", j->id);
                /* Running when the machine (or, with no scope left and no outcome, the
                 * supervisor) went down: requeue if it may run again, else NodeFail. */
                lost++;
                log_notice("Job %" PRIu64 " was running when %s: %s.", j->id,
                           rebooted ? "the machine went down" : "its supervisor was lost",
                           j->rerunnable ? "requeued (NodeFail)" : "NODE_FAIL, it is not rerunnable");
                node_fail(m, j);
        }
        log_info("%zu running jobs re-adopted, %zu lost%s.", adopted, lost,
                 rebooted ? " (the machine was rebooted)" : "");
        return 0;
}

/* Outcomes left unrecorded for want of memory, then the scopes: a running job whose scope
 * has held no process on two sweeps in a row (half a minute apart, time enough for a
 * normal end's outcome to arrive) lost its supervisor in a way no outcome reports: corrald
 * killed while systemd was still creating the scope. */
static void local_tick(Manager *m) {
        if (executor_outcomes_unread(m->executor) || m->outcomes_rescan) {
                m->outcomes_rescan = false;
                (void) executor_scan_outcomes(m->executor);
        }
        for (size_t i = 0; i < m->n_jobs; i++) {
                Job *j = m->jobs[i];

                if (j->state != JOB_RUNNING || j->launching || !is_local(m, j) || !scope_is_empty(m, j)) {
                        j->scope_empty_seen = false;
                        continue;
                }
                if (!j->scope_empty_seen) {
                        j->scope_empty_seen = true;
                        continue;
                }
                log_notice("Job %" PRIu64 " has an empty scope and no outcome: its supervisor was lost; %s.", j->id,
                           j->rerunnable ? "requeued" : "NODE_FAIL");
                (void) executor_cancel(m->executor, j->id, NULL, NULL);
                node_fail(m, j);
        }
}

static int local_check_request(Manager *m, const SubmitRequest *req, const QueueConfig *q, const char **ret_field,
                               char **ret_refusal) {
        const char *field = NULL, *why = NULL;

        if ((req->cpus ?: 1) > sched_machine_cpus(&m->machine))
                field = "cpus", why = "more CPUs than this machine has";
        else if (req->memory > sched_machine_memory(&m->machine))
                field = "memory", why = "more memory than this machine has";
        if (!why)
                return 0;
        *ret_field = field;
        *ret_refusal = strdup(why);
        return *ret_refusal ? -EINVAL : -ENOMEM;
}

static int local_cancel(Manager *m, Job *j, JobActor by) {
        if (job_state_is_pending(j->state))
                return manager_job_transition_by(m, j, JOB_EVENT_CANCEL, JOB_CANCELLED, "Cancelled", by);
        (void) manager_job_mark(m, j, JOB_MARK_CANCEL, by);
        if (!j->launching && executor_cancel(m->executor, j->id, NULL, NULL) < 0)
                return -EIO;
        return 0;
}

static int local_requeue(Manager *m, Job *j, bool hold, JobActor by, char **ret_refusal) {
        if (job_state_is_final(j->state))
                return 1; /* back in the queue here */
        /* Running: stop it, and the outcome puts it back in the queue. */
        (void) manager_job_mark(m, j, hold ? JOB_MARK_REQUEUE_HOLD : JOB_MARK_REQUEUE, by);
        if (!j->launching && executor_cancel(m->executor, j->id, NULL, NULL) < 0)
                return -EIO;
        return 0;
}

static int local_signal(Manager *m, Job *j, int sig, bool batch_only, char **ret_refusal) {
        int r = executor_signal(m->executor, j->id, job_project(j), sig, batch_only);

        if (r == -EOPNOTSUPP) {
                *ret_refusal = strdup("the job started before corrald could signal jobs: its supervisor does not "
                                      "relay signals");
                return *ret_refusal ? -EOPNOTSUPP : -ENOMEM;
        }
        return r;
}

static int local_freeze(Manager *m, Job *j, bool freeze, executor_done_t done, void *userdata) {
        return executor_freeze(m->executor, j->id, job_project(j), freeze, done, userdata);
}

/* Without a file of its own, its output is in the journal, under its scope. */
static int local_output(Manager *m, const Job *j, char **ret_default, bool *ret_in_journal) {
        *ret_default = NULL;
        *ret_in_journal = true;
        return 0;
}

const JobBackendOps job_backend_local = {
        .name = "local",
        .scheduled_here = true,
        .sends_mail = true,
        .check_request = local_check_request,
        .adopt = local_adopt,
        .committed = local_committed,
        .tick = local_tick,
        .cancel = local_cancel,
        .requeue = local_requeue,
        .signal = local_signal,
        .freeze = local_freeze,
        .output = local_output,
};
