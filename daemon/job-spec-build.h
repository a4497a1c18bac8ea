/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/* The spec the executor starts a local job from (job-spec-build.c). */

#include "job-spec.h"
#include "job.h"

typedef struct Manager Manager;

int manager_build_spec(Manager *m, Job *j, JobSpec **ret);
