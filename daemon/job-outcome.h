/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/* The executor's reports on local jobs (job-outcome.c): a start, an end. */

#include "executor.h"
#include "job.h"

typedef struct Manager Manager;

void manager_on_job_started(Executor *e, uint64_t id, int error, const char *message, void *userdata);
void manager_on_job_finished(Executor *e, const JobOutcome *o, void *userdata);
/* Ends a job whose launch failed: the details stay out of the public reason. */
int manager_job_launch_failed(Manager *m, Job *j, JobState state, const char *detail);
