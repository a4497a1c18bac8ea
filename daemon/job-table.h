/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/* The jobs in memory (job-table.c): sorted by id, and by user for what one user asks of
 * their own jobs (corral queue --me, a submit's per-user limits) without a walk of
 * everyone's. */

#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "job.h"

typedef struct Manager Manager;

Job *manager_find_job(Manager *m, uint64_t id);
/* Where a job of this id is or would go in jobs (n of them, sorted by id): the first whose
 * id is not below it. manager_job_index() for m->jobs. */
size_t job_array_index(Job *const *jobs, size_t n, uint64_t id);
size_t manager_job_index(Manager *m, uint64_t id);
/* Appends j (the highest id yet) to the table and to its user's jobs. */
int manager_add_job(Manager *m, Job *j);
/* Frees the table's jobs from index n on (the last ones added: a submission rolled back). */
void manager_truncate_jobs(Manager *m, size_t n);
/* Forgets final jobs that ended more than a day ago (the store keeps them). */
void manager_purge_finished(Manager *m, uint64_t now);
/* Frees every job, and the table. */
void manager_free_jobs(Manager *m);
/* One user's jobs in memory, in id order: borrowed, valid until the next job is added or
 * purged. NULL when the user has none (user: a name, as a request gives it). */
typedef struct UserJobs {
        const char *user; /* interned: job_user() */
        Job **jobs;
        size_t n, allocated;
        /* The first job's uid; mixed_uids: not every job's (the name was given to another
         * account, between their submissions). Limits count by uid (check_user_limits()). */
        uid_t uid;
        bool mixed_uids;
} UserJobs;
const UserJobs *manager_user_jobs(Manager *m, const char *user);

/* A job as the protocol shows it (its reason in its backend's words). */
json_object *manager_job_json(Manager *m, const Job *j, bool details);
/* The walltime limit a job runs under (sched_effective_walltime() with its queue's). */
uint64_t manager_job_walltime(Manager *m, const Job *j);
