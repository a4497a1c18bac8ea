/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/* The one place a job's state and the flags that qualify it change (job-transition.c). */

#include "job.h"

typedef struct Manager Manager;

/* Every state change of a job, and only here: checks the transition table
 * (-EBUSY/-EALREADY/-EINVAL as job_state_transition_allowed() says, nothing changed), sets
 * what goes with the event (start and end times, suspended time, a fresh run on requeue,
 * the running count, who holds or suspends it, as `by` says), sets the reason, writes the
 * job into the open transaction (SUBMIT: inserts it and adds it to the table), tells
 * waiters, queues its mail and asks for a scheduling pass. One HOLD of a held job is not
 * -EALREADY: an administrator's, of a job its owner held, makes the hold theirs (stored).
 * Nobody's hold of a held job lowers an administrator's. */
int manager_job_transition_by(Manager *m, Job *j, JobEvent event, JobState to, const char *reason,
                              JobActor by);
/* The same, by corrald itself (JOB_BY_CORRALD). */
int manager_job_transition(Manager *m, Job *j, JobEvent event, JobState to, const char *reason);

/* What qualifies a job's state without changing it, set only by manager_job_mark()
 * (which tests/unit/test-state-writes.sh holds to it). */
typedef enum JobMark {
        JOB_MARK_LAUNCHED,     /* its launch is over (started, failed, or it runs on Slurm) */
        JOB_MARK_CANCEL,       /* a cancel is under way: its outcome says Cancelled */
        JOB_MARK_REQUEUE,      /* a requeue is under way: its outcome queues it again */
        JOB_MARK_REQUEUE_HOLD, /* the same, held */
        /* A person suspends a job a pass holds suspended (preemption): both hold it
         * (stored). -EBUSY unless a pass holds it. */
        JOB_MARK_SUSPEND,
        /* That person's hold is lifted, the pass's stands (stored). -EBUSY unless a
         * person holds it suspended beside a pass. */
        JOB_MARK_RESUME,
} JobMark;
/* Sets what mark says (by: who does it); the launch and cancel marks are kept in memory
 * only, as ever. A store failure leaves the job as it was. */
int manager_job_mark(Manager *m, Job *j, JobMark mark, JobActor by);
/* Stores a change that is not a state change (a reason, a flag) and tells waiters. */
int manager_job_save(Manager *m, Job *j);
