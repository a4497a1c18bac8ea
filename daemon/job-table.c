/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The job table: every job corrald knows, sorted by id (new ids are the highest, so a
 * submission is an append and a lookup a binary search), and the view of one job that
 * the methods send. */

#include <errno.h>

#include "json-util.h"
#include "manager.h"
#include "usage.h"

/* Final jobs stay in memory (for show/wait/dependencies) this long. */
#define FINISHED_KEEP_SEC (24 * 3600)


size_t manager_job_index(Manager *m, uint64_t id) {
        size_t lo = 0, hi = m->n_jobs;

        while (lo < hi) {
                size_t mid = (lo + hi) / 2;
                if (m->jobs[mid]->id < id)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return lo;
}

Job *manager_find_job(Manager *m, uint64_t id) {
        size_t i = manager_job_index(m, id);

        return i < m->n_jobs && m->jobs[i]->id == id ? m->jobs[i] : NULL;
}

int manager_add_job(Manager *m, Job *j) {
        /* New ids are the highest: an append. Loading from the store is in id order too. */
        if (m->n_jobs > 0 && m->jobs[m->n_jobs - 1]->id >= j->id)
                return -EINVAL;
        if (!GREEDY_REALLOC(m->jobs, m->allocated_jobs, m->n_jobs + 1))
                return -ENOMEM;
        m->jobs[m->n_jobs++] = j;
        if (j->id >= m->next_id)
                m->next_id = j->id + 1;
        return 0;
}

void manager_purge_finished(Manager *m, uint64_t now) {
        size_t k = 0;

        for (size_t i = 0; i < m->n_jobs; i++) {
                Job *j = m->jobs[i];
                if (job_state_is_final(j->state) && j->end_time + FINISHED_KEEP_SEC < now)
                        job_free(j);
                else
                        m->jobs[k++] = j;
        }
        m->n_jobs = k;
}


json_object *manager_job_json(Manager *m, const Job *j, bool details) {
        JobInfo info;
        json_object *o = NULL;

        SubmitRequest full = SUBMIT_REQUEST_INIT;
        bool have_full = details && store_load_request(m->store, j->id, &full) >= 0;
        int r = job_to_info(j, details, have_full ? &full : NULL, m->hostname, &info);
        submit_request_done(&full);
        if (r < 0)
                return NULL;
        /* The scheduler's view; an estimate beyond the wire's time range is no estimate. */
        if (job_state_is_pending(j->state)) {
                if (j->est_start != SCHED_TIME_INFINITY && j->est_start <= CORRAL_TIME_MAX)
                        info.est_start = j->est_start;
                info.has_priority = true;
                info.priority = j->priority;
        }
        /* A forwarded job: its Slurm job, in Slurm's words (job-forward.c). */
        if (manager_job_slurm_id(m, j)) {
                char *reason;
                const char *word = j->reason && strncmp(j->reason, "Slurm:", 6) == 0 ? j->reason + 6 : j->reason;
                if (asprintf(&reason, "Slurm job %" PRIu64 "%s%s", manager_job_slurm_id(m, j), word ? ": " : "",
                             strempty(word)) >= 0) {
                        free(info.reason);
                        info.reason = reason;
                }
        }
        if (job_info_to_json(&info, details, &o) < 0)
                o = NULL;
        job_info_done(&info);
        /* What the job was charged, or so far while it runs: the owner's and admins' view. */
        if (o && details)
                json_add(o, "charge", accounting_job_charge_json(m->acct, j));
        return o;
}

/* A launch that failed: the words (systemd's refusal, the supervisor's "cannot open
 * /home/alice/out: Permission denied") may name paths and argv, so they go to the owner's
 * view and the log only; the public queue says "LaunchFailed". */