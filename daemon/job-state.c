/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "job-state.h"

static const char *const job_state_table[_JOB_STATE_MAX] = {
        [JOB_QUEUED] = "PENDING",
        [JOB_HELD] = "HELD",
        [JOB_BLOCKED] = "BLOCKED",
        [JOB_RUNNING] = "RUNNING",
        [JOB_SUSPENDED] = "SUSPENDED",
        [JOB_COMPLETED] = "COMPLETED",
        [JOB_FAILED] = "FAILED",
        [JOB_CANCELLED] = "CANCELLED",
        [JOB_TIMEOUT] = "TIMEOUT",
        [JOB_OUT_OF_MEMORY] = "OUT_OF_MEMORY",
        [JOB_NODE_FAIL] = "NODE_FAIL",
};

DEFINE_STRING_TABLE_LOOKUP(job_state, JobState);

static const char *const job_state_short_table[_JOB_STATE_MAX] = {
        [JOB_QUEUED] = "PD",
        [JOB_HELD] = "PD",
        [JOB_BLOCKED] = "PD",
        [JOB_RUNNING] = "R",
        [JOB_SUSPENDED] = "S",
        [JOB_COMPLETED] = "CD",
        [JOB_FAILED] = "F",
        [JOB_CANCELLED] = "CA",
        [JOB_TIMEOUT] = "TO",
        [JOB_OUT_OF_MEMORY] = "OOM",
        [JOB_NODE_FAIL] = "NF",
};

const char *job_state_to_short_string(JobState s) {
        if (s < 0 || s >= _JOB_STATE_MAX)
                return NULL;
        return job_state_short_table[s];
}

static const char *const job_event_table[_JOB_EVENT_MAX] = {
        [JOB_EVENT_SUBMIT] = "submit",
        [JOB_EVENT_HOLD] = "hold",
        [JOB_EVENT_RELEASE] = "release",
        [JOB_EVENT_START] = "start",
        [JOB_EVENT_SUSPEND] = "suspend",
        [JOB_EVENT_RESUME] = "resume",
        [JOB_EVENT_END] = "end",
        [JOB_EVENT_CANCEL] = "cancel",
        [JOB_EVENT_REQUEUE] = "requeue",
        [JOB_EVENT_NODE_FAIL] = "node-fail",
        [JOB_EVENT_BLOCK] = "block",
        [JOB_EVENT_UNBLOCK] = "unblock",
};

DEFINE_STRING_TABLE_LOOKUP(job_event, JobEvent);

#define S(x) (1U << (x))
#define PENDING_MASK (S(JOB_QUEUED) | S(JOB_HELD) | S(JOB_BLOCKED))
#define ACTIVE_MASK (S(JOB_RUNNING) | S(JOB_SUSPENDED))
#define FINAL_MASK                                                                         \
        (S(JOB_COMPLETED) | S(JOB_FAILED) | S(JOB_CANCELLED) | S(JOB_TIMEOUT) |             \
         S(JOB_OUT_OF_MEMORY) | S(JOB_NODE_FAIL))

bool job_state_is_final(JobState s) {
        return s >= 0 && s < _JOB_STATE_MAX && (FINAL_MASK & S(s));
}

bool job_state_is_pending(JobState s) {
        return s >= 0 && s < _JOB_STATE_MAX && (PENDING_MASK & S(s));
}

bool job_state_is_active(JobState s) {
        return s >= 0 && s < _JOB_STATE_MAX && (ACTIVE_MASK & S(s));
}

/* Every event's transitions are all pairs of one set of sources and one set of targets,
 * so two masks per event describe the whole machine. from_none: the event creates the
 * job (SUBMIT) rather than moving an existing one. */
static const struct {
        bool from_none;
        unsigned from, to;
} transitions[_JOB_EVENT_MAX] = {
        [JOB_EVENT_SUBMIT] = { .from_none = true, .to = S(JOB_QUEUED) | S(JOB_HELD) },
        [JOB_EVENT_HOLD] = { .from = S(JOB_QUEUED) | S(JOB_BLOCKED), .to = S(JOB_HELD) },
        [JOB_EVENT_RELEASE] = { .from = S(JOB_HELD), .to = S(JOB_QUEUED) },
        [JOB_EVENT_START] = { .from = S(JOB_QUEUED), .to = S(JOB_RUNNING) },
        [JOB_EVENT_SUSPEND] = { .from = S(JOB_RUNNING), .to = S(JOB_SUSPENDED) },
        [JOB_EVENT_RESUME] = { .from = S(JOB_SUSPENDED), .to = S(JOB_RUNNING) },
        [JOB_EVENT_END] = {
                .from = ACTIVE_MASK,
                .to = S(JOB_COMPLETED) | S(JOB_FAILED) | S(JOB_TIMEOUT) | S(JOB_OUT_OF_MEMORY) | S(JOB_CANCELLED),
        },
        [JOB_EVENT_CANCEL] = { .from = PENDING_MASK | ACTIVE_MASK, .to = S(JOB_CANCELLED) },
        [JOB_EVENT_REQUEUE] = { .from = ACTIVE_MASK | FINAL_MASK, .to = S(JOB_QUEUED) | S(JOB_HELD) },
        [JOB_EVENT_NODE_FAIL] = { .from = ACTIVE_MASK, .to = S(JOB_NODE_FAIL) | S(JOB_QUEUED) },
        [JOB_EVENT_BLOCK] = { .from = S(JOB_QUEUED), .to = S(JOB_BLOCKED) },
        [JOB_EVENT_UNBLOCK] = { .from = S(JOB_BLOCKED), .to = S(JOB_QUEUED) },
};

int job_state_transition_allowed(JobState from, JobState to, JobEvent event) {
        if (event < 0 || event >= _JOB_EVENT_MAX)
                return -EINVAL;
        if (to < 0 || to >= _JOB_STATE_MAX || !(transitions[event].to & S(to)))
                return -EINVAL;

        if (transitions[event].from_none)
                return from == _JOB_STATE_INVALID ? 0 : -EBUSY;
        if (from < 0 || from >= _JOB_STATE_MAX)
                return -EINVAL;
        if (transitions[event].from & S(from))
                return 0;
        /* Only for events with a single target is "already there" meaningful: for END
         * or REQUEUE, being in the target state is not the same as having done it. */
        if (from == to && __builtin_popcount(transitions[event].to) == 1)
                return -EALREADY;
        return -EBUSY;
}
