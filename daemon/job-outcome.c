/* SPDX-License-Identifier: GPL-2.0-or-later */
/* What the executor reports: a job started (or could not be), a job ended with an
 * outcome; each becomes a transition with the state and reason Slurm users expect. */

#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "job-outcome.h"
#include "job-table.h"
#include "job-transition.h"
#include "log.h"
#include "manager.h"
#include "usage.h"

int manager_job_launch_failed(Manager *m, Job *j, JobState state, const char *detail) {
        /* Put back if the end cannot be stored: memory keeps what the store has. */
        _cleanup_free_ char *before = j->run ? TAKE_PTR(j->run->launch_error) : NULL;
        int r;

        /* Short of memory, it still ends: its reason says LaunchFailed without the words. */
        if (job_take_launch_error(j, detail ? strndup(detail, 1024) : NULL) < 0)
                log_oom();
        r = manager_job_transition(m, j, JOB_EVENT_END, state, "LaunchFailed");
        if (r < 0 && j->run) {
                free(j->run->launch_error);
                j->run->launch_error = TAKE_PTR(before);
        }
        return r;
}

/* A launch failed and its end could not be recorded either: the job is launched again
 * after the next pass, which ends it or starts it. */
static void launch_again(Manager *m, Job *j) {
        if (!GREEDY_REALLOC(m->to_launch, m->allocated_to_launch, m->n_to_launch + 1)) {
                log_oom();
                return;
        }
        m->to_launch[m->n_to_launch++] = j->id;
        m->sched_needed = true;
}


void manager_on_job_started(Executor *e, uint64_t id, int error, const char *message, void *userdata) {
        Manager *m = userdata;
        Job *j = manager_find_job(m, id);

        if (!j)
                return;
        (void) manager_job_mark(m, j, JOB_MARK_LAUNCHED, JOB_BY_CORRALD);
        if (error < 0) {
                log_error_errno(error, "Job %" PRIu64 " could not be started: %s", id, strna(message));
                if (manager_job_launch_failed(m, j, j->cancel_requested ? JOB_CANCELLED : JOB_FAILED,
                                              message ?: strerror(-error)) < 0)
                        launch_again(m, j);
                return;
        }
        log_info("Job %" PRIu64 " started in corral-job-%" PRIu64 ".scope.", id, id);
        if (j->cancel_requested && executor_cancel(m->executor, id, NULL, NULL) < 0)
                log_warning("Cannot cancel job %" PRIu64 " right after its start.", id);
}

/* An outcome that could not be recorded (memory short): left in place, and read again
 * (manager.c rescans the results at its next tick). */
static void outcome_again(Manager *m, uint64_t id) {
        log_warning("The outcome of job %" PRIu64 " could not be recorded; it is read again shortly.", id);
        m->outcomes_rescan = true;
}

void manager_on_job_finished(Executor *e, const JobOutcome *o, void *userdata) {
        Manager *m = userdata;
        Job *j = manager_find_job(m, o->id);
        const char *reason = NULL;
        char buf[512];
        JobState state;
        JobRun *run, run_before;
        int r;

        /* Its file is removed after the commit (on_post()) only once it is recorded. */
        if (!GREEDY_REALLOC(m->outcomes_done, m->allocated_outcomes_done, m->n_outcomes_done + 1)) {
                outcome_again(m, o->id);
                return;
        }
        if (!j || !job_state_is_active(j->state)) {
                /* recorded before (seen twice after a restart), or not ours */
                m->outcomes_done[m->n_outcomes_done++] = o->id;
                return;
        }

        /* It has its run unless a restart found nothing of it to load. Short of memory,
         * its end is still recorded, without its usage and exit status. */
        run = job_run_ensure(j);
        if (run) {
                run_before = *run;
                run->usage = (JobUsage) { .cpu_usec = o->cpu_usage_usec, .memory_peak = o->memory_peak,
                                          .io_read_bytes = o->io_read_bytes, .io_write_bytes = o->io_write_bytes,
                                          .tasks_peak = o->pids_peak };
                /* The supervisor's count, which also covers the time we were not running;
                 * the transition adds a suspension still open. */
                run->suspended_usec = MAX(run->suspended_usec, o->suspended_usec);
                run->exit_code = o->launch_errno ? -1 : o->signal ? -1 : o->exit_code;
                run->exit_signal = o->signal;
        } else
                log_oom();

        (void) manager_job_mark(m, j, JOB_MARK_LAUNCHED, JOB_BY_CORRALD);
        /* Charged for this run (a requeue too) in the transaction of its end. A charge
         * that fails half way has made the transaction unfit to commit (usage.c). */
        if (!o->launch_errno && accounting_charge_run(m->acct, j, o, (uint64_t) time(NULL)) < 0)
                goto again;
        if (o->launch_errno) {
                log_info("Job %" PRIu64 " could not be launched: %s.", j->id, strna(o->launch_error));
                r = manager_job_launch_failed(m, j, JOB_FAILED,
                                              o->launch_detail ?: o->launch_error ?: strerror(o->launch_errno));
                goto done;
        } else if (j->cancel_requested && strneq(strempty(job_reason(j)), "Requeue", 7)) {
                bool hold = streq(job_reason(j), "RequeueHold");
                r = manager_job_transition(m, j, JOB_EVENT_REQUEUE, hold ? JOB_HELD : JOB_QUEUED, "Requeued");
                goto done;
        } else if (j->cancel_requested)
                /* GPUIdleAction=cancel names the idle GPUs (gpu-jobs.c). */
                state = JOB_CANCELLED,
                reason = strneq(strempty(job_reason(j)), "GPUIdle", 7) ? job_reason(j) : "Cancelled";
        else if (o->cancelled && !o->timed_out && !o->oom_killed)
                /* Its scope was stopped from outside (systemctl stop, KillUnit). */
                state = JOB_CANCELLED, reason = "StoppedBySystemd";
        else if (o->timed_out)
                state = JOB_TIMEOUT, reason = "TimeLimit";
        else if (o->oom_killed)
                state = JOB_OUT_OF_MEMORY, reason = "OutOfMemory";
        else if (o->signal) {
                snprintf(buf, sizeof buf, "Signal %d", o->signal);
                state = JOB_FAILED, reason = buf;
        } else if (o->exit_code != 0)
                state = JOB_FAILED, reason = "NonZeroExitCode";
        else
                state = JOB_COMPLETED, reason = NULL;
        r = manager_job_transition(m, j, JOB_EVENT_END, state, reason);
        if (r >= 0)
                log_info("Job %" PRIu64 " ended: %s%s%s.", j->id, job_state_to_string(state), reason ? ", " : "",
                         strempty(reason));
done:
        if (r >= 0) {
                m->outcomes_done[m->n_outcomes_done++] = o->id;
                return;
        }
        /* Its run is charged and its end is not recorded: the transaction cannot be
         * committed as it is, corrald exits and reads the outcome again when it starts. */
        if (!o->launch_errno)
                store_fail(m->store, r);
again:
        if (run)
                *run = run_before;
        outcome_again(m, o->id);
}
