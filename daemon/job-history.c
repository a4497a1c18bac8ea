/* SPDX-License-Identifier: GPL-2.0-or-later */
/* A job's state history. What every job goes through, its submission and each run's
 * start and end, the job's row dates already (submit_time, start_time, end_time, and
 * job_usage for the runs before a requeue): recording it again would add a page to the
 * commits every trivial job makes. So only the other changes are recorded (job_events:
 * holds, releases, blocks, suspensions, requeues, a cancel before the job started), each
 * with the run it belongs to, and the story is put together when it is asked for.
 *
 * Within a run the order is fixed whatever the clock says (changes a second apart or in
 * the same second): what happened while it waited, its start, what happened while it
 * ran, its end, what happened to it ended (a requeue). The sort key is (run, that phase,
 * time, the order recorded). */

#include <errno.h>
#include <stdlib.h>

#include "job-history.h"
#include "json-util.h"
#include "log.h"
#include "macro.h"
#include "manager.h"
#include "store.h"

/* What the store keeps of one job's events (its latest: a job preempted, or held and
 * released, without end shows them) and what Show reads of its runs. */
#define HISTORY_EVENTS_MAX 256U
#define HISTORY_RUNS_MAX 64U

static const char *const job_actor_table[] = {
        [JOB_BY_CORRALD] = "corrald",
        [JOB_BY_PERSON] = "owner",
        [JOB_BY_ADMIN] = "admin",
        [JOB_BY_SCHED] = "scheduler",
};

const char *job_actor_to_string(JobActor by) {
        return (size_t) by < ELEMENTSOF(job_actor_table) ? job_actor_table[by] : NULL;
}

static bool dated_by_row(JobEvent event, JobState from) {
        switch (event) {
        case JOB_EVENT_SUBMIT:
        case JOB_EVENT_START:
        case JOB_EVENT_END:
                return true;
        case JOB_EVENT_CANCEL:
                return job_state_is_active(from); /* a run's end */
        default:
                return false;
        }
}

int manager_job_history_record(Manager *m, const Job *j, JobEvent event, JobState from, uint32_t run, uint64_t now,
                               JobActor by) {
        if (dated_by_row(event, from))
                return 0;
        return store_record_job_event(m->store, j->id, run, now, job_event_to_string(event),
                                      job_state_to_string(from), job_state_to_string(j->state), job_reason(j),
                                      by == JOB_BY_CORRALD ? NULL : job_actor_to_string(by), HISTORY_EVENTS_MAX);
}

typedef enum Phase {
        PHASE_SUBMIT,
        PHASE_WAITING,
        PHASE_START,
        PHASE_RUNNING,
        PHASE_END,
        PHASE_ENDED,
} Phase;

typedef struct Entry {
        uint32_t run;
        Phase phase;
        uint64_t time;
        size_t order;
        const char *event, *state, *reason, *by;
} Entry;

static Phase phase_of(const char *from) {
        JobState s = job_state_from_string(from);

        if (s < 0 || job_state_is_final(s))
                return PHASE_ENDED;
        return job_state_is_active(s) ? PHASE_RUNNING : PHASE_WAITING;
}

static int entry_cmp(const void *a, const void *b) {
        const Entry *x = a, *y = b;

        if (x->run != y->run)
                return x->run < y->run ? -1 : 1;
        if (x->phase != y->phase)
                return x->phase < y->phase ? -1 : 1;
        if (x->time != y->time)
                return x->time < y->time ? -1 : 1;
        return x->order < y->order ? -1 : x->order > y->order;
}

json_object *manager_job_history_json(Manager *m, const Job *j) {
        StoreJobEvent *ev = NULL;
        StoreJobRun *runs = NULL;
        size_t n_ev = 0, n_runs = 0, n = 0;
        _cleanup_free_ Entry *e = NULL;
        const char *initial = NULL;
        bool ended_recorded = false;
        json_object *a = NULL;
        int r;

        r = store_load_job_events(m->store, j->id, HISTORY_EVENTS_MAX, &ev, &n_ev);
        if (r >= 0)
                r = store_load_job_runs(m->store, j->id, HISTORY_RUNS_MAX, &runs, &n_runs);
        if (r < 0) {
                log_debug_errno(r, "Cannot read job %" PRIu64 "'s history: %s", j->id, store_error(m->store));
                goto finish;
        }
        /* The submission, each event, two per run (earlier runs, the current one). */
        e = new0(Entry, 1 + n_ev + 2 * (n_runs + 1));
        if (!e)
                goto finish;

        for (size_t i = 0; i < n_ev; i++) {
                const StoreJobEvent *x = &ev[i];

                if (!initial && x->run == 0 && phase_of(x->from) == PHASE_WAITING)
                        initial = x->from;
                if (x->run == j->requeue_count && x->to && job_state_from_string(x->to) >= 0 &&
                    job_state_is_final(job_state_from_string(x->to)))
                        ended_recorded = true;
                e[n++] = (Entry) { .run = x->run, .phase = phase_of(x->from), .time = x->time, .order = i,
                                   .event = x->event, .state = x->to, .reason = x->reason, .by = x->by };
        }
        /* Submitted as it first waited: held, or queued; a job that never changed since
         * is as it was. */
        if (!initial)
                initial = j->requeue_count == 0 && j->start_time == 0 && !job_state_is_final(j->state)
                                  ? job_state_to_string(j->state)
                                  : job_state_to_string(JOB_QUEUED);
        e[n++] = (Entry) { .run = 0, .phase = PHASE_SUBMIT, .time = j->submit_time, .event = "submit",
                           .state = initial };

        /* The runs before this one, as charged: a start, and the end the requeue after it
         * names (a run requeued while it ran ends with the requeue itself). */
        for (size_t i = 0; i < n_runs; i++) {
                const StoreJobRun *x = &runs[i];

                if (x->run >= j->requeue_count)
                        continue;
                e[n++] = (Entry) { .run = x->run, .phase = PHASE_START, .time = x->start_time, .event = "start",
                                   .state = job_state_to_string(JOB_RUNNING) };
                for (size_t k = 0; k < n_ev; k++)
                        if (ev[k].run == x->run && phase_of(ev[k].from) == PHASE_ENDED) {
                                e[n++] = (Entry) { .run = x->run, .phase = PHASE_END, .time = x->end_time,
                                                   .event = "end", .state = ev[k].from };
                                break;
                        }
        }
        if (j->start_time > 0)
                e[n++] = (Entry) { .run = j->requeue_count, .phase = PHASE_START, .time = j->start_time,
                                   .event = "start", .state = job_state_to_string(JOB_RUNNING) };
        if (job_state_is_final(j->state) && j->end_time > 0 && !ended_recorded)
                e[n++] = (Entry) { .run = j->requeue_count, .phase = PHASE_END, .time = j->end_time,
                                   .event = "end", .state = job_state_to_string(j->state), .reason = job_reason(j) };

        qsort(e, n, sizeof *e, entry_cmp);
        a = json_object_new_array();
        for (size_t i = 0; a && i < n; i++) {
                json_object *o = json_object_new_object();

                if (!o || json_object_array_add(a, o) < 0) {
                        json_object_put(o);
                        json_object_put(a);
                        a = NULL;
                        break;
                }
                json_add_u64(o, "time", e[i].time);
                json_add_string(o, "state", e[i].state);
                json_add_string(o, "event", e[i].event);
                json_add_string(o, "reason", e[i].reason);
                json_add_string(o, "by", e[i].by);
        }
finish:
        store_job_events_free(ev, n_ev);
        free(runs);
        return a;
}
