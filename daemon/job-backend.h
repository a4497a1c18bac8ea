/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/* Where a job runs, chosen per queue (Backend=, corral.conf(5)): on this machine in a
 * transient scope of its own (backend-local.c), or on a Slurm cluster (backend-slurm.c).
 * The manager picks the tables at start-up (Manager.backends); methods, mail, why and the
 * manager act on a job through its backend's table and never ask which backend it has.
 * As crun's cgroup managers: one table per backend, one file per table. */

#include <json-c/json.h>
#include <stdbool.h>

#include "config/config.h"
#include "executor.h"
#include "job.h"

typedef struct Manager Manager;

typedef struct JobBackendOps {
        const char *name;
        /* Whether this machine's passes schedule its jobs (a cluster schedules its own). */
        bool scheduled_here;
        /* Whether corrald sends its jobs' mail (a cluster sends a forwarded job's). */
        bool sends_mail;

        /* Submit's checks (NULL: none), as early as the queue is known and once the user and
         * project are: 0, or -EINVAL with the request's field and why (allocated) in *ret_field
         * and *ret_refusal, or -errno. */
        int (*check_request)(Manager *m, const SubmitRequest *req, const QueueConfig *q, const char **ret_field,
                             char **ret_refusal);
        int (*check_submit)(Manager *m, const SubmitRequest *req, const QueueConfig *q, const char *user,
                            const char *project, const char **ret_field, char **ret_refusal);

        /* At start-up, once the jobs are loaded: its unfinished jobs taken back (re-adopted,
         * or settled as lost; rebooted: the machine went down meanwhile). In the start-up's
         * commit. */
        int (*adopt)(Manager *m, bool rebooted);
        /* After each pass is committed: what it decided is acted on (a start, a freeze, an
         * sbatch). -errno: a sync failed, nothing may be acted on any more. */
        int (*committed)(Manager *m);
        /* The scheduling timer's periodic look at its jobs (NULL: none). */
        void (*tick)(Manager *m);
        void (*free)(Manager *m);

        /* A person's actions on an unfinished job, after authorization. cancel: the job is
         * not final; 0 or -errno. */
        int (*cancel)(Manager *m, Job *j, JobActor by);
        /* Sends a running job's processes sig (batch_only: its main process alone), which
         * does not end the job by itself: 0 once sent (or passed on), -ESRCH when its
         * processes are gone, -EOPNOTSUPP with why (allocated, or NULL) in *ret_refusal where
         * the backend cannot (NULL: none can), -errno. */
        int (*signal)(Manager *m, Job *j, int sig, bool batch_only, char **ret_refusal);
        /* After the transition to or from held (NULL: nothing to pass on). */
        void (*held)(Manager *m, Job *j, bool hold);
        /* A requeue of a job that is neither pending nor being cancelled (final: back to
         * the queue here, the caller's limits checked first, unless the backend refuses):
         * 1 when the caller requeues the final job here, 0 when done, -EINVAL with why
         * (allocated) in *ret_refusal, -errno. */
        int (*requeue)(Manager *m, Job *j, bool hold, JobActor by, char **ret_refusal);
        /* Suspend (freeze) or resume a running or suspended job; done() reports the end.
         * -EOPNOTSUPP where the backend cannot. */
        int (*freeze)(Manager *m, Job *j, bool freeze, executor_done_t done, void *userdata);

        /* Where its output goes when the job names no file: *ret_default (allocated, relative
         * to its working directory; NULL: none) and whether its lines are in this machine's
         * journal. */
        int (*output)(Manager *m, const Job *j, char **ret_default, bool *ret_in_journal);
        /* corral why: what the backend says of the job, in o (fields) and why (sentences);
         * 1 when that is all there is to say of its state (the passes' words do not apply),
         * 0 when the pass's explanation follows (NULL: always). */
        int (*why)(Manager *m, const Job *j, json_object *o, json_object *why);
        /* The state's reason in the backend's words (allocated; NULL: the job's own). */
        int (*reason)(Manager *m, const Job *j, char **ret);
} JobBackendOps;

/* The backend of a queue (NULL: the local one), and a job's: its queue's. */
const JobBackendOps *manager_queue_backend(Manager *m, const QueueConfig *q);
const JobBackendOps *manager_job_backend(Manager *m, const Job *j);

/* Every backend's adopt, committed, tick and free, in the table's order. */
int manager_backends_adopt(Manager *m, bool rebooted);
int manager_backends_committed(Manager *m);
void manager_backends_tick(Manager *m);
void manager_backends_free(Manager *m);
