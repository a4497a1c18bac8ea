/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/* A job's life cycle, and the one table of which events may move it from which state to
 * which. The daemon asks job_state_transition_allowed() before every change, so an
 * impossible sequence (resume a queued job, end a held one) is refused in one place.
 *
 * Display names follow Slurm's squeue/sacct long forms so Slurm users read them without a
 * legend; the states Slurm folds into PENDING (held, blocked by policy) get their own
 * names here because they need different commands to leave. The short forms are Slurm's
 * compact codes (squeue %t), where held and blocked show as PD as in Slurm. */

#include "macro.h"
#include "string-table.h"

typedef enum JobState {
        JOB_QUEUED,             /* "PENDING": waits for resources */
        JOB_HELD,               /* "HELD": waits for a release (user or admin hold) */
        JOB_BLOCKED,            /* "BLOCKED": held back by policy (limits), not eligible */
        JOB_RUNNING,            /* "RUNNING" */
        JOB_SUSPENDED,          /* "SUSPENDED": frozen, keeps its resources */
        JOB_COMPLETED,          /* "COMPLETED": exit code 0 */
        JOB_FAILED,             /* "FAILED": non-zero exit or killed by a signal */
        JOB_CANCELLED,          /* "CANCELLED" */
        JOB_TIMEOUT,            /* "TIMEOUT": ran past its walltime */
        JOB_OUT_OF_MEMORY,      /* "OUT_OF_MEMORY": the OOM killer ended it */
        JOB_NODE_FAIL,          /* "NODE_FAIL": lost when the machine or daemon went down */
        _JOB_STATE_MAX,
        _JOB_STATE_INVALID = -EINVAL,
} JobState;

DECLARE_STRING_TABLE_LOOKUP(job_state, JobState);
/* "PD", "R", "S", "CD", "F", "CA", "TO", "OOM", "NF". Not unique: display only. */
const char *job_state_to_short_string(JobState s) _const_;

bool job_state_is_final(JobState s) _const_;
bool job_state_is_pending(JobState s) _const_;   /* queued, held or blocked */
bool job_state_is_active(JobState s) _const_;    /* running or suspended: holds resources */

typedef enum JobEvent {
        JOB_EVENT_SUBMIT,       /* (none) -> QUEUED, or HELD when submitted with --hold */
        JOB_EVENT_HOLD,         /* QUEUED/BLOCKED -> HELD */
        JOB_EVENT_RELEASE,      /* HELD -> QUEUED */
        JOB_EVENT_START,        /* QUEUED -> RUNNING */
        JOB_EVENT_SUSPEND,      /* RUNNING -> SUSPENDED */
        JOB_EVENT_RESUME,       /* SUSPENDED -> RUNNING */
        JOB_EVENT_END,          /* RUNNING/SUSPENDED -> COMPLETED/FAILED/TIMEOUT/OUT_OF_MEMORY/CANCELLED */
        JOB_EVENT_CANCEL,       /* any non-final -> CANCELLED */
        JOB_EVENT_REQUEUE,      /* RUNNING/SUSPENDED/any final -> QUEUED, or HELD (requeue with hold);
                                 * completed jobs too, as Slurm's scontrol requeue allows */
        JOB_EVENT_NODE_FAIL,    /* found RUNNING/SUSPENDED at daemon start -> NODE_FAIL, or
                                 * QUEUED when the job is rerunnable */
        JOB_EVENT_BLOCK,        /* QUEUED -> BLOCKED */
        JOB_EVENT_UNBLOCK,      /* BLOCKED -> QUEUED */
        _JOB_EVENT_MAX,
        _JOB_EVENT_INVALID = -EINVAL,
} JobEvent;

DECLARE_STRING_TABLE_LOOKUP(job_event, JobEvent);

/* Whether event may move a job from `from` to `to`. For JOB_EVENT_SUBMIT, from must be
 * _JOB_STATE_INVALID (the job has no state yet). Returns:
 *   0          allowed;
 *   -EALREADY  the job already is where the event would take it (hold a held job,
 *              suspend a suspended one): callers may treat this as success;
 *   -EBUSY     the job's current state does not allow the event (the daemon answers
 *              InvalidState with the current state);
 *   -EINVAL    the event can never lead to `to`, or an argument is out of range. */
int job_state_transition_allowed(JobState from, JobState to, JobEvent event);
