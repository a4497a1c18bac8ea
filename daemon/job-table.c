/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The job table: every job corrald knows, sorted by id (new ids are the highest, so a
 * submission is an append and a lookup a binary search), and the view of one job that
 * the methods send. */

#include <assert.h>
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "intern.h"
#include "job-backend.h"
#include "job-table.h"
#include "json-util.h"
#include "manager.h"
#include "usage.h"



size_t job_array_index(Job *const *jobs, size_t n, uint64_t id) {
        size_t lo = 0, hi = n;

        while (lo < hi) {
                size_t mid = (lo + hi) / 2;
                if (jobs[mid]->id < id)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return lo;
}

size_t manager_job_index(Manager *m, uint64_t id) {
        return job_array_index(m->jobs, m->n_jobs, id);
}

Job *manager_find_job(Manager *m, uint64_t id) {
        size_t i = manager_job_index(m, id);

        return i < m->n_jobs && m->jobs[i]->id == id ? m->jobs[i] : NULL;
}

/* The per-user index: one entry per user name with jobs in memory, sorted by the interned
 * name's address (a name is interned once, so the address is the name). */
static size_t user_jobs_index(Manager *m, const char *user) {
        size_t lo = 0, hi = m->n_user_jobs;

        while (lo < hi) {
                size_t mid = (lo + hi) / 2;
                if ((uintptr_t) m->user_jobs[mid].user < (uintptr_t) user)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return lo;
}

const UserJobs *manager_user_jobs(Manager *m, const char *user) {
        const char *interned = intern_find(user);
        size_t i;

        if (!interned)
                return NULL; /* never interned: nobody of that name has a job here */
        i = user_jobs_index(m, interned);
        return i < m->n_user_jobs && m->user_jobs[i].user == interned ? &m->user_jobs[i] : NULL;
}

static UserJobs *user_jobs_get(Manager *m, const char *user) {
        size_t i = user_jobs_index(m, user);

        if (i < m->n_user_jobs && m->user_jobs[i].user == user)
                return &m->user_jobs[i];
        if (!GREEDY_REALLOC(m->user_jobs, m->allocated_user_jobs, m->n_user_jobs + 1))
                return NULL;
        memmove(m->user_jobs + i + 1, m->user_jobs + i, (m->n_user_jobs - i) * sizeof *m->user_jobs);
        m->user_jobs[i] = (UserJobs) { .user = user };
        m->n_user_jobs++;
        return &m->user_jobs[i];
}

static void user_jobs_append(UserJobs *u, Job *j) {
        if (u->n == 0)
                u->uid = j->uid;
        else if (j->uid != u->uid)
                u->mixed_uids = true;
        u->jobs[u->n++] = j;
}

int manager_add_job(Manager *m, Job *j) {
        UserJobs *u = NULL;

        /* New ids are the highest: an append. Loading from the store is in id order too. */
        if (m->n_jobs > 0 && m->jobs[m->n_jobs - 1]->id >= j->id)
                return -EINVAL;
        if (!GREEDY_REALLOC(m->jobs, m->allocated_jobs, m->n_jobs + 1))
                return -ENOMEM;
        /* A job without a user name is in no user's list (only jobs of a failed intern(),
         * which submit refuses). Its id is the user's highest too. */
        if (j->user) {
                u = user_jobs_get(m, job_user(j));
                if (!u || !GREEDY_REALLOC(u->jobs, u->allocated, u->n + 1))
                        return -ENOMEM;
                user_jobs_append(u, j);
        }
        m->jobs[m->n_jobs++] = j;
        if (j->id >= m->next_id)
                m->next_id = j->id + 1;
        return 0;
}

void manager_truncate_jobs(Manager *m, size_t n) {
        while (m->n_jobs > n) {
                Job *j = m->jobs[--m->n_jobs];
                if (j->user) {
                        /* The table's last job is its user's last too. */
                        UserJobs *u = &m->user_jobs[user_jobs_index(m, job_user(j))];
                        assert(u->user == job_user(j) && u->n > 0 && u->jobs[u->n - 1] == j);
                        u->n--;
                }
                job_free(j);
        }
}

void manager_purge_finished(Manager *m, uint64_t now) {
        size_t k = 0;

        for (size_t i = 0; i < m->n_jobs; i++) {
                Job *j = m->jobs[i];
                if (job_state_is_final(j->state) && j->end_time + CORRAL_FINISHED_KEEP_SEC < now)
                        job_free(j);
                else
                        m->jobs[k++] = j;
        }
        if (k == m->n_jobs)
                return;
        m->n_jobs = k;
        /* Each user's list again, from the table: each is as long as before or shorter,
         * so this needs no memory. A user left with none keeps an empty entry (a few
         * bytes, one per user name that ever had a job). */
        for (size_t u = 0; u < m->n_user_jobs; u++) {
                m->user_jobs[u].n = 0;
                m->user_jobs[u].mixed_uids = false;
        }
        for (size_t i = 0; i < m->n_jobs; i++) {
                Job *j = m->jobs[i];
                if (j->user) {
                        UserJobs *u = &m->user_jobs[user_jobs_index(m, job_user(j))];
                        assert(u->user == job_user(j) && u->n < u->allocated);
                        user_jobs_append(u, j);
                }
        }
}

void manager_free_jobs(Manager *m) {
        for (size_t i = 0; i < m->n_jobs; i++)
                job_free(m->jobs[i]);
        m->jobs = mfree(m->jobs);
        m->n_jobs = m->allocated_jobs = 0;
        for (size_t u = 0; u < m->n_user_jobs; u++)
                free(m->user_jobs[u].jobs);
        m->user_jobs = mfree(m->user_jobs);
        m->n_user_jobs = m->allocated_user_jobs = 0;
}


json_object *manager_job_json(Manager *m, const Job *j, bool details) {
        const JobBackendOps *b;
        char *reason = NULL;
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
        /* Its reason in its backend's words (a forwarded job's: its Slurm job's). */
        b = manager_job_backend(m, j);
        if (b->reason && b->reason(m, j, &reason) > 0) {
                free(info.reason);
                info.reason = reason;
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
/* The limit the job runs under, decided in sched/ from the request and the queue. */
uint64_t manager_job_walltime(Manager *m, const Job *j) {
        const QueueConfig *q = config_find_queue(m->config, job_queue(j));
        uint64_t w = job_shared(j)->walltime_sec == CORRAL_WALLTIME_INFINITY ? 0 : job_shared(j)->walltime_sec;

        return sched_effective_walltime(w, q ? q->default_walltime : 0, q ? q->max_walltime : 0);
}
