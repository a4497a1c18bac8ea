/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/* The adapter to sched/ (sched-driver.c): the queue as the scheduler sees it, one pass,
 * its decisions recorded (the starts in Manager.to_launch, acted on after the commit). */

#include <stdbool.h>
#include <stdint.h>

#include "job.h"
#include "sched/sched.h"

typedef struct Manager Manager;

/* One pass over the queue, its starts recorded. */
int manager_schedule(Manager *m);
/* Whether a pass must wait (spacing). */
bool manager_sched_deferred(Manager *m);
/* Frees what only passes use (the SchedJob array, the pass's scratch); a timer calls it
 * once passes have stopped for a while. */
void manager_sched_trim(Manager *m);
/* The job as the scheduler sees it (its dependencies are filled by a pass only). */
void manager_sched_job(Manager *m, Job *j, SchedJob *ret);
/* The id of a job's project in the scheduler's limits; 0 when it has none. */
uint32_t manager_project_id(Manager *m, const Job *j);
/* TestSubmit: when the probe (a job not in the table, with an unused id) would start if
 * submitted now: now, an estimate, or SCHED_TIME_INFINITY, and the reason it would wait
 * (NULL: none). -EBUSY when a what-if ran too recently, -ENOMEM. */
int manager_estimate_start(Manager *m, Job *probe, uint64_t *ret_est, const char **ret_reason);
