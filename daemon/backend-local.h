/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/* The local backend (backend-local.c): jobs in transient scopes of their own here. */

#include "job-backend.h"

typedef struct Manager Manager;

extern const JobBackendOps job_backend_local;

/* After the commit: the starts a pass recorded in to_launch, and the freezes and thaws
 * (JobRun.preempt_act) of its preemptions. */
void manager_launch_pending(Manager *m);
