/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/* Preemption by suspension (job-preempt.c): a pass's SCHED_DECISION_SUSPEND and
 * SCHED_DECISION_RESUME recorded, then acted on (freeze, thaw) after the commit. */

#include "job.h"
#include "sched/sched.h"

typedef struct Manager Manager;

void manager_preempt_suspend(Manager *m, Job *j, const SchedDecision *d);
void manager_preempt_resume(Manager *m, Job *j, const SchedDecision *d);
/* After the commit: the freeze or thaw recorded for j (from manager_launch_pending()). */
void manager_preempt_act(Manager *m, Job *j);
