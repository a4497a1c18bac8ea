/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/* The projects' [Slice] caps on their slices (project-slices.c). */

#include "config/config.h"

typedef struct Manager Manager;

/* Sets every project's caps on its slice, and lifts those of projects the configuration
 * before (old, may be NULL) had and this one has not; asynchronous, a failure is logged. */
void manager_apply_slices(Manager *m, const Config *old);
