/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/* corral why (job-why.c): what holds the job back and what its priority is made of. */

#include <json-c/json.h>

#include "job.h"

typedef struct Manager Manager;

json_object *manager_job_why(Manager *m, Job *j);
