/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/* A job's state history (job-history.c): the changes its row does not date, recorded as
 * they happen, and the whole story put together for Show. */

#include <json-c/json.h>

#include "job.h"
#include "job-state.h"

typedef struct Manager Manager;

/* The event as its history names it ("hold", "requeue", ...) and who acted ("owner",
 * "admin", "scheduler", "corrald"). */
const char *job_actor_to_string(JobActor by) _const_;

/* Records, in the open transaction, a change from `from` to the job's state now, in run
 * `run` (the job's requeue count before it), unless the job's row dates it already: its
 * submission, a run's start, a run's end (job_usage dates the earlier runs'). */
int manager_job_history_record(Manager *m, const Job *j, JobEvent event, JobState from, uint32_t run, uint64_t now,
                               JobActor by);

/* [{"time", "state", "event", "reason"?, "by"?}], oldest first: the submission, each
 * recorded change, each run's start and end. NULL when memory is short or the store
 * cannot be read. */
json_object *manager_job_history_json(Manager *m, const Job *j);
