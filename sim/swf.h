/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/* Standard Workload Format traces (Parallel Workloads Archive): 18 numeric fields per
 * line, -1 for unknown, ';' header comments. Only the fields the simulator uses are
 * kept; they are stored as read (rounded to whole numbers), interpretation is sim.c's.
 * Corral's extension: an optional 19th field, the GPUs the job requests (-1 or 0:
 * none); a line has 18 or 19 fields. */

#include <stdint.h>
#include <stdio.h>

#include "macro.h"

typedef struct SwfJob {
        int64_t id;          /* field 1 */
        int64_t submit;      /* field 2 */
        int64_t wait;        /* field 3 */
        int64_t run;         /* field 4 */
        int64_t procs_alloc; /* field 5 */
        int64_t procs_req;   /* field 8 */
        int64_t time_req;    /* field 9 */
        int64_t user;        /* field 12 */
        int64_t group;       /* field 13 */
        int64_t queue;       /* field 15 */
        int64_t gpus;        /* field 19 (Corral's), -1 if absent */
        unsigned line;
} SwfJob;

typedef struct SwfTrace {
        SwfJob *jobs;
        size_t n_jobs;
        int64_t max_procs;   /* "; MaxProcs:", -1 if absent */
        int64_t max_nodes;   /* "; MaxNodes:", -1 if absent */
} SwfTrace;

/* Reads a trace. On a malformed line or I/O error returns -EINVAL/-errno and, if
 * ret_error is given, a malloc'ed "name:line: what" message. */
int swf_parse(FILE *f, const char *name, SwfTrace *ret, char **ret_error);
int swf_load(const char *path, SwfTrace *ret, char **ret_error);
void swf_trace_done(SwfTrace *t);
