/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The one place a job's state changes (as systemd funnels every unit's through
 * unit_notify()): the transition table is asked, the fields that go with the event are
 * set, the change is written into the open store transaction, waiters are told, its mail
 * is queued for after the commit and a scheduling pass is asked for. The flags that
 * qualify a state (who holds or suspends the job, a cancel under way, a launch under way)
 * are set here too, by the transition or by manager_job_mark(), as the caller says who
 * acts: set elsewhere, an owner's hold once cleared an administrator's.
 * tests/unit/test-state-writes.sh fails the build's tests if any other daemon file
 * assigns a job's state or one of those flags. */

#include <errno.h>
#include <inttypes.h>
#include <time.h>

#include "interactive-job.h"
#include "job-history.h"
#include "job-mail.h"
#include "job-table.h"
#include "job-transition.h"
#include "log.h"
#include "manager.h"
#include "message.h"
#include "server.h"

/* One change, any number of waiters: the job's view is built once, from memory (no
 * store read, no parse of the stored request), and shared by every reply. */
typedef struct WaitNotify {
        Manager *m;
        Job *job;
        json_object *view;
} WaitNotify;

static void wait_notify(Call *c, void *userdata) {
        WaitNotify *w = userdata;
        bool final = job_state_is_final(w->job->state);
        bool more = server_call_more(c);
        json_object *p;

        if (!final && !more)
                return;
        if (!w->view) {
                JobInfo info;
                if (job_to_info(w->job, true, NULL, w->m->hostname, &info) < 0)
                        return;
                if (job_info_to_json(&info, true, &w->view) < 0)
                        w->view = NULL;
                job_info_done(&info);
                if (!w->view)
                        return;
        }
        p = json_object_new_object();
        if (!p)
                return;
        json_object_object_add(p, "job", json_object_get(w->view));
        (void) server_call_reply(c, reply_new(p, !final), !final);
}

static void job_changed(Manager *m, Job *j) {
        WaitNotify w = { .m = m, .job = j };

        /* An interactive job that has ended needs neither its client nor its grace timer:
         * let go of them before its Run call gets its last reply (and is freed). */
        if (job_state_is_final(j->state))
                (void) job_set_interactive(j, NULL);

        if (m->server)
                server_foreach_waiting(m->server, j->id, wait_notify, &w);
        json_object_put(w.view);
}

int manager_job_save(Manager *m, Job *j) {
        int r = store_update_job(m->store, j);
        if (r < 0)
                return log_error_errno(r, "Cannot store job %" PRIu64 ": %s", j->id, store_error(m->store));
        job_changed(m, j);
        return 0;
}

/* The suspension under way ends: its time is added up. */
static void job_run_close_suspension(Job *j, uint64_t now) {
        JobRun *run = j->run; /* none: it was not suspended */

        if (!run)
                return;
        if (run->suspend_start && now > run->suspend_start)
                run->suspended_usec += (now - run->suspend_start) * UINT64_C(1000000);
        run->suspend_start = 0;
}

/* A new run from scratch: what the last one left is forgotten (*old_alloc and *old_run
 * take it, freed once the store has the change). */
static void job_reset_run(Job *j, uint64_t now, SchedAllocation **old_alloc, JobRun **old_run) {
        *old_alloc = j->run ? TAKE_PTR(j->run->alloc) : NULL;
        j->held_by_admin = j->suspended_by_admin = j->suspended_by_sched = j->suspended_by_person = false;
        *old_run = TAKE_PTR(j->run); /* usage, suspensions, preemption, the launch error, the exit status */
        j->requeue_count++;
        j->start_time = j->end_time = 0;
        j->eligible_time = now;
        j->cancel_requested = j->launching = false;
}

/* An administrator holds a job its owner held: the hold becomes theirs. */
static int job_hold_admin(Manager *m, Job *j, const char *reason) {
        uint32_t reason_before = j->reason;
        int r;

        j->held_by_admin = true;
        (void) job_set_reason(j, reason);
        r = manager_job_save(m, j);
        if (r >= 0 && manager_job_history_record(m, j, JOB_EVENT_HOLD, JOB_HELD, j->requeue_count,
                                                 (uint64_t) time(NULL), JOB_BY_ADMIN) < 0)
                log_warning("Cannot record job %" PRIu64 "'s hold in its history: %s", j->id, store_error(m->store));
        if (r < 0) {
                j->held_by_admin = false;
                j->reason = reason_before; /* interned: still there */
        }
        return r;
}

int manager_job_transition_by(Manager *m, Job *j, JobEvent event, JobState to, const char *reason,
                              JobActor by) {
        uint64_t now = (uint64_t) time(NULL);
        JobState from = event == JOB_EVENT_SUBMIT ? _JOB_STATE_INVALID : j->state;
        _cleanup_(job_alloc_freep) SchedAllocation *old_alloc = NULL;
        _cleanup_free_ JobRun *old_run = NULL;
        unsigned n_running;
        JobRun run_before;
        Job before;
        int r;

        /* Any other hold of a held job is -EALREADY below, and changes nothing: nobody's
         * hold lowers an administrator's. */
        if (event == JOB_EVENT_HOLD && from == JOB_HELD && to == JOB_HELD && by == JOB_BY_ADMIN &&
            !j->held_by_admin)
                return job_hold_admin(m, j, reason);
        r = job_state_transition_allowed(from, to, event);
        if (r < 0) {
                log_debug("Job %" PRIu64 ": %s from %s to %s refused: %s", j->id, job_event_to_string(event),
                          strna(job_state_to_string(from)), strna(job_state_to_string(to)), strerror(-r));
                return r;
        }
        /* A job that starts (or is suspended, after a restart that found nothing of its
         * run to load) gets what records its run now, before anything changes. */
        if ((event == JOB_EVENT_START || event == JOB_EVENT_SUSPEND) && !job_run_ensure(j))
                return log_oom();
        /* The job as the store has it: put back when the store cannot record the change
         * (short of memory), so that memory never holds a state the store does not. */
        before = *j;
        run_before = *job_run(j);
        n_running = m->n_running;

        /* The allocation stays on a finished job, for the record (show lists its CPUs);
         * only active jobs count as running. */
        if (job_state_is_active(from) && !job_state_is_active(to) && m->n_running > 0)
                m->n_running--;
        if (!job_state_is_active(from) && job_state_is_active(to))
                m->n_running++;

        switch (event) {
        case JOB_EVENT_START:
                j->start_time = now;
                j->launching = true;
                j->est_start = 0;
                break;
        case JOB_EVENT_HOLD:
                j->held_by_admin = by == JOB_BY_ADMIN;
                break;
        case JOB_EVENT_RELEASE:
                j->held_by_admin = false;
                j->eligible_time = now;
                break;
        case JOB_EVENT_SUSPEND:
                j->run->suspend_start = now;
                /* corrald on its own (Slurm suspended it) says nothing of who did. */
                if (by == JOB_BY_SCHED)
                        j->suspended_by_sched = true;
                else if (by != JOB_BY_CORRALD)
                        j->suspended_by_admin = by == JOB_BY_ADMIN;
                break;
        case JOB_EVENT_RESUME:
                job_run_close_suspension(j, now);
                j->suspended_by_admin = j->suspended_by_sched = j->suspended_by_person = false;
                break;
        case JOB_EVENT_END:
        case JOB_EVENT_CANCEL:
                if (j->state == JOB_SUSPENDED)
                        job_run_close_suspension(j, now);
                j->end_time = now;
                j->cancel_requested = j->launching = false;
                break;
        case JOB_EVENT_NODE_FAIL:
                if (to == JOB_NODE_FAIL) {
                        j->end_time = now;
                        j->cancel_requested = j->launching = false;
                } else
                        job_reset_run(j, now, &old_alloc, &old_run);
                break;
        case JOB_EVENT_REQUEUE:
                job_reset_run(j, now, &old_alloc, &old_run);
                break;
        default:
                break;
        }

        j->state = to;
        (void) job_set_reason(j, reason);
        /* A job submitted held changes nothing a pass decides (a pass passes it over, as
         * Slurm gives it priority 0): no pass for it, which with many submitted so was
         * most of corrald's work per submission. Its release asks for one. */
        if (!(event == JOB_EVENT_SUBMIT && to == JOB_HELD))
                m->sched_needed = true;

        if (event == JOB_EVENT_SUBMIT) {
                size_t bytes;

                /* The first job of an array stores the request; the rest refer to it. */
                r = store_insert_job(m->store, j, job_request_id(j) ? NULL : &bytes);
                if (r < 0)
                        return log_error_errno(r, "Cannot store job %" PRIu64 ": %s", j->id,
                                               store_error(m->store));
                if (!job_request_id(j))
                        j->request_bytes = (uint32_t) MIN(bytes, (size_t) UINT32_MAX); /* < CORRAL_MESSAGE_SIZE_MAX */
                return manager_add_job(m, j);
        }
        r = manager_job_save(m, j);
        if (r >= 0) {
                /* Its history only tells: a change the store cannot record there still
                 * happens. */
                int k = manager_job_history_record(m, j, event, from, before.requeue_count, now, by);
                if (k < 0)
                        log_warning_errno(k, "Cannot record job %" PRIu64 "'s %s in its history: %s", j->id,
                                          job_event_to_string(event), store_error(m->store));
        }
        if (r < 0) {
                *j = before;
                if (j->run)
                        *j->run = run_before;
                m->n_running = n_running;
                TAKE_PTR(old_alloc);
                TAKE_PTR(old_run);
                return r;
        }
        if (old_run)
                free(old_run->launch_error);
        /* What a finished job holds of its allocation is shared with the others' equal ones. */
        if (job_state_is_final(to) && job_alloc(j))
                j->run->alloc = job_alloc_share(j->run->alloc);
        /* Queued, not sent: manager_commit() sends it once the store has this state. */
        manager_job_mail(m, j, event);
        return 0;
}

int manager_job_transition(Manager *m, Job *j, JobEvent event, JobState to, const char *reason) {
        return manager_job_transition_by(m, j, event, to, reason, JOB_BY_CORRALD);
}

int manager_job_mark(Manager *m, Job *j, JobMark mark, JobActor by) {
        bool person = j->suspended_by_person, admin = j->suspended_by_admin;
        int r;

        switch (mark) {
        case JOB_MARK_LAUNCHED:
                j->launching = false;
                return 0;
        case JOB_MARK_CANCEL:
        case JOB_MARK_REQUEUE:
        case JOB_MARK_REQUEUE_HOLD:
                /* In memory only; the outcome reads the reason (job-outcome.c). */
                j->cancel_requested = true;
                (void) job_set_reason(j, mark == JOB_MARK_CANCEL    ? "Cancelling"
                                         : mark == JOB_MARK_REQUEUE ? "Requeue"
                                                                    : "RequeueHold");
                return 0;
        case JOB_MARK_SUSPEND:
                if (j->state != JOB_SUSPENDED || !j->suspended_by_sched)
                        return -EBUSY;
                j->suspended_by_person = true;
                j->suspended_by_admin = admin || by == JOB_BY_ADMIN;
                break;
        case JOB_MARK_RESUME:
                if (j->state != JOB_SUSPENDED || !j->suspended_by_sched || !j->suspended_by_person)
                        return -EBUSY;
                j->suspended_by_person = j->suspended_by_admin = false;
                break;
        default:
                return -EINVAL;
        }
        r = manager_job_save(m, j);
        if (r < 0) {
                j->suspended_by_person = person;
                j->suspended_by_admin = admin;
                return r;
        }
        /* Only the pass's hold is left: the pass may resume it. */
        if (mark == JOB_MARK_RESUME)
                m->sched_needed = true;
        return 0;
}
